// Command action generates, previews, applies or destroys Kusion stacks. Run
// locally:
//
//	action generate --stack DIR [--workspace NAME] [--backend URL] [-o FILE]
//	action preview|apply|destroy --stack DIR [--workspace NAME] [--backend URL]
//	       [-o json|markdown|text] [--yes] [--dry-run]
//	action unlock --stack DIR --reason TEXT
//	action drift [--root DIR | --stack DIR] [-o json|markdown|text]
//	action help, action COMMAND --help
//
// generate prints the stack's Spec; the others print the preview and, for
// apply and destroy, where the release was saved.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sethvargo/go-githubactions"
	"golang.org/x/term"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/connect"
	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/engine/spec"
	"github.com/kusionpr/kusionpr/internal/kubelog"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/policy"
	"github.com/kusionpr/kusionpr/report"
	"github.com/kusionpr/kusionpr/workflow"
)

func main() {
	// A child this program started to evaluate a repository's policies in.
	policy.ServeIfSandbox()
	// client-go logs through klog, once for the process, what it also
	// returns to the run, which reports it: its lines are debug lines,
	// shown with --log-level debug or the runner's debug logging.
	kubelog.Route(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: klogLevel(os.Args[1:], os.Getenv)})))
	ctx, stop := stopOnSignals(context.Background())
	var code int
	if os.Getenv("GITHUB_ACTIONS") == "true" && len(os.Args) == 1 {
		// Started by the runner as the action's entrypoint: the event and
		// the inputs say what to do.
		code = runGitHub(ctx, githubactions.New(), os.Stderr)
	} else {
		code = run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	}
	stop()
	os.Exit(code)
}

