package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sethvargo/go-githubactions"

	"github.com/kusionpr/kusionpr/connect"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/undumpable"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
	"github.com/kusionpr/kusionpr/settings"
	"github.com/kusionpr/kusionpr/workflow"
)

// cutSummary cuts a job summary to what GitHub takes, saying so.
func cutSummary(s string) string {
	if len(s) > githubapi.MaxStepSummary {
		return s[:githubapi.MaxStepSummary] + "\n\n*(job summary cut at GitHub's size limit)*\n"
	}
	return s
}

// job is the action inside one GitHub Actions job: its context and
// inputs, and what it talks to GitHub and writes its log through.
type job struct {
	ga   *githubactions.Action
	gctx *githubactions.GitHubContext
	in   inputSettings
	// workspace is the job's checkout.
	workspace string
	// kubeconfigs are the input's files, by their real paths.
	kubeconfigs map[string]string
	red         *redactor
	log         *slog.Logger
	gh          *githubapi.Client
	limits      *githubapi.Transport
	renderer    *report.Renderer
	ev          *githubapi.Event
}

// runGitHub is the action inside a GitHub Actions job: the event says which
// pull request or push, inputs come from action.yml, results go to comments,
// check runs, outputs and the job summary.
func runGitHub(ctx context.Context, ga *githubactions.Action, stderr io.Writer) int {
	j, code := newJob(ga, stderr)
	if j == nil {
		return code
	}
	if code := j.connect(); code != 0 {
		return code
	}
	defer j.reportWaits()
	cmd, code := j.command()
	if code != 0 {
		return code
	}
	origin := &model.Origin{Actor: j.gctx.Actor, SHA: j.gctx.SHA, Command: j.in.Command, Repository: jobRepository(j.ga, j.gctx)}
	runner, req := j.in.runner(j.log), j.in.request(origin, j.workspace)
	doneKCL, err := useKCL(runner, j.in.KCLSettings, j.log)
	if err != nil {
		j.ga.Errorf("%v", err)
		return 2
	}
	defer doneKCL()
	rts, forks, code := j.runtimes()
	if code != 0 {
		return code
	}
	if j.in.Command == "drift" {
		if forks.Offline {
			j.ga.Errorf("command drift: a fork's pull request gets no credentials; scan on schedule or workflow_dispatch")
			return 2
		}
		runner.Runtimes = rts
		scan := &workflow.DriftScan{Runner: runner, Request: req, Root: j.root(), MaxParallel: j.in.MaxParallel}
		return runDriftGitHub(ctx, j.ga, j.gctx, j.gh, scan, j.in, j.red.String, j.log)
	}
	if err := withPolicySandbox(runner, rts); err != nil {
		j.ga.Errorf("%v", err)
		return 1
	}
	if j.in.Request != "" {
		return runRequest(ctx, j.ga, j.gctx, j.in.Request, runner, req, j.workspace, j.log)
	}
	return j.runChange(ctx, j.change(cmd, runner, req, forks.Offline), forks)
}

// newJob reads the job's context and inputs, removes the secrets from
// the environment, and sets up the redacted log; nil, with the exit code,
// when the job cannot go on.
func newJob(ga *githubactions.Action, stderr io.Writer) (*job, int) {
	stderr = shared(stderr)
	gctx, err := ga.Context()
	if err != nil {
		ga.Errorf("read the GitHub context: %v", err)
		return nil, 1
	}
	if err := checkFileCommands(); err != nil {
		ga.Errorf("%v", err)
		return nil, 1
	}
	in, err := readInputs(ga.GetInput)
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			ga.Errorf("%s", line)
		}
		return nil, 2
	}
	// Read once, then out of the environment: no child (a module binary,
	// Terraform, a kubeconfig's exec plugin when allowed, the
	// generate-command) inherits them.
	for _, name := range append(settings.InputSecrets(), "GITHUB_TOKEN") {
		os.Unsetenv(name)
	}
	// The kernel keeps the environment the action started with, the
	// token and the kubeconfig in it, in /proc/<pid>/environ, readable by
	// every process of its user: the children above are such processes.
	if err := undumpable.Set(); err != nil {
		ga.Errorf("hide the action's process from its user's others: %v", err)
		return nil, 1
	}
	j := &job{gctx: gctx, in: in, workspace: gctx.Workspace}
	if j.workspace == "" {
		j.workspace, _ = os.Getwd()
	}
	kubeconfigs, kubeconfigsSecrets, err := kubeconfigsInput(in.Kubeconfigs, j.workspace)
	if err != nil {
		ga.Errorf("input kubeconfigs: %v", err)
		return nil, 2
	}
	j.kubeconfigs = kubeconfigs
	// The runner masks the credentials in the log; everything else the
	// action writes (comments, check runs, the summary) it redacts itself.
	j.red = newRedactor(append(append(kubeconfigSecrets(in.Kubeconfig), kubeconfigsSecrets...), in.GitHubToken)...)
	for _, s := range j.red.secrets {
		ga.AddMask(s)
	}
	j.ga = githubactions.New(githubactions.WithWriter(j.red.Writer(os.Stdout)))
	level := slog.LevelInfo
	if os.Getenv("RUNNER_DEBUG") == "1" {
		level = slog.LevelDebug
	}
	j.log = slog.New(slog.NewTextHandler(j.red.Writer(stderr), &slog.HandlerOptions{Level: level}))
	return j, 0
}

