package githubapi_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

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

// TestContains: a branch holds its commit and the commits behind it, not a
// merge queue's group made on it nor a commit of another line.
func TestContains(t *testing.T) {
	gh := githubfake.New(t)
	c, err := githubapi.New("ghs_token", gh.URL, "octo", "infra", nil)
	if err != nil {
		t.Fatal(err)
	}
	const root, main, group, other = "a000000000000000000000000000000000000000", "b000000000000000000000000000000000000000", "c000000000000000000000000000000000000000", "d000000000000000000000000000000000000000"
	gh.SetParents("octo", "infra", root)
	gh.SetParents("octo", "infra", main, root)
	gh.SetParents("octo", "infra", group, main)
	gh.SetParents("octo", "infra", other, root)
	gh.SetBranch("octo", "infra", "main", main)
	for _, tc := range []struct {
		sha  string
		want bool
	}{{main, true}, {root, true}, {group, false}, {other, false}} {
		if got, err := c.Contains(t.Context(), "main", tc.sha); err != nil || got != tc.want {
			t.Errorf("main holds %s: %v, %v; want %v", tc.sha[:1], got, err, tc.want)
		}
	}
	// The queue lands the group: main is fast-forwarded to it.
	gh.SetBranch("octo", "infra", "main", group)
	if got, err := c.Contains(t.Context(), "main", group); err != nil || !got {
		t.Errorf("main holds the landed group: %v, %v", got, err)
	}
}

// TestCheckRunOf: the latest check run of a name made by the App, not one
// of the same name made by a workflow.
func TestCheckRunOf(t *testing.T) {
	gh := githubfake.New(t)
	c, err := githubapi.New("ghs_token", gh.URL, "octo", "infra", nil)
	if err != nil {
		t.Fatal(err)
	}
	const sha = "e000000000000000000000000000000000000000"
	app := githubfake.CheckApp{ID: 42, Slug: "kusionpr", Name: "kusionpr"}
	if st, err := c.CheckRunOf(t.Context(), sha, "kusion/preview", 42); err != nil || st.Status != "" {
		t.Errorf("no check run yet: %+v, %v", st, err)
	}
	gh.SetCheckRunBy("octo", "infra", sha, "kusion/preview", "success", githubfake.GitHubActions())
	if st, err := c.CheckRunOf(t.Context(), sha, "kusion/preview", 42); err != nil || st.Status != "" {
		t.Errorf("a workflow's check run of the same name counted: %+v, %v", st, err)
	}
	gh.SetCheckRunBy("octo", "infra", sha, "kusion/preview", "failure", app)
	if st, err := c.CheckRunOf(t.Context(), sha, "kusion/preview", 42); err != nil || st.Status != "completed" || st.Conclusion != "failure" {
		t.Errorf("the App's check run: %+v, %v", st, err)
	}
}

// TestCommitAndBranchHead: a commit's parents, message and author as
// GitHub answers them, and a branch's commit now; a branch that does not
// exist is an error, never a commit.
func TestCommitAndBranchHead(t *testing.T) {
	gh := githubfake.New(t)
	c, err := githubapi.New("ghs_token", gh.URL, "octo", "infra", nil)
	if err != nil {
		t.Fatal(err)
	}
	const base, head, merge = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222", "3333333333333333333333333333333333333333"
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	gh.SetCommit("octo", "infra", merge, githubfake.Commit{Message: "Merge pull request #9", AuthorEmail: "dev@example.com", AuthorDate: at}, base, head)
	gh.SetBranch("octo", "infra", "main", merge)
	got, err := c.Commit(t.Context(), merge)
	if err != nil {
		t.Fatal(err)
	}
	want := &githubapi.Commit{SHA: merge, Parents: []string{base, head}, Message: "Merge pull request #9", AuthorEmail: "dev@example.com", AuthorDate: at}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("commit %+v, want %+v", got, want)
	}
	if sha, err := c.BranchHead(t.Context(), "main"); err != nil || sha != merge {
		t.Errorf("the head of main: %q, %v", sha, err)
	}
	if sha, err := c.BranchHead(t.Context(), "gone"); err == nil {
		t.Errorf("a branch that does not exist has head %q", sha)
	}
}
