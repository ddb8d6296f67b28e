// Package workflow is the layer the action and the bot share: it turns a
// stack folder and a command into an engine run, and the run into output. The
// same inputs give the same output whichever binary calls it.
package workflow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"time"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/policy"
)

// Command is what to do with a stack.
type Command string

const (
	Preview Command = "preview"
	Apply   Command = "apply"
	Destroy Command = "destroy"
)

// ParseCommand checks a command name.
func ParseCommand(s string) (Command, error) {
	switch c := Command(s); c {
	case Preview, Apply, Destroy:
		return c, nil
	}
	return "", fmt.Errorf("unknown command %q: want preview, apply or destroy", s)
}

// Options configure one run of a Runner; the zero value of each field is a
// sensible default.
type Options struct {
	// Workspace is the workspace every stack is generated and released
	// with; empty lets each stack name its own (project.Stack.WorkspaceName:
	// stack.yaml's workspace, else the workspace named after the stack,
	// else "default").
	Workspace string
	// Backend is a release store URL; default backend.DefaultURL().
	Backend string
	// Parallelism bounds resources worked on at once (default 10).
	Parallelism int
	DryRun      bool
	NoWatch     bool
	// RecordUnchanged writes a release for an apply or destroy that has
	// nothing to change, as an audit trail of every run; by default such a
	// run writes none (engine.ApplyOptions.SkipUnchanged) and StackResult.Unchanged
	// says so.
	RecordUnchanged bool
	// Lease is how long a running release holds its stack without a sign of
	// life before the next run takes it as abandoned (default backend.DefaultLease).
	Lease time.Duration
	// IgnoreFields are attribute paths no comparison counts (fields a
	// controller or webhook owns).
	IgnoreFields []string
	// Offline previews against the prior release only, reading nothing live
	// (no credentials: a pull request from a fork). Apply and destroy refuse.
	Offline bool
	Origin  *model.Origin
	// WaitHeld is how long an apply or destroy waits for another run that
	// holds the stack to end, trying again as it does; 0 fails at once.
	// The backend's revision slot decides who runs, so runners on several
	// machines queue up without knowing of each other.
	WaitHeld time.Duration
	// Skip, if set, is asked with the stack's latest release (nil if none)
	// before anything runs; a reason skips the stack. Without it, Merge's
	// Skip is asked.
	Skip func(latest *model.Release) string
	// Merge is set for a merge's apply: merges apply in merge order.
	Merge *MergeOrder
	// Policy, if set, judges each plan: a preview reports what it says,
	// and an apply or destroy it refuses changes nothing.
	Policy *Policies
	// Trigger tells apart two requests of the same work (Request.Trigger).
	Trigger string
	// CheckoutRoot is the repository checkout the stacks lie in:
	// project.yaml and workspaces/ are not looked for above it, and files
	// a spec's context names must lie in it. Empty: a stack on one's own
	// machine (see project.LoadStack).
	CheckoutRoot string
	// KusionHome is Kusion's folder (its config.yaml, the default release
	// folder, module binaries); empty: as Kusion finds it
	// (internal/kusionhome: $KUSION_HOME, else .kusion in the user's home).
	KusionHome string
	// ModuleEnv names variables of this process's environment that Kusion
	// module binaries get besides the few every program needs
	// (module.Environ); they get nothing else of it.
	ModuleEnv []string
	// KCL compiles stacks written as main.k (kcl.Setup, the process's);
	// nil refuses them.
	KCL    KCLCompiler
	Logger *slog.Logger
}

