package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// publicService is a Service of type LoadBalancer, which the example
// policy no-loadbalancer-outside-prod denies outside workspace prod.
const publicService = `- id: v1:Service:%[1]s:web
  type: Kubernetes
  dependsOn: [v1:Namespace:%[1]s]
  attributes:
    apiVersion: v1
    kind: Service
    metadata: {name: web, namespace: %[1]s}
    spec: {type: LoadBalancer, selector: {app: web}, ports: [{port: 80}]}
`

// TestPolicyOfTheBase: on a pull request the action judges each plan by
// the policy folder as its base branch's head holds it now (not the older
// base commit the pull request recorded), read through the API, though the
// checkout's own deletes the rule: the stack's check fails and its comment
// names the rule and the commit. On a push whose commit deletes the rule,
// the commit before the push judges the apply, which is refused with
// nothing changed.
func TestPolicyOfTheBase(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	gh := githubfake.New(t)
	repo := newPRRepo(t)
	ns := repo.ns("apps/web/dev")
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", ns, "--ignore-not-found", "--wait=false").Run()
	})
	spec := filepath.Join(repo.root, "apps/web/dev/spec.yaml")
	body, _ := os.ReadFile(spec)
	write(t, spec, string(body)+strings.ReplaceAll(publicService, "%[1]s", ns))

	// The base's policy/: the examples. The pull request's own deletes
	// the rule that denies its plan.
	base := t.TempDir()
	if err := os.CopyFS(filepath.Join(base, "policy"), os.DirFS("../../examples/policy")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(repo.root, "policy"), os.DirFS("../../examples/policy")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(repo.root, "policy", "loadbalancer.rego"))

	const number, head, baseSHA = 31, "3100000000000000000000000000000000000031", "3000000000000000000000000000000000000030"
	const stale = "2900000000000000000000000000000000000029"
	ev := prEvent(t, number, head)
	prBase := ev["pull_request"].(map[string]any)["base"].(map[string]any)
	prBase["sha"] = stale
	o, r := owner(ev)
	gh.SetTree(o, r, baseSHA, base)
	gh.SetTree(o, r, stale, t.TempDir())
	gh.SetBranch(o, r, prBase["ref"].(string), baseSHA)
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{
		{Filename: "apps/web/dev/spec.yaml", Status: "modified"},
		{Filename: "policy/loadbalancer.rego", Status: "removed"},
	})
	env := map[string]string{"KUBECONFIG": kc, "INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"), "INPUT_POLICY": "policy"}
	run := runAction(t, gh, repo.root, "pull_request", ev, env)
	checks, overview := stackChecks(gh.CheckRuns(o, r))
	var web githubfake.CheckRun
	for _, c := range checks {
		if c.Name == "kusion/preview: apps/web/dev" {
			web = c
		}
	}
	if web.Conclusion != "failure" || !strings.Contains(web.Title, "no-loadbalancer-outside-prod") {
		t.Errorf("the stack's check run: %s %q\n%s", web.Conclusion, web.Title, run.stderr)
	}
	if len(overview) != 1 || overview[0].Conclusion != "failure" {
		t.Errorf("kusion/preview: %+v", overview)
	}
	var comment string
	for _, c := range gh.Comments(o, r, number) {
		if strings.Contains(c.Body, "#### Policy") {
			comment = c.Body
		}
	}
	for _, want := range []string{"**Denied** by `no-loadbalancer-outside-prod`", "a Service of type LoadBalancer is allowed in workspace prod only", "This change edits the policy folder", "policy/ at 3000000, the head of " + prBase["ref"].(string)} {
		if !strings.Contains(comment, want) {
			t.Errorf("the comment lacks %q:\n%s", want, comment)
		}
	}
	if strings.Contains(comment, repo.secret) {
		t.Error("the comment shows the Secret's value")
	}

	// A push of the same commit, its own policy/ still without the rule:
	// the commit before the push judges it, and the apply is refused.
	push := githubfake.Event(t, "push", "")
	const sha, merged = "3200000000000000000000000000000000000032", 32
	push["after"], push["before"] = sha, baseSHA
	gh.SetCommitPulls(o, r, sha, []int{merged})
	gh.SetPullFiles(o, r, merged, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
	run = runAction(t, gh, repo.root, "push", push, map[string]string{
		"KUBECONFIG": kc, "INPUT_BACKEND": env["INPUT_BACKEND"], "INPUT_COMMAND": "apply", "GITHUB_SHA": sha, "INPUT_POLICY": "policy",
	})
	if run.code == 0 {
		t.Errorf("a denied apply exited 0\n%s", run.stderr)
	}
	found := false
	for _, c := range gh.Comments(o, r, merged) {
		found = found || strings.Contains(c.Body, "refused, nothing changed: denied by the policies")
	}
	if !found {
		t.Errorf("the merged pull request's comment does not say the apply was refused: %+v", gh.Comments(o, r, merged))
	}
	for _, c := range gh.Comments(o, r, merged) {
		if strings.Contains(c.Body, "#### Policy") && !strings.Contains(c.Body, "policy/ at 3000000, the commit before the push") {
			t.Errorf("the push's comment does not name the commit before it:\n%s", c.Body)
		}
	}
	if exec.Command("kubectl", "--kubeconfig", kc, "get", "namespace", ns).Run() == nil {
		t.Error("a denied apply changed the cluster")
	}
}

// TestApplyOnlyIntoTheDefaultBranch: command apply on a pull request into a
// branch other than the repository's default is refused before anything
// runs, naming both branches; its preview still runs.
func TestApplyOnlyIntoTheDefaultBranch(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	gh := githubfake.New(t)
	repo := newPRRepo(t)
	ns := repo.ns("apps/web/dev")
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", ns, "--ignore-not-found", "--wait=false").Run()
	})
	const number, head = 33, "3300000000000000000000000000000000000033"
	ev := prEvent(t, number, head)
	ev["pull_request"].(map[string]any)["base"].(map[string]any)["ref"] = "weak"
	def := ev["repository"].(map[string]any)["default_branch"].(string)
	o, r := owner(ev)
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
	env := map[string]string{"KUBECONFIG": kc, "INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"), "INPUT_COMMAND": "apply"}
	run := runAction(t, gh, repo.root, "pull_request", ev, env)
	if run.code == 0 || !strings.Contains(run.stdout+run.stderr, "pull request #33 is into weak, not the default branch "+def+": a pull request into another branch is previewed, never applied") {
		t.Errorf("the apply into weak exited %d:\n%s%s", run.code, run.stdout, run.stderr)
	}
	if exec.Command("kubectl", "--kubeconfig", kc, "get", "namespace", ns).Run() == nil {
		t.Error("the refused apply reached the cluster")
	}
	delete(env, "INPUT_COMMAND")
	if run := runAction(t, gh, repo.root, "pull_request", ev, env); run.code != 0 {
		t.Errorf("the preview into weak exited %d:\n%s%s", run.code, run.stdout, run.stderr)
	}
}
