package ghactions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/executor/ghactions"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
	"github.com/kusionpr/kusionpr/workflow"
)

const (
	owner, repo = "octo", "infra"
	commit      = "cccccccccccccccccccccccccccccccccccccccc"
	number      = 7
	file        = "kusion-run.yml"
)

type world struct {
	t    *testing.T
	gh   *githubfake.Server
	c    *githubapi.Client
	x    *ghactions.Executor
	root string
}

func newWorld(t *testing.T) *world {
	gh := githubfake.New(t)
	gh.SetWorkflow(owner, repo, file, githubfake.ReadWorkflow(t, "../../.github/workflow-examples/kusion-run.yml"))
	c, err := githubapi.New("ghs_token", gh.URL, owner, repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, gh: gh, c: c, root: t.TempDir(),
		x: ghactions.New(ghactions.Config{Workflow: file, PollInterval: ghactions.Duration{Duration: time.Second}}, nil)}
	for name, body := range map[string]string{"apps/project.yaml": "name: apps\n", "apps/dev/stack.yaml": "name: dev\nworkspace: dev\n",
		"apps/dev/spec.yaml": "resources: []\n"} {
		p := filepath.Join(w.root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gh.SetPullRequest(owner, repo, number, commit, "master", false)
	gh.SetPullFiles(owner, repo, number, []githubfake.PullFile{{Filename: "apps/dev/spec.yaml", Status: "modified"}})
	return w
}

func (w *world) options() workflow.Request {
	return workflow.Request{Root: w.root, Trigger: "merge", Merge: &workflow.MergeOrder{SHA: commit, MergedAt: time.Now()},
		Origin: &model.Origin{PullRequest: number, SHA: commit, Actor: "octocat", Command: "merge", Repository: &model.Repository{ID: 42, FullName: owner + "/" + repo}}}
}

// apply is the apply of the stack in dir, with opts.
func (w *world) apply(dir string, opts workflow.Request) workflow.Request {
	w.t.Helper()
	req, err := opts.For(workflow.Apply, dir)
	if err != nil {
		w.t.Fatal(err)
	}
	return req
}

// runner plays GitHub's runner on each dispatch: the run does what do
// says, then completes, and the workflow_run webhook reaches the executor.
func (w *world) runner(do func(d githubfake.Dispatch, req workflow.Request) (conclusion string)) {
	w.gh.OnDispatch(func(d githubfake.Dispatch) {
		var req workflow.Request
		if err := json.Unmarshal([]byte(d.Inputs["request"]), &req); err != nil {
			w.t.Errorf("the request input: %v", err)
		}
		w.gh.StartRun(owner, repo, d.RunID)
		w.gh.CompleteRun(owner, repo, d.RunID, do(d, req))
		w.heard(d.RunID)
	})
}

// heard delivers the run's workflow_run completed webhook to the executor,
// as the bot routes it.
func (w *world) heard(runID int64) {
	ev := w.gh.WorkflowRunEvent(w.t, owner, repo, runID, "completed")
	run := ev["workflow_run"].(map[string]any)
	w.x.Heard(fmt.Sprint(run["name"]), fmt.Sprint(run["display_title"]))
}

func (w *world) result(d githubfake.Dispatch, res workflow.RequestResult) {
	data, err := res.Encode()
	if err != nil {
		w.t.Error(err)
	}
	w.gh.AddArtifact(owner, repo, d.RunID, ghactions.ArtifactName(d.Inputs["id"]), map[string][]byte{".kusionpr-result.json": data})
}

// requestOf is the request a dispatch carries.
func requestOf(t *testing.T, d githubfake.Dispatch) workflow.Request {
	t.Helper()
	var req workflow.Request
	if err := json.Unmarshal([]byte(d.Inputs["request"]), &req); err != nil {
		t.Errorf("the request input: %v", err)
	}
	return req
}

// applied is the result of req's apply as release revision.
func applied(req workflow.Request, revision uint64) workflow.RequestResult {
	to := &model.Resource{ID: "v1:ConfigMap:apps:settings", Type: "Kubernetes", Attributes: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	return workflow.RequestResult{Request: req.ID(), Stack: req.Stack, Commit: req.Commit, Command: req.Command,
		Project: "apps", StackName: "dev", Workspace: "dev", Revision: revision, Phase: model.PhaseSucceeded,
		Preview: &engine.Preview{Project: "apps", Workspace: "dev", Stack: "dev", StepKeys: []string{to.ID},
			ChangeSteps: map[string]*engine.Step{to.ID: {ID: to.ID, Action: engine.Create, To: to}}}}
}

// TestRunsReportedWithTheirLink: a merge's apply is dispatched on the
// default branch with the request as input, followed as the run GitHub
// answered with, and what the run left is reported on the pull request
// with a link to the run; a run that failed without a result, a result of
// another request or naming another stack, commit or command than the
// request's, and an artifact that unzips past the bound are reported as
// failures naming the run.
func TestRunsReportedWithTheirLink(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(w *world, d githubfake.Dispatch) string
		want []string
	}{
		{"applied", func(w *world, d githubfake.Dispatch) string {
			w.result(d, applied(requestOf(t, d), 3))
			return "success"
		}, []string{"Applied stack", "release 3 succeeded"}},
		{"failed without a result", func(w *world, d githubfake.Dispatch) string { return "failure" },
			[]string{"ended in failure and left no result (artifact kusionpr-result-apply-"}},
		{"another request's result", func(w *world, d githubfake.Dispatch) string {
			res := applied(requestOf(t, d), 3)
			res.Request = "apply-000000000000000000000000"
			w.result(d, res)
			return "success"
		}, []string{`names request "apply-000000000000000000000000"`}},
		{"a result of the request's id naming another stack", func(w *world, d githubfake.Dispatch) string {
			res := applied(requestOf(t, d), 3)
			res.Stack = "apps/prod"
			w.result(d, res)
			return "success"
		}, []string{`names stack "apps/prod", not "apps/dev"`}},
		{"a result of the request's id naming another commit and command", func(w *world, d githubfake.Dispatch) string {
			res := applied(requestOf(t, d), 3)
			res.Commit, res.Command = strings.Repeat("e", 40), workflow.Preview
			w.result(d, res)
			return "success"
		}, []string{`commit "eeee`, `command "preview", not "apply"`}},
		{"a zip bomb", func(w *world, d githubfake.Dispatch) string {
			w.gh.AddArtifact(owner, repo, d.RunID, ghactions.ArtifactName(d.Inputs["id"]), map[string][]byte{"r.json": bytes.Repeat([]byte{'0'}, ghactions.MaxResultBytes+1)})
			return "success"
		}, []string{"unpacks to more than 32 MiB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.runner(func(d githubfake.Dispatch, req workflow.Request) string {
				if err := req.Check(); err != nil || req.ID() != d.Inputs["id"] {
					t.Errorf("the dispatched request %+v (%v) is not the input id %s", req, err, d.Inputs["id"])
				}
				return tc.run(w, d)
			})
			r, err := report.New()
			if err != nil {
				t.Fatal(err)
			}
			change := &workflow.Change{Root: w.root, Number: number, SHA: commit, Command: workflow.Apply, Runner: w.x.For(w.c), Request: w.options(),
				GitHub: w.c, Renderer: r}
			if _, err := change.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			ds := w.gh.Dispatches()
			if len(ds) != 1 {
				t.Fatalf("%d dispatches, want 1", len(ds))
			}
			d := ds[0]
			var req workflow.Request
			json.Unmarshal([]byte(d.Inputs["request"]), &req)
			if d.Ref != "master" || d.Workflow != file || req.Command != workflow.Apply || req.Stack != "apps/dev" || req.Commit != commit ||
				d.Inputs["stack"] != "apps/dev" || d.Inputs["command"] != "apply" || d.Inputs["commit"] != commit || d.Inputs["environment"] != "dev" {
				t.Errorf("dispatch %+v, request %+v", d, req)
			}
			comments := w.gh.Comments(owner, repo, number)
			if len(comments) != 1 {
				t.Fatalf("%d comments, want the stack's one", len(comments))
			}
			link := fmt.Sprintf("[the workflow run](%s%s/%s/actions/runs/%d)", w.gh.URL, owner, repo, d.RunID)
			for _, s := range append(tc.want, link) {
				if !strings.Contains(comments[0].Body, s) {
					t.Errorf("the comment lacks %q:\n%s", s, comments[0].Body)
				}
			}
		})
	}
}