// StackResult is the outcome of one command on one stack.
type StackResult struct {
	Stack *project.Stack
	// Workspace is the one the stack ran with; WorkspaceOrigin where it
	// came from (nil for a destroy, or a stack that failed before).
	Workspace       string
	WorkspaceOrigin *engine.WorkspaceOrigin
	Preview         *engine.Preview
	Release         *model.Release
	// Store is where the release was written.
	Store string
	// Skipped is why Options.Skip skipped the stack.
	Skipped string
	// Unchanged: the apply or destroy had nothing to change and wrote no
	// release (Options.RecordUnchanged is off).
	Unchanged bool
	Err       error
	// Started is when the work began where it ran (this process, or an
	// executor's worker); zero if it never did.
	Started time.Time
	// ReportedElsewhere says why another process reports this run: of
	// the bots waiting for one request run away, the first to take its
	// result reports it.
	ReportedElsewhere string
	// RunURL is the page of the run that did the work away from this
	// process (a GitHub Actions run): its report links it.
	RunURL string
	// Policy is what Options.Policy said of the plan: a preview's, or the
	// plan an apply or destroy followed or was refused for.
	Policy *PolicyOutcome
}

// RuntimeTarget is what a RuntimeFactory is told of the stack it builds
// runtimes for.
type RuntimeTarget struct {
	Stack     *project.Stack
	Workspace string
	// Spec is what the stack runs with; nil for a destroy.
	Spec *model.Spec
	// CheckoutRoot is the repository checkout the stack lies in
	// (Options.CheckoutRoot): files its spec names must lie in it.
	CheckoutRoot string
	// Offline: nothing live may be reached (Options.Offline); the run uses
	// the prior release in place of every runtime.
	Offline bool
	// Logger is the run's.
	Logger *slog.Logger
}

// RuntimeFactory says how the stack reaches the runtime of each resource
// type, each built by the engine on first use. It is asked before any
// release is read (the store is open: it holds the workspaces the spec is
// generated with), and refuses there, with an error naming the stack or
// its resources, a stack whose spec brings what the runtimes would
// refuse; nothing has run yet.
type RuntimeFactory interface {
	Runtimes(ctx context.Context, t RuntimeTarget) (map[model.ResourceType]engine.Driver, error)
}

// Runner runs commands on stacks with what its binary wired into it once:
// the action and the bot each build one, and every run of theirs goes
// through it.
type Runner struct {
	// Runtimes builds each stack's runtimes.
	Runtimes RuntimeFactory
	// PolicySandbox, if set, is where a repository's policies are
	// evaluated: a child process bounded in memory and time, so that the
	// rules of a pull request's base cannot exhaust this one's.
	PolicySandbox *policy.Sandbox
	// OpenStore opens the release store a run's options name; default
	// OpenStore.
	OpenStore func(ctx context.Context, opts Options) (store *backend.Store, where string, err error)
}

var errNoRuntimes = errors.New("workflow: the Runner has no RuntimeFactory")

func (r *Runner) openStore(ctx context.Context, opts Options) (*backend.Store, string, error) {
	if r.OpenStore != nil {
		return r.OpenStore(ctx, opts)
	}
	return OpenStore(ctx, opts)
}

