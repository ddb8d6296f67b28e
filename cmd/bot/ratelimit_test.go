package main

import (
	"net/http"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// TestRateLimitWaitIsCounted: a merge whose comment GitHub first answers
// with a secondary rate limit (403, Retry-After: 1) is still applied and
// reported, and the bot's /metrics counts the time it waited.
func TestRateLimitWaitIsCounted(t *testing.T) {
	w := newWorld(t)
	const number, head, merge = 23, "cccccccccccccccccccccccccccccccccccccccc", "dddddddddddddddddddddddddddddddddddddddd"
	w.pullRequest(number, head)
	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)
	w.gh.SecondaryLimitOnOperation("issues/create-comment")

	delivered := githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge))
	if delivered.Status != http.StatusAccepted {
		t.Fatalf("merge delivery answered %d: %s", delivered.Status, delivered.Body)
	}
	w.waitFor("the apply's comment", func() bool { return w.commentsContaining(number, "Applied stack") == 1 })

	b := w.metrics()
	v, ok := gauge(b, "kusionpr_github_rate_limit_wait_seconds_total")
	if !ok {
		t.Fatalf("/metrics has no kusionpr_github_rate_limit_wait_seconds_total:\n%s", b)
	}
	if v < 1 {
		t.Errorf("kusionpr_github_rate_limit_wait_seconds_total %g, want at least the 1 s GitHub asked for", v)

	}
}
