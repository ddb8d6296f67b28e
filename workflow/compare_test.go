package workflow

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/report"
)

// comparingGitHub answers a comparison of two commits as it is told.
type comparingGitHub struct {
	refusingGitHub
	base, head string
	files      []githubapi.File
	incomplete bool
	err        error
}

func (g *comparingGitHub) CompareFiles(_ context.Context, base, head string) ([]githubapi.File, bool, error) {
	g.base, g.head = base, head
	return g.files, !g.incomplete, g.err
}

// TestChangeAgainstItsBase: a change with a base commit (a merge queue's
// group) runs the stacks GitHub's comparison of the base with its commit
// changes; every stack when GitHub's list may be cut short; and fails,
// saying why, when the comparison does, or when its client cannot compare.
func TestChangeAgainstItsBase(t *testing.T) {
	const base, head = "5555555555555555555555555555555555555555", "4444444444444444444444444444444444444444"
	root := t.TempDir()
	for p, body := range map[string]string{
		"apps/project.yaml": "name: apps\n", "apps/dev/stack.yaml": "name: dev\n", "apps/dev/spec.yaml": "resources: []\n",
		"apps/prod/stack.yaml": "name: prod\n", "apps/prod/spec.yaml": "resources: []\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := report.New()
	if err != nil {
		t.Fatal(err)
	}
	dev := []githubapi.File{{Path: "apps/dev/spec.yaml", Status: "modified"}}
	for _, tc := range []struct {
		name       string
		gh         GitHub
		wantStacks []string
		wantErr    string
	}{
		{name: "the stacks the group changes", gh: &comparingGitHub{files: dev}, wantStacks: []string{"apps/dev"}},
		{name: "more files than GitHub lists", gh: &comparingGitHub{files: dev, incomplete: true}, wantStacks: []string{"apps/dev", "apps/prod"}},
		{name: "a comparison that fails", gh: &comparingGitHub{err: errors.New("GET .../compare: 502 Bad Gateway")}, wantErr: "compare the group with its base: GET .../compare: 502 Bad Gateway"},
		{name: "a client that cannot compare", gh: &refusingGitHub{}, wantErr: "cannot compare commits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if g, ok := tc.gh.(*comparingGitHub); ok {
				g.comments, g.checks = map[string]string{}, map[string]githubapi.Check{}
			} else {
				g := tc.gh.(*refusingGitHub)
				g.comments, g.checks = map[string]string{}, map[string]githubapi.Check{}
			}
			c := &Change{Root: root, SHA: head, Base: base, Command: Preview, GitHub: tc.gh, Renderer: r,
				Runner: &Runner{Runtimes: noRuntimes{}, Store: StoreConfig{Backend: "file://" + t.TempDir()}}, Request: Request{Workspace: "default"}}
			out, err := c.Run(context.Background())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g := tc.gh.(*comparingGitHub); g.base != base || g.head != head {
				t.Errorf("compared %s...%s, want %s...%s", g.base, g.head, base, head)
			}
			var got []string
			for _, so := range out.Stacks {
				got = append(got, so.Dir)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.wantStacks) {
				t.Errorf("stacks %v, want %v", got, tc.wantStacks)
			}
		})
	}
}
