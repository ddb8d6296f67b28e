package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree writes files (path → content) under a new folder and returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestStackInput(t *testing.T) {
	root := tree(t, map[string]string{
		"p/project.yaml":    "name: p\n",
		"p/spec/stack.yaml": "name: spec\n", "p/spec/spec.yaml": "resources: []\n",
		"p/app/stack.yaml": "name: app\n", "p/app/main.yaml": "web: {}\n",
		"p/both/stack.yaml": "name: both\n", "p/both/spec.yaml": "resources: []\n", "p/both/main.yaml": "web: {}\n",
		"p/kcl/stack.yaml": "name: kcl\n", "p/kcl/main.k": "import kam\n",
		"p/kclspec/stack.yaml": "name: kclspec\n", "p/kclspec/main.k": "import kam\n", "p/kclspec/spec.yaml": "resources: []\n",
		"p/kclyaml/stack.yaml": "name: kclyaml\n", "p/kclyaml/main.k": "import kam\n", "p/kclyaml/main.yaml": "web: {}\n",
		"p/none/stack.yaml": "name: none\n",
	})
	tests := []struct {
		stack   string
		want    Input
		wantErr string
	}{
		{stack: "spec", want: SpecInput},
		{stack: "app", want: AppInput},
		{stack: "both", wantErr: "both spec.yaml and main.yaml in"},
		{stack: "kcl", want: KCLInput},
		{stack: "kclspec", want: SpecInput},
		{stack: "kclyaml", wantErr: "both main.k and main.yaml in"},
		{stack: "none", wantErr: "no spec.yaml, main.k or main.yaml in"},
	}
	for _, tt := range tests {
		t.Run(tt.stack, func(t *testing.T) {
			st, err := LoadStack("", filepath.Join(root, "p", tt.stack))
			if err != nil {
				t.Fatal(err)
			}
			got, err := st.Input()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Input = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestWorkspaceNameAndFile(t *testing.T) {
	root := tree(t, map[string]string{
		".git/HEAD":               "ref: refs/heads/main\n",
		"workspaces/shared.yaml":  "{}\n",
		"apps/project.yaml":       "name: apps\n",
		"apps/workspaces/dev.yml": "{}\n",
		"apps/dev/stack.yaml":     "name: dev\n",
		"apps/qa/stack.yaml":      "name: qa\nworkspace: shared\n",
		"apps/prod/stack.yaml":    "name: prod\n",
	})
	// A workspace above the repository root is not the repository's.
	outside := filepath.Join(filepath.Dir(root), "workspaces", "default.yaml")
	if err := os.MkdirAll(filepath.Dir(outside), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func(name string) *Stack {
		st, err := LoadStack("", filepath.Join(root, "apps", name))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	tests := []struct {
		stack, explicit string
		wantName        string
		wantFile        string // relative to root; "" for none
	}{
		{stack: "dev", wantName: "dev", wantFile: "apps/workspaces/dev.yml"},
		{stack: "qa", wantName: "shared", wantFile: "workspaces/shared.yaml"},
		{stack: "prod", wantName: "default"},
		{stack: "prod", explicit: "shared", wantName: "shared", wantFile: "workspaces/shared.yaml"},
	}
	for _, tt := range tests {
		st := load(tt.stack)
		name := st.WorkspaceName(tt.explicit)
		if name != tt.wantName {
			t.Errorf("%s: WorkspaceName(%q) = %s, want %s", tt.stack, tt.explicit, name, tt.wantName)
		}
		file, tried, err := st.WorkspaceFile(name)
		if tt.wantFile == "" {
			want := []string{filepath.Join(root, "apps", "workspaces", "default.yaml"), filepath.Join(root, "workspaces", "default.yaml")}
			if err == nil || strings.Join(tried, ",") != strings.Join(want, ",") || !strings.Contains(err.Error(), "workspace default: no file for it (looked for "+want[0]+", "+want[1]+")") {
				t.Errorf("%s: WorkspaceFile(%s) = %s, %v, tried %q", tt.stack, name, file, err, tried)
			}
			continue
		}
		if err != nil || file != filepath.Join(root, tt.wantFile) {
			t.Errorf("%s: WorkspaceFile(%s) = %s, %v; want %s", tt.stack, name, file, err, tt.wantFile)
		}
	}
	if _, _, err := load("dev").WorkspaceFile("../../etc/passwd"); err == nil || !strings.Contains(err.Error(), `workspace name "../../etc/passwd"`) {
		t.Errorf("a path as a workspace name: %v", err)
	}
}

// TestLookupsStopAtTheCheckout: a checkout lands in a shared folder (the
// bot's is under /tmp), where anyone may have left a project.yaml or a
// workspaces/ folder. With the checkout's root given, neither is read from
// above it, and a link inside it that leads out is refused.
func TestLookupsStopAtTheCheckout(t *testing.T) {
	above := tree(t, map[string]string{
		"project.yaml":              "name: planted\n",
		"workspaces/dev.yaml":       "context: {KUBECONFIG_PATH: /etc/planted}\n",
		"workspaces/default.yaml":   "{}\n",
		"secret.yaml":               "name: from-outside\n",
		"checkout/apps/stack.yaml":  "name: dev\n",
		"checkout/web/stack.yaml":   "name: dev\n",
		"checkout/web/project.yaml": "name: web\n",
	})
	checkout := filepath.Join(above, "checkout")

	// Without a root (one's own machine) the planted project is found;
	// with the checkout as root it is not.
	if st, err := LoadStack("", filepath.Join(checkout, "apps")); err != nil || st.Project.Name != "planted" {
		t.Fatalf("without a root: %+v, %v (the test's premise: the lookup walks up)", st, err)
	}
	_, err := LoadStack(checkout, filepath.Join(checkout, "apps"))
	if err == nil || !strings.Contains(err.Error(), "no project.yaml in "+filepath.Join(checkout, "apps")+" or any folder above it up to the checkout's root") {
		t.Errorf("project.yaml above the checkout: %v", err)
	}

	st, err := LoadStack(checkout, filepath.Join(checkout, "web"))
	if err != nil {
		t.Fatal(err)
	}
	if name := st.WorkspaceName(""); name != DefaultWorkspace {
		t.Errorf("WorkspaceName = %s: the workspace file above the checkout was taken for the stack's", name)
	}
	file, tried, err := st.WorkspaceFile("dev")
	if err == nil {
		t.Errorf("WorkspaceFile(dev) = %s, read from above the checkout", file)
	}
	if want := []string{filepath.Join(checkout, "web", "workspaces", "dev.yaml"), filepath.Join(checkout, "workspaces", "dev.yaml")}; strings.Join(tried, ",") != strings.Join(want, ",") {
		t.Errorf("looked for %q, want %q", tried, want)
	}

	// A stack folder outside the checkout is refused.
	if _, err := LoadStack(checkout, above); err == nil || !strings.Contains(err.Error(), "is not inside the checkout") {
		t.Errorf("a stack outside the checkout: %v", err)
	}

	// Links that lead out of the checkout are refused, wherever they sit.
	for _, link := range []string{"web/workspaces/dev.yaml", "project.yaml", "web/spec.yaml"} {
		t.Run(link, func(t *testing.T) {
			co := tree(t, map[string]string{"web/stack.yaml": "name: dev\n"})
			if link != "project.yaml" {
				os.WriteFile(filepath.Join(co, "web/project.yaml"), []byte("name: web\n"), 0o644)
			}
			p := filepath.Join(co, link)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.Symlink(filepath.Join(above, "secret.yaml"), p); err != nil {
				t.Fatal(err)
			}
			st, err := LoadStack(co, filepath.Join(co, "web"))
			if err == nil {
				if link == "web/spec.yaml" {
					_, err = st.Input()
				} else {
					_, _, err = st.WorkspaceFile("dev")
				}
			}
			if err == nil || !strings.Contains(err.Error(), p+" is a link to a file outside the checkout: refused") {
				t.Errorf("error = %v", err)
			}
			if err != nil && strings.Contains(err.Error(), "from-outside") {
				t.Errorf("the outside file's content is in the error: %v", err)
			}
		})
	}
}
