package kubernetes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kubeconfig is a kubeconfig whose one user is user (YAML flow mapping).
func kubeconfig(cluster, user string) string {
	return "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: " + cluster + "}]\n" +
		"users: [{name: u, user: " + user + "}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
}

// TestFromSpecContext: what a spec's kubeconfig may bring. Every refusal
// names the field, the user or cluster, and the allowance; none repeats a
// value from the repository.
func TestFromSpecContext(t *testing.T) {
	checkout := t.TempDir()
	stack := filepath.Join(checkout, "apps", "dev")
	outside := t.TempDir()
	if err := os.MkdirAll(stack, 0o755); err != nil {
		t.Fatal(err)
	}
	const server = "{server: 'https://example.test:6443'}"
	inline := kubeconfig(server, "{token: inline-token-value}")
	for path, content := range map[string]string{
		filepath.Join(stack, "kubeconfig"):   inline,
		filepath.Join(outside, "kubeconfig"): inline,
		filepath.Join(outside, "token"):      "runner-secret-token",
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A link in the checkout to the runner's file, as a pull request may add.
	if err := os.Symlink(filepath.Join(outside, "kubeconfig"), filepath.Join(stack, "linked")); err != nil {
		t.Fatal(err)
	}
	const setting = "KUSIONPR_SPEC_KUBECONFIG_ALLOW"
	tests := []struct {
		name    string
		ctx     map[string]any
		allow   Allowance
		wantErr []string // empty: accepted
		host    string
	}{
		{name: "no kubeconfig", ctx: map[string]any{"AWS_REGION": "eu-west-1"}},
		{name: "inline credentials", ctx: map[string]any{ContextKubeconfigContent: inline}, host: "https://example.test:6443"},
		{name: "inline client certificate", ctx: map[string]any{ContextKubeconfigContent: kubeconfig("{server: 'https://a:1', certificate-authority-data: Zm9v}", "{client-certificate-data: Zm9v, client-key-data: Zm9v}")}, host: "https://a:1"},
		{name: "exec plugin", ctx: map[string]any{ContextKubeconfigContent: kubeconfig(server, "{exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, args: [-c, 'touch /tmp/pwned']}}")},
			wantErr: []string{`spec context KUBECONFIG_CONTENT: user "u": exec (a credential plugin: it would run a command on the runner) is not allowed in a spec; the operator allows it by adding exec to ` + setting}},
		{name: "exec plugin allowed", allow: Allowance{Exec: true}, ctx: map[string]any{ContextKubeconfigContent: kubeconfig(server, "{exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, interactiveMode: Never}}")}, host: "https://example.test:6443"},
		{name: "auth-provider", ctx: map[string]any{ContextKubeconfigContent: kubeconfig(server, "{auth-provider: {name: oidc, config: {idp-issuer-url: 'https://idp'}}}")},
			wantErr: []string{`user "u": auth-provider is not allowed in a spec; the operator allows it by adding auth-provider to ` + setting}},
		{name: "tokenFile", ctx: map[string]any{ContextKubeconfigContent: kubeconfig(server, "{tokenFile: "+filepath.Join(outside, "token")+"}")},
			wantErr: []string{`spec context KUBECONFIG_CONTENT: user "u": tokenFile (a file of the runner; write the token inline instead) is not allowed in a spec; the operator allows it by adding files to ` + setting}},
		{name: "tokenFile in the checkout", ctx: map[string]any{ContextKubeconfigContent: kubeconfig(server, "{tokenFile: kubeconfig}")},
			wantErr: []string{`user "u": tokenFile`}},
		{name: "key and certificate files", ctx: map[string]any{ContextKubeconfigContent: kubeconfig("{server: 'https://a:1', certificate-authority: /etc/ca.pem}", "{client-certificate: /etc/c.pem, client-key: /etc/k.pem}")},
			wantErr: []string{`user "u": client-certificate (`, `user "u": client-key (a file of the runner; write the client-key-data inline instead)`, `cluster "c": certificate-authority (`}},
		{name: "files allowed", allow: Allowance{Files: true}, ctx: map[string]any{ContextKubeconfigContent: kubeconfig(server, "{tokenFile: "+filepath.Join(outside, "token")+"}")}, host: "https://example.test:6443"},
		{name: "path in the checkout, relative to the stack", ctx: map[string]any{ContextKubeconfigPath: "kubeconfig"}, host: "https://example.test:6443"},
		{name: "path outside the checkout", ctx: map[string]any{ContextKubeconfigPath: filepath.Join(outside, "kubeconfig")},
			wantErr: []string{"spec context KUBECONFIG_PATH: the file lies outside the checkout, and a spec may name only files of its own repository; the operator allows it by adding files to " + setting}},
		{name: "relative path climbing out", ctx: map[string]any{ContextKubeconfigPath: "../../../" + filepath.Base(outside) + "/kubeconfig"},
			wantErr: []string{"KUBECONFIG_PATH: the file lies outside the checkout"}},
		{name: "link in the checkout to a file outside", ctx: map[string]any{ContextKubeconfigPath: "linked"},
			wantErr: []string{"KUBECONFIG_PATH: the file lies outside the checkout"}},
		{name: "path outside, files allowed", allow: Allowance{Files: true}, ctx: map[string]any{ContextKubeconfigPath: filepath.Join(outside, "kubeconfig")}, host: "https://example.test:6443"},
		{name: "missing file", ctx: map[string]any{ContextKubeconfigPath: "nope"}, wantErr: []string{"KUBECONFIG_PATH: no such file (a relative path is relative to the stack's folder)"}},
		// Kusion's workspaces name the runner's file; one that does not
		// exist is outside all the same, so an operator's may replace it.
		{name: "Kusion's /path/to/kubeconfig", ctx: map[string]any{ContextKubeconfigPath: "/path/to/kubeconfig"},
			wantErr: []string{"spec context KUBECONFIG_PATH: the file lies outside the checkout"}},
		{name: "Kusion's ~/.kube/config", ctx: map[string]any{ContextKubeconfigPath: "~/.kube/config"},
			wantErr: []string{"spec context KUBECONFIG_PATH: the file lies outside the checkout"}},
		{name: "missing, climbing out", ctx: map[string]any{ContextKubeconfigPath: "../../../nowhere/kubeconfig"},
			wantErr: []string{"spec context KUBECONFIG_PATH: the file lies outside the checkout"}},
		{name: "/path/to/kubeconfig, files allowed", allow: Allowance{Files: true}, ctx: map[string]any{ContextKubeconfigPath: "/path/to/kubeconfig"},
			wantErr: []string{"KUBECONFIG_PATH: no such file"}},
		{name: "not a string", ctx: map[string]any{ContextKubeconfigPath: 3}, wantErr: []string{"spec context KUBECONFIG_PATH: want a string, got a int"}},
		{name: "content wins over path", ctx: map[string]any{ContextKubeconfigContent: inline, ContextKubeconfigPath: "/etc/does-not-matter"}, host: "https://example.test:6443"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok, err := FromSpecContext(SpecContext{Context: tt.ctx, StackDir: stack, Root: checkout, Allow: tt.allow, Setting: setting})
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("accepted: %+v", c)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q\nlacks %q", err, want)
					}
				}
				outsideErr := strings.Contains(tt.wantErr[0], "outside the checkout")
				if errors.Is(err, ErrOutsideCheckout) != outsideErr {
					t.Errorf("errors.Is(err, ErrOutsideCheckout) = %v, want %v: %v", !outsideErr, outsideErr, err)
				}
				for _, secret := range []string{"runner-secret-token", "/tmp/pwned", outside, "inline-token-value"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("the error repeats %q: %v", secret, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.host == "" {
				if ok {
					t.Errorf("a context without a kubeconfig gave one: %+v", c)
				}
				return
			}
			if !ok || c.Loaded == nil || !c.ForceConflicts || !strings.HasPrefix(c.KubeconfigName, "the spec's context KUBECONFIG_") {
				t.Fatalf("ok %v, config %+v", ok, c)
			}
			rc, err := c.withDefaults().restConfig()
			if err != nil {
				t.Fatalf("rest config: %v", err)
			}
			if rc.Host != tt.host {
				t.Errorf("host %q, want %q", rc.Host, tt.host)
			}
		})
	}
}

func TestParseAllowance(t *testing.T) {
	a, err := ParseAllowance([]string{" exec", "Files", "", "none", "cloud-identity"})
	if err != nil || a != (Allowance{Exec: true, Files: true, CloudIdentity: true}) || a.String() != "exec,files,cloud-identity" {
		t.Errorf("got %+v (%s), %v", a, a, err)
	}
	if _, err := ParseAllowance([]string{"everything"}); err == nil || !strings.Contains(err.Error(), `unknown allowance "everything": want exec, auth-provider, files or cloud-identity`) {
		t.Errorf("unknown name: %v", err)
	}
	if (Allowance{}).String() != "none" {
		t.Error("the zero allowance should print as none")
	}
}
