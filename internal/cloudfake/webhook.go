package cloudfake

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	authnv1 "k8s.io/api/authentication/v1"
)

// authenticate is the cluster's webhook token authenticator: an EKS token
// is checked as aws-iam-authenticator does (its URL is STS's, for
// GetCallerIdentity, signed with the cluster's header; STS says whose it
// is), a GKE or AKS token as the cloud's own token service would (issued
// here, unexpired, an AKS one for the AKS server application). Anything
// else is not ours: unauthenticated, and the API server tries its others.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) {
	var review authnv1.TokenReview
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	user, err := s.identify(review.Spec.Token)
	review.Status = authnv1.TokenReviewStatus{}
	if err != nil {
		review.Status.Error = err.Error()
	} else {
		review.Status.Authenticated = true
		review.Status.User = user
		s.mu.Lock()
		s.accepted = append(s.accepted, review.Spec.Token)
		s.mu.Unlock()
	}
	review.Spec = authnv1.TokenReviewSpec{}
	writeJSON(w, http.StatusOK, review)
}

func (s *Server) identify(tok string) (authnv1.UserInfo, error) {
	if rest, ok := strings.CutPrefix(tok, "k8s-aws-v1."); ok {
		arn, err := s.eksIdentity(rest)
		if err != nil {
			return authnv1.UserInfo{}, err
		}
		return authnv1.UserInfo{Username: arn, Groups: []string{"system:authenticated"}}, nil
	}
	g, ok := s.lookup(tok)
	switch {
	case !ok:
		return authnv1.UserInfo{}, errors.New("not a token of ours")
	case g.cloud == "aks" && g.audience != AKSServerID:
		return authnv1.UserInfo{}, errors.New("an Entra ID token for another application")
	}
	return authnv1.UserInfo{Username: g.identity, Groups: []string{"system:authenticated"}}, nil
}

// eksIdentity checks a presigned URL the way aws-iam-authenticator does
// before it calls it, then has STS (here) say whose signature it bears.
func (s *Server) eksIdentity(encoded string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(encoded)
	if err != nil {
		return "", errors.New("EKS token: not base64url")
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		return "", errors.New("EKS token: not a URL")
	}
	ours, _ := url.Parse(s.URL)
	q := u.Query()
	switch {
	case u.Scheme != "https" || u.Host != ours.Host || u.Path != "/aws/":
		return "", errors.New("EKS token: not a URL of STS")
	case q.Get("Action") != "GetCallerIdentity" || q.Get("Version") != "2011-06-15":
		return "", errors.New("EKS token: not a GetCallerIdentity")
	case !strings.Contains(";"+q.Get("X-Amz-SignedHeaders")+";", ";x-k8s-aws-id;"):
		return "", errors.New("EKS token: x-k8s-aws-id is not signed")
	}
	h := http.Header{}
	h.Set("x-k8s-aws-id", EKSCluster)
	return s.callerIdentity(u, u.Host, h)
}

// tokens lists the tokens the authenticator accepted, oldest first.
func (s *Server) tokens(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, append([]string{}, s.accepted...))
}
