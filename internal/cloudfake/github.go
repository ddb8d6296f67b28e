package cloudfake

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// githubToken answers ACTIONS_ID_TOKEN_REQUEST_URL as the runner's
// service does: {"value": JWT} for the audience asked, to the holder of
// the request token.
func (s *Server) githubToken(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+RequestToken {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	aud := r.URL.Query().Get("audience")
	if aud == "" {
		aud = "https://github.com/acme"
	}
	now := s.now()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": s.URL + "/github", "sub": GitHubSubject, "aud": aud,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"repository": "acme/infra", "ref": "refs/heads/main", "job_workflow_ref": "acme/infra/.github/workflows/kusion.yml@refs/heads/main",
	}).SignedString(s.github)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"value": tok})
}

// verifyGitHub checks a GitHub OIDC token as a cloud's federation does:
// signed by the issuer, for the audience, not expired. It returns the
// subject.
func (s *Server) verifyGitHub(tok, audience string) (string, error) {
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(tok, claims, func(*jwt.Token) (any, error) { return &s.github.PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(s.URL+"/github"), jwt.WithAudience(audience),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(s.now))
	if err != nil {
		return "", fmt.Errorf("the GitHub OIDC token: %w", err)
	}
	sub, _ := claims.GetSubject()
	if sub == "" {
		return "", errors.New("the GitHub OIDC token has no subject")
	}
	return sub, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