// connect makes the job's GitHub client, which waits for GitHub's rate
// limits up to the input rate-limit-wait, and its renderer.
func (j *job) connect() int {
	owner, repo := j.gctx.Repo()
	j.limits = &githubapi.Transport{Next: j.red.Transport(http.DefaultTransport), Log: j.log, MaxWait: j.in.RateLimitWait}
	var err error
	if j.gh, err = githubapi.New(j.in.GitHubToken, j.gctx.APIURL, owner, repo, &http.Client{Transport: j.limits}); err != nil {
		j.ga.Errorf("%v", err)
		return 1
	}
	if j.in.CommentUser != "" {
		j.gh.WriteAs(j.in.CommentUser)
	}
	if j.renderer, err = report.New(); err != nil {
		j.ga.Errorf("%v", err)
		return 1
	}
	return 0
}

// reportWaits says how long the job waited for GitHub's rate limits.
func (j *job) reportWaits() {
	if w := j.limits.Waited(); w > 0 {
		j.ga.Infof("waited %s for GitHub rate limits", githubapi.Seconds(w))
	}
}

// command reads the event and decides the command: the input's, else
// preview on a pull request or a merge queue's group, apply on a push.
// drift runs as a preview does, apart from a change.
func (j *job) command() (workflow.Command, int) {
	// The event as GitHub wrote it, parsed once, on go-github's types, as
	// the bot reads its webhooks.
	event, err := json.Marshal(j.gctx.Event)
	if err == nil {
		j.ev, err = githubapi.ParseEvent(j.gctx.EventName, event)
	}
	if err != nil {
		j.ga.Errorf("the event (GITHUB_EVENT_PATH): %v", err)
		return "", 1
	}
	switch {
	case j.in.Command == "" && (j.ev.PullRequest != nil || j.gctx.EventName == "merge_group"):
		j.in.Command = "preview"
	case j.in.Command == "":
		j.in.Command = "apply"
	}
	if j.in.Command == "drift" {
		return workflow.Preview, 0
	}
	// Checked when the inputs were read.
	cmd, _ := workflow.ParseCommand(j.in.Command)
	return cmd, 0
}

// root is where the job's stacks are looked for.
func (j *job) root() string { return filepath.Join(j.workspace, j.in.Root) }

// runtimes is how the job's stacks reach their clusters and run
// Terraform, and whether the change comes from a fork, which gets no
// credentials unless the workflow says so.
func (j *job) runtimes() (connect.Factory, workflow.Forks, int) {
	var cliConfig string
	if cfg := j.in.TerraformCLIConfig; cfg != "" {
		cliConfig = filepath.Join(os.TempDir(), "kusionpr-terraformrc")
		if err := os.WriteFile(cliConfig, []byte(cfg), 0o600); err != nil {
			j.ga.Errorf("terraform-cli-config: %v", err)
			return connect.Factory{}, workflow.Forks{}, 1
		}
	}
	rts := j.in.runtimes(j.kubeconfigs, cliConfig)
	// A fork's pull request is previewed with the credentials given only
	// when the workflow says so by name: its spec is anyone's.
	kubeconfig := j.in.Kubeconfig
	forks := workflow.DecideFork(j.ev.PullRequest, false, j.in.AllowForkCredentials && (kubeconfig != "" || len(j.kubeconfigs) > 0 || os.Getenv("KUBECONFIG") != ""))
	if forks.Offline {
		// Nothing of the cluster's is handed on to the run.
		kubeconfig = ""
		rts.Clusters.Kubeconfigs = nil
		os.Unsetenv("KUBECONFIG")
	}
	// The runtimes' fallback, where the workspace and the spec name none
	// (or name a file of the runner), as $KUBECONFIG would be. Kept in
	// memory: no file of it lies on the runner for a provider or the
	// generate-command to read.
	rts.Clusters.KubeconfigContent = kubeconfig
	return rts, forks, 0
}

