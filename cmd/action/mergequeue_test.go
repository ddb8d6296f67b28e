package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// TestMergeGroupPreview: under on: merge_group, the action previews the
// stacks the group's commits change against its base, at the group's
// commit, sets kusion/preview and each stack's check on it, comments on
// nothing and applies nothing; an apply in the queue is refused, naming
// the input.
func TestMergeGroupPreview(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	gh := githubfake.New(t)
	repo := newPRRepo(t)
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", repo.ns("apps/web/dev"), "--ignore-not-found", "--wait=false").Run()
	})
	ev := githubfake.Event(t, "merge_group", "checks_requested")
	o, r := owner(ev)
	const base, head = "3030303030303030303030303030303030303030", "4040404040404040404040404040404040404040"
	g := ev["merge_group"].(map[string]any)
	g["base_sha"], g["head_sha"] = base, head
	gh.SetTree(o, r, base, repo.root)
	repo.writeSpec("apps/web/dev", "v2") // what the group changes
	gh.SetTree(o, r, head, repo.root)

	env := map[string]string{"KUBECONFIG": kc, "INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"), "GITHUB_SHA": head}
	run := runAction(t, gh, repo.root, "merge_group", ev, env)
	if run.code != 0 {
		t.Fatalf("the merge group's preview exited %d\n%s", run.code, run.stderr)
	}
	checks := map[string]githubfake.CheckRun{}
	for _, c := range gh.CheckRuns(o, r) {
		if c.HeadSHA == head {
			checks[c.Name] = c
		}
	}
	if c := checks["kusion/preview"]; c.Status != "completed" || c.Conclusion != "success" {
		t.Errorf("kusion/preview on the group: %s %s %q", c.Status, c.Conclusion, c.Title)
	}
	if c := checks["kusion/preview: apps/web/dev"]; c.Conclusion != "success" || !strings.Contains(c.Title, "to create") {
		t.Errorf("the changed stack's check: %s %q", c.Conclusion, c.Title)
	}
	for name := range checks {
		if strings.HasPrefix(name, "kusion/preview: ") && name != "kusion/preview: apps/web/dev" {
			t.Errorf("%s: a stack the group leaves alone was previewed", name)
		}
	}
	if got := kubectl(t, kc, "get", "namespace", repo.ns("apps/web/dev"), "--ignore-not-found", "-o", "name"); got != "" {
		t.Errorf("the group's preview applied something: %s", got)
	}

	env["INPUT_COMMAND"] = "apply"
	if run := runAction(t, gh, repo.root, "merge_group", ev, env); run.code == 0 || !strings.Contains(run.stdout+run.stderr, "command apply") {
		t.Errorf("an apply in the queue: exit %d\n%s", run.code, run.stderr)
	}
}
