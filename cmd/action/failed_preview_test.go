package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/mdcheck"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// unreachableKubeconfig names a cluster nothing listens on.
const unreachableKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: gone
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: ci
  user: {token: unreachable-t0ken-4821}
contexts:
- name: gone
  context: {cluster: gone, user: ci}
current-context: gone
`

// TestUnreachableClusterPreviewIsIncomplete: with a cluster that cannot be
// reached, no resource of the stack is previewed. A reviewer must not read
// the comment, the check or the outputs as "nothing changes": each says
// the preview is incomplete, names every resource that failed, counts none
// of them as unchanged, created or deleted, and shows no placeholder value.
func TestUnreachableClusterPreviewIsIncomplete(t *testing.T) {
	gh := githubfake.New(t)
	repo := newPRRepo(t)
	const number = 15
	const sha = "1515151515151515151515151515151515151515"
	ev := prEvent(t, number, sha)
	o, r := owner(ev)
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
	run := runAction(t, gh, repo.root, "pull_request", ev, map[string]string{
		"KUBECONFIG": "", "INPUT_KUBECONFIG": unreachableKubeconfig,
		"INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"),
	})
	if run.code == 0 {
		t.Errorf("the step succeeded though nothing was previewed")
	}
	ns := repo.ns("apps/web/dev")
	ids := []string{"v1:Namespace:" + ns, "v1:ConfigMap:" + ns + ":settings", "v1:Secret:" + ns + ":creds"}

	comments := gh.Comments(o, r, number)
	if len(comments) != 1 {
		t.Fatalf("%d comments, want 1 (exit %d)\n%s", len(comments), run.code, run.stderr)
	}
	body := comments[0].Body
	defer func() {
		if t.Failed() || testing.Verbose() {
			t.Logf("comment:\n%s", body)
		}
	}()
	_, rest, _ := strings.Cut(body, "\n") // the hidden marker
	heading, _, _ := strings.Cut(rest, "\n")
	if !strings.Contains(heading, "Incomplete preview") || !strings.Contains(heading, "3 of 3 resources could not be previewed") {
		t.Errorf("the comment's first line does not say the preview is incomplete: %q", heading)
	}
	if !strings.Contains(body, "| 0 | 0 | 0 | 0 | 0 | 3 |") {
		t.Errorf("the comment's counts are not 0 create, update, delete, unchanged, drift and 3 failed:\n%s", body)
	}
	for _, id := range ids {
		if !strings.Contains(body, ":x: **Failed** `"+id+"`") {
			t.Errorf("the comment does not list %s as failed:\n%s", id, body)
		}
	}
	for _, bad := range []string{"(sensitive)", "Deleted: the spec no longer has it.", "No changes", "<b>UnChanged</b>", "<b>Create</b>"} {
		if strings.Contains(body, bad) {
			t.Errorf("the comment shows %q for resources nobody previewed:\n%s", bad, body)
		}
	}
	for _, p := range mdcheck.Check(body, mdcheck.Want{Data: ids}) {
		t.Error(p)
	}

	checks, overview := stackChecks(gh.CheckRuns(o, r))
	if len(checks) != 1 || len(overview) != 1 || overview[0].Conclusion != "failure" {
		t.Fatalf("check runs %+v and overview %+v, want one of each, failed", checks, overview)
	}
	if ck := checks[0]; ck.Conclusion != "failure" || !strings.HasPrefix(ck.Title, "preview incomplete, 3 of 3 resources failed: ") {
		t.Errorf("check run %q: %s, title %q; want a failure titled as incomplete", ck.Name, ck.Conclusion, ck.Title)
	}

	var summary map[string]map[string]any
	if err := json.Unmarshal([]byte(run.outputs["summary"]), &summary); err != nil {
		t.Fatalf("output summary %q: %v", run.outputs["summary"], err)
	}
	want := map[string]float64{"Create": 0, "Update": 0, "Delete": 0, "Unchanged": 0, "Drift": 0, "Errors": 3}
	for k, v := range want {
		if got := summary["apps/web/dev"][k]; got != v {
			t.Errorf("output summary %s = %v, want %v (%s)", k, got, v, run.outputs["summary"])
		}
	}
	// Nothing is known to change, but nothing was previewed: a workflow
	// gating on changed == 'false' (skip the review) must not pass.
	if run.outputs["changed"] != "true" || run.outputs["complete"] != "false" {
		t.Errorf("outputs changed = %q, complete = %q; want true (a change cannot be ruled out) and false", run.outputs["changed"], run.outputs["complete"])
	}
	if !strings.Contains(run.stdout, "0 unchanged, 0 drifted, 3 failed") {
		t.Errorf("the log does not count the failures:\n%s", run.stdout)
	}

	// "::add-mask::<value>" is how the action tells the runner to hide a
	// value from the log; GitHub never shows that line.
	var log []string
	for _, line := range strings.Split(run.stdout, "\n") {
		if !strings.HasPrefix(line, "::add-mask::") {
			log = append(log, line)
		}
	}
	seen := body + strings.Join(log, "\n") + run.stderr + run.summary + checks[0].Title + checks[0].Summary
	for _, v := range run.outputs {
		seen += v
	}
	for _, secret := range []string{repo.secret, "unreachable-t0ken-4821"} {
		if strings.Contains(seen, secret) {
			t.Errorf("%q appears in a comment, check, output, summary or log", secret)
		}
	}
}

// TestOneFailingResourceOfFive: on the real cluster, one resource of five
// cannot be planned (a kind the API server does not serve, as before its
// CRD is installed). The others are previewed; that one is named as failed
// and counted as nothing else.
func TestOneFailingResourceOfFive(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	gh := githubfake.New(t)
	repo := newPRRepo(t)
	ns := repo.ns("apps/web/dev")
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", ns, "--ignore-not-found", "--wait=false").Run()
	})
	widget := "example.com/v1:Widget:" + ns
	write(t, filepath.Join(repo.root, "apps/web/dev/spec.yaml"), fmt.Sprintf(`resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}
