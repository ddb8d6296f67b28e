package main

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// TestApplyButton: the preview's check run of a stack with changes offers
// an Apply button; pressed by a reader it is refused with the reason, as
// /kusion apply from them would be; pressed by a writer on the approved
// pull request it applies the stack, as /kusion apply.
func TestApplyButton(t *testing.T) {
	w := newWorld(t)
	const number, head = 41, "abababababababababababababababababababab"
	w.pullRequest(number, head)
	w.gh.SetPullRequestDetails(w.owner, w.repo, number, "author-dev", true)
	w.gh.SetPermission(w.owner, w.repo, "writer", "write")
	w.gh.SetPermission(w.owner, w.repo, "reviewer", "write")
	w.gh.SetPermission(w.owner, w.repo, "reader", "read")
	w.gh.SetReviews(w.owner, w.repo, number, []githubfake.Review{{User: "reviewer", State: "APPROVED"}})

	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "someone", "/kusion preview"))
	const check = "kusion/preview: apps/web/dev"
	var run githubfake.CheckRun
	w.waitFor("the preview's check run", func() bool {
		for _, c := range w.gh.CheckRuns(w.owner, w.repo) {
			if c.Name == check && c.HeadSHA == head {
				run = c
				return true
			}
		}
		return false
	})
	if !slices.ContainsFunc(run.Actions, func(a githubfake.CheckAction) bool { return a.Identifier == "apply" && a.Label == "Apply" }) {
		t.Fatalf("the check run of a stack with changes offers %+v, want an Apply button", run.Actions)
	}

	press := func(user string) {
		t.Helper()
		ev := w.payload("check_run", "requested_action")
		ev["repository"] = w.payload("pull_request", "closed")["repository"]
		cr := ev["check_run"].(map[string]any)
		cr["name"], cr["head_sha"], cr["id"] = check, head, float64(run.ID)
		cr["pull_requests"] = []any{map[string]any{"number": float64(number)}}
		ev["requested_action"] = map[string]any{"identifier": "apply"}
		ev["sender"] = map[string]any{"login": user, "type": "User"}
		if d := githubfake.Deliver(t, w.url+"/webhook", secret, "check_run", ev); d.Status != http.StatusAccepted {
			t.Fatalf("the press answered %d: %s", d.Status, d.Body)
		}
	}
	press("reader")
	w.waitFor("the reader's refusal", func() bool { return w.commentsContaining(number, "it needs write or admin permission") == 1 })
	if revs, _ := w.store().Revisions(t.Context(), "web", "default"); len(revs) != 0 {
		t.Fatalf("the reader's press applied: revisions %v", revs)
	}

	press("writer")
	w.waitFor("the writer's apply", func() bool { return w.commentsContaining(number, "Applied stack") == 1 })
	if got := kubectlGet(t, w.ns); got != "bot" {
		t.Errorf("the ConfigMap holds %q after the press", got)
	}
	rel, err := w.store().Latest(t.Context(), "web", "default")
	if err != nil || rel == nil || rel.Origin == nil || rel.Origin.Actor != "writer" || rel.Origin.Command != "Apply button" || rel.Origin.SHA != head {
		t.Errorf("the release of the press: %+v, %v", rel, err)
	}
	if strings.Contains(w.logs(), `"level":"ERROR"`) {
		t.Errorf("the bot logged errors:\n%s", w.logs())
	}
}
