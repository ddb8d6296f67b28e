package cloudfake

import (
	"net/http"
	"strings"
	"time"
)

// entraMetadata is a tenant's OpenID configuration, which MSAL reads
// before it asks for a token.
func (s *Server) entraMetadata(w http.ResponseWriter, r *http.Request) {
	base := s.URL + "/" + r.PathValue("tenant")
	writeJSON(w, http.StatusOK, map[string]string{
		"token_endpoint":         base + "/oauth2/v2.0/token",
		"authorization_endpoint": base + "/oauth2/v2.0/authorize",
		"issuer":                 base + "/v2.0",
	})
}

// entraToken is the token endpoint's client-credentials grant with a
// federated assertion: a GitHub OIDC token for api://AzureADTokenExchange,
// for an access token of the scope's application.
func (s *Server) entraToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		entraError(w, "invalid_request", err.Error())
		return
	}
	f := r.PostForm
	if f.Get("grant_type") != "client_credentials" || f.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		entraError(w, "unsupported_grant_type", "AADSTS70003: only a client credentials grant with a federated assertion is served here")
		return
	}
	client := f.Get("client_id")
	if client == "" {
		entraError(w, "invalid_request", "AADSTS900144: The request body must contain the following parameter: 'client_id'.")
		return
	}
	if _, err := s.verifyGitHub(f.Get("client_assertion"), "api://AzureADTokenExchange"); err != nil {
		entraError(w, "invalid_client", "AADSTS700211: "+err.Error())
		return
	}
	app, ok := strings.CutSuffix(strings.Fields(f.Get("scope") + " ")[0], "/.default")
	if !ok {
		entraError(w, "invalid_scope", "AADSTS1002012: the scope must be an application's /.default")
		return
	}
	tok := s.issue("eyJ0eXAiOiJKV1QifQ.aks-", grant{cloud: "aks", identity: client, audience: app, expires: s.now().Add(time.Hour)})
	writeJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": tok})
}

func entraError(w http.ResponseWriter, code, msg string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": code, "error_description": msg, "error_codes": []int{}})
}
