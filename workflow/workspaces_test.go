package workflow

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// TestResolveWorkspace: which workspace a stack gets, and from where, for
// every combination of the release store (Kusion's layout, written as
// Kusion writes it) and the repository's workspaces/ folder; the store's
// copy wins and the repository's is reported not used; the default
// workspace is empty when it exists nowhere; anything else missing, or
// malformed, is an error naming where it looked or what it read.
func TestResolveWorkspace(t *testing.T) {
	ctx := context.Background()
	storeDev := &testenv.KusionWorkspace{
		Modules: map[string]*testenv.KusionModuleConfig{"service": {Configs: testenv.KusionConfigs{Default: map[string]any{"replicas": 3}}}},
		Context: map[string]any{"KUBECONFIG_PATH": "/etc/kube/store-dev"},
	}
	kusion := testenv.KusionWorkspaceFiles(t, []string{"dev"}, map[string]*testenv.KusionWorkspace{"dev": storeDev})
	const repoDev = "context:\n  KUBECONFIG_PATH: /etc/kube/repo-dev\n"
	for _, tc := range []struct {
		name      string
		store     map[string][]byte // nil: no store at all
		repo      map[string]string // files under the project folder
		workspace string
		ready     bool // the stack has a spec.yaml
		// want: Source, File (suffix), Unused; or err, fragments of the error.
		source, file, unused string
		kubeconfig           string
		// hint: the store's workspace named after the stack, not used.
		hint string
		err  []string
	}{
		{name: "store only", store: kusion, workspace: "dev",
			source: engine.WorkspaceFromStore, file: "/workspaces/dev.yaml", kubeconfig: "/etc/kube/store-dev"},
		{name: "store wins over the repository", store: kusion, repo: map[string]string{"workspaces/dev.yaml": repoDev}, workspace: "dev",
			source: engine.WorkspaceFromStore, file: "/workspaces/dev.yaml", unused: "workspaces/dev.yaml", kubeconfig: "/etc/kube/store-dev"},
		{name: "repository only", store: map[string][]byte{}, repo: map[string]string{"workspaces/dev.yaml": repoDev}, workspace: "dev",
			source: engine.WorkspaceFromRepository, file: "workspaces/dev.yaml", kubeconfig: "/etc/kube/repo-dev"},
		{name: "no store", repo: map[string]string{"workspaces/dev.yaml": repoDev}, workspace: "dev",
			source: engine.WorkspaceFromRepository, file: "workspaces/dev.yaml", kubeconfig: "/etc/kube/repo-dev"},
		{name: "Kusion's empty default", store: kusion, workspace: "default", source: engine.WorkspaceFromStore, file: "/workspaces/default.yaml", hint: "dev"},
		{name: "default nowhere", store: map[string][]byte{}, workspace: "default", source: engine.WorkspaceFromDefault},
		{name: "default nowhere, no store", workspace: "default", source: engine.WorkspaceFromDefault},
		{name: "a ready spec's workspace nowhere", store: map[string][]byte{}, workspace: "staging", ready: true, source: engine.WorkspaceFromNowhere},
		{name: "named workspace nowhere", store: kusion, workspace: "staging",
			err: []string{"generating needs a workspace: workspace staging: no file for it (looked for ", filepath.Join("workspaces", "staging.yaml"), "and the release store at file://", "does not list it in workspaces/.metadata.yml"}},
		{name: "a store file the metadata does not list", store: map[string][]byte{
			"workspaces/.metadata.yml": []byte("current: default\navailableWorkspaces:\n    - default\n"),
			"workspaces/prod.yaml":     kusion["workspaces/dev.yaml"],
		}, workspace: "prod",
			err: []string{"does not list it in workspaces/.metadata.yml: workspaces/prod.yaml is there, but a workspace exists only once the metadata lists it"}},
		{name: "listed without a file", store: map[string][]byte{
			"workspaces/.metadata.yml": []byte("availableWorkspaces: [prod]\n"),
		}, workspace: "prod",
			err: []string{"workspace prod: workspaces/.metadata.yml lists it, but workspaces/prod.yaml does not exist in the release store at file://"}},
		{name: "a malformed workspace in the store", store: map[string][]byte{
			"workspaces/.metadata.yml": []byte("availableWorkspaces: [dev]\n"),
			"workspaces/dev.yaml":      []byte("modules:\n    mysql:\n        version: 1.0.0\n"),
		}, repo: map[string]string{"workspaces/dev.yaml": repoDev}, workspace: "dev",
			err: []string{"workspace dev of the release store: file://", "/workspaces/dev.yaml: modules.mysql.path: required with modules.mysql.version"}},
		{name: "metadata that does not parse", store: map[string][]byte{
			"workspaces/.metadata.yml": []byte("availableWorkspaces: {dev: [\n"),
		}, repo: map[string]string{"workspaces/dev.yaml": repoDev}, workspace: "dev",
			err: []string{"workspace dev: the workspaces of the release store at file://", "decode workspaces metadata workspaces/.metadata.yml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			files := map[string]string{"project.yaml": "name: shop\n", "dev/stack.yaml": "name: dev\n"}
			for k, v := range tc.repo {
				files[k] = v
			}
			for name, body := range files {
				p := filepath.Join(root, filepath.FromSlash(name))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			st, err := project.LoadStack(root, filepath.Join(root, "dev"))
			if err != nil {
				t.Fatal(err)
			}
			var store WorkspaceStore
			where := ""
			if tc.store != nil {
				u := backend.FolderURL(t.TempDir())
				testenv.WriteKusionFiles(t, u, tc.store)
				s, err := backend.Open(ctx, u)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				store, where = s, backend.Location(u)
			}
			sw, err := ResolveWorkspace(ctx, st, tc.workspace, tc.ready, store, where, root)
			if len(tc.err) > 0 {
				if err == nil {
					t.Fatalf("resolved %+v, want an error", sw.Origin)
				}
				for _, frag := range tc.err {
					if !strings.Contains(err.Error(), frag) {
						t.Errorf("error %q lacks %q", err, frag)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o := sw.Origin
			if o.Source != tc.source || !strings.HasSuffix(o.File, tc.file) || o.Unused != tc.unused || o.StoreHasStack != tc.hint {
				t.Errorf("origin %+v, want source %q, file ending %q, unused %q, the store's workspace named after the stack %q", o, tc.source, tc.file, tc.unused, tc.hint)
			}
			if tc.source == engine.WorkspaceFromNowhere {
				if sw.Workspace != nil {
					t.Errorf("a workspace %+v where none exists", sw.Workspace)
				}
				return
			}
			if got, _ := sw.Workspace.Context["KUBECONFIG_PATH"].(string); got != tc.kubeconfig {
				t.Errorf("context KUBECONFIG_PATH %q, want %q", got, tc.kubeconfig)
			}
		})
	}
}

// TestContextDiffers: the keys (never the values) in which a ready spec's
// context differs from its workspace's; numbers compare as JSON does.
func TestContextDiffers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spec, ws map[string]any
		want     []string
	}{
		{"both empty", nil, map[string]any{}, nil},
		{"the same", map[string]any{"KUBECONFIG_PATH": "/k", "n": float64(2)}, map[string]any{"KUBECONFIG_PATH": "/k", "n": 2}, nil},
		{"another workspace's", map[string]any{"KUBECONFIG_PATH": "/dev"}, map[string]any{"KUBECONFIG_PATH": "/prod"}, []string{"KUBECONFIG_PATH"}},
		{"generated with a workspace, released under an empty one", map[string]any{"KUBECONFIG_PATH": "/dev", "AWS_REGION": "x"}, nil, []string{"AWS_REGION", "KUBECONFIG_PATH"}},
		{"a key only the workspace has", nil, map[string]any{"AWS_REGION": "x"}, []string{"AWS_REGION"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := contextDiffers(tc.spec, tc.ws); !slices.Equal(got, tc.want) {
				t.Errorf("contextDiffers = %q, want %q", got, tc.want)
			}
		})
	}
}
