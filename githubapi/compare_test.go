package githubapi_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// TestCompareFiles: the files that differ between two commits, each with
// how it changed; the same tree twice differs in nothing.
func TestCompareFiles(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	c, err := githubapi.New("ghs_token", gh.URL, "octo", "infra", nil)
	if err != nil {
		t.Fatal(err)
	}
	tree := func(files map[string]string) string {
		dir := t.TempDir()
		for p, body := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	const base, head = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	gh.SetTree("octo", "infra", base, tree(map[string]string{"a/spec.yaml": "1", "b/spec.yaml": "same", "gone.txt": "x"}))
	gh.SetTree("octo", "infra", head, tree(map[string]string{"a/spec.yaml": "2", "b/spec.yaml": "same", "new/stack.yaml": "n"}))
	files, complete, err := c.CompareFiles(ctx, base, head)
	if err != nil || !complete {
		t.Fatalf("compare: %v, complete %v", err, complete)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Status+" "+f.Path)
	}
	slices.Sort(got)
	if want := []string{"added new/stack.yaml", "modified a/spec.yaml", "removed gone.txt"}; !slices.Equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
	if files, _, err := c.CompareFiles(ctx, base, base); err != nil || len(files) != 0 {
		t.Errorf("a commit against itself: %v, %v", files, err)
	}
}
