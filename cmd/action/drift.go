package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sethvargo/go-githubactions"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/connect"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
	"github.com/kusionpr/kusionpr/runtime/terraform"
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
	fs := newFlags(stderr)
	var (
		root        = fs.String("root", ".", "folder under which every stack (a folder holding stack.yaml) is scanned")
		stack       = fs.String("stack", "", "scan this one stack folder instead of every stack under --root")
		match       = fs.String("stacks", "", "comma-separated globs (** for any depth) a stack folder under --root must match to be scanned")
		workspace   = fs.String("workspace", "", "workspace name (default: each stack's own)")
		backendURL  = fs.String("backend", "", "release store URL (as preview's)")
		output      = fs.String("o", "text", "output format: json, markdown or text")
		parallelism = fs.Int("parallelism", 10, "resources read at once in a stack")
		maxParallel = fs.Int("max-parallel", 4, "stacks scanned at once")
		ignore      = fs.String("ignore-fields", "", "comma-separated attribute paths no comparison counts (fields a controller or webhook owns)")
		logLevel    = fs.String("log-level", "warn", "debug, info, warn or error")
		tfBinary    = fs.String("terraform-binary", os.Getenv("KUSIONPR_TERRAFORM_BINARY"), "terraform or tofu executable (env KUSIONPR_TERRAFORM_BINARY)")
		tfCache     = fs.String("terraform-cache", os.Getenv("KUSIONPR_TERRAFORM_CACHE"), "folder for Terraform working folders and plugin cache (env KUSIONPR_TERRAFORM_CACHE)")
		tfProviders = fs.String("terraform-providers", os.Getenv("KUSIONPR_TERRAFORM_PROVIDERS"), "provider sources allowed besides the defaults (env KUSIONPR_TERRAFORM_PROVIDERS)")
		tfSettings  = fs.String("terraform-provider-settings", os.Getenv("KUSIONPR_TERRAFORM_PROVIDER_SETTINGS"), "provider arguments a spec's providerMeta may set besides region (env KUSIONPR_TERRAFORM_PROVIDER_SETTINGS)")
		tfEnv       = fs.String("terraform-env", os.Getenv("KUSIONPR_TERRAFORM_ENV"), "variables terraform and its providers get besides the defaults (env KUSIONPR_TERRAFORM_ENV)")
		clusters    = clusterFlags(fs)
	)
	if code, ok := parseFlags(fs, "drift", args, stdout, stderr); !ok {
		return code
	}
	format, err := report.ParseFormat(*output)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "error: --log-level: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	scanRoot, dirs := *root, []string(nil)
	if *stack != "" {
		abs, err := filepath.Abs(*stack)
		if err != nil {
			fmt.Fprintf(stderr, "error: --stack: %v\n", err)
			return 2
		}
		// Named from the checkout's root, as a scan of the whole root
		// names it.
		scanRoot = repositoryRoot(abs)
		if scanRoot == "" {
			scanRoot = filepath.Dir(abs)
		}
		rel, err := filepath.Rel(scanRoot, abs)
		if err != nil {
			fmt.Fprintf(stderr, "error: --stack: %v\n", err)
			return 2
		}
		dirs = []string{rel}
	}
	checkout := repositoryRoot(scanRoot)
	runner := &workflow.Runner{Store: workflow.StoreConfig{Backend: *backendURL, Lease: backend.DefaultLease},
		Parallelism: *parallelism, IgnoreFields: list(*ignore), Log: log}
	rts := connect.Factory{Terraform: terraform.Config{Binary: *tfBinary, CacheDir: *tfCache,
		AllowProviders: list(*tfProviders), PassEnv: list(*tfEnv), ProviderSettings: list(*tfSettings)}}
	doneKCL, err := useKCL(runner, log)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	defer doneKCL()
	if err := clusters.apply(runner, &rts); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	runner.Runtimes = rts
	scan := &workflow.DriftScan{
		Runner: runner, Request: workflow.Request{Workspace: *workspace, Root: checkout},
		Root: scanRoot, Dirs: dirs, Match: list(*match), MaxParallel: *maxParallel,
	}
	stacks, err := scan.Run(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "error: %s\n", model.MaskFingerprints(err.Error()))
		return exitScanFailed
	}
	fmt.Fprintf(stderr, "Release store: %s\n", scan.Store)
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

// runDriftGitHub is `command: drift` in a GitHub Actions job (on a
// schedule): the scan, its outputs and job summary, and with issues: true
// one issue per drifted stack.
func runDriftGitHub(ctx context.Context, ga *githubactions.Action, gctx *githubactions.GitHubContext, gh *githubapi.Client, scan *workflow.DriftScan, in func(string) string, redact func(string) string, log *slog.Logger) int {
	issues, err := strconv.ParseBool(cmp.Or(in("issues"), "false"))
	if err != nil {
		ga.Errorf("input issues: %q is not true or false", in("issues"))
		return 2
	}
	failOnDrift, err := strconv.ParseBool(cmp.Or(in("fail-on-drift"), "true"))
	if err != nil {
		ga.Errorf("input fail-on-drift: %q is not true or false", in("fail-on-drift"))
		return 2
	}
	scan.Match = list(in("stacks"))
	stacks, err := scan.Run(ctx)
	if err != nil {
		ga.Errorf("%s", redact(model.MaskFingerprints(err.Error())))
		return exitScanFailed
	}
	code := driftExitCode(stacks)
	var published []workflow.IssueOutcome
	if issues {
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
	if code == exitDrift && !failOnDrift {
		return 0
	}
	return code
}
