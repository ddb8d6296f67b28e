package cloudtoken

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const testTenant = "00000000-0000-0000-0000-0000000000aa"

// entraServer stands in for login.microsoftonline.com: tenant metadata
// and the token endpoint, which records the form it was sent.
type entraServer struct {
	*httptest.Server
	status int
	token  string

	mu    sync.Mutex
	forms []map[string]string
}

func newEntraServer(t *testing.T, status int, token string) *entraServer {
	t.Helper()
	e := &entraServer{status: status, token: token}
	e.Server = httptest.NewTLSServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.Close)
	return e
}

func (e *entraServer) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	base := e.URL + "/" + testTenant
	switch {
	case strings.HasSuffix(r.URL.Path, "/.well-known/openid-configuration"):
		_ = json.NewEncoder(w).Encode(map[string]string{
			"token_endpoint":         base + "/oauth2/v2.0/token",
			"issuer":                 base + "/v2.0",
			"authorization_endpoint": base + "/oauth2/v2.0/authorize",
		})
	case strings.HasSuffix(r.URL.Path, "/oauth2/v2.0/token"):
		_ = r.ParseForm()
		form := map[string]string{}
		for k := range r.PostForm {
			form[k] = r.PostForm.Get(k)
		}
		e.mu.Lock()
		e.forms = append(e.forms, form)
		e.mu.Unlock()
		if e.status != http.StatusOK {
			w.WriteHeader(e.status)
			_, _ = w.Write([]byte(`{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided."}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": e.token, "expires_in": 3600, "token_type": "Bearer"})
	default:
		http.NotFound(w, r)
	}
}

func (e *entraServer) lastForm() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.forms) == 0 {
		return nil
	}
	return e.forms[len(e.forms)-1]
}

func TestAKSToken(t *testing.T) {
	const secret = "spn-secret-value"
	assertion := filepath.Join(t.TempDir(), "azure-identity-token")
	if err := os.WriteFile(assertion, []byte("federated-oidc-jwt"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The process's own Azure settings stay out: the default chain's
	// environment member reads them.
	for _, k := range []string{"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_USERNAME", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_AUTHORITY_HOST"} {
		t.Setenv(k, "")
	}
	certFile := writeTestCertificate(t)
	// GitHub's OIDC token endpoint, as the runner offers it to a job with
	// id-token: write: the request token authorises, the audience is
	// Entra ID's exchange audience.
	const requestToken = "gh-request-token-value"
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+requestToken || r.URL.Query().Get("api-version") != "2.0" {
			http.Error(w, `{"message":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"value": "gh.oidc." + r.URL.Query().Get("audience")})
	}))
	t.Cleanup(gh.Close)
	ghEnv := func(token string) []clientcmdapi.ExecEnvVar {
		return []clientcmdapi.ExecEnvVar{
			{Name: "AZURE_CLIENT_ID", Value: "gh-client"}, {Name: "AZURE_TENANT_ID", Value: testTenant},
			{Name: "ACTIONS_ID_TOKEN_REQUEST_URL", Value: gh.URL + "/token?api-version=2.0"}, {Name: "ACTIONS_ID_TOKEN_REQUEST_TOKEN", Value: token},
		}
	}
	tests := []struct {
		name         string
		args         []string
		env          []clientcmdapi.ExecEnvVar
		status       int
		wantScope    string
		wantForm     map[string]string
		wantErr      []string
		wantNotInErr []string
	}{
		{
			name:      "spn with a secret from the command line",
			args:      []string{"get-token", "--login", "spn", "--server-id", DefaultAKSServerID, "--tenant-id", testTenant, "--client-id", "spn-client", "--client-secret", secret},
			status:    http.StatusOK,
			wantScope: DefaultAKSServerID + "/.default",
			wantForm:  map[string]string{"client_id": "spn-client", "client_secret": secret, "grant_type": "client_credentials"},
		},
		{
			name:      "spn with a secret from the exec env and a custom server app",
			args:      []string{"get-token", "--login", "spn", "--server-id", "api://aks-custom", "--tenant-id", testTenant},
			env:       []clientcmdapi.ExecEnvVar{{Name: "AAD_SERVICE_PRINCIPAL_CLIENT_ID", Value: "env-client"}, {Name: "AAD_SERVICE_PRINCIPAL_CLIENT_SECRET", Value: secret}},
			status:    http.StatusOK,
			wantScope: "api://aks-custom/.default",
			wantForm:  map[string]string{"client_id": "env-client"},
		},
		{
			name:      "workload identity",
			args:      []string{"get-token", "--login", "workloadidentity", "--tenant-id", testTenant, "--client-id", "wi-client", "--federated-token-file", assertion},
			status:    http.StatusOK,
			wantScope: DefaultAKSServerID + "/.default",
			wantForm:  map[string]string{"client_id": "wi-client", "client_assertion": "federated-oidc-jwt"},
		},
		{
			name:      "spn with a client certificate",
			args:      []string{"get-token", "--login", "spn", "--tenant-id", testTenant, "--client-id", "cert-client", "--client-certificate", certFile},
			status:    http.StatusOK,
			wantScope: DefaultAKSServerID + "/.default",
			wantForm:  map[string]string{"client_id": "cert-client", "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
		},
		{
			name: "no --login: the command-free default chain finds workload identity in the exec env",
			args: []string{"get-token", "--server-id", DefaultAKSServerID},
			env: []clientcmdapi.ExecEnvVar{
				{Name: "AZURE_CLIENT_ID", Value: "chain-client"}, {Name: "AZURE_TENANT_ID", Value: testTenant}, {Name: "AZURE_FEDERATED_TOKEN_FILE", Value: assertion},
			},
			status:    http.StatusOK,
			wantScope: DefaultAKSServerID + "/.default",
			wantForm:  map[string]string{"client_id": "chain-client", "client_assertion": "federated-oidc-jwt"},
		},
		{
			name:      "workload identity in a GitHub Actions job: the job's OIDC token is the assertion",
			args:      []string{"get-token", "--login", "workloadidentity", "--server-id", DefaultAKSServerID},
			env:       ghEnv(requestToken),
			status:    http.StatusOK,
			wantScope: DefaultAKSServerID + "/.default",
			wantForm:  map[string]string{"client_id": "gh-client", "client_assertion": "gh.oidc.api://AzureADTokenExchange"},
		},
		{
			name:      "no --login in a GitHub Actions job",
			args:      []string{"get-token", "--server-id", DefaultAKSServerID},
			env:       ghEnv(requestToken),
			status:    http.StatusOK,
			wantScope: DefaultAKSServerID + "/.default",
			wantForm:  map[string]string{"client_id": "gh-client", "client_assertion": "gh.oidc.api://AzureADTokenExchange"},
		},
		{
			name:         "a job without id-token: write is told so, its request token unsaid",
			args:         []string{"get-token", "--login", "workloadidentity"},
			env:          ghEnv("wrong-request-token"),
			status:       http.StatusOK,
			wantErr:      []string{"aks token", "client id gh-client", "401 Unauthorized", "id-token: write"},
			wantNotInErr: []string{"wrong-request-token"},
		},
		{
			name:         "refused secret names the client id, never the secret",
			args:         []string{"get-token", "--login", "spn", "--tenant-id", testTenant, "--client-id", "spn-client", "--client-secret", secret},
			status:       http.StatusUnauthorized,
			wantErr:      []string{"aks token", "client id spn-client", "tenant " + testTenant, "getting an Entra ID token"},
			wantNotInErr: []string{secret},
		},
		{
			name:    "spn without secret or certificate",
			args:    []string{"get-token", "--login", "spn", "--tenant-id", testTenant, "--client-id", "c"},
			status:  http.StatusOK,
			wantErr: []string{"aks token", "client id c", "neither a client secret nor a client certificate"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			srv := newEntraServer(t, tc.status, "entra-access-token")
			p, err := Recognise(&clientcmdapi.ExecConfig{Command: "kubelogin", Args: tc.args, Env: tc.env})
			if err != nil {
				t.Fatalf("Recognise: %v", err)
			}
			src, err := NewSource(ctx, p, Options{
				Getenv: func(string) string { return "" },
				Azure: AzureOptions{
					ClientOptions: azcore.ClientOptions{
						Cloud:     cloud.Configuration{ActiveDirectoryAuthorityHost: srv.URL + "/"},
						Transport: srv.Client(),
					},
					DisableInstanceDiscovery: true,
				},
			})
			var tok Token
			if err == nil {
				tok, err = src.Token(ctx)
			}
			if len(tc.wantErr) > 0 {
				var e *Error
				if !errors.As(err, &e) || e.Cloud != AKS {
					t.Fatalf("err = %v, want an aks *Error", err)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				for _, s := range tc.wantNotInErr {
					if strings.Contains(err.Error(), s) {
						t.Errorf("error contains the secret %q", s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Token: %v", err)
			}
			if tok.Value != "entra-access-token" {
				t.Errorf("token = %q", tok.Value)
			}
			if d := time.Until(tok.Expiry); d < 50*time.Minute || d > time.Hour+time.Minute {
				t.Errorf("expiry in %s, want about an hour", d)
			}
			form := srv.lastForm()
			if !strings.Contains(form["scope"], tc.wantScope) {
				t.Errorf("scope = %q, want %q", form["scope"], tc.wantScope)
			}
			for k, v := range tc.wantForm {
				if form[k] != v {
					t.Errorf("token request %s = %q, want %q", k, form[k], v)
				}
			}
		})
	}
}

func TestAzureCloud(t *testing.T) {
	tests := []struct {
		env, wantHost, wantErr string
	}{
		{"", cloud.AzurePublic.ActiveDirectoryAuthorityHost, ""},
		{"AzurePublicCloud", cloud.AzurePublic.ActiveDirectoryAuthorityHost, ""},
		{"AzureChinaCloud", cloud.AzureChina.ActiveDirectoryAuthorityHost, ""},
		{"AzureUSGovernmentCloud", cloud.AzureGovernment.ActiveDirectoryAuthorityHost, ""},
		{"AzureStackCloud", "", "unknown environment"},
	}
	for _, tc := range tests {
		c, err := azureCloud(tc.env)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err = %v, want %q", tc.env, err, tc.wantErr)
			}
			continue
		}
		if err != nil || c.ActiveDirectoryAuthorityHost != tc.wantHost {
			t.Errorf("%q: host %q, err %v; want %q", tc.env, c.ActiveDirectoryAuthorityHost, err, tc.wantHost)
		}
	}
}

// writeTestCertificate writes a self-signed certificate and its key as
// PEM, as a service principal's certificate file holds them.
func writeTestCertificate(t *testing.T) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "spn"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	_ = pem.Encode(&buf, &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	f := filepath.Join(t.TempDir(), "spn.pem")
	if err := os.WriteFile(f, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
