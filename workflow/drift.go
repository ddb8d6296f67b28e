package workflow

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/model"
)

// DriftStatus is what a scan found of one stack.
type DriftStatus string

const (
	// Drifted: some live object changed outside of this tool since the
	// stack's latest release.
	Drifted DriftStatus = "drifted"
	// InSync: every live object is as the latest release left it.
	InSync DriftStatus = "in-sync"
	// SpecNotApplied: no drift, but the checkout's spec differs from the
	// latest release's: an apply that has not happened (a merge not
	// applied yet, or one that failed before its release).
	SpecNotApplied DriftStatus = "spec-not-applied"
	// NeverApplied: the stack's project and workspace have no release.
	NeverApplied DriftStatus = "never-applied"
	// Destroyed: the latest release destroyed the stack.
	Destroyed DriftStatus = "destroyed"
	// ReleaseRunning: the latest release has not ended; what it leaves is
	// not known yet.
	ReleaseRunning DriftStatus = "release-running"
	// ReleaseFailed: the latest release failed; what it left is partly
	// applied, and nothing is compared with it.
	ReleaseFailed DriftStatus = "release-failed"
	// ScanFailed: the stack could not be scanned (its error says why), or
	// some of its resources could not be read: no drift is claimed or
	// ruled out for them.
	ScanFailed DriftStatus = "error"
)

// StackDrift is what a scan found of one stack.
type StackDrift struct {
	// Dir is the stack's folder, relative to the scan's root.
	Dir       string
	Project   string
	Workspace string
	Stack     string
	Status    DriftStatus
	// Release is the latest release (nil if none); the scan compared the
	// live objects with it.
	Release *model.Release
	// Preview is the drift as a preview of the release's spec
	// (engine.Drift); nil when nothing was compared.
	Preview *engine.Preview
	// SpecChanges is how the checkout's spec differs from the release's:
	// an apply that has not happened. SpecErr is why the checkout's spec
	// could not be read (a broken spec is no reason not to scan the live
	// objects).
	SpecChanges []engine.SpecChange
	SpecErr     error
	// Since is when this drift was first seen; zero when not known (a
	// stateless scan learns it from the stack's drift issue).
	Since time.Time
	Err   error
}

// DriftCounts are how many resources drifted and in how many fields.
type DriftCounts struct {
	Resources int `json:"resources"`
	Fields    int `json:"fields"`
}

// Counts counts the drifted resources and fields.
func (d *StackDrift) Counts() DriftCounts {
	var c DriftCounts
	if d.Preview == nil {
		return c
	}
	for _, st := range d.Preview.Steps() {
		if len(st.Drift) > 0 {
			c.Resources++
			c.Fields += len(st.Drift)
		}
	}
	return c
}

// DriftScan scans stacks for drift: their live objects against their
// latest release. It only reads: it writes no release and takes no
// stack's lock, so it runs beside applies.
type DriftScan struct {
	Runner *Runner
	// Request is what every stack's scan shares: the checkout (Root), the
	// workspace, who asked (Origin: its repository owns the releases read)
	// and the log.
	Request Request
	// Root is the folder the stacks are found in, in Request.Root.
	Root string
	// Dirs are stack folders, relative to Root, to scan; empty: every
	// stack under Root.
	Dirs []string
	// Match, if set, are globs (** for any depth) a stack folder must
	// match to be scanned, as Selection.Stacks.
	Match []string
	// MaxParallel bounds the stacks scanned at once (default 4).
	MaxParallel int
	// Store names, once Run opened it, the release store it read.
	Store string
}

// Run scans the stacks, in folder order. An error is returned only when
// there is nothing to scan (the root cannot be read, the store cannot be
// opened); a stack's own failure is in its StackDrift.
func (s *DriftScan) Run(ctx context.Context) ([]*StackDrift, error) {
	if s.Runner == nil || s.Runner.Runtimes == nil {
		return nil, errNoRuntimes
	}
	dirs := s.Dirs
	if len(dirs) == 0 {
		found, _, err := scan(s.Root)
		if err != nil {
			return nil, err
		}
		dirs = found
	}
	dirs = slices.Clone(dirs)
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	if len(s.Match) > 0 {
		globs, err := compileGlobs(s.Match)
		if err != nil {
			return nil, fmt.Errorf("drift scan: %w", err)
		}
		dirs = slices.DeleteFunc(dirs, func(d string) bool { return !matchAny(globs, filepath.ToSlash(d)) })
	}
	store, where, err := s.Runner.Open(ctx)
	if err != nil {
		return nil, fmt.Errorf("drift scan: open the release store: %w", err)
	}
	defer store.Close()
	s.Store = where
	owned := backend.Owned{Store: store, Run: s.Request.repository()}

	out := make([]*StackDrift, len(dirs))
	limit := s.MaxParallel
	if limit <= 0 {
		limit = 4
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, dir := range dirs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = s.stack(ctx, owned, dir)
		}()
	}
	wg.Wait()
	return out, nil
}

