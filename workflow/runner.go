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
	"math"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

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
	// Skipped is why the merge order skipped the stack (Request.Merge).
	Skipped string
	// Unchanged: the apply or destroy had nothing to change and wrote no
	// release (Request.RecordUnchanged is off).
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
	// Policy is what Request.Policy said of the plan: a preview's, or the
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
	// (Request.Root): files its spec names must lie in it.
	CheckoutRoot string
	// Offline: nothing live may be reached (Request.Offline); the run uses
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

// Runner runs requests on stacks with what its binary wired into it once:
// the action and the bot each build one from their settings, and every run
// of theirs goes through it. What differs from one run to the next is in
// the Request.
type Runner struct {
	// Runtimes builds each stack's runtimes.
	Runtimes RuntimeFactory
	// PolicySandbox, if set, is where a repository's policies are
	// evaluated: a child process bounded in memory and time, so that the
	// rules of a pull request's base cannot exhaust this one's.
	PolicySandbox *policy.Sandbox
	// Store is the release store every run reads and writes.
	Store StoreConfig
	// OpenStore, if set, opens the store in place of Store.Open.
	OpenStore func(ctx context.Context) (store *backend.Store, where string, err error)
	// Parallelism bounds resources worked on at once (default 10).
	Parallelism int
	// NoWatch leaves out the wait for applied resources to be ready.
	NoWatch bool
	// IgnoreFields are attribute paths no comparison counts (fields a
	// controller or webhook owns).
	IgnoreFields []string
	// WaitHeld is how long an apply or destroy waits for another run that
	// holds the stack to end, trying again as it does; 0 fails at once.
	// The backend's revision slot decides who runs, so runners on several
	// machines queue up without knowing of each other.
	WaitHeld time.Duration
	// ModuleEnv names variables of this process's environment that Kusion
	// module binaries get besides the few every program needs
	// (module.Environ); they get nothing else of it.
	ModuleEnv []string
	// KCL compiles stacks written as main.k (kcl.Setup, the process's);
	// nil refuses them.
	KCL KCLCompiler
	// Log takes the lines of a run whose Request has no logger of its own.
	Log *slog.Logger
}

// StoreConfig names the release store.
type StoreConfig struct {
	// Backend is a release store URL; empty: the current backend of the
	// Kusion CLI's configuration in KusionHome, else KusionHome's folder.
	Backend string
	// KusionHome is Kusion's folder (its config.yaml, the default release
	// folder, module binaries); empty: as Kusion finds it
	// (internal/kusionhome: $KUSION_HOME, else .kusion in the user's home).
	KusionHome string
	// Lease is how long a running release holds its stack without a sign of
	// life before the next run takes it as abandoned (default backend.DefaultLease).
	Lease time.Duration
}

var errNoRuntimes = errors.New("workflow: the Runner has no RuntimeFactory")

// Open opens the release store; where names it for people.
func (r *Runner) Open(ctx context.Context) (*backend.Store, string, error) {
	if r.OpenStore != nil {
		return r.OpenStore(ctx)
	}
	return r.Store.Open(ctx)
}

// log is the run's logger: the request's, else the runner's.
func (r *Runner) log(req Request) *slog.Logger {
	switch {
	case req.Log != nil:
		return req.Log
	case r.Log != nil:
		return r.Log
	}
	return slog.New(slog.DiscardHandler)
}

// engine is an engine of the runner's settings over runtimes and store.
func (r *Runner) engine(runtimes map[model.ResourceType]engine.Driver, store backend.Owned, log *slog.Logger) *engine.Engine {
	return &engine.Engine{Runtimes: runtimes, Store: store, Parallelism: r.Parallelism, Logger: log,
		Heartbeat: store.Store.HeartbeatInterval(), IgnoreFields: r.IgnoreFields}
}

// Run runs the request in this process: it loads the stack, opens the
// store, generates the spec, and previews, applies or destroys.
func (r *Runner) Run(ctx context.Context, req Request) *StackResult {
	s := &stackRun{r: r, req: req, log: r.log(req), out: &StackResult{Started: time.Now()}}
	defer s.close()
	s.do(ctx, s.load, s.open, s.generate, s.connect, s.skip, s.prepare, s.execute)
	if p := s.out.Preview; p != nil {
		p.Offline = req.Offline
		p.WorkspaceOrigin = s.out.WorkspaceOrigin
	}
	return s.out
}

// stackRun is the state of one Run, a method per step.
type stackRun struct {
	r   *Runner
	req Request
	log *slog.Logger
	out *StackResult

	target engine.Stack
	store  *backend.Store
	owned  backend.Owned
	eng    *engine.Engine
	opts   engine.ApplyOptions
}

