package main

import (
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// TestRefusedCommentShowsInItsCheck drives the real action through a
// three-stack pull request whose first write GitHub answers 502: a comment
// POST, which is not sent again since GitHub may have taken it. That stack
// still ends with a visible result: its check run fails with a title
// starting "comment not posted", and every other stack has its comment and
// its successful check.
func TestRefusedCommentShowsInItsCheck(t *testing.T) {
	pr := newThreeStackPR(t)
	gh := githubfake.New(t)
	gh.ServerErrorOnce("POST")
	const number = 11
	run, o, r := pr.preview(t, gh, number, "4444444444444444444444444444444444444444", nil)
	if run.code == 0 {
		t.Errorf("the action passed although a stack's comment was refused")
	}
	commented := map[string]bool{}
	for _, c := range gh.Comments(o, r, number) {
		if m := markerRE.FindStringSubmatch(c.Body); m != nil {
			commented[m[2]] = true
		}
	}
	checks := map[string]githubfake.CheckRun{}
	for _, c := range gh.CheckRuns(o, r) {
		checks[strings.TrimPrefix(c.Name, "kusion/preview: ")] = c
	}
	missing := 0
	for _, s := range prStacks {
		ck, ok := checks[s]
		if !ok {
			t.Errorf("stack %s has no check run", s)
			continue
		}
		if commented[s] {
			if ck.Conclusion != "success" {
				t.Errorf("stack %s: commented, but its check concluded %q (%s)", s, ck.Conclusion, ck.Title)
			}
			continue
		}
		missing++
		if ck.Conclusion != "failure" || !strings.HasPrefix(ck.Title, "comment not posted") {
			t.Errorf("stack %s has no comment and its check (%s, %q) does not say so", s, ck.Conclusion, ck.Title)
		}
	}
	if missing != 1 {
		t.Errorf("%d stacks without a comment, want exactly the one whose POST was refused", missing)
	}
}