// TestOneRunPerRequest: a redelivered merge, and a bot restarted while the
// run is queued, follow the run dispatched before instead of dispatching
// another; when two bots raced and both dispatched, the first run's result
// is the one reported, whichever completed first.
func TestOneRunPerRequest(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	var mu sync.Mutex
	var queued []githubfake.Dispatch
	w.gh.OnDispatch(func(d githubfake.Dispatch) {
		mu.Lock()
		queued = append(queued, d)
		mu.Unlock()
	})
	dir := filepath.Join(w.root, "apps/dev")

	// The bot stops waiting (a restart) while the run is queued.
	got, d := w.stoppedAfterDispatch(dir)
	if got.Err == nil || !strings.Contains(got.Err.Error(), "it goes on") {
		t.Fatalf("a stopped wait: %v", got.Err)
	}
	w.result(d, applied(requestOf(t, d), 3))
	w.gh.CompleteRun(owner, repo, d.RunID, "success")

	// Restarted, then redelivered: the same run, read twice.
	for i := range 2 {
		got := w.x.For(w.c).Run(ctx, w.apply(dir, w.options()))
		if got.Err != nil || got.Release == nil || got.Release.Revision != 3 || !strings.HasSuffix(got.RunURL, fmt.Sprintf("/runs/%d", d.RunID)) {
			t.Fatalf("run %d: %+v", i+1, got)
		}
	}
	if n := len(w.gh.Dispatches()); n != 1 {
		t.Fatalf("%d dispatches for one request, want 1", n)
	}

	// Two bots raced on another request: two runs. The later one finds
	// the work done and completes first; the earlier one's apply is what
	// is reported.
	opts := w.options()
	opts.Trigger = "comment 99"
	opts.Merge = nil
	req, err := opts.For(workflow.Apply, dir)
	if err != nil {
		t.Fatal(err)
	}
	inputs, err := ghactions.Inputs(req, "dev")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := w.c.DispatchWorkflow(ctx, file, "master", inputs); err != nil {
			t.Fatal(err)
		}
	}
	all := w.gh.Dispatches()
	first, second := all[len(all)-2], all[len(all)-1]
	skipped := workflow.RequestResult{Request: req.ID(), Stack: req.Stack, Commit: req.Commit, Command: req.Command,
		Project: "apps", StackName: "dev", Workspace: "dev", Skipped: "release 4 applied this request already"}
	w.result(second, skipped)
	w.gh.CompleteRun(owner, repo, second.RunID, "success")
	go func() {
		w.result(first, applied(req, 4))
		w.gh.CompleteRun(owner, repo, first.RunID, "success")
		w.heard(first.RunID)
	}()
	got = w.x.For(w.c).Run(ctx, w.apply(dir, opts))
	if got.Err != nil || got.Skipped != "" || got.Release == nil || got.Release.Revision != 4 || !strings.HasSuffix(got.RunURL, fmt.Sprintf("/runs/%d", first.RunID)) {
		t.Fatalf("raced request: %+v, want the first run's release 4", got)
	}
	if n := len(w.gh.Dispatches()); n != 3 {
		t.Errorf("%d dispatches, want the first request's one and the race's two", n)
	}
}

