package cloudtoken

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// googleTokenServer stands in for oauth2.googleapis.com/token and STS: it
// answers a refresh-token or token-exchange grant, or fails with status.
func googleTokenServer(t *testing.T, status int, token string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Errorf("parsing token request: %v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		if status != http.StatusOK {
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"Bad Request"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"access_token":      token,
			"issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
			"token_type":        "Bearer",
			"expires_in":        3600,
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func writeJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "adc.json")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestGKEToken(t *testing.T) {
	const refreshToken = "1//refresh-secret"
	tests := []struct {
		name         string
		status       int
		creds        func(t *testing.T, tokenURL string) map[string]any
		wantToken    string
		wantErr      []string
		wantNotInErr []string
	}{
		{
			name:   "authorized_user",
			status: http.StatusOK,
			creds: func(t *testing.T, tokenURL string) map[string]any {
				return map[string]any{"type": "authorized_user", "client_id": "123.apps.googleusercontent.com", "client_secret": "csecret", "refresh_token": refreshToken, "token_uri": tokenURL}
			},
			wantToken: "ya29.user",
		},
		{
			name:   "service_account key",
			status: http.StatusOK,
			creds: func(t *testing.T, tokenURL string) map[string]any {
				key, err := rsa.GenerateKey(rand.Reader, 2048)
				if err != nil {
					t.Fatal(err)
				}
				pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
				return map[string]any{"type": "service_account", "client_email": "ci@p.iam.gserviceaccount.com", "private_key_id": "k1", "private_key": string(pemKey), "token_uri": tokenURL, "project_id": "p"}
			},
			wantToken: "ya29.sa",
		},
		{
			name:   "external_account from a file subject token",
			status: http.StatusOK,
			creds: func(t *testing.T, tokenURL string) map[string]any {
				subject := filepath.Join(t.TempDir(), "subject")
				if err := os.WriteFile(subject, []byte("oidc-subject-token"), 0o600); err != nil {
					t.Fatal(err)
				}
				return map[string]any{
					"type":               "external_account",
					"audience":           "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/gh/providers/gh",
					"subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
					"token_url":          tokenURL,
					"credential_source":  map[string]any{"file": subject},
				}
			},
			wantToken: "ya29.federated",
		},
		{
			name:   "refused grant names the OAuth client, not the refresh token",
			status: http.StatusBadRequest,
			creds: func(t *testing.T, tokenURL string) map[string]any {
				return map[string]any{"type": "authorized_user", "client_id": "123.apps.googleusercontent.com", "client_secret": "csecret", "refresh_token": refreshToken, "token_uri": tokenURL}
			},
			wantErr:      []string{"gke token", "authorized_user credentials of OAuth client 123.apps.googleusercontent.com", "getting an access token"},
			wantNotInErr: []string{refreshToken, "csecret"},
		},
		{
			name:   "external_account running a command is refused",
			status: http.StatusOK,
			creds: func(t *testing.T, tokenURL string) map[string]any {
				return map[string]any{
					"type": "external_account", "audience": "a", "subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "token_url": tokenURL,
					"credential_source": map[string]any{"executable": map[string]any{"command": "/bin/get-token"}},
				}
			},
			wantErr: []string{"gke token", "would run a command"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			want := tc.wantToken
			if want == "" {
				want = "ya29.never"
			}
			srv := googleTokenServer(t, tc.status, want)
			file := writeJSON(t, tc.creds(t, srv.URL))
			// The exec entry's env names the credentials, as it would
			// for the plugin.
			p, err := Recognise(&clientcmdapi.ExecConfig{Command: "gke-gcloud-auth-plugin", Env: []clientcmdapi.ExecEnvVar{{Name: "GOOGLE_APPLICATION_CREDENTIALS", Value: file}}})
			if err != nil {
				t.Fatalf("Recognise: %v", err)
			}
			src, err := NewSource(ctx, p, Options{HTTPClient: srv.Client(), Getenv: func(string) string { return "" }})
			var tok Token
			if err == nil {
				tok, err = src.Token(ctx)
			}
			if len(tc.wantErr) > 0 {
				var e *Error
				if !errors.As(err, &e) || e.Cloud != GKE {
					t.Fatalf("err = %v, want a gke *Error", err)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				for _, s := range tc.wantNotInErr {
					if strings.Contains(err.Error(), s) {
						t.Errorf("error %q contains the secret %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Token: %v", err)
			}
			if tok.Value != tc.wantToken {
				t.Errorf("token = %q, want %q", tok.Value, tc.wantToken)
			}
			if d := time.Until(tok.Expiry); d < 50*time.Minute || d > time.Hour {
				t.Errorf("expiry in %s, want about an hour", d)
			}
		})
	}
}

func TestGKEIdentity(t *testing.T) {
	tests := []struct {
		json string
		want string
	}{
		{``, "the metadata server's service account"},
		{`{"type":"service_account","client_email":"ci@p.iam.gserviceaccount.com","client_id":"9"}`, "service account ci@p.iam.gserviceaccount.com"},
		{`{"type":"external_account","audience":"aud","service_account_impersonation_url":"https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/deployer@p.iam.gserviceaccount.com:generateAccessToken"}`, "external_account credentials impersonating service account deployer@p.iam.gserviceaccount.com"},
		{`{"type":"external_account","audience":"aud"}`, "external_account for audience aud"},
	}
	for _, tc := range tests {
		if got := gkeIdentity([]byte(tc.json)); got != tc.want {
			t.Errorf("gkeIdentity(%s) = %q, want %q", tc.json, got, tc.want)
		}
	}
}