- id: v1:ConfigMap:%[1]s:a
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: %[1]s}, data: {k: v}}
- id: v1:ConfigMap:%[1]s:b
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: %[1]s}, data: {k: v}}
- id: v1:Secret:%[1]s:creds
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Secret, metadata: {name: creds, namespace: %[1]s}, stringData: {password: %[2]s}}
- id: %[3]s
  type: Kubernetes
  attributes: {apiVersion: example.com/v1, kind: Widget, metadata: {name: %[1]s}, spec: {size: 1}}
`, ns, repo.secret, widget))
	const number = 16
	ev := prEvent(t, number, "1616161616161616161616161616161616161616")
	o, r := owner(ev)
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
	run := runAction(t, gh, repo.root, "pull_request", ev, map[string]string{
		"KUBECONFIG": kc, "INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"),
	})
	if run.code == 0 {
		t.Errorf("the step succeeded though a resource was not previewed")
	}
	comments := gh.Comments(o, r, number)
	if len(comments) != 1 {
		t.Fatalf("%d comments, want 1 (exit %d)\n%s", len(comments), run.code, run.stderr)
	}
	body := comments[0].Body
	defer func() {
		if t.Failed() || testing.Verbose() {
			t.Logf("comment:\n%s", body)
		}
	}()
	_, rest, _ := strings.Cut(body, "\n")
	heading, _, _ := strings.Cut(rest, "\n")
	if !strings.Contains(heading, "Incomplete preview") || !strings.Contains(heading, "1 of 5 resources could not be previewed") {
		t.Errorf("the comment's first line does not say the preview is incomplete: %q", heading)
	}
	if !strings.Contains(body, "| 4 | 0 | 0 | 0 | 0 | 1 |") {
		t.Errorf("the comment's counts are not 4 to create and 1 failed")
	}
	if !strings.Contains(body, ":x: **Failed** `"+widget+"`") || strings.Contains(body, "<code>"+widget+"</code>") {
		t.Errorf("the comment does not list %s as failed, and only there", widget)
	}
	if strings.Contains(body, repo.secret) || strings.Contains(run.stdout+run.stderr+run.summary, repo.secret) {
		t.Error("the Secret's value is shown")
	}
	var summary map[string]map[string]any
	if err := json.Unmarshal([]byte(run.outputs["summary"]), &summary); err != nil {
		t.Fatalf("output summary %q: %v", run.outputs["summary"], err)
	}
	if s := summary["apps/web/dev"]; s["Create"] != 4.0 || s["Unchanged"] != 0.0 || s["Errors"] != 1.0 {
		t.Errorf("output summary %v, want 4 Create, 0 Unchanged, 1 Errors", s)
	}
	if run.outputs["changed"] != "true" || run.outputs["complete"] != "false" {
		t.Errorf("outputs changed = %q, complete = %q; want true and false", run.outputs["changed"], run.outputs["complete"])
	}
	if ck, _ := stackChecks(gh.CheckRuns(o, r)); len(ck) != 1 || !strings.HasPrefix(ck[0].Title, "preview incomplete, 1 of 5 resources failed: ") {
		t.Errorf("check runs %+v: want one titled as incomplete", ck)
	}
}
