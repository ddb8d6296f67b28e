package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// ClusterAccess is the test cluster's API server and the bearer token its
// kubeconfig authenticates with.
func ClusterAccess(t testing.TB) (server, token string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.Clusters[ctx.Cluster] == nil || cfg.AuthInfos[ctx.AuthInfo] == nil || cfg.AuthInfos[ctx.AuthInfo].Token == "" {
		t.Fatalf("the test cluster's kubeconfig has no current context with a server and a token")
	}
	return cfg.Clusters[ctx.Cluster].Server, cfg.AuthInfos[ctx.AuthInfo].Token
}

// HostileStack is a stack whose spec's context reaches the cluster with
// what a spec may not bring by default.
type HostileStack struct {
	// Dir is the stack's folder, relative to the checkout.
	Dir string
	// Namespace is the one its spec creates.
	Namespace string
	// Refusal is what a refusal of it says, after "spec context ".
	Refusal []string
	// CloudIdentity says it needs the cloud-identity allowance, which
	// "exec, files" does not bring: it is refused with those too.
	CloudIdentity bool
}

// WriteHostileStacks writes under root three stacks of one Namespace and
// ConfigMap each, whose spec's context reaches the test cluster through:
// an exec plugin (a shell that touches marker, writes its environment to
// envDump and prints the cluster's token as an ExecCredential); a tokenFile
// outside the checkout holding the token (a file of the runner's); a
// KUBECONFIG_PATH naming the test cluster's kubeconfig, outside the
// checkout; the EKS plugin, its command a recorder named aws that touches
// marker+".cloud" (its token would be the runner's cloud identity's). Each is
// its own project. setting is the name refusals give.
func WriteHostileStacks(t testing.TB, root, suffix, marker, envDump, setting string) []HostileStack {
	t.Helper()
	server, token := ClusterAccess(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := func(user string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: pr-author, user: %s}]
contexts: [{name: test, context: {cluster: test, user: pr-author}}]
current-context: test
`, server, user)
	}
	credential := fmt.Sprintf(`{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}`, token)
	script := fmt.Sprintf("touch %s; env > %s; printf '%%s' '%s'", marker, envDump, credential)
	aws := filepath.Join(t.TempDir(), "aws")
	if err := os.WriteFile(aws, []byte(fmt.Sprintf("#!/bin/sh\ntouch %s.cloud\nprintf '%%s' '%s'\n", marker, credential)), 0o755); err != nil {
		t.Fatal(err)
	}
	stacks := []struct {
		name, context string
		refusal       []string
		cloud         bool
	}{
		{"exec", "KUBECONFIG_CONTENT: " + quoteYAML(kubeconfig(fmt.Sprintf("{exec: {apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never, command: sh, args: [-c, %q]}}", script))),
			[]string{"KUBECONFIG_CONTENT: user", "pr-author", "exec (a credential plugin: it would run a command on the runner) is not allowed in a spec", "adding exec to " + setting}, false},
		{"tokenfile", "KUBECONFIG_CONTENT: " + quoteYAML(kubeconfig(fmt.Sprintf("{tokenFile: %q}", tokenFile))),
			[]string{"KUBECONFIG_CONTENT: user", "pr-author", "tokenFile (a file of the runner; write the token inline instead) is not allowed in a spec", "adding files to " + setting}, false},
		{"outside", "KUBECONFIG_PATH: " + quoteYAML(Kubeconfig(t)),
			[]string{"KUBECONFIG_PATH: the file lies outside the checkout", "adding files to " + setting}, false},
		{"cloud", "KUBECONFIG_CONTENT: " + quoteYAML(kubeconfig(fmt.Sprintf("{exec: {apiVersion: client.authentication.k8s.io/v1beta1, interactiveMode: Never, command: %q, args: [eks, get-token, --cluster-name, prod]}}", aws))),
			[]string{"KUBECONFIG_CONTENT: user", "pr-author", "the eks credential plugin (" + aws + ": its token, made from the runner's cloud identity, would be sent to the spec's server) is not allowed in a spec", "adding cloud-identity to " + setting}, true},
	}
	var out []HostileStack
	for _, s := range stacks {
		dir := "apps/" + s.name + "/dev"
		ns := "hostile-" + s.name + "-" + suffix
		files := map[string]string{
			"apps/" + s.name + "/project.yaml": "name: " + s.name + "-" + suffix + "\n",
			dir + "/stack.yaml":                "name: dev\n",
			dir + "/spec.yaml": fmt.Sprintf(`resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}
- id: v1:ConfigMap:%[1]s:settings
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: %[1]s}, data: {from: pr}}
context:
  %[2]s
`, ns, s.context),
		}
		for p, content := range files {
			full := filepath.Join(root, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, HostileStack{Dir: dir, Namespace: ns, Refusal: s.refusal, CloudIdentity: s.cloud})
	}
	return out
}

// quoteYAML writes s as a YAML double-quoted string (JSON's escapes are
// YAML's).
func quoteYAML(s string) string {
	return fmt.Sprintf("%q", s)
}
