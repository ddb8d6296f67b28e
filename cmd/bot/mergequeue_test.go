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
	"github.com/kusionpr/kusionpr/model"
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

// queue is a merge queue of the world's repository, into main: each group
// a commit made on the one before (SetParents), as GitHub makes them.
type queue struct {
	w *world
}

// group sets the group's commit, at head on base, holding the stack with
// the ConfigMap at value (and extra resources, %[1]s the namespace), and
// returns its checks_requested payload.
func (q queue) group(head, base, value, extra string) map[string]any {
	w := q.w
	w.setConfigValue(value)
	if extra != "" {
		withResources(extra)(w)
	}
	w.gh.SetTree(w.owner, w.repo, head, w.tree)
	w.gh.SetParents(w.owner, w.repo, head, base)
	ev := w.payload("merge_group", "checks_requested")
	g := ev["merge_group"].(map[string]any)
	g["head_sha"], g["base_sha"] = head, base
	r := ev["repository"].(map[string]any)
	r["full_name"], r["name"] = w.owner+"/"+w.repo, w.repo
	r["owner"].(map[string]any)["login"] = w.owner
	// GitHub's examples are of different repositories: this one is the
	// world's, whose merges own the stack's releases.
	r["id"] = w.payload("pull_request", "closed")["repository"].(map[string]any)["id"]
	return ev
}

// check is the bot's latest check run named name on sha.
func (q queue) check(sha, name string) githubfake.CheckRun {
	var out githubfake.CheckRun
	for _, c := range q.w.gh.CheckRuns(q.w.owner, q.w.repo) {
		if c.HeadSHA == sha && c.Name == name {
			out = c
		}
	}
	return out
}

func (q queue) waitChecked(sha string) githubfake.CheckRun {
	q.w.t.Helper()
	q.w.waitFor("kusion/preview on "+sha[:7], func() bool { return q.check(sha, "kusion/preview").Status == "completed" })
	return q.check(sha, "kusion/preview")
}

// TestApplyInQueue: in a repository the operator lets apply in the merge
// queue, two groups delivered out of order apply in the queue's order, each
// on its commit (its release records it), and each passes kusion/preview;
// when the groups land, their merges apply nothing again. A group into
// another branch than the default is previewed only.
func TestApplyInQueue(t *testing.T) {
	// One slot: a group waiting for the group ahead must not hold it.
	w := newWorld(t, withEnv("KUSIONPR_APPLY_IN_QUEUE=Codertocat/Hello-World", "KUSIONPR_CONCURRENCY=1"))
	q := queue{w}
	const main, first, second = "3000000000000000000000000000000000000000", "3100000000000000000000000000000000000000", "3200000000000000000000000000000000000000"
	w.gh.SetTree(w.owner, w.repo, main, w.tree)
	w.gh.SetParents(w.owner, w.repo, main)
	w.gh.SetBranch(w.owner, w.repo, "main", main)
	g1 := q.group(first, main, "queue-1", "")
	g2 := q.group(second, first, "queue-2", "")

	// The second group is delivered first: it waits for the first, which
	// GitHub's deliveries may well bring later.
	w.deliverAll("merge_group", []map[string]any{g2})
	w.waitFor("the second group to wait", func() bool { return strings.Contains(w.logs(), "waiting for the group ahead in the merge queue") })
	w.deliverAll("merge_group", []map[string]any{g1})
	for _, sha := range []string{first, second} {
		if c := q.waitChecked(sha); c.Conclusion != "success" || !strings.Contains(c.Title, "1 stack") {
			t.Errorf("kusion/preview on %s: %s %q\n%s", sha[:7], c.Conclusion, c.Title, c.Summary)
		}
		if c := q.check(sha, "kusion/apply: apps/web/dev"); c.Conclusion != "success" || !strings.Contains(c.Title, "succeeded") {
			t.Errorf("kusion/apply: apps/web/dev on %s: %s %q", sha[:7], c.Conclusion, c.Title)
		}
	}
	s := w.store()
	rels := w.releases(s)
	if len(rels) != 2 {
		t.Fatalf("%d releases, want the two groups'", len(rels))
	}
	for i, want := range []string{first, second} {
		if o := rels[i].Origin; o == nil || o.SHA != want || !o.MergeQueue || rels[i].Phase != model.PhaseSucceeded {
			t.Errorf("release %d: %s, origin %+v; want the queue's apply of %s", rels[i].Revision, rels[i].Phase, o, want[:7])
		}
	}
	if got := kubectlGet(t, w.ns); got != "queue-2" {
		t.Errorf("the cluster holds %q, want the second group's queue-2", got)
	}

	// The queue lands both groups: main is the second group's commit, and
	// each pull request's merge is its group's commit.
	// Both merged after the second group's apply: by merge time alone, the
	// first merge is the newest.
	w.gh.SetBranch(w.owner, w.repo, "main", second)
	landed := time.Now().Add(2 * time.Second)
	for i, sha := range []string{first, second} {
		number := 61 + i
		w.gh.SetPullRequest(w.owner, w.repo, number, fmt.Sprintf("%040x", 0xe0+i), "master", false)
		w.gh.SetPullFiles(w.owner, w.repo, number, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
		w.gh.MergePullRequestAt(w.owner, w.repo, number, sha, landed)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("#61: %+v\n#62: %+v", w.gh.Comments(w.owner, w.repo, 61), w.gh.Comments(w.owner, w.repo, 62))
		}
	})
	w.deliverAll("pull_request", []map[string]any{w.mergeEvent(61, first, landed), w.mergeEvent(62, second, landed)})
	w.waitFor("both merges' answers", func() bool {
		return w.commentsContaining(61, "Not applied")+w.commentsContaining(62, "Not applied") == 2
	})
	if w.commentsContaining(61, "release 1 applied this commit in the merge queue") != 1 {
		t.Errorf("#61's answer: %+v", w.gh.Comments(w.owner, w.repo, 61))
	}
	if w.commentsContaining(62, "release 2 applied this merge already") != 1 {
		t.Errorf("#62's answer: %+v", w.gh.Comments(w.owner, w.repo, 62))
	}
	if n := len(w.releases(s)); n != 2 {
		t.Errorf("%d releases after the merges, want still 2: a merge applied in the queue was applied again", n)
	}

	// A queue into another branch: previewed, never applied.
	const other = "3300000000000000000000000000000000000000"
	ev := q.group(other, second, "release-branch", "")
	ev["merge_group"].(map[string]any)["base_ref"] = "refs/heads/release"
	w.gh.SetBranch(w.owner, w.repo, "release", second)
	githubfake.Deliver(t, w.url+"/webhook", secret, "merge_group", ev)
	if c := q.waitChecked(other); c.Conclusion != "success" || !strings.Contains(c.Title, "with changes") {
		t.Errorf("kusion/preview of the group into release: %s %q", c.Conclusion, c.Title)
	}
	if c := q.check(other, "kusion/preview: apps/web/dev"); c.Conclusion != "success" || !strings.Contains(c.Title, "to update") {
		t.Errorf("the group into release was not previewed: %+v", c)
	}
	if n := len(w.releases(s)); n != 2 || kubectlGet(t, w.ns) != "queue-2" {
		t.Errorf("a group into another branch than the default was applied (%d releases, cluster %q)", n, kubectlGet(t, w.ns))
	}
}

