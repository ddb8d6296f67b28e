package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// TestMergeGroupChecked: a merge queue's checks_requested, as GitHub
// publishes it, gets a completed kusion/preview on the group's commit (the
// check branch protection requires), and a check of each stack the
// group's commits change against its base, previewed on the test cluster;
// a stack the group leaves alone gets none, and nothing is applied.
func TestMergeGroupChecked(t *testing.T) {
	w := newWorld(t)
	base := t.TempDir()
	if err := os.CopyFS(base, os.DirFS(w.tree)); err != nil {
		t.Fatal(err)
	}
	// A second stack, the same at the base and in the group.
	for _, tree := range []string{base, w.tree} {
		other := filepath.Join(tree, "apps/web/prod")
		if err := os.MkdirAll(other, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(other, "stack.yaml"), []byte("name: prod\n"), 0o644)
		os.WriteFile(filepath.Join(other, "spec.yaml"), []byte("resources: []\n"), 0o644)
	}
	w.setConfigValue("queued") // the group changes the dev stack's spec
	const baseSHA, head = "1010101010101010101010101010101010101010", "2020202020202020202020202020202020202020"
	w.gh.SetTree(w.owner, w.repo, baseSHA, base)
	w.gh.SetTree(w.owner, w.repo, head, w.tree)

	ev := w.payload("merge_group", "checks_requested")
	g := ev["merge_group"].(map[string]any)
	g["head_sha"], g["base_sha"] = head, baseSHA
	ev["repository"].(map[string]any)["full_name"] = w.owner + "/" + w.repo
	ev["repository"].(map[string]any)["name"] = w.repo
	ev["repository"].(map[string]any)["owner"].(map[string]any)["login"] = w.owner
	if d := githubfake.Deliver(t, w.url+"/webhook", secret, "merge_group", ev); d.Status != http.StatusAccepted {
		t.Fatalf("merge_group delivery answered %d: %s", d.Status, d.Body)
	}
	checks := func() map[string]githubfake.CheckRun {
		out := map[string]githubfake.CheckRun{}
		for _, c := range w.gh.CheckRuns(w.owner, w.repo) {
			if c.HeadSHA == head {
				out[c.Name] = c
			}
		}
		return out
	}
	w.waitFor("the group's kusion/preview", func() bool { return checks()["kusion/preview"].Status == "completed" })
	got := checks()
	if c := got["kusion/preview"]; c.Conclusion != "success" {
		t.Errorf("kusion/preview: %s %q\n%s", c.Conclusion, c.Title, c.Summary)
	}
	dev := got["kusion/preview: apps/web/dev"]
	if dev.Conclusion != "success" || !strings.Contains(dev.Title, "to create") || !strings.Contains(dev.Summary, "queued") {
		t.Errorf("the dev stack's check: %s %q\n%s", dev.Conclusion, dev.Title, dev.Summary)
	}
	if _, ok := got["kusion/preview: apps/web/prod"]; ok {
		t.Error("the prod stack, which the group leaves alone, has a check")
	}
	if revs, _ := w.store().Revisions(t.Context(), "web", "default"); len(revs) != 0 {
		t.Errorf("a merge group's preview wrote releases %v", revs)
	}
	if got := kubectlGet(t, w.ns); got == "queued" {
		t.Error("the group's ConfigMap was applied")
	}
}