// change is the job's change of its stacks, from the inputs.
func (j *job) change(cmd workflow.Command, runner *workflow.Runner, req workflow.Request, forkOffline bool) *workflow.Change {
	in := j.in
	change := &workflow.Change{
		Root: j.root(), Command: cmd, Runner: runner, Request: req, MaxParallel: in.MaxParallel, Deployments: in.Deployments,
		Selection: workflow.Selection{Shared: in.SharedPaths, Stacks: in.Stacks},
		Comment:   in.Comment, GitHub: j.gh, Renderer: j.renderer, Log: j.log,
		CombineSetting: settings.Must("combine-above").InputName(), CombineAbove: in.CombineAbove,
	}
	if in.MaxComments > 0 {
		change.MaxParts = in.MaxComments
	}
	if in.GenerateCommand != "" {
		g := &generator{command: in.GenerateCommand, timeout: in.GenerateTimeout, maxOutput: maxGenerateOutput,
			// The environment as it is now, the inputs read and unset;
			// a fork's code gets no credential (allow-fork-credentials).
			env: generatorEnv(os.Environ(), forkOffline), log: j.red.Writer(os.Stdout)}
		change.Prepare = g.run
	}
	return change
}

// runChange runs the change the event makes, judged by the policies, and
// publishes its outcome.
func (j *job) runChange(ctx context.Context, change *workflow.Change, forks workflow.Forks) int {
	var before string
	code := 0
	switch {
	case j.ev.PullRequest != nil:
		code = j.pullRequest(change, forks)
	case j.ev.Push != nil:
		before, code = j.push(ctx, change)
	case j.gctx.EventName == "merge_group":
		code = j.mergeGroup(change)
	default:
		j.ga.Errorf("event %q: run on pull_request (preview), merge_group (preview) or push (apply)", j.gctx.EventName)
		code = 2
	}
	if code != 0 {
		return code
	}
	change.Request.Policy = actionPolicies(ctx, j.in, j.gh, j.ev.PullRequest, change, j.workspace, before)
	out, err := change.Run(ctx)
	if err != nil {
		j.ga.Errorf("%s", model.MaskFingerprints(err.Error()))
		return 1
	}
	if out.Combined && change.Comment != "combined" {
		j.ga.Noticef("%d stacks are touched, more than combine-above (%d): they are reported together, in one comment and one check run", len(out.Stacks), change.CombineAbove)
	}
	return publishOutcome(j.ga, out, j.red.String)
}

// pullRequest is the change of a pull request: a fork's is only ever
// previewed, and without credentials unless allowed; one into another
// branch than the default is never applied.
func (j *job) pullRequest(change *workflow.Change, forks workflow.Forks) int {
	pr, cmd := j.ev.PullRequest, change.Command
	change.Number, change.SHA = pr.Number, pr.HeadSHA
	change.Log = j.log.With("pullRequest", pr.Number)
	if forks.Fork {
		if cmd != workflow.Preview && !forks.MayApply {
			j.ga.Errorf("%s refused: pull request #%d comes from a fork; forks are only ever previewed", cmd, pr.Number)
			return 1
		}
		if forks.Offline {
			// Compared with the last release only, and the comment says so.
			change.Request.Offline = true
			j.ga.Noticef("pull request #%d comes from a fork: previewed against the prior release only (allow-fork-credentials: true previews it with the credentials given)", pr.Number)
		}
	}
	// The rule the bot keeps: a pull request into a branch other than the
	// default, whose rules and protection a writer sets, is previewed,
	// never applied.
	if def := j.ev.Repository.DefaultBranch; cmd != workflow.Preview && !workflow.AppliesFrom(pr.BaseRef, def, nil) {
		j.ga.Errorf("%s refused: pull request #%d is into %s, not the default branch %s: a pull request into another branch is previewed, never applied", cmd, pr.Number, pr.BaseRef, def)
		return 1
	}
	return 0
}

// push is the change of a push: its pull request's, else the files its
// commits changed. before is what the branch held before it, "" for a
// push that made the branch (GitHub sends zeros).
func (j *job) push(ctx context.Context, change *workflow.Change) (before string, code int) {
	change.SHA = j.gctx.SHA
	if b := j.ev.Push.Before; fullSHA.MatchString(b) && strings.Trim(b, "0") != "" {
		before = b
	}
	numbers, err := j.gh.PullRequestsOfCommit(ctx, j.gctx.SHA)
	if err != nil {
		j.ga.Errorf("%v", err)
		return "", 1
	}
	if len(numbers) > 0 {
		change.Number = numbers[0]
	} else {
		// Pushed without a pull request: the commits say what changed.
		change.Files = pushFiles(j.ev.Push)
	}
	return before, 0
}