// TestApplyInQueueFailure: a group whose apply fails is red and the group
// behind it, which holds its changes, is red without applying anything;
// the group GitHub makes again without the failed one applies on top.
func TestApplyInQueueFailure(t *testing.T) {
	w := newWorld(t, withEnv("KUSIONPR_APPLY_IN_QUEUE=*"))
	q := queue{w}
	const main, bad, behind, again = "4000000000000000000000000000000000000000", "4100000000000000000000000000000000000000", "4200000000000000000000000000000000000000", "4300000000000000000000000000000000000000"
	w.gh.SetTree(w.owner, w.repo, main, w.tree)
	w.gh.SetParents(w.owner, w.repo, main)
	w.gh.SetBranch(w.owner, w.repo, "main", main)
	// A ConfigMap the API server refuses (its name is not a DNS name).
	const refused = `- id: v1:ConfigMap:%[1]s:Not_A_Name
  type: Kubernetes
  dependsOn: [v1:Namespace:%[1]s]
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: Not_A_Name, namespace: %[1]s}, data: {a: b}}
`
	g1 := q.group(bad, main, "bad-group", refused)
	g2 := q.group(behind, bad, "behind-bad", refused)
	w.deliverAll("merge_group", []map[string]any{g1, g2})
	if c := q.waitChecked(bad); c.Conclusion != "failure" {
		t.Errorf("kusion/preview of the failing group: %s %q", c.Conclusion, c.Title)
	}
	c := q.waitChecked(behind)
	if c.Conclusion != "failure" || !strings.Contains(c.Summary, "the group ahead of it in the merge queue (4100000)") {
		t.Errorf("kusion/preview of the group behind: %s %q\n%s", c.Conclusion, c.Title, c.Summary)
	}
	s := w.store()
	for _, rel := range w.releases(s) {
		if rel.Origin != nil && rel.Origin.SHA == behind {
			t.Errorf("release %d applied the group behind the failed one", rel.Revision)
		}
	}
	if got := kubectlGet(t, w.ns); got == "behind-bad" {
		t.Error("the cluster holds the group behind the failed one")
	}

	// GitHub makes the group again, on main, without the failed pull request.
	g3 := q.group(again, main, "again", "")
	githubfake.Deliver(t, w.url+"/webhook", secret, "merge_group", g3)
	if c := q.waitChecked(again); c.Conclusion != "success" {
		t.Errorf("kusion/preview of the group made again: %s %q\n%s", c.Conclusion, c.Title, c.Summary)
	}
	if got := kubectlGet(t, w.ns); got != "again" {
		t.Errorf("the cluster holds %q, want the group made again's value", got)
	}

	// A group waiting for a group ahead the bot never heard of stops when
	// GitHub destroys it, with no check and nothing applied.
	const unheard, orphan = "4400000000000000000000000000000000000000", "4500000000000000000000000000000000000000"
	w.gh.SetParents(w.owner, w.repo, unheard, again)
	g5 := q.group(orphan, unheard, "orphan", "")
	waiting := strings.Count(w.logs(), "waiting for the group ahead")
	w.deliverAll("merge_group", []map[string]any{g5})
	w.waitFor("the orphan group to wait", func() bool { return strings.Count(w.logs(), "waiting for the group ahead") > waiting })
	destroyed := q.group(orphan, unheard, "orphan", "")
	destroyed["action"], destroyed["reason"] = "destroyed", "invalidated"
	if d := githubfake.Deliver(t, w.url+"/webhook", secret, "merge_group", destroyed); d.Status != http.StatusAccepted || !strings.Contains(string(d.Body), "accepted") {
		t.Errorf("merge_group destroyed answered %d: %s", d.Status, d.Body)
	}
	w.waitFor("the orphan group to stop", func() bool { return strings.Contains(w.logs(), "left the merge queue while it waited") })
	if c := q.check(orphan, "kusion/preview"); c.Status != "" {
		t.Errorf("a destroyed group got kusion/preview: %+v", c)
	}
	if got := kubectlGet(t, w.ns); got != "again" {
		t.Errorf("the cluster holds %q after a destroyed group", got)
	}
}
