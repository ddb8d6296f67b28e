package main

import (
	"cmp"
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
	"time"

	"github.com/sethvargo/go-githubactions"

	"github.com/kusionpr/kusionpr/connect"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/undumpable"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
	"github.com/kusionpr/kusionpr/runtime/terraform"
	"github.com/kusionpr/kusionpr/workflow"
)

// cutSummary cuts a job summary to what GitHub takes, saying so.
func cutSummary(s string) string {
	if len(s) > githubapi.MaxStepSummary {
		return s[:githubapi.MaxStepSummary] + "\n\n*(job summary cut at GitHub's size limit)*\n"
	}
	return s
}

// runGitHub is the action inside a GitHub Actions job: the event says which
// pull request or push, inputs come from action.yml, results go to comments,
// check runs, outputs and the job summary.
func runGitHub(ctx context.Context, ga *githubactions.Action, stderr io.Writer) int {
	stderr = shared(stderr)
	gctx, err := ga.Context()
	if err != nil {
		ga.Errorf("read the GitHub context: %v", err)
		return 1
	}
	if err := checkFileCommands(); err != nil {
		ga.Errorf("%v", err)
		return 1
	}
	in := func(name string) string { return strings.TrimSpace(ga.GetInput(name)) }
	token := in("github-token")
	kubeconfig := in("kubeconfig")
	// Read once, then out of the environment: no child (a module binary,
	// Terraform, a kubeconfig's exec plugin when allowed, the
	// generate-command) inherits them.
	for _, name := range []string{"INPUT_GITHUB-TOKEN", "GITHUB_TOKEN", "INPUT_KUBECONFIG"} {
		os.Unsetenv(name)
	}
	// The kernel keeps the environment the action started with, the
	// token and the kubeconfig in it, in /proc/<pid>/environ, readable by
	// every process of its user: the children above are such processes.
	if err := undumpable.Set(); err != nil {
		ga.Errorf("hide the action's process from its user's others: %v", err)
		return 1
	}
	workspace := gctx.Workspace
	if workspace == "" {
		workspace, _ = os.Getwd()
	}
	kubeconfigs, kubeconfigsSecrets, err := kubeconfigsInput(in("kubeconfigs"), workspace)
	if err != nil {
		ga.Errorf("input kubeconfigs: %v", err)
		return 2
	}
	// The runner masks the credentials in the log; everything else the
	// action writes (comments, check runs, the summary) it redacts itself.
	red := newRedactor(append(append(kubeconfigSecrets(kubeconfig), kubeconfigsSecrets...), token)...)
	for _, s := range red.secrets {
		ga.AddMask(s)
	}
	ga = githubactions.New(githubactions.WithWriter(red.Writer(os.Stdout)))
	stderr = red.Writer(stderr)
	level := slog.LevelInfo
	if os.Getenv("RUNNER_DEBUG") == "1" {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	owner, repo := gctx.Repo()
	limits := &githubapi.Transport{Next: red.Transport(http.DefaultTransport), Log: log}
	if v := in("rate-limit-wait"); v != "" {
		if limits.MaxWait, err = time.ParseDuration(v); err != nil || limits.MaxWait <= 0 {
			ga.Errorf("input rate-limit-wait: %q is not a duration such as 2m", v)
			return 2
		}
	}
	gh, err := githubapi.New(token, gctx.APIURL, owner, repo, &http.Client{Transport: limits})
	if err != nil {
		ga.Errorf("%v", err)
		return 1
	}
	defer func() {
		if w := limits.Waited(); w > 0 {
			ga.Infof("waited %s for GitHub rate limits", githubapi.Seconds(w))
		}
	}()
	if u := in("comment-user"); u != "" {
		gh.WriteAs(u)
	}
	renderer, err := report.New()
	if err != nil {
		ga.Errorf("%v", err)
		return 1
	}

	command := in("command")
	// The event as GitHub wrote it, parsed once, on go-github's types, as
	// the bot reads its webhooks.
	var ev *githubapi.Event
	event, err := json.Marshal(gctx.Event)
	if err == nil {
		ev, err = githubapi.ParseEvent(gctx.EventName, event)
	}
	if err != nil {
		ga.Errorf("the event (GITHUB_EVENT_PATH): %v", err)
		return 1
	}
	pr := ev.PullRequest
	switch {
	case command == "" && (pr != nil || gctx.EventName == "merge_group"):
		command = "preview"
	case command == "":
		command = "apply"
	}
	parsed := command
	if command == "drift" {
		// A scan reads as a preview does; it runs below, apart from a change.
		parsed = string(workflow.Preview)
	}
	cmd, err := workflow.ParseCommand(parsed)
	if err != nil {
		ga.Errorf("input command: %v", err)
		return 2
	}

	root := filepath.Join(workspace, in("root"))
	runner := &workflow.Runner{Store: workflow.StoreConfig{Backend: in("backend")}, Log: log,
		IgnoreFields: list(in("ignore-fields")), ModuleEnv: list(in("module-env"))}
	req := workflow.Request{Workspace: in("workspace"), Root: workspace,
		Origin: &model.Origin{Actor: gctx.Actor, SHA: gctx.SHA, Command: command, Repository: jobRepository(ga, gctx)}}
	doneKCL, err := useKCL(runner, log)
	if err != nil {
		ga.Errorf("%v", err)
		return 2
	}
	defer doneKCL()
	// A Docker action runs as the image's user, whose home is the
	// container's own and is gone when the step ends; GitHub maps the
	// runner's home at $HOME (/github/home) for what should outlive it.
	// Kusion's folder (its config.yaml, the default release folder, module
	// binaries) is there unless KUSION_HOME says otherwise.
	if home := os.Getenv("HOME"); os.Getenv("KUSION_HOME") == "" && home != "" {
		runner.Store.KusionHome = filepath.Join(home, ".kusion")
	}
	rts := connect.Factory{ForceConflicts: true, Terraform: terraform.Config{
		AllowProviders: list(in("terraform-providers")), PassEnv: list(in("terraform-env")), ProviderSettings: list(in("terraform-provider-settings")),
	}}
	allow, err := kubernetes.ParseAllowance(list(in("spec-kubeconfig-allow")))
	if err != nil {
		ga.Errorf("input spec-kubeconfig-allow: %v", err)
		return 2
	}
	// The names also tell a refused stack which inputs would help.
	rts.Clusters = connect.Clusters{SpecAllow: allow, Setting: "the input spec-kubeconfig-allow",
		Kubeconfigs: kubeconfigs, KubeconfigsName: "the input kubeconfigs", KubeconfigName: "the input kubeconfig"}
	if d := in("lease"); d != "" {
		if runner.Store.Lease, err = time.ParseDuration(d); err != nil {
			ga.Errorf("input lease: %v", err)
			return 2
		}
	}
	if d := in("timeout"); d != "" {
		if rts.ReadyTimeout, err = time.ParseDuration(d); err == nil {
			err = checkTimeout(rts.ReadyTimeout)
		}
		if err != nil {
			ga.Errorf("input timeout: %v", err)
			return 2
		}
	}
	if cfg := in("terraform-cli-config"); cfg != "" {
		path := filepath.Join(os.TempDir(), "kusionpr-terraformrc")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			ga.Errorf("terraform-cli-config: %v", err)
			return 1
		}
		rts.Terraform.CLIConfigFile = path
	}
	// A fork's pull request is previewed with the credentials given only
	// when the workflow says so by name: its spec is anyone's.
	allowFork, err := strconv.ParseBool(cmp.Or(in("allow-fork-credentials"), "false"))
	if err != nil {
		ga.Errorf("input allow-fork-credentials: %q is not true or false", in("allow-fork-credentials"))
		return 2
	}
	forks := workflow.DecideFork(pr, false, allowFork && (kubeconfig != "" || len(kubeconfigs) > 0 || os.Getenv("KUBECONFIG") != ""))
	forkOffline := forks.Offline
	if forkOffline {
		// Nothing of the cluster's is handed on to the run.
		kubeconfig = ""
		rts.Clusters.Kubeconfigs = nil
		os.Unsetenv("KUBECONFIG")
	}
	if kubeconfig != "" {
		// The runtimes' fallback, where the workspace and the spec name
		// none (or name a file of the runner), as $KUBECONFIG would be.
		// Kept in memory: no file of it lies on the runner for a
		// provider or the generate-command to read.
		rts.Clusters.KubeconfigContent = kubeconfig
	}
	if req.RecordUnchanged, err = strconv.ParseBool(cmp.Or(in("record-unchanged"), "false")); err != nil {
		ga.Errorf("input record-unchanged: %q is not true or false", in("record-unchanged"))
		return 2
	}
	deployments, err := strconv.ParseBool(cmp.Or(in("deployments"), "true"))
	if err != nil {
		ga.Errorf("input deployments: %q is not true or false", in("deployments"))
		return 2
	}
	maxParallel, _ := strconv.Atoi(in("max-parallel"))
	if command == "drift" {
		if forkOffline {
			ga.Errorf("command drift: a fork's pull request gets no credentials; scan on schedule or workflow_dispatch")
			return 2
		}
		runner.Runtimes = rts
		scan := &workflow.DriftScan{Runner: runner, Request: req, Root: root, MaxParallel: maxParallel}
		return runDriftGitHub(ctx, ga, gctx, gh, scan, in, red.String, log)
	}
	runner.Runtimes = rts
	if err := withPolicySandbox(runner); err != nil {
		ga.Errorf("%v", err)
		return 1
	}
	if raw := in("request"); raw != "" {
		return runRequest(ctx, ga, gctx, raw, runner, req, workspace, log)
	}

	change := &workflow.Change{
		Root: root, Command: cmd, Runner: runner, Request: req, MaxParallel: maxParallel,
		Deployments: deployments,
		Selection:   workflow.Selection{Shared: list(in("shared-paths")), Stacks: list(in("stacks"))},
		Comment:     in("comment"), GitHub: gh, Renderer: renderer, Log: log,
	}
	if n, _ := strconv.Atoi(in("max-comments")); n > 0 {
		change.MaxParts = n
	}
	if command := in("generate-command"); command != "" {
		g := &generator{command: command, timeout: defaultGenerateTimeout, maxOutput: maxGenerateOutput,
			// The environment as it is now, the inputs read and unset;
			// a fork's code gets no credential (allow-fork-credentials).
			env: generatorEnv(os.Environ(), forkOffline), log: red.Writer(os.Stdout)}
		if v := in("generate-timeout"); v != "" {
			if g.timeout, err = time.ParseDuration(v); err != nil || g.timeout <= 0 {
				ga.Errorf("input generate-timeout: %q is not a duration such as 10m", v)
				return 2
			}
		}
		change.Prepare = g.run
	}
	switch change.Comment {
	case "", "always", "on-change", "combined", "never":
	default:
		ga.Errorf("input comment: %q is not always, on-change, combined or never", change.Comment)
		return 2
	}
	// action.yml's default, for a run without it (the container alone).
	change.CombineSetting, change.CombineAbove = "combine-above", 10
	if v := in("combine-above"); v != "" {
		if change.CombineAbove, err = strconv.Atoi(v); err != nil || change.CombineAbove < 0 {
			ga.Errorf("input combine-above: %q is not a number of stacks (0 never combines)", v)
			return 2
		}
	}

	var before string
	switch {
	case pr != nil:
		change.Number, change.SHA = pr.Number, pr.HeadSHA
		change.Log = log.With("pullRequest", pr.Number)
		if forks.Fork {
			if cmd != workflow.Preview && !forks.MayApply {
				ga.Errorf("%s refused: pull request #%d comes from a fork; forks are only ever previewed", cmd, pr.Number)
				return 1
			}
			if forkOffline {
				// Compared with the last release only, and the comment
				// says so.
				change.Request.Offline = true
				ga.Noticef("pull request #%d comes from a fork: previewed against the prior release only (allow-fork-credentials: true previews it with the credentials given)", pr.Number)
			}
		}
		if cmd != workflow.Preview {
			// The rule the bot keeps: a pull request into a branch other
			// than the default, whose rules and protection a writer sets,
			// is previewed, never applied.
			def := ev.Repository.DefaultBranch
			if !workflow.AppliesFrom(pr.BaseRef, def, nil) {
				ga.Errorf("%s refused: pull request #%d is into %s, not the default branch %s: a pull request into another branch is previewed, never applied", cmd, pr.Number, pr.BaseRef, def)
				return 1
			}
		}
	case ev.Push != nil:
		change.SHA = gctx.SHA
		// What the branch held before the push judges it; a push that
		// made the branch has none (GitHub sends zeros).
		if b := ev.Push.Before; fullSHA.MatchString(b) && strings.Trim(b, "0") != "" {
			before = b
		}
		numbers, err := gh.PullRequestsOfCommit(ctx, gctx.SHA)
		if err != nil {
			ga.Errorf("%v", err)
			return 1
		}
		if len(numbers) > 0 {
			change.Number = numbers[0]
		} else {
			// Pushed without a pull request: the commits say what changed.
			change.Files = pushFiles(ev.Push)
		}
	case gctx.EventName == "merge_group":
		// A merge queue's group: previewed at its commit for what its
		// commits change against the base branch, with check runs on it
		// (kusion/preview is the one branch protection can require) and no
		// comment, as it belongs to no one pull request.
		if cmd != workflow.Preview {
			ga.Errorf("merge_group: command %s: a merge queue's group is previewed here (command: preview); the bot applies in the queue (KUSIONPR_APPLY_IN_QUEUE), as it can tell its own check of the group ahead from any other", cmd)
			return 2
		}
		var head, base string
		if g := ev.MergeGroup; g != nil {
			head, base = g.HeadSHA, g.BaseSHA
		}
		if head == "" || base == "" {
			ga.Errorf("merge_group event without head_sha and base_sha")
			return 1
		}
		change.SHA, change.Base = head, base
		change.Request.Origin.SHA, change.Request.Origin.Command = head, "merge queue"
	default:
		ga.Errorf("event %q: run on pull_request (preview), merge_group (preview) or push (apply)", gctx.EventName)
		return 2
	}

	change.Request.Policy, err = actionPolicies(ctx, in, gh, pr, change, workspace, before)
	if err != nil {
		ga.Errorf("%v", err)
		return 2
	}

	out, err := change.Run(ctx)
	if err != nil {
		ga.Errorf("%s", model.MaskFingerprints(err.Error()))
		return 1
	}
	if out.Combined && change.Comment != "combined" {
		ga.Noticef("%d stacks are touched, more than combine-above (%d): they are reported together, in one comment and one check run", len(out.Stacks), change.CombineAbove)
	}
	return publishOutcome(ga, out, red.String)
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

// list splits an input on newlines and commas.
func list(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == ',' }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
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
