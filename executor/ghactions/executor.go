package ghactions

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/workflow"
	"k8s.io/apimachinery/pkg/util/wait"
)

// GitHub is what the executor asks of GitHub, for one repository;
// *githubapi.Client is the implementation.
type GitHub interface {
	// Self is the account the client dispatches as: the App's bot user.
	Self(ctx context.Context) (githubapi.User, error)
	DefaultBranch(ctx context.Context) (string, error)
	DispatchWorkflow(ctx context.Context, workflow, ref string, inputs map[string]any) (githubapi.Dispatched, error)
	DispatchedRuns(ctx context.Context, workflow, branch string, match func(githubapi.WorkflowRun) bool) ([]githubapi.WorkflowRun, error)
	WorkflowRun(ctx context.Context, id int64) (githubapi.WorkflowRun, error)
	RunArtifact(ctx context.Context, runID int64, name string, limit int64) ([]byte, error)
}

// The bot hands its installation clients over as a GitHub by a type
// assertion: a method missing would drop the executor silently.
var _ GitHub = (*githubapi.Client)(nil)

// MaxResultBytes bounds a run's result, zipped and unzipped: the artifact
// is written by a workflow a pull request's content ran in.
const MaxResultBytes = 32 << 20

// ArtifactName is the name of the artifact a run of the request id
// uploads its result as.
func ArtifactName(id string) string { return "kusionpr-result-" + id }

// Executor runs each stack's request as a workflow run. One Executor
// serves every repository: For gives the runner of one.
type Executor struct {
	Config Config
	// Log takes the lines of a run without a logger of its own.
	Log *slog.Logger
	// FindWithin bounds how long a dispatched run may take to show in
	// the workflow's runs, named with its request id, when GitHub answers
	// a dispatch without its run (default 2m).
	FindWithin time.Duration

	mu   sync.Mutex
	subs map[string][]chan struct{} // by request id
}

// New is the executor of c.
func New(c Config, log *slog.Logger) *Executor { return &Executor{Config: c, Log: log} }

// For is the runner of the stacks of the repository gh reaches: the
// repository a pull request's command or merge came from.
func (x *Executor) For(gh GitHub) workflow.StackRunner { return repoRunner{x: x, gh: gh} }

// requestInName finds the request ids a run's name carries, as the
// example workflow's run-name writes them: "[apply-0123...]".
var requestInName = regexp.MustCompile(`\[([a-z]+-[0-9a-f]{24})\]`)

// Heard is told of a workflow_run webhook about a run named name (its
// name or display title): the waits for the request it names look now
// instead of at their next poll.
func (x *Executor) Heard(names ...string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, n := range names {
		for _, m := range requestInName.FindAllStringSubmatch(n, -1) {
			for _, c := range x.subs[m[1]] {
				select {
				case c <- struct{}{}:
				default:
				}
			}
		}
	}
}

func (x *Executor) subscribe(id string) chan struct{} {
	c := make(chan struct{}, 1)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.subs == nil {
		x.subs = map[string][]chan struct{}{}
	}
	x.subs[id] = append(x.subs[id], c)
	return c
}

func (x *Executor) unsubscribe(id string, c chan struct{}) {
	x.mu.Lock()
	defer x.mu.Unlock()
	subs := x.subs[id]
	for i, s := range subs {
		if s == c {
			x.subs[id] = append(subs[:i], subs[i+1:]...)
			break
		}
	}
	if len(x.subs[id]) == 0 {
		delete(x.subs, id)
	}
}

type repoRunner struct {
	x  *Executor
	gh GitHub
}

