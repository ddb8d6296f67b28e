package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/executor/ghactions"
	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/workflow"
)

const exampleRunWorkflow = "../../.github/workflow-examples/kusion-run.yml"

// storeOrClusterVariable is a variable through which a process reaches a
// cluster, a cloud or the release store.
var storeOrClusterVariable = regexp.MustCompile(`^(KUBECONFIG|KUSIONPR_BACKEND|KUSIONPR_KUBECONFIGS|AWS_[A-Z_]*|AZURE_[A-Z_]*|GOOGLE_[A-Z_]*|STORAGE_EMULATOR_HOST|KUSIONPR_TEST_[A-Z0-9_]*)=`)

// withActions makes the world's bot run its stacks as runs of the
// repository's workflow, with nothing that reaches a cluster, a cloud or
// the release store: no kubeconfig, no store credentials, no backend. The
// workflow_run webhooks alone wake its waits (its poll is ten minutes).
func withActions() worldOption {
	return func(w *world) {
		raw, _ := json.Marshal(map[string]any{"githubActions": map[string]any{"workflow": "kusion-run.yml", "pollInterval": "10m"}})
		path := filepath.Join(w.t.TempDir(), "bot.yaml")
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			w.t.Fatal(err)
		}
		var env []string
		for _, kv := range w.env {
			if !storeOrClusterVariable.MatchString(kv) {
				env = append(env, kv)
			}
		}
		w.env = append(env, "KUSIONPR_EXECUTOR=github-actions", "KUSIONPR_CONFIG="+path, "KUBERNETES_SERVICE_HOST=")
	}
}