// TestDispatchRefusalNamesTheSetting: a workflow file the repository does
// not have is refused by GitHub, and the report says which file and which
// setting.
func TestDispatchRefusalNamesTheSetting(t *testing.T) {
	w := newWorld(t)
	x := ghactions.New(ghactions.Config{Workflow: "missing.yml"}, nil)
	got := x.For(w.c).Run(context.Background(), w.apply(filepath.Join(w.root, "apps/dev"), w.options()))
	if got.Err == nil || !strings.Contains(got.Err.Error(), "missing.yml") || !strings.Contains(got.Err.Error(), "githubActions.workflow") || !strings.Contains(got.Err.Error(), "404") {
		t.Fatalf("got %v", got.Err)
	}
}

const (
	// bot is the user the world's token acts as: the executor's own.
	bot     = githubapi.ActionsLogin
	mallory = "mallory"
)

// forgedRun is a run named with req's id that someone (as) dispatched on
// ref with req's own inputs, which completed at once with a result naming
// req, claiming release 99 applied: what a writer who predicted the id
// would leave. It returns the run's id.
func (w *world) forgedRun(req workflow.Request, as, ref string) int64 {
	w.t.Helper()
	inputs, err := ghactions.Inputs(req, "dev")
	if err != nil {
		w.t.Fatal(err)
	}
	var d githubfake.Dispatch
	if as == bot {
		// The bot's own token, as anything else holding it could use it.
		if _, err := w.c.DispatchWorkflow(context.Background(), file, ref, inputs); err != nil {
			w.t.Fatal(err)
		}
		ds := w.gh.Dispatches()
		d = ds[len(ds)-1]
	} else if d, err = w.gh.DispatchAs(as, owner, repo, file, ref, inputs); err != nil {
		w.t.Fatal(err)
	}
	w.result(d, applied(req, 99))
	w.gh.CompleteRun(owner, repo, d.RunID, "success")
	w.heard(d.RunID)
	return d.RunID
}

