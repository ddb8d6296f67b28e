package workflow

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestAffectedStacks(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{
		"apps/web/project.yaml", "apps/web/dev/stack.yaml", "apps/web/prod/stack.yaml", "apps/web/modules/db/main.k",
		"apps/api/project.yaml", "apps/api/dev/stack.yaml", "apps/api/dev/conf/extra.yaml",
		"README.md", "shared/policies/base.yaml", "apps/workspaces/dev.yaml",
		"glob/*/stack.yaml", "glob/a/stack.yaml", "glob/[a]/stack.yaml",
	} {
		p := filepath.Join(root, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("name: x\n"), 0o644)
	}
	stacks := func(dirs ...string) []AffectedStack {
		var out []AffectedStack
		for _, d := range dirs {
			out = append(out, AffectedStack{Dir: d})
		}
		return out
	}
	tests := []struct {
		name  string
		files []ChangedFile
		sel   Selection
		want  []AffectedStack
	}{
		{"a file in a stack", []ChangedFile{{Path: "apps/web/dev/spec.yaml", Status: "modified"}}, Selection{}, stacks("apps/web/dev")},
		{"deep in a stack", []ChangedFile{{Path: "apps/api/dev/conf/extra.yaml", Status: "modified"}}, Selection{}, stacks("apps/api/dev")},
		{"project.yaml touches its stacks", []ChangedFile{{Path: "apps/web/project.yaml", Status: "modified"}}, Selection{}, stacks("apps/web/dev", "apps/web/prod")},
		{"a project's shared module", []ChangedFile{{Path: "apps/web/modules/db/main.k", Status: "modified"}}, Selection{}, stacks("apps/web/dev", "apps/web/prod")},
		{"a workspace above the projects", []ChangedFile{{Path: "apps/workspaces/dev.yaml", Status: "modified"}}, Selection{}, stacks("apps/api/dev", "apps/web/dev", "apps/web/prod")},
		{"a project's workspace", []ChangedFile{{Path: "apps/web/workspaces/prod.yaml", Status: "added"}}, Selection{}, stacks("apps/web/dev", "apps/web/prod")},
		{"outside every project", []ChangedFile{{Path: "README.md", Status: "modified"}}, Selection{}, nil},
		{"a shared glob touches all", []ChangedFile{{Path: "shared/policies/base.yaml", Status: "modified"}}, Selection{Shared: []string{"shared/**"}}, stacks("apps/api/dev", "apps/web/dev", "apps/web/prod", "glob/*", "glob/[a]", "glob/a")},
		{"a stack filter", []ChangedFile{{Path: "apps/web/project.yaml", Status: "modified"}}, Selection{Stacks: []string{"**/prod"}}, stacks("apps/web/prod")},
		{"a deleted stack", []ChangedFile{{Path: "apps/web/staging/stack.yaml", Status: "removed"}, {Path: "apps/web/staging/spec.yaml", Status: "removed"}},
			Selection{}, []AffectedStack{{Dir: "apps/web/staging", Deleted: true}}},
		{"named stacks", []ChangedFile{{Path: "apps/web/project.yaml", Status: "modified"}}, Selection{Dirs: []string{"apps/web/prod"}}, stacks("apps/web/prod")},
		{"a named stack is no glob", []ChangedFile{{Path: "apps/web/project.yaml", Status: "modified"}}, Selection{Dirs: []string{"apps/web/*", "**"}}, nil},
		{"a star names the folder called so", []ChangedFile{{Path: "glob/a/x", Status: "modified"}, {Path: "glob/*/x", Status: "modified"}, {Path: "glob/[a]/x", Status: "modified"}},
			Selection{Dirs: []string{"glob/*"}}, stacks("glob/*")},
		{"brackets name the folder called so", []ChangedFile{{Path: "glob/a/x", Status: "modified"}, {Path: "glob/[a]/x", Status: "modified"}},
			Selection{Dirs: []string{"glob/[a]"}}, stacks("glob/[a]")},
		{"a rename out of a stack", []ChangedFile{{Path: "apps/api/dev/new.yaml", PreviousPath: "apps/web/dev/old.yaml", Status: "renamed"}}, Selection{}, stacks("apps/api/dev", "apps/web/dev")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AffectedStacks(root, tt.files, tt.sel)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == nil {
				want = []AffectedStack{}
			}
			// Order is by folder.
			sortStacks(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("AffectedStacks = %+v, want %+v", got, want)
			}
		})
	}
}

func sortStacks(s []AffectedStack) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j].Dir < s[i].Dir {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}