// Run runs the request as a run of the repository's workflow, or follows the run dispatched before for the same request (by
// another bot, or this one before a restart), and reports its result.
func (r repoRunner) Run(ctx context.Context, req workflow.Request) *workflow.StackResult {
	// The stack is read for its report and its workspace.
	run := workflow.HandOver(req)
	if run.Err != nil {
		return run
	}
	st := run.Stack
	id := req.ID()
	// The run's logger names the repository and pull request; the
	// executor's own is for a run without one.
	log := req.Log
	if log == nil {
		log = r.x.Log
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("request", id, "workflow", r.x.Config.workflow())

	f := &follow{x: r.x, gh: r.gh, req: req, id: id, workspace: run.Workspace, log: log}
	res, wr, err := f.run(ctx)
	if wr != nil {
		run.RunURL = wr.HTMLURL
	}
	if err != nil {
		run.Err = err
		return run
	}
	out := res.StackResult(release(res))
	out.RunURL = wr.HTMLURL
	if out.Stack == nil {
		out.Stack = st
	}
	if out.Workspace == "" {
		out.Workspace = run.Workspace
	}
	return out
}

// release is what the report shows of the release the run wrote: the bot
// reads no store, so it is built from the result. Its spec is what the
// run's preview planned, which is what the release recorded; a report
// tells an apply from a destroy by it.
func release(res workflow.RequestResult) *model.Release {
	if res.Revision == 0 {
		return nil
	}
	rel := &model.Release{Project: res.Project, Workspace: res.Workspace, Revision: res.Revision, Stack: res.StackName, Phase: res.Phase}
	if p := res.Preview; p != nil {
		rel.Spec = &model.Spec{}
		for _, k := range p.StepKeys {
			if s := p.ChangeSteps[k]; s != nil && s.To != nil && s.Action != engine.Delete {
				rel.Spec.Resources = append(rel.Spec.Resources, *s.To)
			}
		}
	}
	return rel
}

// follow is one request's wait: the runs found for it, dispatched if none.
//
// Only runs the bot's own user started are followed: anyone who may
// dispatch the workflow (write access) can start a run named with the
// request's id, which is a hash of public values, from a branch's copy of
// the workflow or with inputs of their own, and upload any result. The
// bot follows the run GitHub answered its dispatch with, and adopts
// (after a restart, or another replica's) only runs its user dispatched
// on the branch it dispatches on, of the workflow it dispatches; a run
// started by anyone else is never read, neither its status nor its
// artifact.
//
// No secret nonce rides in the inputs to be echoed in the result: a run's
// inputs are readable by anyone who can read the repository, and whatever
// can write the artifact of the bot's own run runs inside that run, where
// it reads the inputs too. What binds a result to the bot is what GitHub
// vouches for: the run id it answered the dispatch with, and the bot's
// user as the run's actor and triggering actor. A nonce would add nothing
// to that.
type follow struct {
	x         *Executor
	gh        GitHub
	req       workflow.Request
	id        string
	workspace string
	log       *slog.Logger

	// self is the bot's user; ref the branch the bot dispatches on, the
	// default branch, read once per request.
	self githubapi.User
	ref  string

	runs       map[int64]githubapi.WorkflowRun
	dispatched time.Time
	// unnamed: GitHub answered the dispatch without its run (204), so it
	// is looked for, among the runs created since shortly before.
	unnamed bool
	// relist: list once more after a dispatch GitHub named the run of:
	// another replica's dispatch of the same request may have come first.
	relist  bool
	ignored map[int64]bool // runs named with the request's id, not the bot's: logged once
}

// clockSkew is how much earlier than the bot's clock says it dispatched a
// run may be created, by GitHub's clock, and still be the dispatch's.
const clockSkew = time.Minute

// tagged: the run carries the request's id in its name, as the workflow's
// run-name puts it.
func (f *follow) tagged(r githubapi.WorkflowRun) bool {
	tag := "[" + f.id + "]"
	return strings.Contains(r.Name, tag) || strings.Contains(r.DisplayTitle, tag)
}

// notOurs says why the run is not one the bot dispatched, "" if it is:
// started by the bot's user (its id and login), this attempt too (a
// re-run's triggering actor is whoever re-ran it), by workflow_dispatch, on
// the branch the bot dispatches on, of the workflow it dispatches.
func (f *follow) notOurs(r githubapi.WorkflowRun, wf string) string {
	switch {
	case !r.Actor.Is(f.self):
		return fmt.Sprintf("started by %s (id %d), not the bot's user %s (id %d)", r.Actor.Login, r.Actor.ID, f.self.Login, f.self.ID)
	case !r.TriggeringActor.Is(f.self):
		return fmt.Sprintf("run again by %s (id %d), not the bot's user %s", r.TriggeringActor.Login, r.TriggeringActor.ID, f.self.Login)
	case r.Event != "workflow_dispatch":
		return fmt.Sprintf("started by the event %q, not workflow_dispatch", r.Event)
	case r.HeadBranch != f.ref:
		return fmt.Sprintf("on the branch %q, not %q, which the bot dispatches on", r.HeadBranch, f.ref)
	case !workflowPath(r.Path, wf, f.ref):
		return fmt.Sprintf("of the workflow %q, not .github/workflows/%s", r.Path, wf)
	}
	return ""
}

// workflowPath: path is the workflow file wf under .github/workflows, as
// GitHub names a run's (with "@<ref>" added by some versions, then ref).
func workflowPath(path, wf, ref string) bool {
	file, at, ok := strings.Cut(path, "@")
	return file == ".github/workflows/"+wf && (!ok || at == ref || at == "refs/heads/"+ref)
}

// mine: a run of the request the bot dispatched, by its name; a run so
// named by anyone else is logged, once, and left alone. After a dispatch
// GitHub did not name the run of, only runs created since shortly before
// it are the dispatch's.
func (f *follow) mine(wf string) func(githubapi.WorkflowRun) bool {
	return func(r githubapi.WorkflowRun) bool {
		if !f.tagged(r) {
			return false
		}
		if why := f.notOurs(r, wf); why != "" {
			if !f.ignored[r.ID] {
				f.ignored[r.ID] = true
				f.log.Warn("a workflow run named with the request's id is not the bot's: it is not read", "run", r.ID, "url", r.HTMLURL, "why", why)
			}
			return false
		}
		return !f.unnamed || !r.CreatedAt.Before(f.dispatched.Add(-clockSkew))
	}
}

// run dispatches the request unless a run of it exists, and waits for the
// first of its runs to complete; it returns that run's result, and the
// run it judged by (nil if none was found).
func (f *follow) run(ctx context.Context) (workflow.RequestResult, *githubapi.WorkflowRun, error) {
	wf := f.x.Config.workflow()
	news := f.x.subscribe(f.id)
	defer f.x.unsubscribe(f.id, news)
	deadline := time.Now().Add(f.x.Config.timeout())
	findWithin := f.x.FindWithin
	if findWithin <= 0 {
		findWithin = 2 * time.Minute
	}
	f.runs, f.ignored = map[int64]githubapi.WorkflowRun{}, map[int64]bool{}
	if err := f.start(ctx); err != nil {
		if ctx.Err() != nil {
			return workflow.RequestResult{}, nil, f.stopped(ctx)
		}
		return workflow.RequestResult{}, nil, err
	}
	for {
		if err := f.look(ctx, wf); err != nil {
			switch {
			case ctx.Err() != nil:
				return workflow.RequestResult{}, f.first(), f.stopped(ctx)
			case errors.Is(err, githubapi.ErrNoWorkflow):
				err = fmt.Errorf("%w; %s", err, f.setting(wf))
			}
			return workflow.RequestResult{}, f.first(), err
		}
		if len(f.runs) == 0 && f.dispatched.IsZero() {
			if err := f.dispatch(ctx, wf); err != nil {
				return workflow.RequestResult{}, nil, err
			}
			continue
		}
		if len(f.runs) == 0 && time.Since(f.dispatched) > findWithin {
			return workflow.RequestResult{}, nil, fmt.Errorf("workflow %s was dispatched on %s for request %s, GitHub did not answer with its run, and no run of the bot's user %s named with %s showed within %s: its run-name must carry the request id, as .github/workflow-examples/kusion-run.yml's does (githubActions.workflow)",
				wf, f.ref, f.id, f.self.Login, "["+f.id+"]", findWithin)
		}
		if res, wr, done, err := f.judge(ctx); done || err != nil {
			return res, wr, err
		}
		if time.Now().After(deadline) {
			wr := f.first()
			where := ""
			if wr != nil {
				where = fmt.Sprintf(" (run %s, %s)", wr.HTMLURL, wr.Status)
			}
			return workflow.RequestResult{}, wr, fmt.Errorf("timed out after %s waiting for the workflow run of request %s%s (githubActions.timeout): the run goes on; its result is not reported here", f.x.Config.timeout(), f.id, where)
		}
		// A workflow_run webhook about the request (Heard, on news) ends
		// the pause early, which wait's own loops cannot: the pause is
		// only paced by it.
		pace := wait.Backoff{Duration: f.x.Config.poll()}
		if len(f.runs) == 0 {
			// GitHub shows a dispatched run within seconds.
			pace.Duration = min(pace.Duration, 2*time.Second)
		}
		select {
		case <-ctx.Done():
			return workflow.RequestResult{}, f.first(), f.stopped(ctx)
		case <-news:
		case <-time.After(pace.Step()):
		}
	}
}

// start reads who the bot is and where it dispatches: only runs of that
// user on that branch are the request's.
func (f *follow) start(ctx context.Context) error {
	self, err := f.gh.Self(ctx)
	if err != nil {
		return err
	}
	ref, err := f.gh.DefaultBranch(ctx)
	if err != nil {
		return err
	}
	f.self, f.ref = self, ref
	return nil
}

// look finds the bot's runs of the request by their names until some are
// known (and once more after a dispatch), then reads those not
// completed, each checked again: a run someone else ran again is no
// longer the bot's.
func (f *follow) look(ctx context.Context, wf string) error {
	listed := map[int64]bool{}
	if len(f.runs) == 0 || f.relist {
		found, err := f.gh.DispatchedRuns(ctx, wf, f.ref, f.mine(wf))
		if err != nil {
			return err
		}
		f.relist = false
		for _, r := range found {
			if _, known := f.runs[r.ID]; !known {
				f.log.Info("following the workflow run of the request", "run", r.ID, "url", r.HTMLURL, "status", r.Status)
			}
			f.runs[r.ID], listed[r.ID] = r, true
		}
	}
	for id, r := range f.runs {
		if r.Status == "completed" || listed[id] {
			continue
		}
		if err := f.read(ctx, id, wf); err != nil {
			return err
		}
	}
	return nil
}

// read reads the run id and keeps it if it is the bot's, and refuses it
// otherwise.
func (f *follow) read(ctx context.Context, id int64, wf string) error {
	now, err := f.gh.WorkflowRun(ctx, id)
	if err != nil {
		return err
	}
	if why := f.notOurs(now, wf); why != "" {
		delete(f.runs, id)
		return fmt.Errorf("the workflow run %s of request %s is no longer the bot's alone (%s): its result is not read; run the command again", now.HTMLURL, f.id, why)
	}
	f.runs[id] = now
	return nil
}

func (f *follow) dispatch(ctx context.Context, wf string) error {
	ref := f.ref
	inputs, err := Inputs(f.req, f.workspace)
	if err != nil {
		return err
	}
	at := time.Now()
	d, err := f.gh.DispatchWorkflow(ctx, wf, ref, inputs)
	if err != nil {
		if ctx.Err() != nil {
			return f.stopped(ctx)
		}
		if de, ok := errors.AsType[*githubapi.DispatchError](err); ok {
			return fmt.Errorf("%w; %s", de, f.setting(wf))
		}
		return err
	}
	f.dispatched = at
	if d.RunID == 0 {
		// An older GitHub Enterprise Server: the run is found by its
		// name among the bot's runs created since.
		f.unnamed = true
		f.log.Info("workflow dispatched; GitHub did not name the run", "ref", ref, "stack", f.req.Stack)
		return nil
	}
	f.relist = true
	if err := f.read(ctx, d.RunID, wf); err != nil {
		if ctx.Err() != nil {
			return f.stopped(ctx)
		}
		return fmt.Errorf("workflow %s dispatched on %s as run %d: %w", wf, ref, d.RunID, err)
	}
	f.log.Info("workflow dispatched", "ref", ref, "stack", f.req.Stack, "run", d.RunID, "url", d.HTMLURL)
	return nil
}

// Inputs are the workflow_dispatch inputs of req's run, workspace the
// stack's. The request is the run's work; the rest is for people reading
// the Actions tab, and environment picks the job's GitHub environment (its
// required reviewers and secrets) for a run that changes something: the
// stack's workspace.
func Inputs(req workflow.Request, workspace string) (map[string]any, error) {
	wire, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("the request %s as an input: %w", req.ID(), err)
	}
	env := ""
	if req.Command != workflow.Preview && !req.DryRun {
		env = workspace
	}
	return map[string]any{"request": string(wire), "id": req.ID(), "stack": req.Stack, "command": string(req.Command), "commit": req.Commit, "environment": env}, nil
}

