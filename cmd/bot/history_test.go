package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/model"
)

// mergeAs merges pull request number at sha with the world's tree, makes
// it the default branch's head, and waits for its apply's comment.
func (w *world) mergeAs(number int, sha string) {
	w.t.Helper()
	w.pullRequest(number, sha)
	w.gh.SetTree(w.owner, w.repo, sha, w.tree)
	w.gh.SetBranch(w.owner, w.repo, "master", sha)
	w.gh.MergePullRequest(w.owner, w.repo, number, sha)
	if d := githubfake.Deliver(w.t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, sha)); d.Status != http.StatusAccepted {
		w.t.Fatalf("merge delivery answered %d: %s", d.Status, d.Body)
	}
	w.waitFor("the apply's comment", func() bool { return w.commentsContaining(number, "Applied stack") == 1 })
}

// TestRollbackCommand: /kusion rollback on a pull request, by a writer,
// puts the stack back as an earlier release left it, through the gates
// of an apply: a reader is refused, the default branch's policies judge
// the plan (and refuse a rollback they deny, nothing changed), and the
// reply names the releases moved between, each with its pull request.
func TestRollbackCommand(t *testing.T) {
	w := newWorld(t)
	const m1, m2, m3 = "a100000000000000000000000000000000000000", "a200000000000000000000000000000000000000", "a300000000000000000000000000000000000000"
	w.mergeAs(31, m1)
	w.setConfigValue("two")
	w.mergeAs(32, m2)
	if got := kubectlGet(t, w.ns); got != "two" {
		t.Fatalf("after the second merge: %q", got)
	}
	w.gh.SetPermission(w.owner, w.repo, "alice", "write")
	w.gh.SetPermission(w.owner, w.repo, "bob", "read")
	reply := func(number int, want string) string {
		var found string
		w.waitFor("a reply saying "+want, func() bool {
			for _, c := range w.gh.Comments(w.owner, w.repo, number) {
				if strings.Contains(c.Body, want) {
					found = c.Body
					return true
				}
			}
			return false
		})
		return found
	}

	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(32, "bob", "/kusion rollback apps/web/dev 1"))
	reply(32, "it needs write or admin permission on the repository; @bob has read")

	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(32, "alice", "/kusion rollback apps/web/dev 1"))
	body := reply(32, "rolled `apps/web/dev` back to release 1")
	if !strings.Contains(body, "from release 2 (#32, `a20000000000`") || !strings.Contains(body, "now release 3, succeeded") {
		t.Errorf("the rollback's reply:\n%s", body)
	}
	// Release 1 applied the world's first value.
	if got := kubectlGet(t, w.ns); got != "bot" {
		t.Errorf("after the rollback to 1 the ConfigMap says %q, want bot", got)
	}
	rels := w.releases(w.store())
	if len(rels) != 3 {
		t.Fatalf("%d releases, want 3", len(rels))
	}
	if o := rels[2].Origin; o == nil || o.RollbackTo != 1 || o.Command != "rollback" || o.Actor != "alice" || o.Reason != "rollback to 1, asked by alice" {
		t.Errorf("release 3's origin: %+v", o)
	}

	// The default branch's policies deny what release 2 had.
	os.MkdirAll(filepath.Join(w.tree, "policy"), 0o755)
	os.WriteFile(filepath.Join(w.tree, "policy", "two.rego"), []byte(`package main

deny contains {"msg": "settings may not say two", "rule": "no-two"} if {
	some step in input.preview.changeSteps
	step.to.attributes.data.from == "two"
}
`), 0o644)
	w.gh.SetTree(w.owner, w.repo, m3, w.tree)
	w.gh.SetBranch(w.owner, w.repo, "master", m3)
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(32, "alice", "/kusion rollback apps/web/dev 2"))
	body = reply(32, "the rollback of `apps/web/dev` to release 2 failed")
	if !strings.Contains(body, "no-two") {
		t.Errorf("the refused rollback's reply:\n%s", body)
	}
	if got := kubectlGet(t, w.ns); got != "bot" {
		t.Errorf("after the refused rollback the ConfigMap says %q, want bot", got)
	}
	if n := len(w.releases(w.store())); n != 3 {
		t.Errorf("%d releases after the refused rollback, want 3 (nothing written)", n)
	}

	// A writer's pull request whose head drops the rule: the rollback
	// reads the default branch's policies, not the head's, and is refused
	// again.
	os.RemoveAll(filepath.Join(w.tree, "policy"))
	w.pullRequest(33, "a400000000000000000000000000000000000000")
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(33, "alice", "/kusion rollback apps/web/dev 2"))
	if body := reply(33, "the rollback of `apps/web/dev` to release 2 failed"); !strings.Contains(body, "no-two") {
		t.Errorf("a rollback from a pull request whose head drops the rule:\n%s", body)
	}
	if got := kubectlGet(t, w.ns); got != "bot" {
		t.Errorf("after the rollback from the loosened head the ConfigMap says %q, want bot", got)
	}
	if n := len(w.releases(w.store())); n != 3 {
		t.Errorf("%d releases after the rollback from the loosened head, want 3 (nothing written)", n)
	}
}

