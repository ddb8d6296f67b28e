package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/workflow"
)

// dispatchEvent is GitHub's workflow_dispatch payload with the bot's
// inputs, as a run the bot dispatched has it.
func dispatchEvent(t *testing.T, inputs map[string]any) map[string]any {
	ev := githubfake.Event(t, "workflow_dispatch", "")
	ev["inputs"] = inputs
	return ev
}

// TestRequestInput: with the input request, the action runs that one
// request on the checkout and writes its result for the artifact, and
// comments on nothing; a request that is not one, names a stack out of
// the checkout or another repository, comes with another event, or meets
// a checkout at another commit is refused before anything runs.
func TestRequestInput(t *testing.T) {
	gh := githubfake.New(t)
	root := t.TempDir()
	write(t, filepath.Join(root, "apps/web/project.yaml"), "name: web\n")
	write(t, filepath.Join(root, "apps/web/dev/stack.yaml"), "name: dev\n")
	write(t, filepath.Join(root, "apps/web/dev/spec.yaml"), "resources:\n- id: v1:Namespace:req-input\n  type: Kubernetes\n  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: req-input}}\n")
	outside := t.TempDir()
	write(t, filepath.Join(outside, "stack.yaml"), "name: elsewhere\n")
	if err := os.Symlink(outside, filepath.Join(root, "apps/web/away")); err != nil {
		t.Fatal(err)
	}
	ev := dispatchEvent(t, nil)
	repo := ev["repository"].(map[string]any)
	repoID := int64(repo["id"].(float64))
	const commit = "dddddddddddddddddddddddddddddddddddddddd"
	var requestOf func(cmd workflow.Command, stack string, repoID int64) string
	request := func(stack string, repoID int64) string {
		return requestOf(workflow.Preview, stack, repoID)
	}
	requestOf = func(cmd workflow.Command, stack string, repoID int64) string {
		req := workflow.Request{Command: cmd, DryRun: cmd == workflow.Destroy, Stack: stack, Commit: commit, Offline: true, Trigger: "comment 5",
			Origin: &model.Origin{PullRequest: 5, SHA: commit, Actor: "octocat", Repository: &model.Repository{ID: repoID, FullName: fmt.Sprint(repo["full_name"])}}}
		b, _ := json.Marshal(req)
		return string(b)
	}
	backend := "file://" + t.TempDir()

	for _, tc := range []struct {
		name, event, request, head, refusal string
	}{
		{"not a request", "workflow_dispatch", "{", "", "input request"},
		{"a stack out of the repository", "workflow_dispatch", request("../x", repoID), "", "is not a folder inside the repository"},
		{"a stack linked out of the checkout", "workflow_dispatch", request("apps/web/away", repoID), "", "leads out of the checkout"},
		{"another repository", "workflow_dispatch", request("apps/web/dev", repoID+1), "", "but this job runs in"},
		{"another event", "push", request("apps/web/dev", repoID), "", "not for a push event"},
		{"another commit checked out", "workflow_dispatch", request("apps/web/dev", repoID), "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee\n", "not at the request's commit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.RemoveAll(filepath.Join(root, ".git"))
			if tc.head != "" {
				write(t, filepath.Join(root, ".git/HEAD"), tc.head)
			}
			run := runAction(t, gh, root, tc.event, dispatchEvent(t, map[string]any{"request": tc.request}),
				map[string]string{"INPUT_REQUEST": tc.request, "INPUT_BACKEND": backend})
			if run.code != 2 || !strings.Contains(run.stdout+run.stderr, tc.refusal) {
				t.Errorf("exit %d, want 2 and %q:\n%s%s", run.code, tc.refusal, run.stdout, run.stderr)
			}
			if run.outputs["result-file"] != "" {
				t.Errorf("a refused request left a result: %q", run.outputs["result-file"])
			}
		})
	}

	req := request("apps/web/dev", repoID)
	write(t, filepath.Join(root, ".git/HEAD"), commit+"\n")
	run := runAction(t, gh, root, "workflow_dispatch", dispatchEvent(t, map[string]any{"request": req}),
		map[string]string{"INPUT_REQUEST": req, "INPUT_BACKEND": backend})
	if run.code != 0 {
		t.Fatalf("exit %d:\n%s%s", run.code, run.stdout, run.stderr)
	}
	name := run.outputs["result-file"]
	if !filepath.IsLocal(name) {
		t.Fatalf("result-file %q is not a file of the workspace", name)
	}
	data, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	var parsed workflow.Request
	json.Unmarshal([]byte(req), &parsed)
	res, err := workflow.DecodeRequestResult(parsed, data)
	if err != nil || res.Error != "" || res.Preview == nil || res.Project != "web" || res.Preview.Summary().Create != 1 {
		t.Fatalf("result %+v, %v", res, err)
	}
	for _, c := range gh.Calls() {
		if c.Method != "GET" {
			t.Errorf("the action wrote to GitHub: %s %s", c.Method, c.Path)
		}
	}
	// A stack the commit deleted is destroyed: its folder is gone.
	gone := requestOf(workflow.Destroy, "apps/web/qa", repoID)
	run = runAction(t, gh, root, "workflow_dispatch", dispatchEvent(t, map[string]any{"request": gone}),
		map[string]string{"INPUT_REQUEST": gone, "INPUT_BACKEND": backend})
	if run.code != 0 || run.outputs["result-file"] == "" {
		t.Errorf("the destroy of a deleted stack: exit %d, result %q\n%s%s", run.code, run.outputs["result-file"], run.stdout, run.stderr)
	}

	// A second run of the request does not write through what the first
	// (or the checkout) left at the result's name.
	again := runAction(t, gh, root, "workflow_dispatch", dispatchEvent(t, map[string]any{"request": req}),
		map[string]string{"INPUT_REQUEST": req, "INPUT_BACKEND": backend})
	if again.code == 0 || !strings.Contains(again.stdout+again.stderr, "the result") {
		t.Errorf("a result file already there was written over: exit %d\n%s%s", again.code, again.stdout, again.stderr)
	}
}