// stopOnSignals is ctx told to stop at the first SIGTERM or interrupt
// (engine.WithStop: a running apply finishes what is in flight, starts
// nothing more and ends its release saying so; without one the context is
// cancelled), and cancelled at the second. A deleted Job's pod, a cancelled workflow run and Ctrl-C send
// the first; the release then records what was applied, where a killed
// context would interrupt the objects in flight.
func stopOnSignals(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	stopped := make(chan struct{})
	var got os.Signal
	why := func() *model.Cancel {
		return &model.Cancel{By: signalName(got), At: time.Now().UTC(),
			Reason: "the runner's process was told to stop (a deleted Job's pod, a cancelled workflow run, Ctrl-C)"}
	}
	go func() {
		select {
		case got = <-sigs:
		case <-ctx.Done():
			return
		}
		close(stopped)
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	return engine.WithStop(ctx, stopped, why), func() { signal.Stop(sigs); cancel() }
}

func signalName(s os.Signal) string {
	if s == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

// klogLevel is the level of the process's log of client-go's own lines
// (kubelog): debug when a command's --log-level asks for it, or the
// runner's debug logging is on (RUNNER_DEBUG), info otherwise, which
// leaves them out.
func klogLevel(args []string, getenv func(string) string) slog.Level {
	if getenv("RUNNER_DEBUG") == "1" {
		return slog.LevelDebug
	}
	for i, a := range args {
		name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "log-level" || !strings.HasPrefix(a, "-") {
			continue
		}
		if !ok && i+1 < len(args) {
			value = args[i+1]
		}
		if strings.EqualFold(value, "debug") {
			return slog.LevelDebug
		}
	}
	return slog.LevelInfo
}

// withPolicySandbox has r run stacks with rts, evaluating policies in a
// child of this program (policy.Sandbox).
func withPolicySandbox(r *workflow.Runner, rts connect.Factory) error {
	sb, err := policy.Self(policy.DefaultMaxMemory)
	if err != nil {
		return err
	}
	r.Runtimes, r.PolicySandbox = rts, sb
	return nil
}

const usage = `usage: action COMMAND --stack DIR [flags]

Kusion's engine for one stack folder. A stack holds a ready spec.yaml, or
main.yaml (AppConfigurations) that generate turns into a Spec with the
stack's workspace: the release store's (Kusion's workspaces/<name>.yaml),
else the repository's workspaces/<name>.yaml, else an empty default.

commands:
  preview   show the three-way difference of the stack (its spec, the latest
            release, the live objects); change nothing
  apply     preview, ask (or --yes), apply the changes and record a release
  destroy   preview the deletion, ask (or --yes), delete the stack's
            resources and record a release
  generate  print the stack's Spec (generated from main.yaml, or spec.yaml)
  drift     compare every stack under a root with its latest release, reading
            only; exit code 2 when some stack drifted
  rollback  put the stack back as release --to N left it (preview, ask or
            --yes, apply as a new release)
  releases  list the stack's releases, or every project's, newest first (-o json)
  cancel    ask the stack's running release to stop at its next heartbeat
  unlock    end a release left running (its runner died), recording why
  policy    "policy test" runs a policy folder's Rego unit tests
  execute   run one request of the bot's as its worker (a Kubernetes Job)
  help      this text; "action COMMAND --help" lists a command's flags

Run with no arguments under GitHub Actions (GITHUB_ACTIONS=true), the event
and the action's inputs (action.yml, docs/settings.md) say what to do.
`

// commandUsage heads each command's --help, before its flags.
var commandUsage = map[string]string{
	"preview":  "usage: action preview --stack DIR [flags]\n\nShows what apply would change: the three-way difference of the stack's spec,\nits latest release and the live objects. Changes nothing.\n",
	"apply":    "usage: action apply --stack DIR [flags]\n\nPreviews the stack, asks (unless --yes), applies the changes, waits for the\nresources to be ready and records a release in the --backend store.\n",
	"destroy":  "usage: action destroy --stack DIR [flags]\n\nPreviews the deletion, asks (unless --yes), deletes every resource of the\nstack's latest release and records a release in the --backend store.\n",
	"generate": "usage: action generate --stack DIR [--workspace NAME] [--backend URL] [-o FILE] [--format yaml|json]\n\nPrints the stack's Spec, as kusion generate does: the one generated from\nmain.yaml with the stack's workspace (the release store's, else the\nrepository's, else an empty default), or its spec.yaml.\n",
	"execute":  "usage: action execute --request JSON [--backend URL] [flags]\n\nRuns one stack's request as a worker away from the bot (a Kubernetes Job):\nunpacks the checkout the bot left in the --backend store, runs the request's\ncommand on its stack and leaves the result there for the bot to report. The\nexit code is 1 when the stack failed.\n",
	"drift":    "usage: action drift [--root DIR | --stack DIR] [flags]\n\nCompares the live objects of every stack under --root (or of --stack) with the\nstack's latest release: what changed outside of a release (drift), and whether\nthe checkout's spec differs from that release. Reads only: writes no release,\ntakes no lock. The exit code is 2 when some stack drifted, 1 when some stack\ncould not be scanned, 0 otherwise.\n",
	"unlock":   "usage: action unlock --stack DIR --reason TEXT [--workspace NAME] [--backend URL]\n\nEnds a release left running (its runner died) by hand, recording who and\nwhy, as kusion release unlock does.\n",
	"rollback": "usage: action rollback --stack DIR --to N [flags]\n\nPuts the stack back as release N left it: previews the spec N recorded against\nthe latest release and the live objects, asks (unless --yes), applies it and\nrecords a new release saying rollback to N. Resources made since N are\ndeleted; Terraform goes on from the latest release's state.\n",
	"cancel":   "usage: action cancel --stack DIR [--reason TEXT] [--workspace NAME] [--backend URL]\n\nAsks the stack's running release to stop: its runner, wherever it runs, sees\nthe request at its next heartbeat, lets what is in flight finish, applies\nnothing more and ends the release failed, saying who cancelled.\n",
	"releases": "usage: action releases --stack DIR [-o text|json] [--limit N] [--running] [--workspace NAME] [--backend URL]\n       action releases --all-projects [--workspace NAME] [--running] [-o text|json] [--limit N] [--backend URL]\n\nLists the stack's releases, newest first: revision, phase, when, who, and\nfrom which command, pull request or commit. --all-projects lists every\nproject's in the store (a PostgreSQL store answers it); --running only\nthose that have not ended.\n",
}

// parseFlags parses a command's flags: --help prints the command's usage
// and flags on stdout (exit 0); a mistake prints the error and the usage
// on stderr (exit 2). ok is false when the command must not go on.
func parseFlags(fs *flag.FlagSet, name string, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	var msg bytes.Buffer
	fs.SetOutput(&msg)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	out, code := stderr, 2
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		out, code = stdout, 0
	default:
		fmt.Fprintf(stderr, "error: %v\n", err)
	}
	fmt.Fprintf(out, "%s\nflags:\n", commandUsage[name])
	fs.SetOutput(out)
	fs.PrintDefaults()
	fs.SetOutput(stderr)
	return code, false
}

// run is main without the process: arguments in, exit code out.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	stderr = shared(stderr)
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && commandUsage[args[1]] != "" {
			return run(ctx, []string{args[1], "--help"}, stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return 0
	case "unlock":
		return unlock(ctx, args[1:], stdout, stderr)
	case "rollback":
		return rollback(ctx, args[1:], stdin, stdout, stderr)
	case "cancel":
		return cancelRun(ctx, args[1:], stdout, stderr)
	case "releases":
		return releasesCommand(ctx, args[1:], stdout, stderr)
	case "generate":
		return generateSpec(ctx, args[1:], stdout, stderr)
	case "drift":
		return driftCommand(ctx, args[1:], stdout, stderr)
	case "policy":
		return policyCommand(ctx, args[1:], stdout, stderr)
	}
	cmd, err := workflow.ParseCommand(args[0])
	if args[0] == "execute" {
		cmd, err = "execute", nil
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	s, code, ok := parseCommand(string(cmd), args[1:], stdout, stderr)
	if !ok {
		return code
	}
	return runStack(ctx, cmd, s, stdin, stdout, stderr)
}

// runStack runs preview, apply, destroy or execute on the stack.
func runStack(ctx context.Context, cmd workflow.Command, s cliSettings, stdin io.Reader, stdout, stderr io.Writer) int {
	log := s.logger(stderr)
	renderer, err := report.New()
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	runner := s.runner(log)
	req, err := s.request(cmd)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	req.Origin = localOrigin(string(cmd))
	doneKCL, err := useKCL(runner, s.KCLSettings, log)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	defer doneKCL()
	if err := withPolicySandbox(runner, s.runtimes(&waitPrinter{w: stderr})); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	if cmd == "execute" {
		return executeRequest(ctx, runner, s.Request, stdout, stderr)
	}
	// Checked when the flags were read.
	format, _ := report.ParseFormat(s.Output)
	if cmd != workflow.Preview && !s.Yes && !s.DryRun {
		return planAndAsk(ctx, runner, req, s, stdin, stdout, stderr, renderer, format)
	}
	r := runner.Run(ctx, req)
	code := printRun(stdout, stderr, renderer, format, r)
	if cmd != workflow.Preview && !s.DryRun {
		// printRun has shown the run's error: once is enough.
		if c := printRelease(stderr, cmd, r, true); c != 0 {
			code = c
		}
	}
	return code
}

// planAndAsk shows the plan of an apply or destroy, then asks; the
// apply itself re-plans under its lock.
func planAndAsk(ctx context.Context, runner *workflow.Runner, req workflow.Request, s cliSettings,
	stdin io.Reader, stdout, stderr io.Writer, renderer *report.Renderer, format report.Format) int {
	cmd := req.Command
	req.DryRun = true
	r := runner.Run(ctx, req)
	if code := printRun(stdout, stderr, renderer, format, r); code != 0 || r.Preview == nil {
		return code
	}
	if r.Preview.Settled() && !s.RecordUnchanged {
		// As apply --yes would: nothing is asked, nothing written.
		fmt.Fprintln(stderr, unchangedLine(cmd, r.Preview))
		return 0
	}
	ok, err := confirm(stdin, stderr, cmd)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	if !ok {
		fmt.Fprintln(stderr, "Cancelled.")
		return 1
	}
	req.DryRun = false
	r = runner.Run(ctx, req)
	return printRelease(stderr, cmd, r, false)
}

// printRun writes the preview (if there is one) and the error of a run,
// and names the release store the run read, so that no one compares with
// one history and applies to another.
func printRun(stdout, stderr io.Writer, r *report.Renderer, f report.Format, run *workflow.StackResult) int {
	if run.Store != "" {
		fmt.Fprintf(stderr, "Release store: %s\n", run.Store)
	}
	code, rendered := 0, false
	if run.Preview != nil {
		if err := r.Render(stdout, f, run.Preview, run.Err); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			code = 1
		} else {
			rendered = true
		}
	}
	if run.Err != nil {
		fmt.Fprintf(stderr, "error: %s\n", runError(run, f, rendered))
		code = 1
	}
	return code
}

// listedIn says where each format shows the resources that could not be
// previewed, with their errors.
var listedIn = map[report.Format]string{
	report.Text:     "listed above",
	report.JSON:     `each with its "error" in the JSON output`,
	report.Markdown: "listed under Not previewed in the Markdown output",
}

// runError is the run's error as stderr shows it. The preview on stdout
// lists each resource that could not be previewed with its error; those
// lines are not repeated, stderr says how many and where they are, so a
// reader meets each error once (and one piping stdout to a file still
// learns why the command failed).
func runError(run *workflow.StackResult, f report.Format, rendered bool) string {
	msg := model.MaskFingerprints(run.Err.Error())
	if !rendered || run.Preview == nil || !run.Preview.Incomplete() {
		return msg
	}
	listed := model.MaskFingerprints(run.Preview.Err().Error())
	if !strings.Contains(msg, listed) {
		return msg
	}
	s := run.Preview.Summary()
	count := fmt.Sprintf("%d of %d resource%s could not be previewed (%s)", s.Errors, s.Total(), plural(s.Total()), listedIn[f])
	if msg == listed {
		return "preview incomplete: " + count
	}
	return strings.Replace(msg, listed, count, 1)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// unchangedLine tells that an apply or destroy had nothing to change and
// wrote no release, and how to have one written.
func unchangedLine(cmd workflow.Command, p *engine.Preview) string {
	since := ""
	if p.PriorRevision > 0 {
		since = fmt.Sprintf(", as release %d left it", p.PriorRevision)
	}
	return fmt.Sprintf("Nothing to %s in stack %s (%s/%s)%s: no release written (--record-unchanged writes one).",
		cmd, p.Stack, p.Project, p.Workspace, since)
}

// printRelease says where the release went and how it ended, and the
// run's error unless errShown (printRun wrote it already).
func printRelease(stderr io.Writer, cmd workflow.Command, run *workflow.StackResult, errShown bool) int {
	if run.Unchanged && run.Preview != nil {
		fmt.Fprintln(stderr, unchangedLine(cmd, run.Preview))
	}
	switch rel := run.Release; {
	case rel != nil:
		fmt.Fprintf(stderr, "Release %d of %s/%s (stack %s): %s, saved in %s under releases/%s/%s/%d.yaml\n",
			rel.Revision, rel.Project, rel.Workspace, rel.Stack, rel.Phase, run.Store, rel.Project, rel.Workspace, rel.Revision)
	case run.Err != nil && !run.Unchanged:
		// The stack was never taken: nothing changed, and no release
		// says otherwise to the next run or a drift scan.
		fmt.Fprintln(stderr, "Nothing was changed; no release written.")
	}
	if run.Err == nil {
		return 0
	}
	if !errShown {
		fmt.Fprintf(stderr, "error: %s\n", model.MaskFingerprints(run.Err.Error()))
	}
	return 1
}

func confirm(stdin io.Reader, stderr io.Writer, cmd workflow.Command) (bool, error) {
	if f, ok := stdin.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		return false, errors.New(string(cmd) + " needs --yes when standard input is not a terminal")
	}
	fmt.Fprintf(stderr, "Do you want to %s these changes? [y/N] ", cmd)
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}

func localOrigin(cmd string) *model.Origin {
	o := &model.Origin{Command: cmd}
	if u, err := user.Current(); err == nil {
		o.User = u.Username
	}
	o.Host, _ = os.Hostname()
	return o
}

// unlock ends a release left running (its runner died) by hand, recording
// who and why, as Kusion's release unlock does.
func unlock(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	s, code, ok := parseCommand("unlock", args, stdout, stderr)
	if !ok {
		return code
	}
	who := whoLocally()
	// The store is named with the release it ended, as every command names
	// the store it used.
	var where string
	runner := s.runner(nil)
	runner.OpenStore = func(ctx context.Context) (*backend.Store, string, error) {
		st, w, err := runner.Store.Open(ctx)
		where = w
		return st, w, err
	}
	var rel *model.Release
	req, err := s.request("")
	if err == nil {
		rel, err = runner.Unlock(ctx, req, who, s.Reason)
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Release %d of %s/%s in %s is now %s: %s\n", rel.Revision, rel.Project, rel.Workspace, where, rel.Phase, rel.Message)
	return 0
}

// generateSpec prints a stack's Spec, as `kusion generate` does: the one
// generated from main.yaml with the stack's workspace, or its spec.yaml.
func generateSpec(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	set, code, ok := parseCommand("generate", args, stdout, stderr)
	if !ok {
		return code
	}
	root := repositoryRoot(set.Stack)
	st, err := project.LoadStack(root, set.Stack)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner := set.runner(log)
	doneKCL, err := useKCL(runner, set.KCLSettings, log)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	defer doneKCL()
	// The operator's workspaces are in the release store, read only.
	store, where, err := runner.Open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	defer store.Close()
	s, ws, err := runner.StackSpec(ctx, workflow.Request{Root: root, Workspace: set.Workspace}, st, store, where)
	if ws != nil {
		warnWorkspace(log, ws)
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %s\n", model.MaskFingerprints(err.Error()))
		return 1
	}
	var buf bytes.Buffer
	if err := spec.Write(&buf, s, set.Format); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	if set.GenerateOutput == "" {
		_, err = stdout.Write(buf.Bytes())
	} else {
		// Written whole or not at all: a failed generate keeps the old file.
		err = writeFileAtomic(set.GenerateOutput, buf.Bytes())
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	return 0
}

// warnWorkspace says what a generate's user must know of the workspace it
// used: a repository file the store's copy won over, a ready spec made
// with another workspace's context.
func warnWorkspace(log *slog.Logger, ws *workflow.StackWorkspace) {
	if o := ws.Origin; o.Unused != "" {
		log.Warn("the release store holds this workspace, and its copy, the operator's, is used: the repository's file is not", "workspace", ws.Name, "used", o.File, "notUsed", o.Unused)
	}
	if o := ws.Origin; len(o.ContextDiffers) > 0 {
		log.Warn("the spec's context differs from its workspace's: generated with another workspace, or before this one changed", "workspace", ws.Name, "keys", o.ContextDiffers)
	}
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
