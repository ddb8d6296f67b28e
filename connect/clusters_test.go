package connect

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
	"github.com/kusionpr/kusionpr/workflow"
)

// TestSpecKubeconfigRefusedBeforeAnything: a stack whose spec's context
// brings an exec plugin fails before a release is read or written or a
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
	f := &Factory{Clusters: Clusters{Setting: "KUSIONPR_SPEC_KUBECONFIG_ALLOW"}}
	runner := &workflow.Runner{Runtimes: f, Store: workflow.StoreConfig{Backend: "file://" + store}}

	// An apply: a check made after the stack was taken would leave a
	// release in the store.
	req, err := workflow.NewRequest(workflow.Apply, checkout, stack)
	if err != nil {
		t.Fatal(err)
	}
	run := runner.Run(context.Background(), req)
	want := "stack " + stack + `: spec context KUBECONFIG_CONTENT: user "evil": exec (a credential plugin: it would run a command on the runner) is not allowed in a spec; the operator allows it by adding exec to KUSIONPR_SPEC_KUBECONFIG_ALLOW`
	if run.Err == nil || run.Err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", run.Err, want)
	}
	// The store is open by then (it holds the operator's workspaces, read
	// before generating), but nothing is taken or written in it.
	var written []string
	filepath.WalkDir(store, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			written = append(written, p)
		}
		return nil
	})
	if len(written) > 0 {
		t.Errorf("the refused stack wrote into the release store: %v", written)
	}

	// The operator's kubeconfig for the workspace: the spec's is not even
	// read. Its cluster is unreachable, so the preview fails, differently.
	operator := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(operator, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"+
		"users: [{name: op, user: {token: operator-token}}]\ncontexts: [{name: x, context: {cluster: c, user: op}}]\ncurrent-context: x\n"), 0o600)
	f.Clusters.Kubeconfigs = map[string]string{"default": operator}
	preview := req
	preview.Command = workflow.Preview
	run = runner.Run(context.Background(), preview)
	if run.Err == nil || strings.Contains(run.Err.Error(), "not allowed in a spec") || !strings.Contains(run.Err.Error(), "127.0.0.1:1") {
		t.Errorf("with the operator's kubeconfig: %v; want a failure to reach its cluster", run.Err)
	}

	// Allowed, the plugin would run (it fails to give a credential here,
	// which does not matter): the allowance is what stood in its way.
	f.Clusters.Kubeconfigs = nil
	f.Clusters.SpecAllow = kubernetes.Allowance{Exec: true}
	runner.Run(context.Background(), preview)
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("with exec allowed the plugin did not run (%v): the test would not see it run when refused either", err)
	}
	os.Remove(marker)
	f.Clusters.SpecAllow = kubernetes.Allowance{}
	runner.Run(context.Background(), preview)
	if _, err := os.Stat(marker); err == nil {
		t.Error("the refused plugin ran")
	}
}

// TestOutsidePathTakesTheOperatorsKubeconfig: a spec's KUBECONFIG_PATH
// outside the checkout (Kusion's /path/to/kubeconfig, ~/.kube/config, a
// link out of the checkout) gives way to the operator's kubeconfig where
// there is one, and is refused where there is none. Nothing else of the
// spec's changes: its own kubeconfig content is judged as before, a
// missing file in the checkout is still an error, and with files allowed
// the path is read.
func TestOutsidePathTakesTheOperatorsKubeconfig(t *testing.T) {
	checkout := t.TempDir()
	stack := filepath.Join(checkout, "apps", "dev")
	if err := os.MkdirAll(stack, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "kubeconfig")
	plugged := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://spec.test:6443'}}]\n" +
		"users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, interactiveMode: Never}}}]\n" +
		"contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
	if err := os.WriteFile(outside, []byte(plugged), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(stack, "linked")); err != nil {
		t.Fatal(err)
	}
	const operator = "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://operator.test'}}]\n" +
		"users: [{name: op, user: {token: operator-token}}]\ncontexts: [{name: x, context: {cluster: c, user: op}}]\ncurrent-context: x\n"
	withOperator := Clusters{KubeconfigContent: operator, KubeconfigName: "the input kubeconfig", KubeconfigsName: "the input kubeconfigs", Setting: "the input spec-kubeconfig-allow"}
	noOperator := Clusters{KubeconfigName: "the input kubeconfig", KubeconfigsName: "the input kubeconfigs", Setting: "the input spec-kubeconfig-allow"}
	filesAllowed := withOperator
	filesAllowed.SpecAllow = kubernetes.Allowance{Files: true, Exec: true}
	path := func(p string) map[string]any { return map[string]any{kubernetes.ContextKubeconfigPath: p} }

	for _, tc := range []struct {
		name     string
		c        Clusters
		ctx      map[string]any
		operator bool     // the operator's kubeconfig is used
		spec     bool     // the spec's is used
		wantErr  []string // refused
	}{
		{name: "/path/to/kubeconfig", c: withOperator, ctx: path("/path/to/kubeconfig"), operator: true},
		{name: "~/.kube/config", c: withOperator, ctx: path("~/.kube/config"), operator: true},
		{name: "a file outside", c: withOperator, ctx: path(outside), operator: true},
		{name: "a link out of the checkout", c: withOperator, ctx: path("linked"), operator: true},
		{name: "no operator's kubeconfig", c: noOperator, ctx: path("/path/to/kubeconfig"),
			wantErr: []string{"spec context KUBECONFIG_PATH: the file lies outside the checkout", "adding files to the input spec-kubeconfig-allow",
				"or the operator gives the stacks a kubeconfig (the input kubeconfig or the input kubeconfigs), which takes its place"}},
		{name: "the spec's own content is judged as before", c: withOperator, ctx: map[string]any{kubernetes.ContextKubeconfigContent: plugged},
			wantErr: []string{`user "u": exec (a credential plugin: it would run a command on the runner) is not allowed in a spec`}},
		{name: "a missing file in the checkout", c: withOperator, ctx: path("nope"), wantErr: []string{"KUBECONFIG_PATH: no such file"}},
		{name: "files allowed: the path is read", c: filesAllowed, ctx: path("linked"), spec: true},
		{name: "no kubeconfig in the spec", c: withOperator, ctx: map[string]any{}, operator: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &project.Stack{Name: "dev", Path: stack}
			cfg, err := tc.c.kubernetesConfig(st, "dev", &model.Spec{Context: tc.ctx}, checkout, slog.New(slog.DiscardHandler))
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("accepted: %+v", cfg)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q\nlacks %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.KubeconfigContent == operator && cfg.KubeconfigName == "the input kubeconfig" && cfg.Loaded == nil; got != tc.operator {
				t.Errorf("the operator's kubeconfig used: %v, want %v (%+v)", got, tc.operator, cfg)
			}
			if got := cfg.Loaded != nil; got != tc.spec {
				t.Errorf("the spec's kubeconfig used: %v, want %v", got, tc.spec)
			}
		})
	}
}
