package kubernetes

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// cloudPlugins are the exec entries of the managed clusters' kubeconfigs,
// as eksctl, aws eks update-kubeconfig, gcloud and az aks get-credentials
// write them (commands on no runner's PATH here).
var cloudPlugins = map[string]string{
	"eks":                   "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws, args: [--region, eu-west-1, eks, get-token, --cluster-name, demo], interactiveMode: Never}}",
	"aws-iam-authenticator": "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws-iam-authenticator, args: [token, -i, demo], interactiveMode: Never}}",
	"gke":                   "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: gke-gcloud-auth-plugin, interactiveMode: Never, provideClusterInfo: true}}",
	"aks":                   "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: kubelogin, args: [get-token, --login, workloadidentity, --server-id, 6dae42f8-4368-4678-94ff-3960e28e3630], interactiveMode: Never}}",
}

// TestSpecKubeconfigCloudPlugin: a spec's kubeconfig naming a cloud
// plugin is refused by default, naming the cloud-identity allowance, and
// the exec allowance does not bring it (the command would not run, so
// allowing commands is not lending the identity); only with
// cloud-identity is its token computed in process.
func TestSpecKubeconfigCloudPlugin(t *testing.T) {
	clouds := map[string]string{"eks": "eks", "aws-iam-authenticator": "eks", "gke": "gke", "aks": "aks"}
	for name, user := range cloudPlugins {
		t.Run(name, func(t *testing.T) {
			ctx := map[string]any{ContextKubeconfigContent: kubeconfig("{server: 'https://example.test:6443'}", user)}
			want := `user "u": the ` + clouds[name] + ` credential plugin (`
			hint := `its token, made from the runner's cloud identity, would be sent to the spec's server) is not allowed in a spec; the operator allows it by adding cloud-identity to KUSIONPR_SPEC_KUBECONFIG_ALLOW`
			for _, allow := range []Allowance{{}, {Exec: true, Files: true, AuthProvider: true}} {
				_, _, err := FromSpecContext(SpecContext{Context: ctx, StackDir: t.TempDir(), Allow: allow, Setting: "KUSIONPR_SPEC_KUBECONFIG_ALLOW"})
				if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), hint) {
					t.Fatalf("allowing %s: err = %v\nwant %s...%s", allow, err, want, hint)
				}
			}
			c, ok, err := FromSpecContext(SpecContext{Context: ctx, StackDir: t.TempDir(), Allow: Allowance{CloudIdentity: true}})
			if err != nil || !ok {
				t.Fatalf("allowed cloud-identity: ok %v, err %v", ok, err)
			}
			if !c.CloudTokens {
				t.Fatal("cloud-identity allowed, but the cloud plugin's token is not computed in process")
			}
			rc, err := c.withDefaults().restConfig()
			if err != nil {
				t.Fatal(err)
			}
			if rc.ExecProvider != nil {
				t.Error("the cloud plugin would still run as a command")
			}
		})
	}
	// cloud-identity lends a token, not the runner's credentials or files:
	// an entry steering them is refused even so.
	for name, user := range map[string]string{
		"authority-host": "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: kubelogin, args: [get-token, --login, spn, --authority-host, 'https://evil.example/'], interactiveMode: Never}}",
		"env":            "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: gke-gcloud-auth-plugin, interactiveMode: Never, env: [{name: GOOGLE_APPLICATION_CREDENTIALS, value: creds.json}]}}",
		"file":           "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: kubelogin, args: [get-token, --login, workloadidentity, --federated-token-file, /var/run/secrets/token], interactiveMode: Never}}",
		"certificate":    "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: kubelogin, args: [get-token, --login, spn, --client-id, c, --client-certificate, /etc/runner/spn.pem], interactiveMode: Never}}",
		// A token for Azure Resource Manager, not for a cluster.
		"server-id": "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: kubelogin, args: [get-token, --login, workloadidentity, --server-id, 'https://management.azure.com'], interactiveMode: Never}}",
		// Another role or profile than the runner's own identity.
		"role-arn": "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws, args: [eks, get-token, --cluster-name, prod, --role-arn, 'arn:aws:iam::111122223333:role/admin'], interactiveMode: Never}}",
		"profile":  "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws, args: [--profile, admin, eks, get-token, --cluster-name, prod], interactiveMode: Never}}",
	} {
		ctx := map[string]any{ContextKubeconfigContent: kubeconfig("{server: 'https://example.test:6443'}", user)}
		_, _, err := FromSpecContext(SpecContext{Context: ctx, StackDir: t.TempDir(), Allow: Allowance{CloudIdentity: true, Exec: true, Files: true}})
		if err == nil || !strings.Contains(err.Error(), "in a spec it takes the runner's environment as it is") {
			t.Errorf("%s: err = %v, want it refused", name, err)
		}
	}
	// cloud-identity lets no other exec entry run.
	other := map[string]any{ContextKubeconfigContent: kubeconfig("{server: 'https://example.test:6443'}", "{exec: {apiVersion: client.authentication.k8s.io/v1, command: vault-login, interactiveMode: Never}}")}
	if _, _, err := FromSpecContext(SpecContext{Context: other, StackDir: t.TempDir(), Allow: Allowance{CloudIdentity: true}}); err == nil || !strings.Contains(err.Error(), "adding exec to") {
		t.Errorf("another exec entry with cloud-identity allowed: err = %v, want it refused naming exec", err)
	}
}

