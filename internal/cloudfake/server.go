// Package cloudfake stands in for the clouds a managed cluster trusts, so
// the test cluster accepts the tokens of the EKS, GKE and AKS plugins as
// the clouds' clusters do, checked the way each cloud checks them:
//
//   - GitHub Actions' OIDC token endpoint (ACTIONS_ID_TOKEN_REQUEST_URL),
//     issuing GitHub-shaped JWTs that the other endpoints exchange;
//   - AWS STS: GetCallerIdentity from a presigned URL, its SigV4 signature
//     checked against the test credentials, and AssumeRoleWithWebIdentity;
//   - Google's STS token exchange and IAM Credentials' generateAccessToken
//     (workload identity federation, then service account impersonation);
//   - Entra ID's tenant metadata and token endpoint (a federated client
//     assertion for an access token of the AKS server app);
//   - a Kubernetes webhook token authenticator (TokenReview) the test
//     cluster's API server calls, which accepts only tokens that check out
//     as above and names the identity they carry.
//
// Every token the authenticator accepted is listed at /tokens, so a test
// can look for each in what it printed, commented and stored.
package cloudfake

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"net/http"
	"sync"
	"time"
)

// The test identities. They are test values, public in this file; a
// workflow would get the like from its cloud's login action.
const (
	// AWSAccessKey and AWSSecretKey are an IAM user's long-lived keys.
	AWSAccessKey = "AKIAKUSIONPRTEST0001"
	AWSSecretKey = "kusionprTestSecretKey/0000000000000000000"
	// AWSUserARN is the identity GetCallerIdentity returns for them.
	AWSUserARN = "arn:aws:iam::111122223333:user/kusionpr-ci"
	// AWSAccount is the account of every test identity.
	AWSAccount = "111122223333"

	// RequestToken authorises a request for a GitHub OIDC token
	// (ACTIONS_ID_TOKEN_REQUEST_TOKEN).
	RequestToken = "kusionpr-test-id-token-request"
	// GitHubSubject is the sub claim of the GitHub tokens issued, as a
	// push to main of acme/infra would carry it.
	GitHubSubject = "repo:acme/infra:ref:refs/heads/main"

	// EKSCluster is the cluster name EKS tokens must be presigned for.
	EKSCluster = "kusionpr-test"
	// AKSServerID is the AKS server application an Entra token must be
	// for (AKS's own, kubelogin's default).
	AKSServerID = "6dae42f8-4368-4678-94ff-3960e28e3630"
	// GKEProject is the project number of the workload identity pool.
	GKEProject = "123456789012"
)

// Server is the stand-in. Its zero value is not usable: call New.
type Server struct {
	// URL is where it is served, https://host:port, without a slash.
	URL string

	github *rsa.PrivateKey
	now    func() time.Time

	mu       sync.Mutex
	awsTemp  map[string]awsCredential // access key → temporary credential
	bearer   map[string]grant         // Google and Entra access tokens issued
	accepted []string                 // tokens the authenticator accepted
}

// grant is what an issued access token stands for.
type grant struct {
	cloud    string // "gke" or "aks"
	identity string
	audience string
	expires  time.Time
}

// New makes a stand-in that will be served at url.
func New(url string) (*Server, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &Server{URL: url, github: key, now: time.Now, awsTemp: map[string]awsCredential{}, bearer: map[string]grant{}}, nil
}

// Handler serves every endpoint.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /github/token", s.githubToken)
	mux.HandleFunc("/aws/{$}", s.sts)
	mux.HandleFunc("POST /google/sts/v1/token", s.googleExchange)
	mux.HandleFunc("POST /google/iamcredentials/v1/projects/-/serviceAccounts/{account}", s.googleImpersonate)
	// Entra ID's authority is a host: MSAL drops any path of it.
	mux.HandleFunc("GET /{tenant}/v2.0/.well-known/openid-configuration", s.entraMetadata)
	mux.HandleFunc("POST /{tenant}/oauth2/v2.0/token", s.entraToken)
	mux.HandleFunc("POST /authenticate", s.authenticate)
	mux.HandleFunc("GET /tokens", s.tokens)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	return mux
}

// issue records an access token for a grant and returns it.
func (s *Server) issue(prefix string, g grant) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	tok := prefix + hex.EncodeToString(b)
	s.mu.Lock()
	s.bearer[tok] = g
	s.mu.Unlock()
	return tok
}

func (s *Server) lookup(tok string) (grant, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.bearer[tok]
	return g, ok && s.now().Before(g.expires)
}
