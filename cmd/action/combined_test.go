package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/mdcheck"
)

// TestCombinedComment: above combine-above, a pull request's stacks are
// reported in one comment, a section each, and one check run, and the
// job log says why; switching between the two ways marks the other's
// comments outdated, saying so, and edits the same comments in place.
func TestCombinedComment(t *testing.T) {
	pr := newThreeStackPR(t)
	gh := githubfake.New(t)
	const number = 21
	push := func(sha string, inputs map[string]string) (actionRun, string, string) {
		t.Helper()
		run, o, r := pr.preview(t, gh, number, sha, inputs)
		if run.code != 0 {
			t.Fatalf("action exited %d\n%s\n%s", run.code, run.stdout, run.stderr)
		}
		return run, o, r
	}

	// 1. Three stacks, more than combine-above: one comment, one check.
	run, o, r := push("1111111111111111111111111111111111111111", map[string]string{"INPUT_COMBINE-ABOVE": "2"})
	comments := gh.Comments(o, r, number)
	if len(comments) != 1 || !strings.HasPrefix(comments[0].Body, "<!-- kusionpr:preview pull-request workspace=default -->") {
		t.Fatalf("comments %+v, want one combined comment", comments)
	}
	combined := comments[0]
	body := combined.Body
	for _, s := range prStacks {
		if !strings.Contains(body, "<details><summary><code>"+s+"</code>: 📝 changes</summary>") {
			t.Errorf("the comment has no section for %s:\n%s", s, body)
		}
	}
	if strings.Contains(body, pr.repo.secret) {
		t.Errorf("the comment shows a Secret's value")
	}
	if !strings.Contains(body, "This change touches 3 stacks, more than `combine-above` (2)") {
		t.Errorf("the comment does not say why it is combined:\n%s", body)
	}
	// A section per stack, each holding its three objects' sections.
	for _, p := range mdcheck.Check(body, mdcheck.Want{Details: 3 * 4, Data: prStacks}) {
		t.Error(p)
	}
	if !strings.Contains(run.stdout, "3 stacks are touched, more than combine-above (2): they are reported together") {
		t.Errorf("the job log does not say the stacks are reported together:\n%s", run.stdout)
	}
	checks := gh.CheckRuns(o, r)
	if len(checks) != 1 || checks[0].Name != "kusion/preview" || checks[0].Conclusion != "success" || checks[0].Title != "3 stacks: 3 with changes, 0 failed" {
		t.Errorf("check runs %+v, want one successful kusion/preview for the three stacks", checks)
	}
	var urls map[string][]string
	if err := json.Unmarshal([]byte(run.outputs["comment-urls"]), &urls); err != nil {
		t.Fatal(err)
	}
	for _, s := range prStacks {
		if u := urls[s]; len(u) != 1 || u[0] != combined.HTMLURL {
			t.Errorf("comment-urls of %s: %v, want the combined comment %s", s, u, combined.HTMLURL)
		}
	}

	// 2. combine-above 0: a comment each; the combined one is outdated.
	push("2222222222222222222222222222222222222222", map[string]string{"INPUT_COMBINE-ABOVE": "0"})
	perStack := map[string]int64{}
	for _, c := range gh.Comments(o, r, number) {
		switch m := markerRE.FindStringSubmatch(c.Body); {
		case c.ID == combined.ID:
			if !strings.Contains(c.Body, "**Outdated**: the stacks of this pull request are now reported one comment each (as of 2222222).") {
				t.Errorf("the combined comment is not marked outdated as it should be:\n%s", c.Body)
			}
		case m != nil:
			perStack[m[2]] = c.ID
		default:
			t.Errorf("unexpected comment %+v", c)
		}
	}
	if len(perStack) != 3 {
		t.Errorf("comments of stacks: %v, want one for each of %v", perStack, prStacks)
	}
	stacks, overview := stackChecks(gh.CheckRuns(o, r))
	if len(stacks) != 3 || len(overview) != 2 {
		t.Errorf("check runs: %d of stacks and %d overviews, want 3 and 2", len(stacks), len(overview))
	}

	// 3. comment: combined: the combined comment is current again, edited
	// in place; the stacks' comments are outdated.
	push("3333333333333333333333333333333333333333", map[string]string{"INPUT_COMMENT": "combined"})
	for _, c := range gh.Comments(o, r, number) {
		m := markerRE.FindStringSubmatch(c.Body)
		switch {
		case c.ID == combined.ID:
			if strings.Contains(c.Body, "Outdated") || !strings.Contains(c.Body, "at `3333333`") || strings.Contains(c.Body, "combine-above") {
				t.Errorf("the combined comment is not the current one, without a note on combine-above:\n%s", c.Body)
			}
		case m != nil && perStack[m[2]] == c.ID:
			if !strings.Contains(c.Body, "**Outdated**: the stacks of this pull request are now reported together, in one comment (as of 3333333).") {
				t.Errorf("the comment of %s is not marked outdated as it should be:\n%s", m[2], c.Body)
			}
		default:
			t.Errorf("unexpected comment %+v", c)
		}
	}
}

// TestCombinedCommentRefused: when GitHub refuses the combined comment,
// the check run says so, and the step fails.
func TestCombinedCommentRefused(t *testing.T) {
	pr := newThreeStackPR(t)
	gh := githubfake.New(t)
	gh.ServerErrorOnce("POST")
	const number = 22
	run, o, r := pr.preview(t, gh, number, "4444444444444444444444444444444444444444", map[string]string{"INPUT_COMMENT": "combined"})
	if run.code == 0 {
		t.Errorf("the step succeeded without its comment")
	}
	if c := gh.Comments(o, r, number); len(c) != 0 {
		t.Errorf("comments %+v, want none (refused)", c)
	}
	checks := gh.CheckRuns(o, r)
	if len(checks) != 1 || checks[0].Conclusion != "failure" || !strings.HasPrefix(checks[0].Title, "comment not posted; ") ||
		!strings.Contains(checks[0].Summary, "The comment of this pull request could not be posted") || !strings.Contains(checks[0].Summary, "502") {
		t.Errorf("check runs %+v, want one failure saying the comment was not posted, and why", checks)
	}
	if !strings.Contains(run.stdout, "posting the comment of the pull request") {
		t.Errorf("the step's error does not name the refused comment:\n%s", run.stdout)
	}
}

// TestCommentInputsChecked: a misspelt comment or combine-above input
// stops the step before anything runs, naming the input.
func TestCommentInputsChecked(t *testing.T) {
	for _, tc := range []struct{ env, value, want string }{
		{"INPUT_COMMENT", "sometimes", `input comment: "sometimes" is not always, on-change, combined or never`},
		{"INPUT_COMBINE-ABOVE", "-1", `input combine-above: "-1" is not a number of stacks (0 never combines)`},
		{"INPUT_COMBINE-ABOVE", "ten", `input combine-above: "ten" is not a number of stacks (0 never combines)`},
	} {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			gh := githubfake.New(t)
			ev := prEvent(t, 23, "5555555555555555555555555555555555555555")
			run := runAction(t, gh, t.TempDir(), "pull_request", ev, map[string]string{tc.env: tc.value, "INPUT_BACKEND": "file://" + t.TempDir()})
			if run.code != 2 || !strings.Contains(run.stdout, tc.want) {
				t.Errorf("exit %d, want 2 and %q in the log:\n%s", run.code, tc.want, run.stdout)
			}
			if n := len(gh.Calls()); n != 0 {
				t.Errorf("%d GitHub requests before the input was checked, want none", n)
			}
		})
	}
}
