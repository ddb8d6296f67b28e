package main

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// untouched fails the test if anything reached the cluster or the release
// store: the stack's Namespace is absent and no release was written.
func (w *world) untouched(s *backend.Store, what string) {
	w.t.Helper()
	if out, err := exec.Command("kubectl", "--kubeconfig", testenv.Kubeconfig(w.t), "get", "namespace", w.ns).CombinedOutput(); err == nil {
		w.t.Errorf("%s: the stack reached the cluster: %s", what, out)
	}
	if revs, err := s.Revisions(context.Background(), "web", "default"); err != nil || len(revs) != 0 {
		w.t.Errorf("%s: releases %v (%v), want none", what, revs, err)
	}
}

// refusal waits for the bot's refusal of the comment ev on pull request
// number and returns its text.
func (w *world) refusal(number int, ev map[string]any) string {
	w.t.Helper()
	var body string
	w.waitFor(fmt.Sprintf("the refusal on #%d", number), func() bool {
		for _, c := range w.gh.Comments(w.owner, w.repo, number) {
			if strings.Contains(c.Body, "`/kusion apply` refused: ") {
				body = c.Body
				return true
			}
		}
		return false
	})
	w.waitFor("the 👎 on the command", func() bool {
		return strings.Join(w.gh.Reactions(w.owner, w.repo, commentID(ev)), ",") == "eyes,-1"
	})
	return body
}

// TestApplyRefusedUnlessGitHubSaysReady: /kusion apply before merge by a
// writer, refused, with the reason, for each way the reviews, the merge
// state or the checks say the pull request is not ready, as GitHub means
// them. Nothing reaches the cluster or the release store.
func TestApplyRefusedUnlessGitHubSaysReady(t *testing.T) {
	w := newWorld(t)
	for user, perm := range map[string]string{"writer": "write", "reviewer": "write", "reader": "read", "triager": "triage"} {
		w.gh.SetPermission(w.owner, w.repo, user, perm)
	}
	s := w.store()
	const older = "0000000000000000000000000000000000000000"
	approved := []githubfake.Review{{User: "reviewer", State: "APPROVED"}}
	for i, tc := range []struct {
		name    string
		reviews []githubfake.Review
		state   string // mergeable_state
		checks  func(head string)
		want    string
	}{
		{"approved by a reader", []githubfake.Review{{User: "reader", State: "APPROVED"}}, "clean", nil,
			"not counted: `reader` has read permission on the repository, not write"},
		{"approved by a triager", []githubfake.Review{{User: "triager", State: "APPROVED"}}, "clean", nil,
			"not counted: `triager` has triage permission on the repository, not write"},
		{"approval of an older commit", []githubfake.Review{{User: "reviewer", State: "APPROVED", CommitID: older}}, "clean", nil,
			"not counted: `reviewer` approved 0000000, not the head"},
		{"approval of a commit force-pushed away (commit_id null)", []githubfake.Review{{User: "reviewer", State: "APPROVED", CommitGone: true}}, "clean", nil,
			"not counted: `reviewer` approved a commit no longer in the pull request (force-pushed away)"},
		{"approval taken back by a later change request", []githubfake.Review{{User: "reviewer", State: "APPROVED"}, {User: "reviewer", State: "CHANGES_REQUESTED"}}, "clean", nil,
			"it needs an approval of its head"},
		{"approval dismissed", []githubfake.Review{{User: "reviewer", State: "DISMISSED"}}, "clean", nil,
			"it needs an approval of its head"},
		{"blocked", approved, "blocked", nil, "merging is blocked by a rule of `master`"},
		{"behind", approved, "behind", nil, "the branch is behind `master`: update it first, an apply would revert what was merged since"},
		{"dirty", approved, "dirty", nil, "the branch conflicts with `master`: resolve the conflicts first"},
		{"draft", approved, "draft", nil, "the pull request is a draft"},
		{"unstable, not accepted by default", approved, "unstable", nil, "mergeable_state unstable"},
		{"a failed kusion/preview check run by GitHub Actions", approved, "clean", func(head string) {
			w.gh.SetCheckRunBy(w.owner, w.repo, head, "kusion/preview: apps/web/dev", "failure", githubfake.GitHubActions())
		}, "checks of the head are not green: `kusion/preview: apps/web/dev (by github-actions)`"},
		{"a failed status named like the bot's, set by someone else", approved, "clean", func(head string) {
			w.gh.SetStatus(w.owner, w.repo, head, "kusion/apply", "failure", "someone")
		}, "checks of the head are not green: `kusion/apply (by someone)`"},
	} {
		number, head := 300+i, fmt.Sprintf("%040x", 0xe000+i)
		w.pullRequest(number, head)
		w.gh.SetPullRequestDetails(w.owner, w.repo, number, "author-dev", true)
		w.gh.SetMergeableState(w.owner, w.repo, number, tc.state)
		w.gh.SetReviews(w.owner, w.repo, number, tc.reviews)
		if tc.checks != nil {
			tc.checks(head)
		}
		ev := w.prComment(number, "writer", "/kusion apply")
		if resp := githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", ev); resp.Status != http.StatusAccepted {
			t.Fatalf("%s: delivery answered %d: %s", tc.name, resp.Status, resp.Body)
		}
		if got := w.refusal(number, ev); !strings.Contains(got, tc.want) {
			t.Errorf("%s: the reply says\n  %s\nwant it to say %q", tc.name, got, tc.want)
		}
		w.untouched(s, tc.name)
	}
	for _, c := range w.gh.Calls() {
		if c.Operation == "repos/download-tarball-archive" {
			t.Errorf("a refused apply downloaded the repository: %s", c.Path)
		}
	}
}

