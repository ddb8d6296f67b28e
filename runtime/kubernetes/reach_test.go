package kubernetes

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/model"
)

// TestReachErrorNamesTheCluster: a cluster that cannot be reached (nothing
// listens, or it refuses the credentials) fails each call with an error
// naming the kubeconfig as the operator knows it (the setting, or the
// file), its context and the server; never a credential, not even one
// written into the server's URL.
func TestReachErrorNamesTheCluster(t *testing.T) {
	unauthorized := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
	}))
	t.Cleanup(unauthorized.Close)
	const token = "reach-t0ken-93715"
	kubeconfig := func(server string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: ci, user: {token: %s}}]
contexts: [{name: gone, context: {cluster: c, user: ci}}, {name: other, context: {cluster: c, user: ci}}]
current-context: gone
`, server, token)
	}
	// A GKE plugin's user, its token from a local token endpoint.
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"ya29.reach-t0ken","token_type":"Bearer","expires_in":3600}`)
	}))
	t.Cleanup(tokens.Close)
	adc := filepath.Join(t.TempDir(), "adc.json")
	if err := os.WriteFile(adc, []byte(`{"type":"authorized_user","client_id":"c.apps.googleusercontent.com","client_secret":"s","refresh_token":"r","token_uri":"`+tokens.URL+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	gke := strings.Replace(kubeconfig(unauthorized.URL), "{token: "+token+"}",
		"{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: gke-gcloud-auth-plugin, interactiveMode: Never, env: [{name: GOOGLE_APPLICATION_CREDENTIALS, value: '"+adc+"'}]}}", 1)
	dir := t.TempDir()
	file := filepath.Join(dir, "dev.kubeconfig")
	if err := os.WriteFile(file, []byte(kubeconfig("https://127.0.0.1:1")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		env  string // $KUBECONFIG
		want []string
	}{
		{"the input's content", Config{KubeconfigContent: kubeconfig("https://127.0.0.1:1"), KubeconfigName: "the input kubeconfig"}, "",
			[]string{"connection refused", `(cluster: server https://127.0.0.1:1, context "gone", kubeconfig the input kubeconfig)`}},
		{"a workspace's file", Config{Kubeconfig: file, KubeconfigName: "the input kubeconfigs, workspace dev"}, "",
			[]string{`(cluster: server https://127.0.0.1:1, context "gone", kubeconfig ` + file + ` (the input kubeconfigs, workspace dev))`}},
		{"$KUBECONFIG, another context", Config{Context: "other"}, file,
			[]string{`context "other", kubeconfig ` + file + ` ($KUBECONFIG)`}},
		{"credentials in the server's URL", Config{KubeconfigContent: kubeconfig("https://admin:url-passw0rd@127.0.0.1:1")}, "",
			[]string{"server https://127.0.0.1:1,", "kubeconfig the kubeconfig given as content"}},
		{"credentials refused (401)", Config{KubeconfigContent: kubeconfig(unauthorized.URL), KubeconfigName: "the input kubeconfig"}, "",
			[]string{"the server has asked for the client to provide credentials", "(cluster: server " + unauthorized.URL + `, context "gone", kubeconfig the input kubeconfig)`}},
		{"a cloud token refused (401)", Config{KubeconfigContent: gke, KubeconfigName: "the input kubeconfig", CloudTokens: true}, "",
			[]string{"the server has asked for the client to provide credentials: the cluster refused the gke token for authorized_user credentials of OAuth client c.apps.googleusercontent.com (cluster: server " + unauthorized.URL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.env)
			rt, err := New(t.Context(), tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			res := model.Resource{ID: "v1:ConfigMap:default:a", Type: model.Kubernetes,
				Attributes: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "namespace": "default"}}}
			_, readErr := rt.Read(t.Context(), nil, res)
			_, applyErr := rt.Apply(t.Context(), nil, res, true)
			for _, err := range []error{readErr, applyErr} {
				var re *ReachError
				if !errors.As(err, &re) {
					t.Fatalf("not a ReachError: %v", err)
				}
				for _, want := range tc.want {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q\nlacks %q", err, want)
					}
				}
				for _, secret := range []string{token, "url-passw0rd", "ya29.reach-t0ken"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("the error holds %q: %v", secret, err)
					}
				}
				if strings.Count(err.Error(), "(cluster: ") != 1 {
					t.Errorf("the cluster is named %d times: %v", strings.Count(err.Error(), "(cluster: "), err)
				}
			}
		})
	}
}

// TestOtherErrorsNameNoCluster: an answer of the server (a bad id here) is
// no failure to reach it, and is not dressed up as one.
func TestOtherErrorsNameNoCluster(t *testing.T) {
	rt := &Runtime{cluster: ClusterRef{Server: "https://example.test"}}
	for _, err := range []error{errors.New("id \"x\": bad apiVersion"), nil} {
		if got := rt.reach(err); got != err {
			t.Errorf("reach(%v) = %v", err, got)
		}
	}
}
