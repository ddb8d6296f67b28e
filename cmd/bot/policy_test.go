package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// unlimited is a Deployment whose container has no limits: the example
// policy container-limits denies it.
const unlimited = `- id: apps/v1:Deployment:%[1]s:web
  type: Kubernetes
  dependsOn: [v1:Namespace:%[1]s]
  attributes:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: %[1]s}
    spec:
      replicas: 1
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: "nginx:1.27"}]}
`

// policyRepo makes the pull request number at head against a base commit
// whose policy/ holds the example policies (and extra files): the head
// adds a Deployment without limits and, when loosen, deletes the rule
// that denies it from its own policy/.
func policyRepo(t *testing.T, w *world, number int, head string, loosen bool, extra map[string]string) {
	t.Helper()
	const base = "5000000000000000000000000000000000000000"
	baseTree := t.TempDir()
	if err := os.CopyFS(baseTree, os.DirFS(w.tree)); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(baseTree, "policy"), os.DirFS("../../examples/policy")); err != nil {
		t.Fatal(err)
	}
	for name, body := range extra {
		os.WriteFile(filepath.Join(baseTree, "policy", name), []byte(body), 0o644)
	}
	w.gh.SetTree(w.owner, w.repo, base, baseTree)
	w.gh.SetBranch(w.owner, w.repo, "master", base)

	withResources(unlimited)(w)
	files := []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}}
	if err := os.CopyFS(filepath.Join(w.tree, "policy"), os.DirFS(filepath.Join(baseTree, "policy"))); err != nil {
		t.Fatal(err)
	}
	if loosen {
		os.Remove(filepath.Join(w.tree, "policy", "limits.rego"))
		files = append(files, githubfake.PullFile{Filename: "policy/limits.rego", Status: "removed"})
	}
	w.gh.SetTree(w.owner, w.repo, head, w.tree)
	w.gh.SetPullRequest(w.owner, w.repo, number, head, "master", false)
	w.gh.SetPullFiles(w.owner, w.repo, number, files)
	w.gh.SetPullRequestDetails(w.owner, w.repo, number, "author-dev", true)
	w.gh.SetReviews(w.owner, w.repo, number, []githubfake.Review{{User: "reviewer", State: "APPROVED"}})
	for user, role := range map[string]string{"reviewer": "write", "writer": "write", "admin": "admin"} {
		w.gh.SetPermission(w.owner, w.repo, user, role)
	}
}

// stackCheck is the bot's latest check run of the dev stack on sha.
func (w *world) stackCheck(name, sha string) githubfake.CheckRun {
	var out githubfake.CheckRun
	for _, c := range w.gh.CheckRuns(w.owner, w.repo) {
		if c.Name == name && c.HeadSHA == sha {
			out = c
		}
	}
	return out
}

// TestPolicyJudgesThePullRequest: a pull request whose plan the base's
// policy denies gets a failed check and a comment naming the rule, though
// it deletes that rule from its own policy/ (and the comment says it is
// judged by the base's); /kusion apply is refused with nothing changed; an
// override asked by a writer is refused, by an admin applied, and recorded
// in the release.
func TestPolicyJudgesThePullRequest(t *testing.T) {
	w := newWorld(t)
	const number, head = 81, "8100000000000000000000000000000000000000"
	policyRepo(t, w, number, head, true, nil)

	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "someone", "/kusion preview"))
	w.waitFor("the preview's check run", func() bool { return w.stackCheck("kusion/preview: apps/web/dev", head).Status == "completed" })
	c := w.stackCheck("kusion/preview: apps/web/dev", head)
	if c.Conclusion != "failure" || !strings.Contains(c.Title, "denied by policy") || !strings.Contains(c.Title, "container-limits") {
		t.Errorf("the stack's check run: %s %q", c.Conclusion, c.Title)
	}
	if len(c.Actions) != 0 {
		t.Errorf("a denied plan offers %+v", c.Actions)
	}
	w.waitFor("the preview's comment", func() bool { return w.commentsContaining(number, "#### Policy") == 1 })
	for _, want := range []string{"**Denied** by `container-limits`", "container web has no cpu or memory limit", "This change edits the policy folder"} {
		if w.commentsContaining(number, want) != 1 {
			t.Errorf("the comment lacks %q: %+v", want, w.gh.Comments(w.owner, w.repo, number))
		}
	}
	// The overview's check run sums the stacks up once each has reported.
	w.waitFor("the overview's check run", func() bool { return w.stackCheck("kusion/preview", head).Status == "completed" })
	if o := w.stackCheck("kusion/preview", head); o.Conclusion != "failure" {
		t.Errorf("kusion/preview: %s %q", o.Conclusion, o.Title)
	}

	deployed := func() bool {
		return exec.Command("kubectl", "--kubeconfig", testenv.Kubeconfig(t), "get", "deployment", "web", "-n", w.ns).Run() == nil
	}
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "writer", "/kusion apply"))
	w.waitFor("the refused apply", func() bool {
		return w.commentsContaining(number, "refused, nothing changed: denied by the policies") == 1
	})
	if revs, _ := w.store().Revisions(t.Context(), "web", "default"); len(revs) != 0 || deployed() {
		t.Fatalf("a denied apply changed something: releases %v, Deployment there: %v", revs, deployed())
	}

	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "writer", "/kusion apply --override-policy container-limits"))
	w.waitFor("the writer's override refused", func() bool { return w.commentsContaining(number, "needs admin permission") == 1 })
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "admin", "/kusion apply --override-policy container-limits"))
	w.waitFor("the admin's apply", func() bool { return w.commentsContaining(number, "Applied stack") == 1 })
	rel, err := w.store().Latest(t.Context(), "web", "default")
	if err != nil || rel == nil || rel.Origin == nil || !slices.Equal(rel.Origin.PolicyOverrides, []string{"container-limits"}) || rel.Origin.Actor != "admin" {
		t.Fatalf("the release of the override: %+v, %v", rel, err)
	}
	if !deployed() {
		t.Error("the overridden apply made no Deployment")
	}
	if w.commentsContaining(number, "**Denied, overridden** by `container-limits`") != 1 {
		t.Errorf("the apply's comment does not show the override: %+v", w.gh.Comments(w.owner, w.repo, number))
	}
}