// TestApplyWaitsForMergeability: GitHub answers mergeable null until it has
// computed it in the background; the bot asks again, and applies a clean
// pull request approved by a writer whose checks are green but for the
// bot's own failed ones.
func TestApplyWaitsForMergeability(t *testing.T) {
	w := newWorld(t)
	const number, head = 51, "5151515151515151515151515151515151515151"
	w.gh.SetPermission(w.owner, w.repo, "writer", "write")
	w.gh.SetPermission(w.owner, w.repo, "reviewer", "maintain")
	w.pullRequest(number, head)
	w.gh.SetPullRequestDetails(w.owner, w.repo, number, "author-dev", true)
	w.gh.SetMergeableAfter(w.owner, w.repo, number, 2, "clean")
	w.gh.SetReviews(w.owner, w.repo, number, []githubfake.Review{
		{User: "reviewer", State: "APPROVED", CommitID: "0000000000000000000000000000000000000000"},
		{User: "reviewer", State: "APPROVED"},
	})
	// The App's own failed preview (it is what an apply fixes) and a
	// status its bot user set do not count; others' passed.
	w.gh.SetCheckRunBy(w.owner, w.repo, head, "kusion/preview: apps/web/dev", "failure", w.gh.App())
	w.gh.SetStatus(w.owner, w.repo, head, "kusion/apply", "pending", w.gh.App().Slug+"[bot]")
	w.gh.SetCheckRunBy(w.owner, w.repo, head, "build", "success", githubfake.GitHubActions())
	w.gh.SetStatus(w.owner, w.repo, head, "ci/lint", "success", "ci-user")

	ev := w.prComment(number, "writer", "/kusion apply")
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", ev)
	w.waitFor("the apply's report", func() bool {
		return w.commentsContaining(number, "Applied stack") == 1 || w.commentsContaining(number, "refused") > 0
	})
	if w.commentsContaining(number, "refused") > 0 {
		t.Fatalf("refused: %+v\n%s", w.gh.Comments(w.owner, w.repo, number), w.logs())
	}
	if got := kubectlGet(t, w.ns); got != "bot" {
		t.Errorf("ConfigMap data.from = %q after the apply", got)
	}
	rel, err := w.store().Latest(context.Background(), "web", "default")
	if err != nil || rel == nil || rel.Revision != 1 || rel.Phase != "succeeded" {
		t.Errorf("latest release %+v (%v), want release 1 succeeded", rel, err)
	}
	reads := 0
	for _, c := range w.gh.Calls() {
		if c.Operation == "pulls/get" && strings.HasSuffix(c.Path, fmt.Sprintf("/pulls/%d", number)) {
			reads++
		}
	}
	if reads < 3 {
		t.Errorf("the pull request was read %d times; GitHub answered mergeable null twice, so the bot had to read it at least 3", reads)
	}
}

// TestApplyRefusedWhileMergeabilityUnknown: GitHub answers mergeable null
// past the bot's bound (30s): the apply of an approved, otherwise clean pull
// request is refused, saying GitHub has not computed mergeability yet, what
// it answered and to comment again; nothing reaches the cluster or the
// store.
func TestApplyRefusedWhileMergeabilityUnknown(t *testing.T) {
	w := newWorld(t)
	const number, head = 52, "5252525252525252525252525252525252525252"
	w.gh.SetPermission(w.owner, w.repo, "writer", "write")
	w.gh.SetPermission(w.owner, w.repo, "reviewer", "write")
	w.pullRequest(number, head)
	w.gh.SetPullRequestDetails(w.owner, w.repo, number, "author-dev", true)
	w.gh.SetMergeableAfter(w.owner, w.repo, number, 1_000_000, "clean")
	w.gh.SetReviews(w.owner, w.repo, number, []githubfake.Review{{User: "reviewer", State: "APPROVED"}})

	ev := w.prComment(number, "writer", "/kusion apply")
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", ev)
	got := w.refusal(number, ev)
	for _, want := range []string{
		"GitHub has not computed mergeability yet",
		"it still answered mergeable null, mergeable_state `unknown`",
		"comment `/kusion apply` again in a minute",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the reply says\n  %s\nwant it to say %q", got, want)
		}
	}
	w.untouched(w.store(), "mergeability unknown")
	reads := 0
	for _, c := range w.gh.Calls() {
		if c.Operation == "pulls/get" && strings.HasSuffix(c.Path, fmt.Sprintf("/pulls/%d", number)) {
			reads++
		}
	}
	if reads < 3 {
		t.Errorf("the pull request was read %d times before the refusal; the bot should have asked again", reads)
	}
}

// TestDeletedForkBot: a pull request whose head repository was deleted
// (head.repo null) is a fork: never applied, previewed against the prior
// release only.
func TestDeletedForkBot(t *testing.T) {
	w := newWorld(t)
	const number, head = 61, "6161616161616161616161616161616161616161"
	w.gh.SetPermission(w.owner, w.repo, "writer", "write")
	w.gh.SetPermission(w.owner, w.repo, "reviewer", "write")
	w.pullRequest(number, head)
	w.gh.SetPullRequestDetails(w.owner, w.repo, number, "forker", true)
	w.gh.SetHeadRepoDeleted(w.owner, w.repo, number)
	w.gh.SetReviews(w.owner, w.repo, number, []githubfake.Review{{User: "reviewer", State: "APPROVED"}})
	s := w.store()

	apply := w.prComment(number, "writer", "/kusion apply")
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", apply)
	if got := w.refusal(number, apply); !strings.Contains(got, "pull requests from forks are never applied") {
		t.Errorf("the refusal says %q", got)
	}
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "writer", "/kusion preview"))
	w.waitFor("the deleted fork's preview", func() bool { return w.commentsContaining(number, "Compared with the prior release only") == 1 })
	w.untouched(s, "a deleted fork")
}
