package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// A writer of the repository (who can push branches, open pull requests
// into them, approve and comment /kusion apply) attacks the rules the
// operator and the default branch set. Each test drives the bot binary.

// policyBase makes the default branch's commit base, whose policy/ holds
// the example policies, the head of master.
func policyBase(t *testing.T, w *world, base string) string {
	t.Helper()
	tree := t.TempDir()
	if err := os.CopyFS(tree, os.DirFS(w.tree)); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(tree, "policy"), os.DirFS("../../examples/policy")); err != nil {
		t.Fatal(err)
	}
	w.gh.SetTree(w.owner, w.repo, base, tree)
	w.gh.SetBranch(w.owner, w.repo, "master", base)
	return tree
}

// snapshot is a copy of the world's tree as it stands, with policy/ as
// the base tree holds it unless loosen deletes the rule denying a
// Deployment without limits.
func snapshot(t *testing.T, w *world, baseTree string, loosen bool) string {
	t.Helper()
	tree := t.TempDir()
	if err := os.CopyFS(tree, os.DirFS(w.tree)); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(tree, "policy"), os.DirFS(filepath.Join(baseTree, "policy"))); err != nil {
		t.Fatal(err)
	}
	if loosen {
		os.Remove(filepath.Join(tree, "policy", "limits.rego"))
	}
	return tree
}

// TestApplyOnlyIntoTheDefaultBranch: a writer pushes a branch weak whose
// policy/ lacks the rule that denies their change, and opens the change
// as a pull request into weak, approved: its preview works, judged by
// weak's rules, but neither /kusion apply, nor its Apply button, nor its
// merge applies anything; the same change into master is denied.
func TestApplyOnlyIntoTheDefaultBranch(t *testing.T) {
	w := newWorld(t)
	const base, weakHead, head, merge = "5100000000000000000000000000000000000000", "5200000000000000000000000000000000000000",
		"9200000000000000000000000000000000000000", "9300000000000000000000000000000000000000"
	const number = 92
	baseTree := policyBase(t, w, base)
	w.gh.SetTree(w.owner, w.repo, weakHead, snapshot(t, w, baseTree, true))
	w.gh.SetBranch(w.owner, w.repo, "weak", weakHead)
	withResources(unlimited)(w)
	w.gh.SetTree(w.owner, w.repo, head, snapshot(t, w, baseTree, true))
	w.gh.SetPullRequest(w.owner, w.repo, number, head, "weak", false)
	w.gh.SetPullFiles(w.owner, w.repo, number, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
	w.gh.SetPullRequestDetails(w.owner, w.repo, number, "author-dev", true)
	w.gh.SetReviews(w.owner, w.repo, number, []githubfake.Review{{User: "reviewer", State: "APPROVED"}})
	for user, role := range map[string]string{"reviewer": "write", "writer": "write", "admin": "admin"} {
		w.gh.SetPermission(w.owner, w.repo, user, role)
	}
	s := w.store()

	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "someone", "/kusion preview"))
	w.waitFor("the preview's check run", func() bool { return w.stackCheck("kusion/preview: apps/web/dev", head).Status == "completed" })
	c := w.stackCheck("kusion/preview: apps/web/dev", head)
	if c.Conclusion != "success" || len(c.Actions) != 0 {
		t.Errorf("the preview into weak: %s %q, buttons %+v; want a preview judged by weak's rules, with no Apply button", c.Conclusion, c.Title, c.Actions)
	}
	w.waitFor("the preview's comment", func() bool { return w.commentsContaining(number, "policy/ at 5200000, the head of weak") == 1 })

	ev := w.prComment(number, "writer", "/kusion apply")
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", ev)
	if got := w.refusal(number, ev); !strings.Contains(got, "it is into `weak`, and the bot applies only what goes into `master` (KUSIONPR_APPLY_BRANCHES): it is previewed, never applied") {
		t.Errorf("the apply into weak: %s", got)
	}
	// The button is not offered; a press forged from a captured one is
	// refused as the command.
	press := w.payload("check_run", "requested_action")
	press["repository"] = w.payload("pull_request", "closed")["repository"]
	cr := press["check_run"].(map[string]any)
	cr["name"], cr["head_sha"], cr["id"] = "kusion/preview: apps/web/dev", head, float64(c.ID)
	cr["pull_requests"] = []any{map[string]any{"number": float64(number)}}
	press["requested_action"] = map[string]any{"identifier": "apply"}
	press["sender"] = map[string]any{"login": "admin", "type": "User"}
	githubfake.Deliver(t, w.url+"/webhook", secret, "check_run", press)
	w.waitFor("the press refused", func() bool { return w.commentsContaining(number, "it is into `weak`") == 2 })

	w.gh.SetTree(w.owner, w.repo, merge, snapshot(t, w, baseTree, true))
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)
	mev := w.mergeEvent(number, merge)
	mev["pull_request"].(map[string]any)["base"].(map[string]any)["ref"] = "weak"
	if d := githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", mev); d.Status != http.StatusOK {
		t.Errorf("the merge into weak answered %d, want 200 (ignored): %s", d.Status, d.Body)
	}
	time.Sleep(2 * time.Second)
	w.untouched(s, "a pull request into weak")
	if !strings.Contains(w.logs(), "merge into a branch that does not apply ignored") {
		t.Errorf("the merge into weak was not said to be ignored:\n%s", w.logs())
	}
}