// botDispatches are the dispatches the executor made: the bot's user's,
// on the default branch.
func (w *world) botDispatches() []githubfake.Dispatch {
	var out []githubfake.Dispatch
	for _, d := range w.gh.Dispatches() {
		if d.Actor == bot && d.Ref == "master" {
			out = append(out, d)
		}
	}
	return out
}

// lookedSince waits until the executor read the workflow's runs after t.
func (w *world) lookedSince(t time.Time) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, c := range w.gh.Calls() {
			if c.At.After(t) && (c.Operation == "actions/list-workflow-runs" || c.Operation == "actions/get-workflow-run") {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.t.Error("the executor did not look at the runs again")
}

// neverRead fails the test if any call read the run id: its status or its
// artifacts.
func (w *world) neverRead(id int64) {
	w.t.Helper()
	for _, c := range w.gh.RunReads(owner, repo, id) {
		w.t.Errorf("the run %d, not the bot's, was read: %s %s", id, c.Method, c.Path)
	}
}

// stoppedAfterDispatch runs the request of the stack in dir until it is
// dispatched, then stops waiting, as a bot restarting would; it returns
// what the stopped wait reported and the dispatch.
func (w *world) stoppedAfterDispatch(dir string) (*workflow.StackResult, githubfake.Dispatch) {
	w.t.Helper()
	stopped, cancel := context.WithCancel(context.Background())
	done := make(chan *workflow.StackResult)
	go func() { done <- w.x.For(w.c).Run(stopped, w.apply(dir, w.options())) }()
	for len(w.gh.Dispatches()) == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	return <-done, w.gh.Dispatches()[0]
}

// TestRunsOfOthersAreNeverRead: the request id is a hash of public values,
// so a writer can dispatch the workflow first with the predicted run-name
// and upload a result claiming the apply was done. Whether that run came
// before the bot's dispatch or after it, from the default branch or a
// branch's copy of the workflow, the bot dispatches its own run, reports
// that run's result and never reads the other, neither its status nor its
// artifact. A run of the bot's own user on another branch than the one it
// dispatches on is not adopted either, and the bot's run re-run by a
// writer is no longer read. All of it with a GitHub that answers the
// dispatch with its run, and with one that does not (204: the run is
// looked for among the bot's runs).
func TestRunsOfOthersAreNeverRead(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before runs ahead of the request, during at the bot's dispatch,
		// before its run completes; each returns the run to leave alone.
		before, during func(w *world, req workflow.Request) int64
		// rerun: a writer runs the bot's run again before it completes.
		rerun bool
	}{
		{name: "a writer's run on the default branch, before the bot's dispatch",
			before: func(w *world, req workflow.Request) int64 { return w.forgedRun(req, mallory, "master") }},
		{name: "a writer's run from a branch's copy of the workflow, before the bot's dispatch",
			before: func(w *world, req workflow.Request) int64 { return w.forgedRun(req, mallory, "weak") }},
		{name: "a writer's run after the bot's dispatch, completed before the bot's run",
			during: func(w *world, req workflow.Request) int64 { return w.forgedRun(req, mallory, "master") }},
		{name: "a run of the bot's user on another branch",
			before: func(w *world, req workflow.Request) int64 { return w.forgedRun(req, bot, "weak") }},
		{name: "the bot's run re-run by a writer", rerun: true},
	} {
		for _, details := range []bool{true, false} {
			name := tc.name
			if !details {
				name += ", GitHub answering without the run"
			}
			t.Run(name, func(t *testing.T) {
				w := newWorld(t)
				w.x.FindWithin = 5 * time.Second
				w.gh.SetTree(owner, repo, "weak", w.root)
				if !details {
					w.gh.AnswerDispatchWithoutRun()
				}
				dir := filepath.Join(w.root, "apps/dev")
				req, err := w.options().For(workflow.Apply, dir)
				if err != nil {
					t.Fatal(err)
				}
				var others []int64
				var mu sync.Mutex
				w.gh.OnDispatch(func(d githubfake.Dispatch) {
					if d.Actor != bot || d.Ref != "master" || d.Inputs["id"] != req.ID() || len(w.botDispatches()) != 1 {
						return // not the executor's
					}
					if tc.during != nil {
						mu.Lock()
						others = append(others, tc.during(w, req))
						mu.Unlock()
						// The executor sees the forged run completed
						// before its own completes.
						w.lookedSince(time.Now())
					}
					if tc.rerun {
						w.gh.RerunAs(mallory, owner, repo, d.RunID)
					}
					w.result(d, applied(requestOf(t, d), 3))
					w.gh.CompleteRun(owner, repo, d.RunID, "success")
					w.heard(d.RunID)
				})
				if tc.before != nil {
					others = append(others, tc.before(w, req))
				}

				got := w.x.For(w.c).Run(context.Background(), w.apply(dir, w.options()))
				ours := w.botDispatches()
				if len(ours) != 1 {
					t.Fatalf("%d dispatches by the bot on the default branch, want its own one", len(ours))
				}
				own := fmt.Sprintf("/runs/%d", ours[0].RunID)
				if tc.rerun {
					// Without the run in GitHub's answer the bot may find
					// it re-run already: not its own, so never found.
					refused := got.Err != nil && strings.Contains(got.Err.Error(), "no longer the bot's alone") && strings.Contains(got.Err.Error(), own) &&
						strings.Contains(got.Err.Error(), mallory)
					if !refused && (details || got.Err == nil || !strings.Contains(got.Err.Error(), "no run of the bot's user")) {
						t.Fatalf("a run re-run by a writer: %v, want it refused naming the run and who re-ran it", got.Err)
					}
					for _, c := range w.gh.Calls() {
						if strings.HasSuffix(c.Path, own+"/artifacts") {
							t.Errorf("the re-run's artifacts were read: %s", c.Path)
						}
					}
					return
				}
				if got.Err != nil || got.Release == nil || got.Release.Revision != 3 || !strings.HasSuffix(got.RunURL, own) {
					t.Fatalf("got %+v (error %v), want the bot's run's release 3 and its link", got, got.Err)
				}
				mu.Lock()
				defer mu.Unlock()
				for _, id := range others {
					w.neverRead(id)
				}
			})
		}
	}
}