// setting says what the bot dispatches, for GitHub's refusals.
func (f *follow) setting(wf string) string {
	return fmt.Sprintf("the bot dispatches githubActions.workflow (%s) on the default branch: it must be there, with on: workflow_dispatch and the inputs request, id, stack, command, commit and environment, as in .github/workflow-examples/kusion-run.yml", wf)
}

// stopped is the error of a wait cut short: the run, if dispatched, goes
// on, and the request's next run (a redelivery, the recovery pass of a
// restarted bot) follows it.
func (f *follow) stopped(ctx context.Context) error {
	return fmt.Errorf("stopped waiting for the workflow run of request %s (%w): it goes on, and the next run of this request follows it", f.id, ctx.Err())
}

// first is the run the request is judged by while none has completed: the
// first dispatched.
func (f *follow) first() *githubapi.WorkflowRun {
	runs := f.sorted()
	if len(runs) == 0 {
		return nil
	}
	return &runs[0]
}

func (f *follow) sorted() []githubapi.WorkflowRun {
	runs := make([]githubapi.WorkflowRun, 0, len(f.runs))
	for _, r := range f.runs {
		runs = append(runs, r)
	}
	sort.Slice(runs, func(i, j int) bool {
		if !runs[i].CreatedAt.Equal(runs[j].CreatedAt) {
			return runs[i].CreatedAt.Before(runs[j].CreatedAt)
		}
		return runs[i].ID < runs[j].ID
	})
	return runs
}