// TestBrokenPolicyFailsClosed: a base whose policy does not parse refuses
// the preview's check, naming the file and line, and the apply.
func TestBrokenPolicyFailsClosed(t *testing.T) {
	w := newWorld(t)
	const number, head = 82, "8200000000000000000000000000000000000000"
	policyRepo(t, w, number, head, false, map[string]string{"broken.rego": "package main\n\ndeny contains msg if {\n\tmsg := \n}\n"})
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "someone", "/kusion preview"))
	w.waitFor("the preview's check run", func() bool { return w.stackCheck("kusion/preview: apps/web/dev", head).Status == "completed" })
	if c := w.stackCheck("kusion/preview: apps/web/dev", head); c.Conclusion != "failure" || !strings.Contains(c.Summary, "policy/broken.rego:") {
		t.Errorf("the stack's check run: %s %q\n%s", c.Conclusion, c.Title, c.Summary)
	}
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "admin", "/kusion apply --override-policy container-limits"))
	w.waitFor("the refused apply", func() bool { return w.commentsContaining(number, "could not be evaluated") >= 2 })
	if revs, _ := w.store().Revisions(t.Context(), "web", "default"); len(revs) != 0 {
		t.Errorf("an apply judged by a broken policy wrote releases %v", revs)
	}
}

// TestOperatorPolicies: the operator's own policy folder judges a
// repository that has none: its rule denies the plan, named apart from a
// repository's.
func TestOperatorPolicies(t *testing.T) {
	rules := t.TempDir()
	if err := os.WriteFile(filepath.Join(rules, "org.rego"), []byte(`package main

deny contains {"msg": "the organisation allows no ConfigMap named settings", "rule": "org-no-settings"} if {
	some step in input.preview.changeSteps
	step.to.attributes.kind == "ConfigMap"
	step.to.attributes.metadata.name == "settings"
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, withEnv("KUSIONPR_POLICIES="+rules))
	const number, head = 83, "8300000000000000000000000000000000000000"
	w.pullRequest(number, head)
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "someone", "/kusion preview"))
	w.waitFor("the preview's check run", func() bool { return w.stackCheck("kusion/preview: apps/web/dev", head).Status == "completed" })
	if c := w.stackCheck("kusion/preview: apps/web/dev", head); c.Conclusion != "failure" || !strings.Contains(c.Title, "org-no-settings") {
		t.Errorf("the stack's check run: %s %q", c.Conclusion, c.Title)
	}
	w.waitFor("the preview's comment", func() bool { return w.commentsContaining(number, "**Denied** by `org-no-settings`") == 1 })
	if w.commentsContaining(number, "Rules of `the operator's`") != 1 {
		t.Errorf("the comment does not say whose rules: %+v", w.gh.Comments(w.owner, w.repo, number))
	}
}