// TestCancelCommand: /kusion cancel by a writer stops a merge's apply
// waiting for a Deployment that cannot start: the runner sees it at its
// next heartbeat, cuts the wait short, applies nothing more and ends the
// release failed saying alice cancelled. A cancel with nothing running
// says so.
func TestCancelCommand(t *testing.T) {
	pending, _ := pendingDeployment(t)
	w := newWorld(t, withResources(pending), withEnv("KUSIONPR_LEASE=5s"))
	w.gh.SetPermission(w.owner, w.repo, "alice", "write")
	const number, merge = 41, "c100000000000000000000000000000000000000"
	w.pullRequest(number, merge)
	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.SetBranch(w.owner, w.repo, "master", merge)
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)
	githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge))
	s := w.store()
	w.waitApplying(s)

	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "alice", "/kusion cancel apps/web/dev"))
	w.waitFor("the release to end", func() bool {
		rel, err := s.Latest(context.Background(), "web", "default")
		return err == nil && rel != nil && rel.Phase.Ended()
	})
	rel, _ := s.Latest(context.Background(), "web", "default")
	if rel.Phase != model.PhaseFailed || !strings.HasPrefix(rel.Message, "cancelled by alice at ") {
		t.Errorf("the cancelled release: %s %q", rel.Phase, rel.Message)
	}
	if w.commentsContaining(number, "asked release 1 of `apps/web/dev`") != 1 {
		t.Errorf("no reply to the cancel: %+v", w.gh.Comments(w.owner, w.repo, number))
	}
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "alice", "/kusion cancel apps/web/dev"))
	for i := 0; i < 100 && w.commentsContaining(number, "nothing to cancel") == 0; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if w.commentsContaining(number, "nothing to cancel: `nothing is running on web/default: the latest release, 1, is failed`") != 1 {
		t.Errorf("the answer to a cancel with nothing running: %s", fmt.Sprint(w.gh.Comments(w.owner, w.repo, number)))
	}
}

// TestWorkflowRunIsCancelled: a merge's apply running in the repository's
// workflow (the github-actions executor), waiting for a Deployment that
// cannot start, is asked through the release store to stop (action cancel
// from a maintainer's machine, or any process with the store): the run's
// action sees it at its next heartbeat (the workflow's lease: 5s), applies
// nothing more and ends its release cancelled; the run fails, and the
// bot's report says so.
func TestWorkflowRunIsCancelled(t *testing.T) {
	pending, _ := pendingDeployment(t)
	w := newWorld(t, withActions(), withResources(pending), func(w *world) { w.runInputs = []string{"INPUT_LEASE=5s"} })
	repoID := int64(w.payload("pull_request", "closed")["repository"].(map[string]any)["id"].(float64))
	w.gh.SetWorkflow(w.owner, w.repo, "kusion-run.yml", githubfake.ReadWorkflow(t, exampleRunWorkflow))
	w.gh.OnDispatch(func(d githubfake.Dispatch) { w.runWorkflow(d, repoID) })
	const number, merge = 43, "c300000000000000000000000000000000000000"
	w.pullRequest(number, merge)
	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)
	githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge))
	s := w.store()
	w.waitApplying(s)
	if _, _, err := s.RequestCancel(context.Background(), "web", "default", "alice@laptop", "wrong image"); err != nil {
		t.Fatal(err)
	}
	w.waitFor("the workflow run's report", func() bool {
		return w.commentsContaining(number, "Applied stack") == 1 || w.commentsContaining(number, "cancelled by alice@laptop") > 0
	})
	rel, err := s.Latest(context.Background(), "web", "default")
	if err != nil || rel.Phase != model.PhaseFailed || !strings.HasPrefix(rel.Message, "cancelled by alice@laptop at ") {
		t.Fatalf("the release the run left: %+v, %v", rel, err)
	}
	w.waitFor("the report of the cancelled run", func() bool { return w.commentsContaining(number, "cancelled by alice@laptop") == 1 })
}
