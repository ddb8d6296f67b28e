package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// TestMergeAppliesCombined: with KUSIONPR_COMMENT=combined the bot reports
// a merge's applies in one comment for the pull request, a section per
// stack, and one check run, kusion/apply; a read GitHub fails once (502)
// is retried.
func TestMergeAppliesCombined(t *testing.T) {
	w := newWorld(t, withEnv("KUSIONPR_COMMENT=combined"))
	const number, head, merge = 41, "cccccccccccccccccccccccccccccccccccccccc", "dddddddddddddddddddddddddddddddddddddddd"
	w.pullRequest(number, head)
	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)
	// GitHub fails a read once (a 502): the bot retries it and goes on.
	w.gh.ServerErrorOnce("GET")
	if resp := githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge)); resp.Status != http.StatusAccepted {
		t.Fatalf("merge delivery answered %d: %s", resp.Status, resp.Body)
	}
	w.waitFor("the apply's comment", func() bool { return w.commentsContaining(number, "Applied 1 stack") == 1 })
	comments := w.gh.Comments(w.owner, w.repo, number)
	if len(comments) != 1 || !strings.HasPrefix(comments[0].Body, "<!-- kusionpr:apply pull-request workspace=default -->") ||
		!strings.Contains(comments[0].Body, "<details><summary><code>apps/web/dev</code>: 🚀 release 1 succeeded</summary>") {
		t.Fatalf("comments %+v, want one combined report with the stack's section", comments)
	}
	retried := false
	calls := w.gh.Calls()
	for i := 1; i < len(calls); i++ {
		if calls[i].Method == "GET" && calls[i-1].Method == "GET" && calls[i].Path == calls[i-1].Path && calls[i].At.Sub(calls[i-1].At) >= 900*time.Millisecond {
			retried = true
		}
	}
	if !retried {
		t.Errorf("no read was retried after a second: the 502 was not met")
	}
	var checks []githubfake.CheckRun
	w.waitFor("the check run", func() bool { checks = w.gh.CheckRuns(w.owner, w.repo); return len(checks) > 0 })
	if len(checks) != 1 || checks[0].Name != "kusion/apply" || checks[0].Conclusion != "success" || checks[0].HeadSHA != merge {
		t.Errorf("check runs %+v, want one successful kusion/apply on the merge", checks)
	}
}