// judge takes the runs in the order they were dispatched: the first that
// completed with a result is the request's, and one still going before it
// is waited for (two bots racing may both dispatch: the later run finds the
// work done and says so, and the earlier one's result is the one to
// report). When every run completed and none left a result, the first
// one's conclusion is the request's failure.
func (f *follow) judge(ctx context.Context) (workflow.RequestResult, *githubapi.WorkflowRun, bool, error) {
	runs := f.sorted()
	if len(runs) == 0 {
		return workflow.RequestResult{}, nil, false, nil
	}
	for i := range runs {
		wr := &runs[i]
		if wr.Status != "completed" {
			return workflow.RequestResult{}, nil, false, nil
		}
		res, err := f.result(ctx, wr)
		if errors.Is(err, githubapi.ErrNoArtifact) {
			continue
		}
		if err != nil {
			return res, wr, true, err
		}
		f.log.Info("the workflow run's result is in", "run", wr.ID, "conclusion", wr.Conclusion)
		return res, wr, true, nil
	}
	wr := &runs[0]
	return workflow.RequestResult{}, wr, true, fmt.Errorf("the workflow run %s ended %s and left no result (artifact %s): see its log",
		wr.HTMLURL, conclusion(wr.Conclusion), ArtifactName(f.id))
}

func conclusion(c string) string {
	switch c {
	case "":
		return "without a conclusion"
	case "failure":
		return "in failure"
	case "cancelled":
		return "cancelled"
	case "timed_out":
		return "timed out"
	}
	return strings.ReplaceAll(c, "_", " ")
}

