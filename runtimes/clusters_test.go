package runtimes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/runtime/kubernetes"
	"github.com/kusionpr/kusionpr/workflow"
)

// TestSpecKubeconfigRefusedBeforeAnything: a stack whose spec's context
// brings an exec plugin fails before the release store is opened or a
// client built; the plugin's command never runs. A kubeconfig the operator
// set for the stack's workspace wins over the spec's, so its plugin does
// not run either.
func TestSpecKubeconfigRefusedBeforeAnything(t *testing.T) {
	checkout := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	stack := filepath.Join(checkout, "apps", "dev")
	files := map[string]string{
		"apps/project.yaml":   "name: apps\n",
		"apps/dev/stack.yaml": "name: dev\n",
		"apps/dev/spec.yaml": `resources:
- id: v1:Namespace:plugged
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: plugged}}
context:
  KUBECONFIG_CONTENT: |
    apiVersion: v1
    kind: Config
    clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
    users: [{name: evil, user: {exec: {apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never, command: sh, args: [-c, "touch ` + marker + `"]}}}]
    contexts: [{name: x, context: {cluster: c, user: evil}}]
    current-context: x
`,
	}
	for p, content := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(checkout, p)), 0o755)
		if err := os.WriteFile(filepath.Join(checkout, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	store := filepath.Join(t.TempDir(), "releases")
	opts := workflow.Options{Backend: "file://" + store, CheckoutRoot: checkout}
	f := &Factory{Clusters: Clusters{Setting: "KUSIONPR_SPEC_KUBECONFIG_ALLOW"}}
	runner := &workflow.Runner{Runtimes: f}

	run := runner.RunStack(context.Background(), workflow.Preview, stack, opts)
	want := "stack " + stack + `: spec context KUBECONFIG_CONTENT: user "evil": exec (a credential plugin: it would run a command on the runner) is not allowed in a spec; the operator allows it by adding exec to KUSIONPR_SPEC_KUBECONFIG_ALLOW`
	if run.Err == nil || run.Err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", run.Err, want)
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Errorf("the release store was opened (%v): the check must come first", err)
	}

	// The operator's kubeconfig for the workspace: the spec's is not even
	// read. Its cluster is unreachable, so the preview fails, differently.
	operator := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(operator, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"+
		"users: [{name: op, user: {token: operator-token}}]\ncontexts: [{name: x, context: {cluster: c, user: op}}]\ncurrent-context: x\n"), 0o600)
	f.Clusters.Kubeconfigs = map[string]string{"default": operator}
	run = runner.RunStack(context.Background(), workflow.Preview, stack, opts)
	if run.Err == nil || strings.Contains(run.Err.Error(), "not allowed in a spec") || !strings.Contains(run.Err.Error(), "127.0.0.1:1") {
		t.Errorf("with the operator's kubeconfig: %v; want a failure to reach its cluster", run.Err)
	}

	// Allowed, the plugin would run (it fails to give a credential here,
	// which does not matter): the allowance is what stood in its way.
	f.Clusters.Kubeconfigs = nil
	f.Clusters.SpecAllow = kubernetes.Allowance{Exec: true}
	runner.RunStack(context.Background(), workflow.Preview, stack, opts)
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("with exec allowed the plugin did not run (%v): the test would not see it run when refused either", err)
	}
	os.Remove(marker)
	f.Clusters.SpecAllow = kubernetes.Allowance{}
	runner.RunStack(context.Background(), workflow.Preview, stack, opts)
	if _, err := os.Stat(marker); err == nil {
		t.Error("the refused plugin ran")
	}
}
