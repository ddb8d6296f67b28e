package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kusionpr/kusionpr/connect"
	"github.com/kusionpr/kusionpr/engine/kcl"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
	"github.com/kusionpr/kusionpr/runtime/terraform"
	"github.com/kusionpr/kusionpr/settings"
	"github.com/kusionpr/kusionpr/workflow"
)

// The action reads its settings by two doors, both declared in package
// settings: a command's flags (cliSettings) and, under GitHub Actions, its
// inputs (inputSettings). Each door builds the workflow's options and the
// runtimes' factory in one function of its own (runner, request,
// runtimes, and job.change for a change's).

// KCLSettings are KCL's settings, variables of the environment that every
// door of the action reads, the bot and its Jobs too (engine/kcl).
type KCLSettings struct {
	KCLRuntime    string `setting:"kcl-runtime"`
	KCLAllow      string `setting:"kcl-allow"`
	KCLMirrors    string `setting:"kcl-mirrors"`
	KCLCache      string `setting:"kcl-cache"`
	KCLUnconfined bool   `setting:"kcl-unconfined"`
}

// useKCL gives r the process's KCL. The returned function ends its
// runtimes: defer it.
func useKCL(r *workflow.Runner, k KCLSettings, log *slog.Logger) (done func(), err error) {
	setup, err := kcl.NewSetup(kcl.Settings{Runtime: k.KCLRuntime, Allow: k.KCLAllow, Mirrors: k.KCLMirrors, CacheDir: k.KCLCache, Unconfined: k.KCLUnconfined}, log)
	if err != nil {
		return func() {}, fmt.Errorf("KCL settings: %w", err)
	}
	r.KCL = setup
	return func() { _ = setup.Close() }, nil
}

// cliSettings are a command's settings: its flags (each command has some
// of them; the others stay zero) and KCL's variables.
type cliSettings struct {
	Stack                     string            `setting:"stack"`
	DriftStack                string            `setting:"drift-stack"`
	Root                      string            `setting:"root"`
	Stacks                    []string          `setting:"stacks"`
	Workspace                 string            `setting:"workspace"`
	Backend                   string            `setting:"backend"`
	Output                    string            `setting:"output"`
	GenerateOutput            string            `setting:"generate-output"`
	Format                    string            `setting:"format"`
	Reason                    string            `setting:"reason"`
	RollbackTo                int               `setting:"rollback-to"`
	ReleasesOutput            string            `setting:"releases-output"`
	ReleasesLimit             int               `setting:"releases-limit"`
	ReleasesAllProjects       bool              `setting:"releases-all-projects"`
	ReleasesRunning           bool              `setting:"releases-running"`
	Request                   string            `setting:"request"`
	Yes                       bool              `setting:"yes"`
	DryRun                    bool              `setting:"dry-run"`
	Parallelism               int               `setting:"parallelism"`
	MaxParallel               int               `setting:"max-parallel"`
	ForceConflicts            bool              `setting:"force-conflicts"`
	NoWatch                   bool              `setting:"no-watch"`
	RecordUnchanged           bool              `setting:"record-unchanged"`
	Timeout                   time.Duration     `setting:"timeout"`
	Lease                     time.Duration     `setting:"lease"`
	HoldWait                  time.Duration     `setting:"hold-wait"`
	LogLevel                  string            `setting:"log-level"`
	IgnoreFields              []string          `setting:"ignore-fields"`
	TerraformBinary           string            `setting:"terraform-binary"`
	TerraformCache            string            `setting:"terraform-cache"`
	TerraformProviders        []string          `setting:"terraform-providers"`
	TerraformProviderSettings []string          `setting:"terraform-provider-settings"`
	TerraformEnv              []string          `setting:"terraform-env"`
	SpecKubeconfigAllow       []string          `setting:"spec-kubeconfig-allow"`
	Kubeconfigs               map[string]string `setting:"kubeconfigs"`
	ModuleEnv                 []string          `setting:"module-env"`
	KCLSettings
}