// mergeGroup is the change of a merge queue's group: previewed at its
// commit for what its commits change against the base branch, with check
// runs on it (kusion/preview is the one branch protection can require)
// and no comment, as it belongs to no one pull request.
func (j *job) mergeGroup(change *workflow.Change) int {
	if change.Command != workflow.Preview {
		j.ga.Errorf("merge_group: command %s: a merge queue's group is previewed here (command: preview); the bot applies in the queue (KUSIONPR_APPLY_IN_QUEUE), as it can tell its own check of the group ahead from any other", change.Command)
		return 2
	}
	var head, base string
	if g := j.ev.MergeGroup; g != nil {
		head, base = g.HeadSHA, g.BaseSHA
	}
	if head == "" || base == "" {
		j.ga.Errorf("merge_group event without head_sha and base_sha")
		return 1
	}
	change.SHA, change.Base = head, base
	change.Request.Origin.SHA, change.Request.Origin.Command = head, "merge queue"
	return 0
}

// report_ writes outputs, the job summary and an annotation per failed stack.
func publishOutcome(ga *githubactions.Action, out *workflow.Outcome, redact func(string) string) int {
	type counts struct {
		Create, Update, Delete, Unchanged, Drift, Errors int
		// Error is why the stack failed, when it did (its check run's
		// failure): a stack nothing of which was previewed then counts
		// one error, and never reads as an empty stack.
		Error string `json:"error,omitempty"`
	}
	stacks := []string{}
	summary := map[string]counts{}
	urls := map[string][]string{}
	var md strings.Builder
	for _, so := range out.Stacks {
		stacks = append(stacks, so.Dir)
		s := so.Summary
		c := counts{s.Create, s.Update, s.Delete, s.UnChanged, s.Drift, s.Errors, ""}
		if so.Err != nil {
			c.Errors, c.Error = max(c.Errors, 1), model.MaskFingerprints(so.Err.Error())
		}
		summary[so.Dir] = c
		urls[so.Dir] = so.Comments
		ga.Group("stack " + so.Dir)
		ga.Infof("%d to create, %d to update, %d to delete, %d unchanged, %d drifted, %d failed", s.Create, s.Update, s.Delete, s.UnChanged, s.Drift, s.Errors)
		for _, u := range so.Comments {
			ga.Infof("comment: %s", u)
		}
		ga.EndGroup()
		if so.Err != nil {
			ga.WithFieldsMap(map[string]string{"title": "kusion: " + so.Dir}).Errorf("%s", so.Err.Error())
		}
		md.WriteString(so.Markdown)
		md.WriteString("\n\n")
	}
	setJSON := func(name string, v any) {
		b, _ := json.Marshal(v)
		ga.SetOutput(name, redact(string(b)))
	}
	ga.SetOutput("changed", strconv.FormatBool(out.Changed))
	ga.SetOutput("complete", strconv.FormatBool(out.Complete))
	setJSON("stacks", stacks)
	setJSON("summary", summary)
	setJSON("comment-urls", urls)
	text := cutSummary(md.String())
	if len(out.Stacks) == 0 {
		text = "No stack is touched by this change.\n"
	}
	ga.AddStepSummary(redact(text))
	if out.Err != nil {
		ga.Errorf("%s", redact(model.MaskFingerprints(out.Err.Error())))
	}
	if len(out.Unreported) > 0 {
		ga.Errorf("%s", redact(fmt.Sprintf("GitHub took neither the comment nor the check run of %d stack(s): %s; their results are in this log and the job summary",
			len(out.Unreported), strings.Join(out.Unreported, ", "))))
		return 1
	}
	if out.Failed {
		return 1
	}
	return 0
}

func jobRepository(ga *githubactions.Action, gctx *githubactions.GitHubContext) *model.Repository {
	id, _ := strconv.ParseInt(strings.TrimSpace(ga.Getenv("GITHUB_REPOSITORY_ID")), 10, 64)
	if id <= 0 && gctx.Repository == "" {
		return nil
	}
	return &model.Repository{ID: max(id, 0), FullName: gctx.Repository}
}

// pushFiles lists what a push's commits added, changed and removed.
func pushFiles(p *githubapi.Push) []workflow.ChangedFile {
	out := []workflow.ChangedFile{}
	for _, f := range p.Files {
		out = append(out, workflow.ChangedFile{Path: f.Path, Status: f.Status})
	}
	return out
}

// checkFileCommands opens the files the step's outputs and summary go to,
// as writing them will. The runner mounts them owned by its own user, so an
// image that runs as another user cannot write them; that is found before
// any comment is posted, with what to do, not at the end as a panic of the
// toolkit's.
func checkFileCommands() error {
	for _, name := range []string{"GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"} {
		path := os.Getenv(name)
		if path == "" {
			continue
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("cannot write %s (%s): %w; a Docker action must run as the image's default user, root: an image with a USER line cannot write the files the runner mounts", name, path, err)
		}
		f.Close()
	}
	return nil
}