// RunStack loads the stack in dir and runs cmd on it.
func (r *Runner) RunStack(ctx context.Context, cmd Command, dir string, opts Options) *StackResult {
	run := &StackResult{Started: time.Now()}
	st, err := loadStack(cmd, dir, opts)
	if err != nil {
		run.Err = err
		return run
	}
	run.Stack = st
	if opts.Skip == nil && opts.Merge != nil {
		opts.Skip = opts.Merge.Skip
	}
	ws := st.WorkspaceName(opts.Workspace)
	run.Workspace = ws
	target := engine.Stack{Project: st.Project.Name, Workspace: ws, Stack: st.Name, Origin: opts.Origin}
	if r.Runtimes == nil {
		run.Err = errNoRuntimes
		return run
	}
	// The store first: it holds the operator's workspaces, which the spec
	// is generated with.
	store, where, err := r.openStore(ctx, opts)
	if err != nil {
		run.Err = err
		return run
	}
	defer store.Close()
	run.Store = where
	if cmd != Destroy {
		var sw *StackWorkspace
		target.Spec, sw, err = StackSpec(ctx, st, ws, store, where, opts)
		if sw != nil {
			run.WorkspaceOrigin = sw.Origin
		}
		if err != nil {
			run.Err = err
			return run
		}
		if len(sw.Origin.ContextDiffers) > 0 && opts.Logger != nil {
			opts.Logger.Warn("the spec's context differs from its workspace's: generated with another workspace, or before this one changed",
				"workspace", ws, "keys", sw.Origin.ContextDiffers)
		}
	}
	runtimes, err := r.Runtimes.Runtimes(ctx, RuntimeTarget{
		Stack: st, Workspace: ws, Spec: target.Spec, CheckoutRoot: opts.CheckoutRoot, Offline: opts.Offline, Logger: opts.Logger,
	})
	if err != nil {
		run.Err = err
		return run
	}
	// Every read of a release and every slot taken goes through the check
	// that the project belongs to the run's repository.
	owned := backend.Owned{Store: store, Run: runRepository(opts)}
	get := func(ctx context.Context, revision uint64) (*model.Release, error) {
		return owned.Get(ctx, target.Project, target.Workspace, revision)
	}
	// why asks opts.Skip, then, for a merge, whether a merge queue applied
	// its commit already: a group's release may be behind the releases of
	// the groups that landed after it.
	why := func(latest *model.Release) (string, error) {
		if why := opts.Skip(latest); why != "" || opts.Merge == nil {
			return why, nil
		}
		return appliedInQueue(ctx, get, latest, opts.Merge.SHA)
	}
	skip := func() (string, error) {
		if opts.Skip == nil {
			return "", nil
		}
		latest, err := owned.Latest(ctx, target.Project, target.Workspace)
		if err != nil {
			return "", err
		}
		return why(latest)
	}
	if run.Skipped, run.Err = skip(); run.Skipped != "" || run.Err != nil {
		return run
	}

	eng := &engine.Engine{
		Runtimes:     runtimes,
		Store:        owned,
		Parallelism:  opts.Parallelism,
		Logger:       opts.Logger,
		Heartbeat:    store.HeartbeatInterval(),
		IgnoreFields: opts.IgnoreFields,
	}
	if opts.Offline {
		if cmd != Preview && !opts.DryRun {
			run.Err = fmt.Errorf("%s %s: %w", cmd, st.Name, errOffline)
			return run
		}
		eng.Runtimes = map[model.ResourceType]engine.Driver{model.Kubernetes: engine.Built(offline{}), model.Terraform: engine.Built(offline{})}
	}
	applyOpts := engine.ApplyOptions{DryRun: opts.DryRun, NoWatch: opts.NoWatch, SkipUnchanged: !opts.RecordUnchanged}
	if opts.Skip != nil {
		// Asked again when the stack is taken, atomically with it: another
		// run may have done (or outdated) this one since the check above.
		applyOpts.Precondition = func(latest *model.Release) error {
			why, err := why(latest)
			if why != "" {
				return &skipped{why: why}
			}
			return err
		}
	}
	stackDir := filepath.ToSlash(dir)
	if rel, err := filepath.Rel(opts.CheckoutRoot, dir); err == nil && opts.CheckoutRoot != "" {
		stackDir = filepath.ToSlash(rel)
	}
	if opts.Policy != nil {
		if len(opts.Policy.Overrides) > 0 && target.Origin != nil {
			o := *target.Origin
			o.PolicyOverrides = slices.Clone(opts.Policy.Overrides)
			target.Origin = &o
		}
		applyOpts.Check = func(ctx context.Context, p *engine.Preview) error {
			run.Policy = opts.Policy.judge(ctx, r.PolicySandbox, p, target.Spec, stackDir)
			return run.Policy.Refused()
		}
	}
	switch cmd {
	case Preview:
		run.Preview, run.Err = eng.Preview(ctx, target)
		if run.Err == nil && run.Preview != nil {
			run.Err = run.Preview.Err()
		}
		if run.Err == nil && opts.Policy != nil {
			run.Policy = opts.Policy.judge(ctx, r.PolicySandbox, run.Preview, target.Spec, stackDir)
		}
	case Apply, Destroy:
		var res *engine.Result
		res, run.Skipped, run.Err = whenFree(ctx, opts, skip, func() (*engine.Result, error) {
			if cmd == Apply {
				return eng.Apply(ctx, target, applyOpts)
			}
			return eng.Destroy(ctx, target, applyOpts)
		})
		var sk *skipped
		if errors.As(run.Err, &sk) {
			run.Skipped, run.Err, res = sk.why, nil, nil
		}
		if res != nil {
			run.Preview, run.Release, run.Unchanged = res.Preview, res.Release, res.Unchanged
		}
	}
	if run.Preview != nil {
		run.Preview.Offline = opts.Offline
		run.Preview.WorkspaceOrigin = run.WorkspaceOrigin
	}
	return run
}

