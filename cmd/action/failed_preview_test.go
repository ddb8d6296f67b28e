package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/mdcheck"
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

	checks := gh.CheckRuns(o, r)
	if len(checks) != 1 {
		t.Fatalf("%d check runs, want 1", len(checks))
	}
	if ck := checks[0]; ck.Conclusion != "failure" || !strings.HasPrefix(ck.Title, "preview incomplete, 3 of 3 resources failed: ") {
		t.Errorf("check run %q: %s, title %q; want a failure titled as incomplete", ck.Name, ck.Conclusion, ck.Title)
	}

	var summary map[string]map[string]int
	if err := json.Unmarshal([]byte(run.outputs["summary"]), &summary); err != nil {
		t.Fatalf("output summary %q: %v", run.outputs["summary"], err)
	}
	want := map[string]int{"Create": 0, "Update": 0, "Delete": 0, "Unchanged": 0, "Drift": 0, "Errors": 3}
	for k, v := range want {
		if got := summary["apps/web/dev"][k]; got != v {
			t.Errorf("output summary %s = %d, want %d (%s)", k, got, v, run.outputs["summary"])
		}
	}
	if run.outputs["changed"] != "false" {
		t.Errorf("output changed = %q, want false: nothing known to change", run.outputs["changed"])
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