// stack scans one stack.
func (s *DriftScan) stack(ctx context.Context, owned backend.Owned, dir string) *StackDrift {
	d := &StackDrift{Dir: filepath.ToSlash(dir), Status: ScanFailed}
	req := s.Request
	st, err := project.LoadStack(req.Root, filepath.Join(s.Root, dir))
	if err != nil {
		d.Err = fmt.Errorf("drift scan of %s: %w", d.Dir, err)
		return d
	}
	d.Project, d.Stack = st.Project.Name, st.Name
	d.Workspace = st.WorkspaceName(req.Workspace)
	req.Log = s.Runner.log(req).With("stack", d.Dir)
	rel, err := owned.Latest(ctx, d.Project, d.Workspace)
	if err != nil {
		d.Err = fmt.Errorf("drift scan of %s: %w", d.Dir, err)
		return d
	}
	d.Release = rel
	spec, _, specErr := s.Runner.StackSpec(ctx, req, st, owned.Store, s.Store)
	if specErr != nil {
		d.SpecErr = fmt.Errorf("the checkout's spec of %s: %w", d.Dir, specErr)
	}
	switch {
	case rel == nil:
		d.Status = NeverApplied
		return d
	case !rel.Phase.Ended():
		d.Status = ReleaseRunning
		return d
	case rel.Phase == model.PhaseFailed:
		d.Status = ReleaseFailed
		return d
	case rel.State == nil || len(rel.State.Resources) == 0:
		// A destroy's release lists what it destroyed in its spec and
		// leaves no state: there is nothing live to compare.
		d.Status = Destroyed
		return d
	}
	runtimes, err := s.Runner.Runtimes.Runtimes(ctx, RuntimeTarget{
		Stack: st, Workspace: d.Workspace, Spec: rel.Spec, CheckoutRoot: req.Root, Logger: req.Log,
	})
	if err != nil {
		d.Err = fmt.Errorf("drift scan of %s: %w", d.Dir, err)
		return d
	}
	eng := s.Runner.engine(runtimes, owned, req.Log)
	if d.Preview, err = eng.Drift(ctx, rel); err != nil {
		d.Err = err
		return d
	}
	if spec != nil {
		if d.SpecChanges, err = eng.CompareSpecs(ctx, rel.Spec, spec); err != nil {
			d.SpecErr = fmt.Errorf("the checkout's spec of %s: %w", d.Dir, err)
		}
	}
	switch {
	case d.Preview.Incomplete():
		d.Status, d.Err = ScanFailed, d.Preview.Err()
	case d.Counts().Resources > 0:
		d.Status = Drifted
	case len(d.SpecChanges) > 0:
		d.Status = SpecNotApplied
	default:
		d.Status = InSync
	}
	return d
}

// RevertDrift applies the spec of the latest release of the stack in dir
// again, putting back what changed outside of this tool since. It records
// a new release, as any apply does (under the stack's lock, waiting
// the runner's WaitHeld for another run), whose origin has why: reason. The
// release's sensitive values are recorded as fingerprints only; each is
// taken from the checkout's spec, which must still hold that very value,
// or the revert is refused naming the field. It is refused too when the
// latest release is not a succeeded apply, or when another release
// followed revision (0: any) by the time the stack is taken.
func (r *Runner) RevertDrift(ctx context.Context, req Request, revision uint64, reason string) *StackResult {
	req.Command = Apply
	s := &stackRun{r: r, req: req, log: r.log(req), out: &StackResult{Started: time.Now()}}
	defer s.close()
	revert := func(ctx context.Context) error { return s.revertTo(ctx, revision, reason) }
	s.do(ctx, s.load, s.open, revert, s.connect, s.execute)
	return s.out
}