// do takes the steps in order, until one fails (its error is the run's)
// or the run is skipped.
func (s *stackRun) do(ctx context.Context, steps ...func(context.Context) error) {
	for _, step := range steps {
		if err := step(ctx); err != nil {
			s.out.Err = err
			return
		}
		if s.out.Skipped != "" {
			return
		}
	}
}

func (s *stackRun) close() {
	if s.store != nil {
		s.store.Close()
	}
}

// load reads the stack.
func (s *stackRun) load(context.Context) error {
	st, err := loadStack(s.req.Command, s.req.Root, s.req.Dir())
	if err != nil {
		return err
	}
	s.out.Stack = st
	s.out.Workspace = st.WorkspaceName(s.req.Workspace)
	s.target = engine.Stack{Project: st.Project.Name, Workspace: s.out.Workspace, Stack: st.Name, Origin: s.req.Origin}
	if s.r.Runtimes == nil {
		return errNoRuntimes
	}
	return nil
}

// open opens the store first: it holds the operator's workspaces, which
// the spec is generated with. Every read of a release and every slot taken
// goes through the check that the project belongs to the run's repository.
func (s *stackRun) open(ctx context.Context) error {
	store, where, err := s.r.Open(ctx)
	if err != nil {
		return err
	}
	s.store, s.out.Store = store, where
	s.owned = backend.Owned{Store: store, Run: s.req.repository()}
	return nil
}

// generate makes the spec the stack runs with; a destroy has none, a
// rollback's is the release's it goes back to.
func (s *stackRun) generate(ctx context.Context) error {
	if s.req.Command == Destroy {
		return nil
	}
	if s.req.RollbackTo != 0 {
		return s.recall(ctx)
	}
	spec, sw, err := s.r.StackSpec(ctx, s.req, s.out.Stack, s.store, s.out.Store)
	if sw != nil {
		s.out.WorkspaceOrigin = sw.Origin
	}
	if err != nil {
		return err
	}
	s.target.Spec = spec
	if len(sw.Origin.ContextDiffers) > 0 {
		s.log.Warn("the spec's context differs from its workspace's: generated with another workspace, or before this one changed",
			"workspace", s.out.Workspace, "keys", sw.Origin.ContextDiffers)
	}
	return nil
}

// connect builds the stack's runtimes; an offline run reaches nothing
// live, and may only preview.
func (s *stackRun) connect(ctx context.Context) error {
	runtimes, err := s.r.Runtimes.Runtimes(ctx, RuntimeTarget{
		Stack: s.out.Stack, Workspace: s.out.Workspace, Spec: s.target.Spec, CheckoutRoot: s.req.Root, Offline: s.req.Offline, Logger: s.log,
	})
	if err != nil {
		return err
	}
	if s.req.Offline {
		if s.req.Command != Preview && !s.req.DryRun {
			return fmt.Errorf("%s %s: %w", s.req.Command, s.out.Stack.Name, errOffline)
		}
		runtimes = map[model.ResourceType]engine.Driver{model.Kubernetes: engine.Built(offline{}), model.Terraform: engine.Built(offline{})}
	}
	s.eng = s.r.engine(runtimes, s.owned, s.log)
	return nil
}

// skip asks the merge order, before anything runs, whether the stack's
// latest release leaves this merge nothing to do.
func (s *stackRun) skip(ctx context.Context) error {
	why, err := s.skipped(ctx)
	s.out.Skipped = why
	return err
}

func (s *stackRun) skipped(ctx context.Context) (string, error) {
	if s.req.Merge == nil {
		return "", nil
	}
	latest, err := s.owned.Latest(ctx, s.target.Project, s.target.Workspace)
	if err != nil {
		return "", err
	}
	return s.mergeSkip(ctx, latest)
}

// mergeSkip asks the merge order, then whether a merge queue applied the
// merge's commit already: a group's release may be behind the releases of
// the groups that landed after it.
func (s *stackRun) mergeSkip(ctx context.Context, latest *model.Release) (string, error) {
	if why := s.req.Merge.Skip(latest); why != "" {
		return why, nil
	}
	get := func(ctx context.Context, revision uint64) (*model.Release, error) {
		return s.owned.Get(ctx, s.target.Project, s.target.Workspace, revision)
	}
	return appliedInQueue(ctx, get, latest, s.req.Merge.SHA)
}

