package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/kusionpr/kusionpr/engine/graph"
	"github.com/kusionpr/kusionpr/model"
)

// ApplyOptions are the choices of one apply or destroy.
type ApplyOptions struct {
	// DryRun previews only: nothing changes anywhere, no release is written.
	DryRun bool
	// NoWatch returns as soon as objects are accepted, without waiting for readiness.
	NoWatch bool
	// Precondition, if set, is asked about the latest release when the
	// stack is taken, atomically with taking it (the store must offer
	// BeginIf); its error ends the operation before anything is written.
	Precondition func(latest *model.Release) error
	// SkipUnchanged writes no release when the stack is settled (see
	// Preview.Settled) after a release that succeeded: a release that
	// repeats its predecessor is noise in the history, and a scheduled
	// apply would add one every run. The plan is made before the stack is
	// taken, and reused under the slot when no release came in between.
	SkipUnchanged bool
	// Check, if set, judges the plan before anything changes (a policy):
	// its error refuses the operation. It is asked before the stack is
	// taken, so a refused plan writes no release, and again under the
	// stack when the plan was made anew there (another run came in
	// between; a refusal then ends the release taken, failed, with
	// nothing changed): what is applied is always a plan Check passed.
	Check func(ctx context.Context, p *Preview) error
}

// RefusedError is the error of an operation whose plan ApplyOptions.Check
// refused.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return "refused, nothing changed: " + e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// conditionalStore takes a stack only if a precondition on its latest
// release holds; backend.Store is one.
type conditionalStore interface {
	BeginIf(ctx context.Context, r *model.Release, cond func(latest *model.Release) error) (*model.Release, error)
}

// Result is what an apply or destroy did.
type Result struct {
	// Preview is the plan the operation followed.
	Preview *Preview
	// Release is the release written; nil for a dry run.
	Release *model.Release
	// Failed holds the resources that did not reach their planned state, with why.
	Failed map[string]error
	// Unchanged: there was nothing to change and, as ApplyOptions.SkipUnchanged
	// asked, no release was written (Release is nil).
	Unchanged bool
}

// Apply makes the live objects match st.Spec and records it as a new release.
// The release's revision slot is taken first, so a second apply of the same
// project and workspace fails at once with a *backend.HeldError.
func (e *Engine) Apply(ctx context.Context, st Stack, opts ApplyOptions) (*Result, error) {
	if st.Spec == nil {
		return nil, fmt.Errorf("apply %s: no spec", st.Stack)
	}
	return e.operate(ctx, st, model.PhaseApplying, opts)
}

// Destroy deletes every resource the latest release holds, dependents first,
// and records a release with an empty state whose spec lists what it
// destroyed.
func (e *Engine) Destroy(ctx context.Context, st Stack, opts ApplyOptions) (*Result, error) {
	st.Spec = &model.Spec{}
	return e.operate(ctx, st, model.PhaseDestroying, opts)
}