// TestOperatorCloudTokens: with CloudTokens, a recognised plugin's exec
// entry is replaced by the in-process token, any other is left alone.
func TestOperatorCloudTokens(t *testing.T) {
	const server = "{server: 'https://example.test:6443'}"
	tests := []struct {
		name        string
		user        string
		cloudTokens bool
		wantExec    bool
		wantErr     string
	}{
		{name: "eks", user: cloudPlugins["eks"], cloudTokens: true},
		{name: "aws-iam-authenticator", user: cloudPlugins["aws-iam-authenticator"], cloudTokens: true},
		{name: "gke", user: cloudPlugins["gke"], cloudTokens: true},
		{name: "aks", user: cloudPlugins["aks"], cloudTokens: true},
		{name: "off", user: cloudPlugins["eks"], wantExec: true},
		{name: "unrecognised exec", user: "{exec: {apiVersion: client.authentication.k8s.io/v1, command: vault-login, interactiveMode: Never}}", cloudTokens: true, wantExec: true},
		{name: "kubelogin azurecli runs az, as before", user: "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: kubelogin, args: [get-token, --login, azurecli, --server-id, 6dae42f8-4368-4678-94ff-3960e28e3630], interactiveMode: Never}}", cloudTokens: true, wantExec: true},
		{name: "eks without a cluster", user: "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws, args: [eks, get-token], interactiveMode: Never}}", cloudTokens: true, wantErr: "no cluster name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := Config{KubeconfigContent: kubeconfig(server, tc.user), CloudTokens: tc.cloudTokens}.withDefaults().restConfig()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := rc.ExecProvider != nil; got != tc.wantExec {
				t.Errorf("exec entry kept = %v, want %v", got, tc.wantExec)
			}
			if !tc.wantExec && rc.WrapTransport == nil {
				t.Error("no bearer transport")
			}
		})
	}
}

// TestOperatorCloudTokensEndToEnd: an operator's GKE kubeconfig reaches
// the API server with the ADC token from a local token endpoint, and the
// plugin's command (absent here) never runs.
func TestOperatorCloudTokensEndToEnd(t *testing.T) {
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"ya29.e2e","token_type":"Bearer","expires_in":3600}`))
	}))
	defer tokens.Close()
	var auth []string
	// client-go sends credentials only over TLS.
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		_, _ = w.Write([]byte(`{}`))
	}))
	defer api.Close()

	adc, _ := json.Marshal(map[string]string{"type": "authorized_user", "client_id": "c.apps.googleusercontent.com", "client_secret": "s", "refresh_token": "r", "token_uri": tokens.URL})
	file := filepath.Join(t.TempDir(), "adc.json")
	if err := os.WriteFile(file, adc, 0o600); err != nil {
		t.Fatal(err)
	}
	user := "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: /nonexistent/gke-gcloud-auth-plugin, interactiveMode: Never, env: [{name: GOOGLE_APPLICATION_CREDENTIALS, value: '" + file + "'}]}}"
	rc, err := Config{KubeconfigContent: kubeconfig("{server: '"+api.URL+"', insecure-skip-tls-verify: true}", user), CloudTokens: true}.withDefaults().restConfig()
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(api.URL + "/version")
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	_ = resp.Body.Close()
	if len(auth) != 1 || auth[0] != "Bearer ya29.e2e" {
		t.Errorf("Authorization = %q, want Bearer ya29.e2e", auth)
	}
}