// prepare sets what the engine checks when it takes the stack: the merge
// order again, atomically with taking it (another run may have done, or
// outdated, this one since skip), and the policies.
func (s *stackRun) prepare(ctx context.Context) error {
	s.opts = engine.ApplyOptions{DryRun: s.req.DryRun, NoWatch: s.r.NoWatch, SkipUnchanged: !s.req.RecordUnchanged}
	if s.req.Merge != nil {
		s.opts.Precondition = func(latest *model.Release) error {
			why, err := s.mergeSkip(ctx, latest)
			if why != "" {
				return &skipped{why: why}
			}
			return err
		}
	}
	if p := s.req.Policy; p != nil {
		if len(p.Overrides) > 0 && s.target.Origin != nil {
			o := *s.target.Origin
			o.PolicyOverrides = slices.Clone(p.Overrides)
			s.target.Origin = &o
		}
		s.opts.Check = func(ctx context.Context, pv *engine.Preview) error {
			s.out.Policy = s.judge(ctx, pv)
			return s.out.Policy.Refused()
		}
	}
	return nil
}

// judge is what the request's policies say of a plan.
func (s *stackRun) judge(ctx context.Context, p *engine.Preview) *PolicyOutcome {
	return s.req.Policy.judge(ctx, s.r.PolicySandbox, p, s.target.Spec, s.req.Stack)
}

// execute previews, applies or destroys.
func (s *stackRun) execute(ctx context.Context) error {
	if s.req.Command == Preview {
		p, err := s.eng.Preview(ctx, s.target)
		s.out.Preview = p
		if err == nil && p != nil {
			err = p.Err()
		}
		if err == nil && s.req.Policy != nil {
			s.out.Policy = s.judge(ctx, p)
		}
		return err
	}
	res, why, err := s.r.whenFree(ctx, s.log, s.skipped, func() (*engine.Result, error) {
		if s.req.Command == Apply {
			return s.eng.Apply(ctx, s.target, s.opts)
		}
		return s.eng.Destroy(ctx, s.target, s.opts)
	})
	var sk *skipped
	if errors.As(err, &sk) {
		why, err, res = sk.why, nil, nil
	}
	s.out.Skipped = why
	if res != nil {
		s.out.Preview, s.out.Release, s.out.Unchanged = res.Preview, res.Release, res.Unchanged
	}
	return err
}

// loadStack reads the stack in dir, of the checkout at root; a destroy's
// stack whose folder the commit deleted is read from what is left of it.
func loadStack(cmd Command, root, dir string) (*project.Stack, error) {
	st, err := project.LoadStack(root, dir)
	if err != nil && cmd == Destroy && errors.Is(err, fs.ErrNotExist) {
		st, err = project.DeletedStack(root, dir)
	}
	return st, err
}

// Open opens the release store: Backend if set, else the current backend
// of the Kusion CLI's configuration, else Kusion's default folder. where
// names it for people.
func (c StoreConfig) Open(ctx context.Context) (store *backend.Store, where string, err error) {
	switch {
	case c.Backend != "":
		store, err = backend.Open(ctx, c.Backend)
		where = backend.Location(c.Backend)
	default:
		cfgFile, folder := backend.KusionConfigFile(), backend.DefaultURL()
		if c.KusionHome != "" {
			cfgFile, folder = filepath.Join(c.KusionHome, "config.yaml"), backend.FolderURL(c.KusionHome)
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
	store.Lease = c.Lease
	return store, where, nil
}

// Unlock ends the running release of the request's stack by hand.
func (r *Runner) Unlock(ctx context.Context, req Request, who, why string) (*model.Release, error) {
	st, store, _, err := r.stackStore(ctx, req)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	return backend.Owned{Store: store, Run: req.repository()}.Unlock(ctx, st.Project.Name, st.WorkspaceName(req.Workspace), who, why)
}

// whenFree runs op, and again while another run holds the stack, until
// WaitHeld has passed; skip is asked again before each new try, as the run
// waited for may have done the work. Waits grow from a quarter second to
// five seconds, with jitter so that waiting runners do not retry in step.
func (r *Runner) whenFree(ctx context.Context, log *slog.Logger, skip func(context.Context) (string, error), op func() (*engine.Result, error)) (*engine.Result, string, error) {
	deadline := time.Now().Add(r.WaitHeld)
	// From 125 ms, with up to twice that added: a quarter second on
	// average, doubling to five seconds.
	delay := wait.Backoff{Duration: 125 * time.Millisecond, Factor: 2, Jitter: 2, Cap: 2500 * time.Millisecond, Steps: math.MaxInt32}.DelayFunc()
	for {
		res, err := op()
		if !errors.Is(err, backend.ErrHeld) || !time.Now().Before(deadline) {
			return res, "", err
		}
		log.Info("stack held by another run; waiting", "reason", err.Error())
		select {
		case <-ctx.Done():
			return res, "", err
		case <-time.After(min(delay(), time.Until(deadline))):
		}
		if why, serr := skip(ctx); why != "" || serr != nil {
			return nil, why, serr
		}
	}
}

// skipped is the merge order's answer when the stack is taken.
type skipped struct{ why string }

func (s *skipped) Error() string { return "skipped: " + s.why }
