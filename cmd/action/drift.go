package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sethvargo/go-githubactions"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
	"github.com/kusionpr/kusionpr/workflow"
)

// Exit codes of a drift scan: a scheduled workflow tells drift from a
// failure by them.
const (
	exitDrift      = 2
	exitScanFailed = 1
)

// driftExitCode is 1 when some stack could not be scanned (its drift is
// not known), else 2 when some stack drifted, else 0.
func driftExitCode(stacks []*workflow.StackDrift) int {
	for _, st := range stacks {
		if st.Status == workflow.ScanFailed {
			return exitScanFailed
		}
	}
	if workflow.AnyDrift(stacks) {
		return exitDrift
	}
	return 0
}

// driftCommand is `action drift`: every stack under --root (or --stack
// alone) compared with its latest release, reading only.
func driftCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	s, code, ok := parseCommand("drift", args, stdout, stderr)
	if !ok {
		return code
	}
	log := s.logger(stderr)
	scanRoot, dirs, err := driftTarget(s.Root, s.DriftStack)
	if err != nil {
		fmt.Fprintf(stderr, "error: --stack: %v\n", err)
		return 2
	}
	runner := s.runner(log)
	doneKCL, err := useKCL(runner, s.KCLSettings, log)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	defer doneKCL()
	runner.Runtimes = s.runtimes(nil)
	scan := &workflow.DriftScan{
		Runner: runner, Request: workflow.Request{Workspace: s.Workspace, Root: repositoryRoot(scanRoot)},
		Root: scanRoot, Dirs: dirs, Match: s.Stacks, MaxParallel: s.MaxParallel,
	}
	stacks, err := scan.Run(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "error: %s\n", model.MaskFingerprints(err.Error()))
		return exitScanFailed
	}
	fmt.Fprintf(stderr, "Release store: %s\n", scan.Store)
	// Checked when the flags were read.
	format, _ := report.ParseFormat(s.Output)
	if err := workflow.WriteDrift(stdout, format, stacks, nil); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitScanFailed
	}
	for _, st := range stacks {
		if st.Status == workflow.ScanFailed {
			fmt.Fprintf(stderr, "error: stack %s: %s\n", st.Dir, model.MaskFingerprints(st.Err.Error()))
		}
	}
	return driftExitCode(stacks)
}

// driftTarget is where a scan looks: every stack under root, or the one
// stack folder, named from its checkout's root as a scan of the whole
// root names it.
func driftTarget(root, stack string) (scanRoot string, dirs []string, err error) {
	if stack == "" {
		return root, nil, nil
	}
	abs, err := filepath.Abs(stack)
	if err != nil {
		return "", nil, err
	}
	scanRoot = repositoryRoot(abs)
	if scanRoot == "" {
		scanRoot = filepath.Dir(abs)
	}
	rel, err := filepath.Rel(scanRoot, abs)
	if err != nil {
		return "", nil, err
	}
	return scanRoot, []string{rel}, nil
}

// runDriftGitHub is `command: drift` in a GitHub Actions job (on a
// schedule): the scan, its outputs and job summary, and with issues: true
// one issue per drifted stack.
func runDriftGitHub(ctx context.Context, ga *githubactions.Action, gctx *githubactions.GitHubContext, gh *githubapi.Client, scan *workflow.DriftScan, in inputSettings, redact func(string) string, log *slog.Logger) int {
	scan.Match = in.Stacks
	stacks, err := scan.Run(ctx)
	if err != nil {
		ga.Errorf("%s", redact(model.MaskFingerprints(err.Error())))
		return exitScanFailed
	}
	code := driftExitCode(stacks)
	var published []workflow.IssueOutcome
	if in.Issues {
		di := &workflow.DriftIssues{GitHub: gh, Log: log}
		if gctx.ServerURL != "" && gctx.Repository != "" && gctx.RunID != 0 {
			di.RunURL = fmt.Sprintf("%s/%s/actions/runs/%d", strings.TrimSuffix(gctx.ServerURL, "/"), gctx.Repository, gctx.RunID)
		}
		published, err = di.Publish(ctx, stacks)
		if err != nil {
			// The scan stands; the issues it could not keep are named.
			ga.Errorf("%s", redact(model.MaskFingerprints(err.Error())))
			code = exitScanFailed
		}
	}
	var text strings.Builder
	if err := workflow.WriteDrift(&text, report.Text, stacks, published); err == nil {
		ga.Infof("%s", redact(text.String()))
	}
	var md strings.Builder
	if err := workflow.WriteDrift(&md, report.Markdown, stacks, published); err == nil {
		ga.AddStepSummary(redact(cutSummary(md.String())))
	}
	var js strings.Builder
	if err := workflow.WriteDrift(&js, report.JSON, stacks, published); err == nil {
		var compact strings.Builder
		var v any
		if json.Unmarshal([]byte(js.String()), &v) == nil {
			b, _ := json.Marshal(v)
			compact.Write(b)
		}
		ga.SetOutput("drift", redact(compact.String()))
	}
	ga.SetOutput("drifted", strconv.FormatBool(workflow.AnyDrift(stacks)))
	for _, st := range stacks {
		if st.Status == workflow.ScanFailed {
			ga.WithFieldsMap(map[string]string{"title": "kusion drift: " + st.Dir}).Errorf("%s", redact(model.MaskFingerprints(st.Err.Error())))
		}
	}
	if code == exitDrift && !in.FailOnDrift {
		return 0
	}
	return code
}
