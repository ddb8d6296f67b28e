package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gocloud.dev/blob"

	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// bucketObjects reads every object of the world's release bucket: key to content.
func (w *world) bucketObjects() map[string]string {
	w.t.Helper()
	ctx := context.Background()
	b, err := blob.OpenBucket(ctx, w.backend)
	if err != nil {
		w.t.Fatal(err)
	}
	defer b.Close()
	out := map[string]string{}
	it := b.List(nil)
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			return out
		}
		if err != nil {
			w.t.Fatal(err)
		}
		data, err := b.ReadAll(ctx, obj.Key)
		if err != nil {
			w.t.Fatal(err)
		}
		out[obj.Key] = string(data)
	}
}

// fromRepository makes a payload of the world's repository come from
// owner/name, GitHub's repository id.
func fromRepository(ev map[string]any, owner, name string, id int64) map[string]any {
	repo := ev["repository"].(map[string]any)
	repo["id"], repo["name"], repo["full_name"] = float64(id), name, owner+"/"+name
	repo["owner"].(map[string]any)["login"] = owner
	return ev
}

// Repository B, installed with repository A on the same installation, names
// A's project in its own project.yaml. A writer's /kusion preview on B's
// pull request and B's merge are refused, naming both repositories; B's
// comments hold none of A's release values and A's release bucket is byte
// for byte unchanged, as is the cluster.
func TestAnotherRepositoryCannotTouchAProject(t *testing.T) {
	w := newWorld(t)
	aValue := "a-only-" + w.ns
	w.setConfigValue(aValue)
	const aNumber, aHead, aMerge = 51, "5151515151515151515151515151515151515151", "5252525252525252525252525252525252525252"
	w.pullRequest(aNumber, aHead)
	w.gh.SetTree(w.owner, w.repo, aMerge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, aNumber, aMerge)
	githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(aNumber, aMerge))
	w.waitFor("repository A's apply", func() bool { return w.commentsContaining(aNumber, "Applied stack") == 1 })
	if got := kubectlGet(t, w.ns); got != aValue {
		t.Fatalf("repository A's apply left %q in the cluster", got)
	}
	aID := int64(w.payload("pull_request", "closed")["repository"].(map[string]any)["id"].(float64))
	before := w.bucketObjects()

	// Repository B: its own tree, the same project and stack names, the
	// same namespace, another value.
	const bRepo, bID = "Other-Infra", 918273645
	const bNumber, bHead, bMerge = 52, "5353535353535353535353535353535353535353", "5454545454545454545454545454545454545454"
	w.gh.AddInstallationRepo(installationID, w.owner, bRepo)
	w.gh.SetRepositoryID(w.owner, bRepo, bID)
	bTree := t.TempDir()
	for path, content := range map[string]string{
		"apps/web/project.yaml":   "name: web\n",
		"apps/web/dev/stack.yaml": "name: dev\n",
	} {
		os.MkdirAll(filepath.Join(bTree, filepath.Dir(path)), 0o755)
		os.WriteFile(filepath.Join(bTree, path), []byte(content), 0o644)
	}
	spec, _ := os.ReadFile(filepath.Join(w.tree, "apps/web/dev/spec.yaml"))
	os.WriteFile(filepath.Join(bTree, "apps/web/dev/spec.yaml"), []byte(strings.ReplaceAll(string(spec), aValue, "b-wants-this")), 0o644)
	w.gh.SetTree(w.owner, bRepo, bHead, bTree)
	w.gh.SetTree(w.owner, bRepo, bMerge, bTree)
	w.gh.SetPullRequest(w.owner, bRepo, bNumber, bHead, "master", false)
	w.gh.SetPullFiles(w.owner, bRepo, bNumber, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
	w.gh.SetPermission(w.owner, bRepo, "b-writer", "write")

	// A writer's commands on B's pull request.
	commands := map[int64]bool{}
	command := func(body string) {
		ev := fromRepository(w.payload("issue_comment", "created"), w.owner, bRepo, bID)
		issue := ev["issue"].(map[string]any)
		issue["number"] = float64(bNumber)
		issue["pull_request"] = map[string]any{"url": fmt.Sprintf("https://api.github.com/repos/%s/%s/pulls/%d", w.owner, bRepo, bNumber)}
		posted := w.gh.PostComment(w.owner, bRepo, bNumber, "b-writer", body)
		commands[posted.ID] = true
		c := ev["comment"].(map[string]any)
		c["body"], c["id"], c["user"] = body, float64(posted.ID), map[string]any{"login": "b-writer", "type": "User"}
		if resp := githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", ev); resp.Status != http.StatusAccepted {
			t.Fatalf("B's %s answered %d: %s", body, resp.Status, resp.Body)
		}
	}
	command("/kusion preview")
	refusals := func() int {
		n := 0
		for _, c := range w.gh.Comments(w.owner, bRepo, bNumber) {
			if strings.Contains(c.Body, "belongs to repository") {
				n++
			}
		}
		return n
	}
	w.waitFor("the refusal of B's preview", func() bool { return refusals() == 1 })

	// B's merge.
	w.gh.MergePullRequest(w.owner, bRepo, bNumber, bMerge)
	merge := fromRepository(w.mergeEvent(bNumber, bMerge), w.owner, bRepo, bID)
	if resp := githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", merge); resp.Status != http.StatusAccepted {
		t.Fatalf("B's merge answered %d: %s", resp.Status, resp.Body)
	}
	w.waitFor("the refusal of B's merge", func() bool { return refusals() == 2 })

	// B's unlock: refused as such, not told whether A's release runs.
	command("/kusion unlock apps/web/dev")
	w.waitFor("the refusal of B's unlock", func() bool { return refusals() == 3 })

	for _, c := range w.gh.Comments(w.owner, bRepo, bNumber) {
		if commands[c.ID] {
			continue
		}
		if strings.Contains(c.Body, aValue) {
			t.Errorf("repository A's release value reached repository B's pull request:\n%s", c.Body)
		}
		for _, want := range []string{w.owner + "/" + w.repo, fmt.Sprint(aID), w.owner + "/" + bRepo, fmt.Sprint(bID)} {
			if !strings.Contains(c.Body, want) {
				t.Errorf("B's comment does not name %s:\n%s", want, c.Body)
			}
		}
	}
	if after := w.bucketObjects(); !reflect.DeepEqual(before, after) {
		t.Errorf("repository B's refused runs changed repository A's release bucket:\nbefore %d objects, after %d", len(before), len(after))
	}
	if got := kubectlGet(t, w.ns); got != aValue {
		t.Errorf("the cluster holds %q after B's refused merge, want repository A's %q", got, aValue)
	}
}
