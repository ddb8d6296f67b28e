package connect

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/workflow"
)

// TestFactoryRuntimes: the factory refuses what the runtimes would refuse
// before any runtime exists, online or offline; an offline run gets no
// runtime; otherwise every resource type has one.
func TestFactoryRuntimes(t *testing.T) {
	st := &project.Stack{Name: "dev", Path: t.TempDir(), Project: &project.Project{Name: "apps"}}
	execKubeconfig := map[string]any{"KUBECONFIG_CONTENT": "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n" +
		"users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: sh}}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"}
	foreignProvider := model.Resource{ID: "evil:thing:thing:x", Type: model.Terraform, Attributes: map[string]any{},
		Extensions: map[string]any{"provider": "evil.example.com/evil/thing/1.0.0", "resourceType": "thing"}}
	for _, tc := range []struct {
		name     string
		spec     *model.Spec
		offline  bool
		wantErr  string // "" for none
		wantNone bool
	}{
		{name: "a plain spec", spec: &model.Spec{}},
		{name: "a destroy (no spec)"},
		{name: "a spec kubeconfig with exec", spec: &model.Spec{Context: execKubeconfig}, wantErr: "exec (a credential plugin"},
		{name: "offline, the spec kubeconfig is not read", spec: &model.Spec{Context: execKubeconfig}, offline: true, wantNone: true},
		{name: "a provider from anywhere", spec: &model.Spec{Resources: model.Resources{foreignProvider}}, wantErr: `"evil.example.com/evil/thing"`},
		{name: "offline, a provider from anywhere", spec: &model.Spec{Resources: model.Resources{foreignProvider}}, offline: true, wantErr: `"evil.example.com/evil/thing"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Factory{Clusters: Clusters{Setting: "KUSIONPR_SPEC_KUBECONFIG_ALLOW"}}
			rts, err := f.Runtimes(context.Background(), workflow.RuntimeTarget{Stack: st, Workspace: "dev", Spec: tc.spec, Offline: tc.offline})
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %s", err, tc.wantErr)
				}
				return
			case err != nil:
				t.Fatal(err)
			case tc.wantNone:
				if rts != nil {
					t.Fatalf("an offline run got runtimes: %v", rts)
				}
				return
			}
			for _, typ := range []model.ResourceType{model.Kubernetes, model.Terraform} {
				if rts[typ].Open == nil {
					t.Errorf("no runtime for %s", typ)
				}
			}
		})
	}
}

// TestKubeconfigPrecedence: the workspace's kubeconfig wins over the
// spec's, which wins over the operator's own (the action's input); with
// none of them the runtime looks where client-go does.
func TestKubeconfigPrecedence(t *testing.T) {
	st := &project.Stack{Name: "dev", Path: t.TempDir(), Project: &project.Project{Name: "apps"}}
	spec := &model.Spec{Context: map[string]any{"KUBECONFIG_CONTENT": "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://spec.example:6443'}}]\n" +
		"users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"}}
	ws, own := filepath.Join(t.TempDir(), "ws"), filepath.Join(t.TempDir(), "own")
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name       string
		c          Clusters
		spec       *model.Spec
		wantPath   string
		wantLoaded bool
	}{
		{name: "the workspace's", c: Clusters{Kubeconfigs: map[string]string{"dev": ws}, Kubeconfig: own}, spec: spec, wantPath: ws},
		{name: "the spec's", c: Clusters{Kubeconfig: own}, spec: spec, wantLoaded: true},
		{name: "the operator's own", c: Clusters{Kubeconfig: own}, wantPath: own},
		{name: "client-go's", c: Clusters{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := tc.c.kubernetesConfig(st, "dev", tc.spec, "", log)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Kubeconfig != tc.wantPath || (cfg.Loaded != nil) != tc.wantLoaded {
				t.Errorf("kubeconfig %q, loaded %v; want %q, %v", cfg.Kubeconfig, cfg.Loaded != nil, tc.wantPath, tc.wantLoaded)
			}
		})
	}
}

var _ workflow.RuntimeFactory = Factory{}

// TestOperatorKubeconfigNamed: a stack that reaches its cluster through the
// operator's own kubeconfig (the action's input) and finds none there is
// told which setting to fix, not only a temporary file's name; a stack with
// the workspace's kubeconfig is told that file's.
func TestOperatorKubeconfigNamed(t *testing.T) {
	st := &project.Stack{Name: "dev", Path: t.TempDir(), Project: &project.Project{Name: "apps"}}
	dir := t.TempDir()
	empty, ws := filepath.Join(dir, "kusionpr-kubeconfig"), filepath.Join(dir, "dev.kubeconfig")
	for _, p := range []string{empty, ws} {
		if err := os.WriteFile(p, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		c    Clusters
		want string
	}{
		{"the input", Clusters{Kubeconfig: empty, KubeconfigName: "input kubeconfig"},
			"kubernetes runtime: load kubeconfig " + empty + " (input kubeconfig): the file holds no current context"},
		{"the workspace's", Clusters{Kubeconfig: empty, KubeconfigName: "input kubeconfig", Kubeconfigs: map[string]string{"dev": ws}},
			"kubernetes runtime: load kubeconfig " + ws + " (workspace dev): the file holds no current context"},
		{"the workspace's, by its setting", Clusters{Kubeconfigs: map[string]string{"dev": ws}, KubeconfigsName: "KUSIONPR_KUBECONFIGS"},
			"kubernetes runtime: load kubeconfig " + ws + " (KUSIONPR_KUBECONFIGS, workspace dev): the file holds no current context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rts, err := Factory{Clusters: tc.c}.Runtimes(t.Context(), workflow.RuntimeTarget{Stack: st, Workspace: "dev", Spec: &model.Spec{}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = rts[model.Kubernetes].Open(t.Context())
			if err == nil || err.Error() != tc.want {
				t.Errorf("building the runtime: %v\nwant: %s", err, tc.want)
			}
		})
	}
}
