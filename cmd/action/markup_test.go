package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/mdcheck"
)

// hostile is what a pull request can put in any name, id, path or value: it
// closes our <details>, opens an HTML comment hiding the rest, mentions a
// team and loads a beacon image from the reader's browser.
const hostile = "</details><!-- @org/team ![x](http://127.0.0.1/b)"

// hostileDir is hostile as folders can hold it ("//" is one "/").
const hostileDir = "evil/</details><!-- @org/team ![x](http:/127.0.0.1/b)"

// hostileProject is markup a project name can hold (releases are kept by
// project, so it holds no slash): an extra <details>, a comment, a
// mention, images ("http:host" is "http://host/" to a browser).
const hostileProject = "<details><summary><!-- @org-team ![x](http:127.0.0.1) <img src=x>"

// TestHostileNamesRenderAsData: a pull request whose project, stack folder,
// stack name, resource id, attribute values and error message all hold
// hostile markup gets comments and check runs that GitHub renders as
// text: no element, HTML comment, link, image or mention of the
// repository's, the same number of <details> as the comment's own layout,
// and every hostile value shown, whole, as code.
func TestHostileNamesRenderAsData(t *testing.T) {
	gh := githubfake.New(t)
	root := t.TempDir()
	q := fmt.Sprintf("%q", hostile)
	write(t, filepath.Join(root, "evil/project.yaml"), fmt.Sprintf("name: %q\n", hostileProject))
	// A stack that previews: one ConfigMap to create, whose id (and so
	// namespace and name: the id's parts are split at ":") is hostile.
	ns, name, _ := strings.Cut(hostile, ":")
	write(t, filepath.Join(root, hostileDir, "stack.yaml"), "name: "+q+"\n")
	write(t, filepath.Join(root, hostileDir, "spec.yaml"), fmt.Sprintf(`resources:
- id: %[1]s
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: ConfigMap
    metadata: {namespace: %[3]q, name: %[4]q}
    data: {%[2]s: %[2]s}
`, fmt.Sprintf("%q", "v1:ConfigMap:"+hostile), q, ns, name))
	// A stack that fails: its error names the malformed id.
	broken := "evil/broken"
	write(t, filepath.Join(root, broken, "stack.yaml"), "name: broken\n")
	write(t, filepath.Join(root, broken, "spec.yaml"), fmt.Sprintf("resources:\n- id: %s\n  type: Terraform\n  attributes: {}\n",
		fmt.Sprintf("%q", "hashicorp:local:file:"+hostile)))

	const number = 13
	ev := forkEvent(t, number, "6666666666666666666666666666666666666666", false)
	o, r := owner(ev)
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{
		{Filename: hostileDir + "/spec.yaml", Status: "modified"},
		{Filename: broken + "/spec.yaml", Status: "modified"},
	})
	run := runAction(t, gh, root, "pull_request", ev, map[string]string{
		"INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"), "KUBECONFIG": "",
	})
	comments := gh.Comments(o, r, number)
	if len(comments) != 2 {
		t.Fatalf("%d comments, want one per stack (exit %d)\n%s", len(comments), run.code, run.stderr)
	}
	var previewed, failed bool
	for _, c := range comments {
		want := mdcheck.Want{Data: []string{hostileProject}}
		switch {
		case strings.Contains(c.Body, "This stack failed"):
			failed = true
			want.Data = append(want.Data, "hashicorp:local:file:"+hostile)
		default:
			previewed = true
			// The Create's own <details>; its folder, its name, its id.
			want.Details = 1
			want.Data = append(want.Data, hostileDir, hostile, "v1:ConfigMap:"+hostile)
		}
		for _, p := range mdcheck.Check(c.Body, want) {
			t.Errorf("comment %d: %s", c.ID, p)
		}
		if t.Failed() || testing.Verbose() {
			t.Logf("comment %d:\n%s", c.ID, c.Body)
		}
	}
	if !previewed || !failed {
		t.Errorf("comments: previewed %v, failed %v; want one of each\n%+v", previewed, failed, comments)
	}
	for _, ck := range gh.CheckRuns(o, r) {
		details := 0
		if !strings.Contains(ck.Summary, "This stack failed") && ck.Name != "kusion/preview" {
			details = 1
		}
		for _, p := range mdcheck.Check(ck.Summary, mdcheck.Want{Details: details}) {
			t.Errorf("check run %q: %s", ck.Name, p)
		}
	}
	for _, p := range mdcheck.Check(run.summary, mdcheck.Want{Details: 1}) {
		t.Errorf("job summary: %s", p)
	}

	// Combined: the folders land in the overview's table and in the
	// sections' summaries too.
	const combined = 14
	ev = forkEvent(t, combined, "7777777777777777777777777777777777777777", false)
	gh.SetPullFiles(o, r, combined, []githubfake.PullFile{
		{Filename: hostileDir + "/spec.yaml", Status: "modified"},
		{Filename: broken + "/spec.yaml", Status: "modified"},
	})
	runAction(t, gh, root, "pull_request", ev, map[string]string{
		"INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"), "KUBECONFIG": "", "INPUT_COMMENT": "combined",
	})
	comments = gh.Comments(o, r, combined)
	if len(comments) != 1 {
		t.Fatalf("%d combined comments, want 1", len(comments))
	}
	// A section per stack, and the Create's own <details>.
	want := mdcheck.Want{Details: 3, Data: []string{hostileProject, hostileDir, broken, hostile, "v1:ConfigMap:" + hostile, "hashicorp:local:file:" + hostile}}
	for _, p := range mdcheck.Check(comments[0].Body, want) {
		t.Errorf("combined comment: %s", p)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("combined comment:\n%s", comments[0].Body)
	}
}