// revertTo makes the run apply the spec of the stack's latest release
// (which must be revision, unless 0), its sensitive values taken from the
// checkout's spec, with an origin saying why.
func (s *stackRun) revertTo(ctx context.Context, revision uint64, reason string) error {
	st := s.out.Stack
	rel, err := s.owned.Latest(ctx, s.target.Project, s.target.Workspace)
	if err != nil {
		return err
	}
	if err := revertable(rel, st.Name, revision); err != nil {
		return err
	}
	checkout, _, err := s.r.StackSpec(ctx, s.req, st, s.store, s.out.Store)
	if err != nil {
		return fmt.Errorf("revert drift of %s: the checkout's spec, which the release's sensitive values are taken from: %w", st.Name, err)
	}
	spec, err := releaseSpecWithValues(rel.Spec, checkout)
	if err != nil {
		return fmt.Errorf("revert drift of %s to release %d: %w", st.Name, rel.Revision, err)
	}
	var origin model.Origin
	if s.req.Origin != nil {
		origin = *s.req.Origin
	}
	origin.Command, origin.Reason = "revert drift", reason
	s.target.Spec, s.target.Origin = spec, &origin
	want := rel.Revision
	s.opts = engine.ApplyOptions{NoWatch: s.r.NoWatch, SkipUnchanged: !s.req.RecordUnchanged, Precondition: func(latest *model.Release) error {
		// Asked atomically with taking the stack: a release made since the
		// scan (an apply of a newer spec) is not undone by an older one.
		if latest == nil || latest.Revision != want {
			return &skipped{why: fmt.Sprintf("the stack was released again since release %d; scan it again", want)}
		}
		return nil
	}}
	return nil
}

// revertable says why rel cannot be applied again to revert drift.
func revertable(rel *model.Release, stack string, revision uint64) error {
	switch {
	case rel == nil:
		return fmt.Errorf("revert drift of %s: the stack was never applied", stack)
	case revision != 0 && rel.Revision != revision:
		return fmt.Errorf("revert drift of %s: the latest release is %d, not %d: scan it again", stack, rel.Revision, revision)
	case !rel.Phase.Ended():
		return fmt.Errorf("revert drift of %s: release %d is still %s", stack, rel.Revision, rel.Phase)
	case rel.Phase == model.PhaseFailed:
		return fmt.Errorf("revert drift of %s: release %d failed; apply the stack's spec instead", stack, rel.Revision)
	case rel.Spec == nil || rel.State == nil || len(rel.State.Resources) == 0:
		return fmt.Errorf("revert drift of %s: release %d destroyed the stack", stack, rel.Revision)
	}
	return nil
}

// releaseSpecWithValues is recorded, a release's spec, with each
// sensitive value (a fingerprint there) taken from checkout where that
// holds the same value at the same place.
func releaseSpecWithValues(recorded, checkout *model.Spec) (*model.Spec, error) {
	out := &model.Spec{SecretStore: recorded.SecretStore, Context: recorded.Context, Resources: recorded.Resources.DeepCopy()}
	have := checkout.Resources.Index()
	for i, r := range out.Resources {
		var raw, red map[string]any
		if j, ok := have[r.ID]; ok {
			c := checkout.Resources[j]
			raw = c.Attributes
			red = model.Redact(model.WithSensitivePaths(c, model.SensitivePaths(r))).Attributes
		}
		attrs, err := fillFingerprints(r.Attributes, red, raw, r.ID)
		if err != nil {
			return nil, err
		}
		out.Resources[i].Attributes, _ = attrs.(map[string]any)
		// The applied object's own fingerprint of its spec is recomputed by
		// the apply; the release's sensitive paths stay as they were.
	}
	return out, nil
}

// fillFingerprints walks a recorded value beside the checkout's, redacted
// (red) and not (raw): a fingerprint is replaced by raw's value where red
// holds the same fingerprint.
func fillFingerprints(rec, red, raw any, path string) (any, error) {
	switch t := rec.(type) {
	case string:
		if !model.IsFingerprint(t) {
			return t, nil
		}
		if s, ok := red.(string); ok && s == t {
			return raw, nil
		}
		return nil, fmt.Errorf("%s holds a sensitive value the release recorded only by its fingerprint, and the checkout's spec no longer has that value: apply the checkout's spec instead, or put the value back in it", path)
	case map[string]any:
		rm, _ := red.(map[string]any)
		wm, _ := raw.(map[string]any)
		out := make(map[string]any, len(t))
		for k, v := range t {
			var err error
			if out[k], err = fillFingerprints(v, rm[k], wm[k], path+"."+k); err != nil {
				return nil, err
			}
		}
		return out, nil
	case []any:
		rl, _ := red.([]any)
		wl, _ := raw.([]any)
		out := make([]any, len(t))
		for i, v := range t {
			var rv, wv any
			if i < len(rl) {
				rv = rl[i]
			}
			if i < len(wl) {
				wv = wl[i]
			}
			var err error
			if out[i], err = fillFingerprints(v, rv, wv, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return rec, nil
}