// The operator's rules: org-no-settings calls lower, org-small calls
// count, org-workspaces reads a set of package org. A repository's file
// compiled beside them could redefine lower and count in package main or
// add to the set; org-secrets keeps a value no repository may read.
const operatorRules = `package main

import data.org

deny contains {"msg": "the organisation allows no ConfigMap named settings", "rule": "org-no-settings"} if {
	some step in input.preview.changeSteps
	lower(step.to.attributes.metadata.name) == "settings"
}

deny contains {"msg": "a stack changes at most one object at once", "rule": "org-small"} if {
	count(input.preview.changeSteps) > 1
}

deny contains {"msg": "the organisation allows only the workspaces it lists", "rule": "org-workspaces"} if {
	not input.workspace in org.workspaces
}
`

const operatorData = `package org

workspaces contains "prod"

accounts := {"acct-4711-do-not-show"}
`

// TestRepositoryCannotLoosenTheOperatorsRules: merged pull requests whose
// base's policy/ redefines lower and count in package main, adds its
// workspace to the operator's set, or prints the operator's data: the
// operator's three rules still deny each merge, nothing is applied, and
// the operator's data shows nowhere.
func TestRepositoryCannotLoosenTheOperatorsRules(t *testing.T) {
	rules := t.TempDir()
	os.WriteFile(filepath.Join(rules, "org.rego"), []byte(operatorRules), 0o644)
	os.WriteFile(filepath.Join(rules, "data.rego"), []byte(operatorData), 0o644)
	w := newWorld(t, withEnv("KUSIONPR_POLICIES="+rules))
	s := w.store()
	for i, tc := range []struct {
		name, file string
	}{
		{"builtins redefined", "package main\n\nlower(_) := \"harmless\"\n\ncount(_) := 0\n"},
		{"the operator's set extended", "package org\n\nworkspaces contains \"default\"\n"},
		{"the operator's data read", "package main\n\nwarn contains msg if {\n\tmsg := sprintf(\"%v\", [data.org.accounts])\n}\n"},
	} {
		number := 93 + i
		base, head, merge := fmt.Sprintf("%040x", 0x9a0+i), fmt.Sprintf("%040x", 0x9b0+i), fmt.Sprintf("%040x", 0x9c0+i)
		tree := t.TempDir()
		os.CopyFS(tree, os.DirFS(w.tree))
		os.MkdirAll(filepath.Join(tree, "policy"), 0o755)
		os.WriteFile(filepath.Join(tree, "policy", "repo.rego"), []byte(tc.file), 0o644)
		w.gh.SetTree(w.owner, w.repo, base, tree)
		w.gh.SetTree(w.owner, w.repo, head, tree)
		w.gh.SetTree(w.owner, w.repo, merge, tree)
		w.gh.SetCommit(w.owner, w.repo, merge, githubfake.Commit{Message: "Merge"}, base, head)
		w.pullRequest(number, head)
		w.gh.SetTree(w.owner, w.repo, head, tree)
		w.gh.MergePullRequest(w.owner, w.repo, number, merge)
		githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge))
		w.waitFor(tc.name+": the merge's comment", func() bool { return w.commentsContaining(number, "#### Policy") == 1 })
		for _, rule := range []string{"org-no-settings", "org-small", "org-workspaces"} {
			if w.commentsContaining(number, "**Denied** by `"+rule+"` (the operator's)") != 1 {
				t.Errorf("%s: %s does not deny: %+v", tc.name, rule, w.gh.Comments(w.owner, w.repo, number))
			}
		}
		w.untouched(s, tc.name)
	}
	for _, c := range w.gh.Calls() {
		if strings.Contains(string(c.Body), "acct-4711") {
			t.Errorf("the operator's data reached GitHub: %s %s", c.Operation, c.Body)
		}
	}
	if strings.Contains(w.logs(), "acct-4711") {
		t.Error("the operator's data is in the bot's log")
	}
}

