package workflow

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/report"
)

// emptyStacks writes n stacks with nothing in them and the files a pull
// request touching each would list.
func emptyStacks(t *testing.T, n int) (root string, files []githubapi.File) {
	t.Helper()
	root = t.TempDir()
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("apps/project.yaml", "name: apps\n")
	for i := range n {
		s := "apps/s" + string(rune('a'+i))
		write(s+"/stack.yaml", "name: "+filepath.Base(s)+"\n")
		write(s+"/spec.yaml", "resources: []\n")
		files = append(files, githubapi.File{Path: s + "/spec.yaml", Status: "modified"})
	}
	return root, files
}

// TestCombinedReports: reported together, the stacks of a run get one
// comment and one check run, which vouch for each other when GitHub
// refuses one; a stack GitHub took neither of is named; a run above
// CombineAbove says why it is combined; on-change posts nothing when
// nothing changes; and switching marks the other way's comments outdated.
func TestCombinedReports(t *testing.T) {
	const key = "preview pull-request workspace=default"
	for _, tc := range []struct {
		name                     string
		comment                  string
		combineAbove             int
		refuseComment, refuseChk bool
		wantComment              string // "" for none
		wantCheckTitle           string
		wantUnreported           bool
	}{
		{name: "combined", comment: "combined", wantComment: "Preview of 4 stacks", wantCheckTitle: "4 stacks: 0 with changes, 0 failed"},
		{name: "above the threshold", combineAbove: 2, wantComment: "more than `KUSIONPR_COMBINE_ABOVE` (2)", wantCheckTitle: "4 stacks: 0 with changes, 0 failed"},
		{name: "on-change, nothing changes", comment: "on-change", combineAbove: 2, wantCheckTitle: "4 stacks: 0 with changes, 0 failed"},
		{name: "the comment refused", comment: "combined", refuseComment: true, wantCheckTitle: "comment not posted; 4 stacks: 0 with changes, 0 failed"},
		{name: "the check refused", comment: "combined", refuseChk: true, wantComment: "The check run `kusion/preview` could not be set"},
		{name: "both refused", comment: "combined", refuseComment: true, refuseChk: true, wantUnreported: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, files := emptyStacks(t, 4)
			gh := &refusingGitHub{files: files, refuseAllComments: tc.refuseComment, refuseAllChecks: tc.refuseChk,
				comments: map[string]string{"preview stack=apps/sa workspace=default": "an earlier comment of its own"}, checks: map[string]githubapi.Check{}}
			r, err := report.New()
			if err != nil {
				t.Fatal(err)
			}
			c := &Change{Root: root, Number: 1, SHA: "1111111111111111111111111111111111111111", Command: Preview, GitHub: gh, Renderer: r,
				Comment: tc.comment, CombineAbove: tc.combineAbove, CombineSetting: "KUSIONPR_COMBINE_ABOVE",
				Runner: &Runner{Runtimes: noRuntimes{}, Store: StoreConfig{Backend: "file://" + t.TempDir()}}, Request: Request{Workspace: "default"}}
			out, err := c.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !out.Combined || len(out.Stacks) != 4 {
				t.Fatalf("combined %v with %d stacks, want 4 reported together", out.Combined, len(out.Stacks))
			}
			body, posted := gh.comments[key]
			switch {
			case tc.wantComment == "" && posted:
				t.Errorf("a combined comment was posted:\n%s", body)
			case tc.wantComment != "" && !strings.Contains(body, tc.wantComment):
				t.Errorf("combined comment lacks %q:\n%s", tc.wantComment, body)
			}
			for name := range gh.checks {
				if name != "kusion/preview" {
					t.Errorf("check run %q: want the one overview only", name)
				}
			}
			if ck, ok := gh.checks["kusion/preview"]; tc.wantCheckTitle != "" && (!ok || ck.Title != tc.wantCheckTitle) {
				t.Errorf("overview check %+v, want titled %q", ck, tc.wantCheckTitle)
			}
			if (out.Err != nil) != (tc.refuseComment || tc.refuseChk) || out.Failed != (out.Err != nil) {
				t.Errorf("outcome error %v, failed %v", out.Err, out.Failed)
			}
			if got := len(out.Unreported) == 4; got != tc.wantUnreported {
				t.Errorf("unreported %v, want all four: %v", out.Unreported, tc.wantUnreported)
			}
			if why := gh.outdated["preview stack=apps/sa workspace=default"]; !strings.Contains(why, "now reported together, in one comment (as of 1111111)") {
				t.Errorf("the stack's own comment is outdated as %q", why)
			}
		})
	}
}
