package cloudfake

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// googlePool is the prefix of the test project's workload identity
// providers, as Google's STS names them in an exchange's audience.
const googlePool = "//iam.googleapis.com/projects/" + GKEProject + "/locations/global/workloadIdentityPools/"

// googleAccountDomain is the domain of the test project's service
// accounts, which federated principals may impersonate.
const googleAccountDomain = "@kusionpr-test.iam.gserviceaccount.com"

// googleExchange is Google's STS token exchange: a GitHub OIDC token whose
// audience is a provider of the test pool, for a federated access token.
func (s *Server) googleExchange(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		googleError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	aud := r.PostForm.Get("audience")
	if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" || !strings.HasPrefix(aud, googlePool) {
		googleError(w, http.StatusBadRequest, "invalid_request", "a token exchange for a provider of "+googlePool+"...")
		return
	}
	// google-github-actions/auth asks GitHub for the provider's https name.
	sub, err := s.verifyGitHub(r.PostForm.Get("subject_token"), "https:"+aud)
	if err != nil {
		googleError(w, http.StatusBadRequest, "invalid_grant", err.Error())
		return
	}
	pool, _, _ := strings.Cut(strings.TrimPrefix(aud, "//iam.googleapis.com/"), "/providers/")
	principal := "principal://iam.googleapis.com/" + pool + "/subject/" + sub
	tok := s.issue("ya29.fed-", grant{cloud: "gke", identity: principal, expires: s.now().Add(time.Hour)})
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
		"token_type": "Bearer", "expires_in": 3600})
}

// googleImpersonate is IAM Credentials' generateAccessToken: a federated
// principal's token for one of a service account of the test project.
func (s *Server) googleImpersonate(w http.ResponseWriter, r *http.Request) {
	account, ok := strings.CutSuffix(r.PathValue("account"), ":generateAccessToken")
	if !ok || !strings.HasSuffix(account, googleAccountDomain) {
		googleError(w, http.StatusNotFound, "NOT_FOUND", "no such service account")
		return
	}
	caller, ok := s.lookup(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	if !ok || caller.cloud != "gke" {
		googleError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
		return
	}
	exp := s.now().Add(time.Hour)
	tok := s.issue("ya29.sa-", grant{cloud: "gke", identity: account, expires: exp})
	writeJSON(w, http.StatusOK, map[string]string{"accessToken": tok, "expireTime": exp.UTC().Format(time.RFC3339)})
}

func googleError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": msg})
}