// stepInputs are the INPUT_* variables of the example workflow's kusion
// step, its with: evaluated as the runner would: inputs from the
// dispatch, secrets from the repository's settings, and the backend the
// operator would have written in place of the example's.
func stepInputs(t *testing.T, inputs map[string]string, secrets map[string]string, backend string) []string {
	raw, err := os.ReadFile(exampleRunWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				ID   string            `json:"id"`
				With map[string]string `json:"with"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatal(err)
	}
	expr := regexp.MustCompile(`\$\{\{\s*(inputs|secrets)\.([A-Za-z0-9_-]+)\s*\}\}`)
	var env []string
	for _, job := range wf.Jobs {
		for _, st := range job.Steps {
			if st.ID != "kusion" {
				continue
			}
			for k, v := range st.With {
				if k == "backend" {
					v = backend
				}
				v = expr.ReplaceAllStringFunc(v, func(m string) string {
					p := expr.FindStringSubmatch(m)
					if p[1] == "inputs" {
						return inputs[p[2]]
					}
					return secrets[p[2]]
				})
				env = append(env, "INPUT_"+strings.ToUpper(k)+"="+v)
			}
		}
	}
	if len(env) == 0 {
		t.Fatalf("%s has no step with id kusion", exampleRunWorkflow)
	}
	return env
}

// runWorkflow plays GitHub's runner for a dispatch of the example
// workflow: actions/checkout of the input commit (the repository's files,
// with git's HEAD at it), the action binary as a Docker action runs it
// (GITHUB_* of a workflow_dispatch job, the event file with the inputs,
// INPUT_* from the step's with:, the repository's own kubeconfig secret
// and store credentials, never the bot's), actions/upload-artifact of the
// result file under the workflow's artifact name, then the run completed
// and GitHub's workflow_run webhook delivered to the bot.
func (w *world) runWorkflow(d githubfake.Dispatch, repoID int64) {
	t := w.t
	checkout := t.TempDir()
	if out, err := exec.Command("cp", "-a", w.tree+"/.", checkout).CombinedOutput(); err != nil {
		t.Errorf("checkout: %v\n%s", err, out)
		return
	}
	os.MkdirAll(filepath.Join(checkout, ".git"), 0o755)
	os.WriteFile(filepath.Join(checkout, ".git/HEAD"), []byte(d.Inputs["commit"]+"\n"), 0o644)
	kubeconfig, err := os.ReadFile(testenv.Kubeconfig(t))
	if err != nil {
		t.Error(err)
		return
	}
	dir := t.TempDir()
	ev := githubfake.Event(t, "workflow_dispatch", "")
	inputs := map[string]any{}
	for k, v := range d.Inputs {
		inputs[k] = v
	}
	ev["inputs"], ev["ref"] = inputs, "refs/heads/"+d.Ref
	eventPath := githubfake.WriteEvent(t, dir, ev)
	output := filepath.Join(dir, "output")
	os.WriteFile(output, nil, 0o644)
	cmd := exec.Command(testenv.Binary(t, "../action"))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GITHUB_ACTIONS=true", "GITHUB_EVENT_NAME=workflow_dispatch", "GITHUB_EVENT_PATH="+eventPath,
		"GITHUB_OUTPUT="+output, "GITHUB_STEP_SUMMARY="+filepath.Join(dir, "summary"), "GITHUB_WORKSPACE="+checkout,
		"GITHUB_REPOSITORY="+w.owner+"/"+w.repo, fmt.Sprintf("GITHUB_REPOSITORY_ID=%d", repoID), "GITHUB_API_URL="+strings.TrimSuffix(w.gh.URL, "/"),
		"GITHUB_REF=refs/heads/"+d.Ref, "GITHUB_ACTOR=octocat", "INPUT_GITHUB-TOKEN=ghs_workflowtoken0123456789", "HOME="+dir)
	cmd.Env = append(cmd.Env, stepInputs(t, d.Inputs, map[string]string{"KUBECONFIG": string(kubeconfig)}, w.backend)...)
	cmd.Env = append(cmd.Env, w.runInputs...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	conclusion := "success"
	if err := cmd.Run(); err != nil {
		conclusion = "failure"
		t.Logf("the workflow run's action failed: %v\n%s", err, logs.String())
	}
	if name := outputValue(output, "result-file"); name != "" {
		data, err := os.ReadFile(filepath.Join(checkout, name))
		if err != nil {
			t.Error(err)
		} else {
			w.gh.AddArtifact(w.owner, w.repo, d.RunID, "kusionpr-result-"+d.Inputs["id"], map[string][]byte{filepath.Base(name): data})
		}
	}
	w.gh.CompleteRun(w.owner, w.repo, d.RunID, conclusion)
	p := w.gh.WorkflowRunEvent(t, w.owner, w.repo, d.RunID, "completed")
	p["installation"] = map[string]any{"id": float64(installationID)}
	if got := githubfake.Deliver(t, w.url+"/webhook", secret, "workflow_run", p); got.Status != http.StatusOK {
		t.Errorf("workflow_run delivery answered %d: %s", got.Status, got.Body)
	}
}

// outputValue reads one output of a GITHUB_OUTPUT file.
func outputValue(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, delim, ok := strings.Cut(sc.Text(), "<<"); ok && k == name && sc.Scan() {
			v := sc.Text()
			if sc.Scan() && sc.Text() == delim {
				return v
			}
		}
	}
	return ""
}

// TestMergeAppliesThroughAWorkflowRun: with the executor github-actions, a
// merge is applied by a run of the repository's own workflow (the example
// one, dispatched on the default branch with the request as input), which
// the test runs as GitHub's runner would, with the repository's
// kubeconfig and store credentials; the bot process, which holds no
// kubeconfig, no store credentials and no backend, reports the run's
// result on the pull request with a link to the run. A redelivered merge
// and a second replica (its recovery pass, then a delivery) follow the same
// run instead of dispatching another.
func TestMergeAppliesThroughAWorkflowRun(t *testing.T) {
	w := newWorld(t, withActions())
	for _, kv := range w.env {
		if storeOrClusterVariable.MatchString(kv) {
			t.Fatalf("the bot's environment has %s: the test proves nothing", strings.SplitN(kv, "=", 2)[0])
		}
	}
	repoID := int64(w.payload("pull_request", "closed")["repository"].(map[string]any)["id"].(float64))
	w.gh.SetWorkflow(w.owner, w.repo, "kusion-run.yml", githubfake.ReadWorkflow(t, exampleRunWorkflow))
	w.gh.OnDispatch(func(d githubfake.Dispatch) { w.runWorkflow(d, repoID) })

	const number, head, merge = 41, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "dddddddddddddddddddddddddddddddddddddddd"
	w.pullRequest(number, head)
	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)
	if d := githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge)); d.Status != http.StatusAccepted {
		t.Fatalf("merge delivery answered %d: %s", d.Status, d.Body)
	}
	w.waitFor("the apply's comment", func() bool { return w.commentsContaining(number, "Applied stack") == 1 })
	ds := w.gh.Dispatches()
	if len(ds) != 1 {
		t.Fatalf("%d dispatches, want 1", len(ds))
	}
	d := ds[0]
	var req workflow.Request
	if err := json.Unmarshal([]byte(d.Inputs["request"]), &req); err != nil {
		t.Fatal(err)
	}
	if d.Ref != "master" || req.Command != workflow.Apply || req.Stack != "apps/web/dev" || req.Commit != merge || req.ID() != d.Inputs["id"] ||
		req.Origin.PullRequest != number || req.Trigger != "merge" {
		t.Errorf("dispatch %+v of request %+v", d, req)
	}
	link := fmt.Sprintf("[the workflow run](%s%s/%s/actions/runs/%d)", w.gh.URL, w.owner, w.repo, d.RunID)
	if w.commentsContaining(number, "release 1 succeeded") != 1 || w.commentsContaining(number, link) != 1 {
		t.Errorf("want release 1 succeeded and %s in: %+v", link, w.gh.Comments(w.owner, w.repo, number))
	}
	if got := kubectlGet(t, w.ns); got != "bot" {
		t.Errorf("the ConfigMap holds %q, want the merge's value", got)
	}

	// Delivered again: the bot follows the run it dispatched.
	if d := githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge)); d.Status != http.StatusAccepted {
		t.Fatalf("merge redelivery answered %d: %s", d.Status, d.Body)
	}
	w.waitFor("the redelivered merge's report", func() bool {
		return strings.Count(w.logs(), "the workflow run's result is in") == 2
	})
	if n := len(w.gh.Dispatches()); n != 1 {
		t.Errorf("%d dispatches after a redelivery, want 1", n)
	}
	if w.commentsContaining(number, "Applied stack") != 1 {
		t.Errorf("the report was not edited in place: %+v", w.gh.Comments(w.owner, w.repo, number))
	}

	// A second replica: its recovery pass finds the merge, and the
	// merge is delivered to it too; it follows the same run.
	second := w.start()
	// (Taken, or joined to its recovery of the same merge.)
	if d := githubfake.Deliver(t, second.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge)); d.Status != http.StatusAccepted && !strings.Contains(d.Body, "coalesced") {
		t.Fatalf("merge delivery to the second bot answered %d: %s", d.Status, d.Body)
	}
	w.waitFor("the second bot's report", func() bool {
		return strings.Count(second.logs.String(), "the workflow run's result is in") >= 1
	})
	if n := len(w.gh.Dispatches()); n != 1 {
		t.Errorf("%d dispatches after a second replica took the merge, want 1", n)
	}
}

// forgeRun is what a writer can do once a request's id is predictable (a
// hash of the repository, stack, commit, command and trigger, all public):
// dispatch the workflow as themselves on ref (a branch's copy of it, or
// the default branch's with inputs of their own) with the request's
// inputs, so that the run carries the request's id in its name, upload
// res as the request's result, and complete the run; GitHub then sends the
// bot the run's workflow_run webhook. It returns the run's id.
func (w *world) forgeRun(ref string, req workflow.Request, res workflow.RequestResult) int64 {
	t := w.t
	t.Helper()
	inputs, err := ghactions.Inputs(req, "")
	if err != nil {
		t.Fatal(err)
	}
	d, err := w.gh.DispatchAs("mallory", w.owner, w.repo, "kusion-run.yml", ref, inputs)
	if err != nil {
		t.Fatal(err)
	}
	data, err := res.Encode()
	if err != nil {
		t.Fatal(err)
	}
	w.gh.AddArtifact(w.owner, w.repo, d.RunID, "kusionpr-result-"+req.ID(), map[string][]byte{".kusionpr-result-" + req.ID() + ".json": data})
	w.gh.CompleteRun(w.owner, w.repo, d.RunID, "success")
	p := w.gh.WorkflowRunEvent(t, w.owner, w.repo, d.RunID, "completed")
	p["installation"] = map[string]any{"id": float64(installationID)}
	if got := githubfake.Deliver(t, w.url+"/webhook", secret, "workflow_run", p); got.Status != http.StatusOK {
		t.Errorf("workflow_run delivery answered %d: %s", got.Status, got.Body)
	}
	return d.RunID
}

// neverRead fails the test if the bot read the run: its status or its
// artifacts.
func (w *world) neverRead(runID int64) {
	w.t.Helper()
	for _, c := range w.gh.RunReads(w.owner, w.repo, runID) {
		w.t.Errorf("the bot read the writer's run %d: %s %s", runID, c.Method, c.Path)
	}
}

// TestForgedWorkflowRunsAreNeverRead: with the executor github-actions, a
// writer who predicts a request's id dispatches the workflow first, named
// with that id, with a forged result: for a merge, from a branch's copy of
// the workflow, claiming release 1 applied; for a /kusion preview, from
// the default branch, claiming no changes. The bot dispatches its own run
// each time and reports only that: the merge is really applied (the
// ConfigMap holds the merge's value, the store has the release the bot's
// run wrote), and the preview's check run counts the changes the bot's run
// found, not the forged "no changes". The writer's runs are never read.
func TestForgedWorkflowRunsAreNeverRead(t *testing.T) {
	w := newWorld(t, withActions())
	repoID := int64(w.payload("pull_request", "closed")["repository"].(map[string]any)["id"].(float64))
	w.gh.SetWorkflow(w.owner, w.repo, "kusion-run.yml", githubfake.ReadWorkflow(t, exampleRunWorkflow))
	bot := w.gh.AppLogin()
	w.gh.OnDispatch(func(d githubfake.Dispatch) {
		if d.Actor == bot {
			w.runWorkflow(d, repoID)
		}
	})
	// The dispatches the bot made, and the one it made for the request id.
	botRun := func(id string) (n int, run int64) {
		for _, d := range w.gh.Dispatches() {
			if d.Actor == bot {
				n++
				if d.Inputs["id"] == id {
					run = d.RunID
				}
			}
		}
		return n, run
	}
	w.gh.SetTree(w.owner, w.repo, "weak", w.tree)
	origin := &model.Origin{Repository: &model.Repository{ID: repoID}}

	// A /kusion preview of a pull request changing the stack: the
	// comment's id is public the moment it is posted.
	const number, head = 43, "4343434343434343434343434343434343434343"
	w.pullRequest(number, head)
	ev := w.prComment(number, "mallory", "/kusion preview")
	preview := workflow.Request{Command: workflow.Preview, Stack: "apps/web/dev", Commit: head, Trigger: fmt.Sprintf("comment %d", commentID(ev)), Origin: origin}
	forgedPreview := w.forgeRun("master", preview, workflow.RequestResult{Request: preview.ID(), Stack: preview.Stack, Commit: head, Command: workflow.Preview,
		Project: "web", StackName: "dev", Workspace: "default", Unchanged: true,
		Preview: &engine.Preview{Project: "web", Workspace: "default", Stack: "dev", ChangeSteps: map[string]*engine.Step{}}})
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", ev)
	const check = "kusion/preview: apps/web/dev"
	w.waitFor("the preview's check run", func() bool { return w.stackCheck(check, head).Status == "completed" })
	c := w.stackCheck(check, head)
	if c.Conclusion != "success" || !strings.HasPrefix(c.Title, "2 to create") {
		t.Errorf("the preview's check run: %s %q, want the bot's run's 2 to create", c.Conclusion, c.Title)
	}
	w.neverRead(forgedPreview)
	// (None for the id: the bot took the writer's run for its own, or the
	// writer's prediction missed and the test proves nothing.)
	n, run := botRun(preview.ID())
	if n != 1 || run == 0 {
		t.Fatalf("%d dispatches by the bot, run %d for the predicted id %s; want its own one for it\n%s", n, run, preview.ID(), w.logs())
	}
	link := fmt.Sprintf("[the workflow run](%s%s/%s/actions/runs/%d)", w.gh.URL, w.owner, w.repo, run)
	if !strings.Contains(c.Summary, link) {
		t.Errorf("the preview's check run does not link the bot's run %s:\n%s", link, c.Summary)
	}

	// The merge: the writer's run, from a branch's copy of the workflow,
	// claims release 1 applied.
	const merged, merge = 44, "4444444444444444444444444444444444444444"
	w.pullRequest(merged, head)
	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, merged, merge)
	apply := workflow.Request{Command: workflow.Apply, Stack: "apps/web/dev", Commit: merge, Trigger: "merge", Origin: origin}
	forgedApply := w.forgeRun("weak", apply, workflow.RequestResult{Request: apply.ID(), Stack: apply.Stack, Commit: merge, Command: workflow.Apply,
		Project: "web", StackName: "dev", Workspace: "default", Revision: 1, Phase: model.PhaseSucceeded})
	if d := githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(merged, merge)); d.Status != http.StatusAccepted {
		t.Fatalf("merge delivery answered %d: %s", d.Status, d.Body)
	}
	w.waitFor("the apply's comment", func() bool { return w.commentsContaining(merged, "Applied stack") == 1 })
	if got := kubectlGet(t, w.ns); got != "bot" {
		t.Errorf("the ConfigMap holds %q: the merge was not applied", got)
	}
	if rels := w.releases(w.store()); len(rels) != 1 || rels[0].Phase != model.PhaseSucceeded || rels[0].Origin == nil || rels[0].Origin.SHA != merge {
		t.Errorf("releases %+v, want the bot's run's release 1 of the merge", rels)
	}
	w.neverRead(forgedApply)
	n, run = botRun(apply.ID())
	if n != 2 || run == 0 {
		t.Fatalf("%d dispatches by the bot, run %d for the predicted id %s; want its own one for it\n%s", n, run, apply.ID(), w.logs())
	}
	link = fmt.Sprintf("[the workflow run](%s%s/%s/actions/runs/%d)", w.gh.URL, w.owner, w.repo, run)
	if w.commentsContaining(merged, "release 1 succeeded") != 1 || w.commentsContaining(merged, link) != 1 {
		t.Errorf("want release 1 succeeded and %s in: %+v", link, w.gh.Comments(w.owner, w.repo, merged))
	}
}