// TestMergeJudgedByTheRulesBeforeIt: a pull request that deletes the rule
// denying it is denied on its merge, with no override, whether merged as
// a merge commit or rebased (its first commit deleting the rule, its
// second adding the Deployment the rule denies): the rules are those of
// the commit it was merged onto, and the comment says which.
func TestMergeJudgedByTheRulesBeforeIt(t *testing.T) {
	w := newWorld(t)
	const base = "5300000000000000000000000000000000000000"
	baseTree := policyBase(t, w, base)
	withResources(unlimited)(w)
	loose := snapshot(t, w, baseTree, true)
	s := w.store()
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

	// A merge commit.
	const number, head, merge = 94, "9400000000000000000000000000000000000000", "9410000000000000000000000000000000000000"
	w.gh.SetTree(w.owner, w.repo, head, loose)
	w.gh.SetTree(w.owner, w.repo, merge, loose)
	w.gh.SetCommit(w.owner, w.repo, merge, githubfake.Commit{Message: "Merge pull request #94"}, base, head)
	w.gh.SetPullRequest(w.owner, w.repo, number, head, "master", false)
	w.gh.SetPullFiles(w.owner, w.repo, number, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}, {Filename: "policy/limits.rego", Status: "removed"}})
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)
	githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge))
	w.waitFor("the merge's refusal", func() bool { return w.commentsContaining(number, "**Denied** by `container-limits`") == 1 })
	for _, want := range []string{"policy/ at 5300000, the commit the merge was made onto", "This change edits the policy folder"} {
		if w.commentsContaining(number, want) != 1 {
			t.Errorf("the merge's comment lacks %q: %+v", want, w.gh.Comments(w.owner, w.repo, number))
		}
	}
	w.untouched(s, "a merge deleting its denying rule")

	// A rebase: r1 deletes the rule, r2 (the merge) adds the Deployment,
	// each keeping its commit's message, author and date.
	const rebased, rhead, r1, r2 = 95, "9500000000000000000000000000000000000000", "9510000000000000000000000000000000000000", "9520000000000000000000000000000000000000"
	w.gh.SetTree(w.owner, w.repo, r1, snapshot(t, w, baseTree, true))
	w.gh.SetTree(w.owner, w.repo, r2, loose)
	w.gh.SetTree(w.owner, w.repo, rhead, loose)
	w.gh.SetCommit(w.owner, w.repo, r1, githubfake.Commit{Message: "delete the limits rule", AuthorEmail: "mallory@example.com", AuthorDate: at}, base)
	w.gh.SetCommit(w.owner, w.repo, r2, githubfake.Commit{Message: "a web Deployment", AuthorEmail: "mallory@example.com", AuthorDate: at}, r1)
	w.gh.SetCommit(w.owner, w.repo, rhead, githubfake.Commit{Message: "a web Deployment", AuthorEmail: "mallory@example.com", AuthorDate: at}, "9530000000000000000000000000000000000000")
	w.gh.SetPullRequest(w.owner, w.repo, rebased, rhead, "master", false)
	w.gh.SetPullCommits(w.owner, w.repo, rebased, 2, "")
	w.gh.SetPullFiles(w.owner, w.repo, rebased, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}, {Filename: "policy/limits.rego", Status: "removed"}})
	w.gh.MergePullRequest(w.owner, w.repo, rebased, r2)
	githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(rebased, r2))
	w.waitFor("the rebase's refusal", func() bool { return w.commentsContaining(rebased, "**Denied** by `container-limits`") == 1 })
	if w.commentsContaining(rebased, "policy/ at 5300000, the commit the merge was made onto") != 1 {
		t.Errorf("the rebase's comment: %+v", w.gh.Comments(w.owner, w.repo, rebased))
	}
	w.untouched(s, "a rebase deleting its denying rule")
}

// TestApprovalOfThePusherNotCounted: with KUSIONPR_REQUIRE_LAST_PUSH_APPROVAL,
// a writer who pushes onto someone's pull request, approves it and asks
// for its apply is refused; another writer's approval lets it apply.
func TestApprovalOfThePusherNotCounted(t *testing.T) {
	w := newWorld(t, withEnv("KUSIONPR_REQUIRE_LAST_PUSH_APPROVAL=true"))
	const number, first, head = 96, "9600000000000000000000000000000000000000", "9610000000000000000000000000000000000000"
	for user, role := range map[string]string{"mallory": "write", "reviewer": "write"} {
		w.gh.SetPermission(w.owner, w.repo, user, role)
	}
	w.pullRequest(number, head)
	w.gh.SetPullCommits(w.owner, w.repo, number, 2, "feature-96")
	w.gh.SetPullRequestDetails(w.owner, w.repo, number, "author-dev", true)
	w.gh.Push(w.owner, w.repo, "feature-96", "", first, "author-dev")
	w.gh.Push(w.owner, w.repo, "feature-96", first, head, "mallory")
	w.gh.SetReviews(w.owner, w.repo, number, []githubfake.Review{{User: "mallory", State: "APPROVED"}})
	s := w.store()

	ev := w.prComment(number, "mallory", "/kusion apply")
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", ev)
	if got := w.refusal(number, ev); !strings.Contains(got, "other than its author and `mallory`, who pushed it; not counted: `mallory` pushed the head") {
		t.Errorf("the pusher's own approval: %s", got)
	}
	w.untouched(s, "the pusher's approval")

	w.gh.SetReviews(w.owner, w.repo, number, []githubfake.Review{{User: "mallory", State: "APPROVED"}, {User: "reviewer", State: "APPROVED"}})
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "mallory", "/kusion apply"))
	w.waitFor("the apply", func() bool { return w.commentsContaining(number, "Applied stack") == 1 })
}