// result reads the run's artifact: a zip holding one file, the request's
// result, each within MaxResultBytes. A result naming another request is
// refused.
func (f *follow) result(ctx context.Context, wr *githubapi.WorkflowRun) (workflow.RequestResult, error) {
	name := ArtifactName(f.id)
	raw, err := f.gh.RunArtifact(ctx, wr.ID, name, MaxResultBytes)
	if err != nil {
		if errors.Is(err, githubapi.ErrNoArtifact) {
			return workflow.RequestResult{}, err
		}
		return workflow.RequestResult{}, fmt.Errorf("the result of workflow run %s: %w", wr.HTMLURL, err)
	}
	data, err := unzipOne(raw, MaxResultBytes)
	if err != nil {
		return workflow.RequestResult{}, fmt.Errorf("the result of workflow run %s: artifact %s: %w", wr.HTMLURL, name, err)
	}
	res, err := workflow.DecodeRequestResult(f.req, data)
	if err != nil {
		return res, fmt.Errorf("the result of workflow run %s: %w", wr.HTMLURL, err)
	}
	return res, nil
}

// unzipOne is the one file of the zip raw, read within limit whatever its
// header claims.
func unzipOne(raw []byte, limit int64) ([]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		return nil, fmt.Errorf("not a zip: %w", err)
	}
	var files []*zip.File
	for _, f := range zr.File {
		if !f.FileInfo().IsDir() {
			files = append(files, f)
		}
	}
	if len(files) != 1 {
		return nil, fmt.Errorf("holds %d files, want the one result file", len(files))
	}
	if files[0].UncompressedSize64 > uint64(limit) {
		return nil, fmt.Errorf("its file unpacks to more than %s", githubapi.FormatBytes(limit))
	}
	rc, err := files[0].Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("its file unpacks to more than %s", githubapi.FormatBytes(limit))
	}
	return data, nil
}