func (e *Engine) operate(ctx context.Context, st Stack, phase model.Phase, opts ApplyOptions) (*Result, error) {
	if opts.DryRun {
		if stoppedBefore(ctx) {
			return nil, fmt.Errorf("preview %s: %w", st.Stack, ErrStopped)
		}
		p, err := e.Preview(ctx, st)
		if err != nil {
			return nil, err
		}
		return &Result{Preview: p}, p.Err()
	}
	op := newOperation(e, st, phase, opts)
	if stoppedBefore(ctx) {
		return nil, fmt.Errorf("%s %s: %w", op.verb, st.Stack, ErrStopped)
	}
	latest, err := e.Store.Latest(ctx, st.Project, st.Workspace)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read latest release: %w", op.verb, st.Stack, err)
	}
	var early *Preview
	// The plan is made before the stack is taken: one that cannot be made
	// (a cluster out of reach, an object its dry run refuses) changes
	// nothing, so it records nothing. A failed release there would tell
	// drift scans and the next apply that something may be half applied.
	// While another run holds the stack the plan waits for the slot, which
	// says who holds it at once; a plan made under it that fails records
	// the failure, as something may have been changed since.
	held := latest != nil && !latest.Phase.Ended()
	// A running or failed latest release is not settled whatever the
	// objects say: the run goes on to take the stack (and be told who
	// holds it) or to record a release that ends well.
	mayBeUnchanged := opts.SkipUnchanged && (latest == nil || latest.Phase == model.PhaseSucceeded)
	if opts.Check != nil || !held {
		p, err := e.preview(ctx, st, latest)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", op.verb, st.Stack, err)
		}
		if err := p.Err(); err != nil {
			return &Result{Preview: p}, fmt.Errorf("%s %s: preview failed, nothing changed: %w", op.verb, st.Stack, err)
		}
		if opts.Check != nil {
			if err := opts.Check(ctx, p); err != nil {
				return &Result{Preview: p}, &RefusedError{Err: err}
			}
		}
		if mayBeUnchanged && p.Settled() {
			e.logger().Info(op.verb+": nothing to change; no release written", "project", st.Project, "workspace", st.Workspace, "stack", st.Stack)
			return &Result{Preview: p, Unchanged: true}, nil
		}
		early = p
	}

	// From here a stop halts the operation (what is in flight finishes)
	// rather than cancelling its context.
	defer heed(ctx)()
	if stoppedBefore(ctx) {
		// Told to stop while it planned: nothing is taken or written.
		return &Result{Preview: early}, fmt.Errorf("%s %s: %w", op.verb, st.Stack, ErrStopped)
	}
	ctx, err = op.begin(ctx, latest)
	if err != nil {
		return nil, err
	}
	defer op.lose(nil)
	if err := op.plan(ctx, early); err != nil {
		return op.finish(ctx, err)
	}
	if opts.Check != nil && op.preview != early {
		// Another run changed the stack since: the new plan is judged too.
		if err := opts.Check(ctx, op.preview); err != nil {
			return op.finish(ctx, &RefusedError{Err: err})
		}
	}
	op.applyAll(ctx)
	op.deleteAll(ctx)
	if c := op.cancelled(); c != nil && ctx.Err() == nil && len(op.res.Failed) > 0 {
		// A cancel that came once everything was done stopped nothing:
		// the release ends as the apply did.
		return op.finish(ctx, op.cancelledError(c))
	}
	if err := ctx.Err(); err != nil {
		return op.finish(ctx, fmt.Errorf("interrupted: %w", err))
	}
	return op.finish(ctx, failureError(op.res.Failed))
}

// collectSkipped adds to failed the nodes that did not run, with the reason.
func collectSkipped(results map[string]graph.Result, failed map[string]error) {
	for id, r := range results {
		if _, ok := failed[id]; ok || r.Status == graph.Succeeded {
			continue
		}
		if r.Status == graph.Failed && r.Err != nil {
			failed[id] = r.Err
			continue
		}
		if r.Status == graph.Canceled && r.Err != nil {
			// Kept wrapped: a cancel's errors are counted by what they are.
			failed[id] = fmt.Errorf("%s: %w", id, r.Err)
			continue
		}
		failed[id] = fmt.Errorf("%s: %s", id, describe(r))
	}
}

// failureError summarises failed resources, the first few in full.
func failureError(failed map[string]error) error {
	if len(failed) == 0 {
		return nil
	}
	ids := make([]string, 0, len(failed))
	for id := range failed {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "%d resource(s) failed", len(ids))
	for i, id := range ids {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more", len(ids)-5)
			break
		}
		b.WriteString("; ")
		b.WriteString(failed[id].Error())
	}
	return errors.New(b.String())
}

func carriedState(r *model.Release) *model.State {
	if r == nil || r.State == nil {
		return &model.State{}
	}
	return &model.State{Resources: r.State.Resources.DeepCopy()}
}

// destroyedSpec is the spec a destroy release records, as Kusion's
// CreateDestroyRelease writes it: the resources of the prior release's
// state, which the destroy deletes, with that release's secret store and
// context. The runtimes' private state stays in the release's state only.
func destroyedSpec(prior *model.Release) *model.Spec {
	out := &model.Spec{Resources: model.Resources{}}
	if prior == nil {
		return out
	}
	if prior.Spec != nil {
		out.SecretStore, out.Context = prior.Spec.SecretStore, prior.Spec.Context
	}
	if prior.State != nil {
		for _, r := range prior.State.Resources {
			out.Resources = append(out.Resources, model.Public(r))
		}
	}
	return out
}

func sameRevision(a, b *model.Release) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Revision == b.Revision
}

// redactSpec is the spec as a release records it: sensitive values
// fingerprinted, the paths each runtime knows of included.
func (e *Engine) redactSpec(ctx context.Context, s *model.Spec) *model.Spec {
	out := &model.Spec{SecretStore: s.SecretStore, Context: s.Context}
	for _, r := range s.Resources {
		out.Resources = append(out.Resources, e.publicSpec(ctx, r))
	}
	return out
}