// parseCommand reads the command's flags: --help prints the command's
// usage and flags on stdout (exit 0); a mistake prints the error (and,
// for a flag the command does not have or cannot parse, the usage) on
// stderr (exit 2). ok is false when the command must not go on.
func parseCommand(command string, args []string, stdout, stderr io.Writer) (s cliSettings, code int, ok bool) {
	fs := newFlags(stderr)
	cl := settings.Flags(fs, command, os.Getenv)
	if code, ok := parseFlags(fs, command, args, stdout, stderr); !ok {
		return s, code, false
	}
	code, ok = fill(cl, &s, stderr)
	return s, code, ok
}

// fill fills dst from the parsed flags, their declarations checking each;
// the mistakes are written to stderr, exit code 2.
func fill(cl *settings.CommandLine, dst any, stderr io.Writer) (code int, ok bool) {
	vals, err := cl.Values()
	if err == nil {
		err = vals.Fill(dst)
	}
	if err != nil {
		printErrors(stderr, err)
		return 2, false
	}
	return 0, true
}

// printErrors writes each line of err as an error line.
func printErrors(w io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(w, "error: %s\n", line)
	}
}

func newFlags(stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("action", flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// logger is a command's log on stderr at its --log-level, which the
// declaration has checked.
func (s cliSettings) logger(stderr io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(s.LogLevel))
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}

// runner is the runner of a command's runs, its runtimes still to be
// given.
func (s cliSettings) runner(log *slog.Logger) *workflow.Runner {
	return &workflow.Runner{
		Store: workflow.StoreConfig{Backend: s.Backend, Lease: s.Lease}, Parallelism: s.Parallelism, NoWatch: s.NoWatch,
		IgnoreFields: s.IgnoreFields, ModuleEnv: s.ModuleEnv, WaitHeld: s.HoldWait, Log: log,
	}
}

// request is the command's run of cmd on its stack, of the checkout the
// stack lies in on this machine (repositoryRoot).
func (s cliSettings) request(cmd workflow.Command) (workflow.Request, error) {
	req, err := workflow.NewRequest(cmd, repositoryRoot(s.Stack), s.Stack)
	if err != nil {
		return req, fmt.Errorf("%s: %w", settings.Must("stack").FlagName(), err)
	}
	req.Workspace, req.RecordUnchanged, req.DryRun = s.Workspace, s.RecordUnchanged, s.DryRun
	req.RollbackTo = uint64(s.RollbackTo)
	return req, nil
}

// runtimes is how a command's stacks reach their clusters and run
// Terraform; progress hears of the objects a wait is not done with.
func (s cliSettings) runtimes(progress kubernetes.Progress) connect.Factory {
	// Checked when the flags were read.
	allow, _ := kubernetes.ParseAllowance(s.SpecKubeconfigAllow)
	return connect.Factory{
		ForceConflicts: s.ForceConflicts, ReadyTimeout: s.Timeout, Progress: progress,
		Clusters: connect.Clusters{Kubeconfigs: s.Kubeconfigs, KubeconfigsName: settings.Must("kubeconfigs").FlagName(),
			SpecAllow: allow, Setting: settings.Must("spec-kubeconfig-allow").FlagName()},
		Terraform: terraform.Config{Binary: s.TerraformBinary, CacheDir: s.TerraformCache,
			AllowProviders: s.TerraformProviders, PassEnv: s.TerraformEnv, ProviderSettings: s.TerraformProviderSettings},
	}
}

// inputSettings are the action's inputs under GitHub Actions, and KCL's
// variables.
type inputSettings struct {
	Command                   string            `setting:"command"`
	Root                      string            `setting:"root"`
	Stacks                    []string          `setting:"stacks"`
	SharedPaths               []string          `setting:"shared-paths"`
	Workspace                 string            `setting:"workspace"`
	Backend                   string            `setting:"backend"`
	Kubeconfig                string            `setting:"kubeconfig"`
	Kubeconfigs               map[string]string `setting:"kubeconfigs"`
	GenerateCommand           string            `setting:"generate-command"`
	GenerateTimeout           time.Duration     `setting:"generate-timeout"`
	SpecKubeconfigAllow       []string          `setting:"spec-kubeconfig-allow"`
	ModuleEnv                 []string          `setting:"module-env"`
	AllowForkCredentials      bool              `setting:"allow-fork-credentials"`
	GitHubToken               string            `setting:"github-token"`
	CommentUser               string            `setting:"comment-user"`
	IgnoreFields              []string          `setting:"ignore-fields"`
	MaxParallel               int               `setting:"max-parallel"`
	Comment                   string            `setting:"comment"`
	CombineAbove              int               `setting:"combine-above"`
	MaxComments               int               `setting:"max-comments"`
	RecordUnchanged           bool              `setting:"record-unchanged"`
	Deployments               bool              `setting:"deployments"`
	Policy                    string            `setting:"policy"`
	PolicyPackages            []string          `setting:"policy-packages"`
	Lease                     time.Duration     `setting:"lease"`
	Timeout                   time.Duration     `setting:"timeout"`
	RateLimitWait             time.Duration     `setting:"rate-limit-wait"`
	TerraformCLIConfig        string            `setting:"terraform-cli-config"`
	TerraformProviders        []string          `setting:"terraform-providers"`
	TerraformProviderSettings []string          `setting:"terraform-provider-settings"`
	TerraformEnv              []string          `setting:"terraform-env"`
	Request                   string            `setting:"request"`
	Issues                    bool              `setting:"issues"`
	FailOnDrift               bool              `setting:"fail-on-drift"`
	KCLSettings
}

// readInputs reads the inputs (getInput is the action's GetInput).
func readInputs(getInput func(string) string) (in inputSettings, err error) {
	vals, err := settings.Inputs(getInput, os.Getenv)
	if err == nil {
		err = vals.Fill(&in)
	}
	return in, err
}

// theInput names an input in a sentence: "the input kubeconfigs".
func theInput(setting string) string {
	return "the input " + settings.Must(setting).InputName()
}

// runner is the runner of the job's runs, its runtimes still to be given.
func (in inputSettings) runner(log *slog.Logger) *workflow.Runner {
	r := &workflow.Runner{Store: workflow.StoreConfig{Backend: in.Backend, Lease: in.Lease},
		IgnoreFields: in.IgnoreFields, ModuleEnv: in.ModuleEnv, Log: log}
	// A Docker action runs as the image's user, whose home is the
	// container's own and is gone when the step ends; GitHub maps the
	// runner's home at $HOME (/github/home) for what should outlive it.
	// Kusion's folder (its config.yaml, the default release folder, module
	// binaries) is there unless KUSION_HOME says otherwise.
	if home := os.Getenv("HOME"); os.Getenv("KUSION_HOME") == "" && home != "" {
		r.Store.KusionHome = filepath.Join(home, ".kusion")
	}
	return r
}

// request is what every stack's request of the job shares; origin says
// who and what started it.
func (in inputSettings) request(origin *model.Origin, checkout string) workflow.Request {
	return workflow.Request{Workspace: in.Workspace, Origin: origin, Root: checkout, RecordUnchanged: in.RecordUnchanged}
}

// runtimes is how the job's stacks reach their clusters (kubeconfigs are
// the input's files, found outside the checkout) and run Terraform (with
// the CLI configuration the input gave, written to cliConfig).
func (in inputSettings) runtimes(kubeconfigs map[string]string, cliConfig string) connect.Factory {
	// Checked when the inputs were read.
	allow, _ := kubernetes.ParseAllowance(in.SpecKubeconfigAllow)
	return connect.Factory{
		ForceConflicts: true, ReadyTimeout: in.Timeout,
		// The names also tell a refused stack which inputs would help.
		Clusters: connect.Clusters{SpecAllow: allow, Setting: theInput("spec-kubeconfig-allow"),
			Kubeconfigs: kubeconfigs, KubeconfigsName: theInput("kubeconfigs"), KubeconfigName: theInput("kubeconfig")},
		Terraform: terraform.Config{AllowProviders: in.TerraformProviders, PassEnv: in.TerraformEnv,
			ProviderSettings: in.TerraformProviderSettings, CLIConfigFile: cliConfig},
	}
}