// loadStack reads the stack in dir; a destroy's stack whose folder the
// commit deleted is read from what is left of it.
func loadStack(cmd Command, dir string, opts Options) (*project.Stack, error) {
	st, err := project.LoadStack(opts.CheckoutRoot, dir)
	if err != nil && cmd == Destroy && errors.Is(err, fs.ErrNotExist) {
		st, err = project.DeletedStack(opts.CheckoutRoot, dir)
	}
	return st, err
}

// OpenStore opens the release store: opts.Backend if set, else the current
// backend of the Kusion CLI's configuration, else Kusion's default folder.
// where names it for people.
func OpenStore(ctx context.Context, opts Options) (store *backend.Store, where string, err error) {
	switch {
	case opts.Backend != "":
		store, err = backend.Open(ctx, opts.Backend)
		where = backend.Location(opts.Backend)
	default:
		cfgFile, folder := backend.KusionConfigFile(), backend.DefaultURL()
		if opts.KusionHome != "" {
			cfgFile, folder = filepath.Join(opts.KusionHome, "config.yaml"), backend.FolderURL(opts.KusionHome)
		}
		cfg, ok, cerr := backend.CurrentKusionBackend(cfgFile)
		if cerr != nil {
			return nil, "", cerr
		}
		if ok {
			store, err = backend.OpenConfig(ctx, cfg)
			where = "the Kusion configuration's " + cfg.Type + " backend"
		} else {
			store, err = backend.Open(ctx, folder)
			where = backend.Location(folder)
		}
	}
	if err != nil {
		return nil, "", err
	}
	store.Lease = opts.Lease
	return store, where, nil
}

// Unlock ends the running release of the stack in dir by hand.
func (r *Runner) Unlock(ctx context.Context, dir string, opts Options, who, why string) (*model.Release, error) {
	st, err := project.LoadStack(opts.CheckoutRoot, dir)
	if err != nil {
		return nil, err
	}
	ws := st.WorkspaceName(opts.Workspace)
	store, _, err := r.openStore(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	return backend.Owned{Store: store, Run: runRepository(opts)}.Unlock(ctx, st.Project.Name, ws, who, why)
}

// runRepository is the repository the run comes from, nil outside GitHub.
func runRepository(opts Options) *model.Repository {
	if opts.Origin == nil {
		return nil
	}
	return opts.Origin.Repository
}

// whenFree runs op, and again while another run holds the stack, until
// opts.WaitHeld has passed; skip is asked again before each new try, as
// the run waited for may have done the work. Waits grow from a quarter
// second to five seconds, with jitter so that waiting runners do not retry
// in step.
func whenFree(ctx context.Context, opts Options, skip func() (string, error), op func() (*engine.Result, error)) (*engine.Result, string, error) {
	deadline := time.Now().Add(opts.WaitHeld)
	wait := 250 * time.Millisecond
	for {
		res, err := op()
		if !errors.Is(err, backend.ErrHeld) || !time.Now().Before(deadline) {
			return res, "", err
		}
		if opts.Logger != nil {
			opts.Logger.Info("stack held by another run; waiting", "reason", err.Error())
		}
		d := wait/2 + rand.N(wait)
		select {
		case <-ctx.Done():
			return res, "", err
		case <-time.After(min(d, time.Until(deadline))):
		}
		wait = min(2*wait, 5*time.Second)
		if why, serr := skip(); why != "" || serr != nil {
			return nil, why, serr
		}
	}
}

// skipped is Options.Skip's answer when the stack is taken.
type skipped struct{ why string }

func (s *skipped) Error() string { return "skipped: " + s.why }