// TestStrangersMarkerCommentsAreLeftAlone: anyone can comment on a pull
// request with the action's hidden marker for a stack. The action edits,
// marks outdated and deletes only comments its own user
// (github-actions[bot], or the comment-user input) wrote; a stranger's are
// never written to.
func TestStrangersMarkerCommentsAreLeftAlone(t *testing.T) {
	gh := githubfake.New(t)
	repo := newPRRepo(t)
	const number = 14
	ev := forkEvent(t, number, "7777777777777777777777777777777777777777", false)
	o, r := owner(ev)
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
	var strangers []int64
	for _, body := range []string{
		// The stack's first part: Publish would edit it.
		"<!-- kusionpr:preview stack=apps/web/dev workspace=default -->\nmallory's",
		// A second part: a one-part comment would delete it.
		"<!-- kusionpr:preview stack=apps/web/dev workspace=default part=2 -->\nmallory's",
		// A stack not touched: it would be marked outdated.
		"<!-- kusionpr:preview stack=apps/api/dev workspace=default -->\nmallory's",
	} {
		strangers = append(strangers, gh.PostComment(o, r, number, "mallory", body).ID)
	}
	env := map[string]string{"INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"), "KUBECONFIG": ""}
	for i := range 2 {
		if i == 1 {
			repo.writeSpec("apps/web/dev", "v2") // the second run edits its comment
		}
		if run := runAction(t, gh, repo.root, "pull_request", ev, env); run.code != 0 {
			t.Fatalf("run %d exited %d\n%s", i+1, run.code, run.stderr)
		}
	}
	written := map[int64]string{}
	for _, call := range gh.Calls() {
		var id int64
		if _, err := fmt.Sscanf(call.Path[strings.LastIndex(call.Path, "/")+1:], "%d", &id); err == nil && (call.Method == "PATCH" || call.Method == "DELETE") {
			written[id] += call.Method + " "
		}
	}
	for _, id := range strangers {
		if written[id] != "" {
			t.Errorf("the stranger's comment %d was written to: %s", id, written[id])
		}
	}
	var own []githubfake.Comment
	for _, c := range gh.Comments(o, r, number) {
		if c.User == "github-actions[bot]" {
			own = append(own, c)
		}
	}
	if len(own) != 1 || written[own[0].ID] != "PATCH " || !strings.Contains(own[0].Body, "v2") {
		t.Errorf("own comments %+v, written %v: want one, created by the first run and edited by the second", own, written)
	}
	for _, c := range gh.Comments(o, r, number) {
		if c.User == "mallory" && !strings.HasSuffix(c.Body, "\nmallory's") {
			t.Errorf("the stranger's comment changed: %q", c.Body)
		}
	}

	// With another token, the comment-user input names whose comments are
	// the action's: those of github-actions[bot] are then a stranger's.
	gh.SetTokenUser("ghp_octocat_token", "octocat")
	env["INPUT_GITHUB-TOKEN"], env["INPUT_COMMENT-USER"] = "ghp_octocat_token", "octocat"
	before := len(gh.Calls())
	for range 2 {
		if run := runAction(t, gh, repo.root, "pull_request", ev, env); run.code != 0 {
			t.Fatalf("run as octocat exited %d\n%s", run.code, run.stderr)
		}
	}
	for _, call := range gh.Calls()[before:] {
		if (call.Method == "PATCH" || call.Method == "DELETE") && strings.HasSuffix(call.Path, fmt.Sprint(own[0].ID)) {
			t.Errorf("octocat's run wrote to github-actions[bot]'s comment: %s %s", call.Method, call.Path)
		}
	}
	n := 0
	for _, c := range gh.Comments(o, r, number) {
		if c.User == "octocat" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d comments of octocat after two runs, want one, edited in place", n)
	}
}