// TestAdoptsOnlyTheBotsRun: a bot restarted while its run is queued adopts
// that run, and not a writer's run named with the same request id that
// completed in the meantime with a forged result, even when a writer
// cancels the bot's run so that it leaves no result: the writer's run is
// never read, and nothing is dispatched again.
func TestAdoptsOnlyTheBotsRun(t *testing.T) {
	for _, tc := range []struct {
		name       string
		conclusion string // the bot's run's; a result is uploaded on success
		want       string // the error, "" for the bot's release 3
	}{
		{"the bot's run applies", "success", ""},
		{"the bot's run is cancelled", "cancelled", "ended cancelled and left no result"},
	} {
		for _, details := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, run details %t", tc.name, details), func(t *testing.T) {
				ctx := context.Background()
				w := newWorld(t)
				if !details {
					w.gh.AnswerDispatchWithoutRun()
				}
				dir := filepath.Join(w.root, "apps/dev")
				_, d := w.stoppedAfterDispatch(dir)
				req := requestOf(t, d)

				forged := w.forgedRun(req, mallory, "master")
				// Restarted: the bot's run is still queued, the writer's done.
				go func() {
					time.Sleep(200 * time.Millisecond)
					if tc.conclusion == "success" {
						w.result(d, applied(req, 3))
					}
					w.gh.CompleteRun(owner, repo, d.RunID, tc.conclusion)
					w.heard(d.RunID)
				}()
				got := w.x.For(w.c).Run(ctx, w.apply(dir, w.options()))
				own := fmt.Sprintf("/runs/%d", d.RunID)
				switch {
				case tc.want == "" && (got.Err != nil || got.Release == nil || got.Release.Revision != 3 || !strings.HasSuffix(got.RunURL, own)):
					t.Fatalf("after a restart: %+v (error %v), want the bot's run's release 3", got, got.Err)
				case tc.want != "" && (got.Err == nil || !strings.Contains(got.Err.Error(), tc.want) || !strings.HasSuffix(got.RunURL, own)):
					t.Fatalf("after a restart: %+v (error %v), want the bot's run reported: %s", got, got.Err, tc.want)
				}
				if n := len(w.botDispatches()); n != 1 {
					t.Errorf("%d dispatches by the bot, want the one before the restart", n)
				}
				w.neverRead(forged)
			})
		}
	}
}
