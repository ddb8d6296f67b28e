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
		{stack: "kcl", wantErr: "main.k needs the KCL compiler, which is not available here: write the AppConfigurations as YAML in main.yaml"},
		{stack: "none", wantErr: "no spec.yaml or main.yaml in"},
	}
	for _, tt := range tests {
		t.Run(tt.stack, func(t *testing.T) {
			st, err := LoadStack(filepath.Join(root, "p", tt.stack))
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
		st, err := LoadStack(filepath.Join(root, "apps", name))
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
