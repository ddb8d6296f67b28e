package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

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
}

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
	return e.run(ctx, st, model.PhaseApplying, opts)
}

// Destroy deletes every resource the latest release holds, dependents first,
// and records a release with an empty state whose spec lists what it
// destroyed.
func (e *Engine) Destroy(ctx context.Context, st Stack, opts ApplyOptions) (*Result, error) {
	st.Spec = &model.Spec{}
	return e.run(ctx, st, model.PhaseDestroying, opts)
}

func (e *Engine) run(ctx context.Context, st Stack, phase model.Phase, opts ApplyOptions) (*Result, error) {
	verb := "apply"
	if phase == model.PhaseDestroying {
		verb = "destroy"
	}
	if opts.DryRun {
		p, err := e.Preview(ctx, st)
		if err != nil {
			return nil, err
		}
		return &Result{Preview: p}, p.Err()
	}

	latest, err := e.Store.Latest(ctx, st.Project, st.Workspace)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read latest release: %w", verb, st.Stack, err)
	}
	var early *Preview
	if opts.SkipUnchanged && (latest == nil || latest.Phase == model.PhaseSucceeded) {
		// A running or failed latest release is not settled whatever the
		// objects say: the run goes on to take the stack (and be told who
		// holds it) or to record a release that ends well.
		p, err := e.preview(ctx, st, latest)
		if err == nil && p.Settled() {
			e.logger().Info(verb+": nothing to change; no release written", "project", st.Project, "workspace", st.Workspace, "stack", st.Stack)
			return &Result{Preview: p, Unchanged: true}, nil
		}
		if err == nil {
			early = p
		}
	}

	now := e.now()
	spec := e.redactSpec(ctx, st.Spec)
	if phase == model.PhaseDestroying {
		spec = destroyedSpec(latest)
	}
	rel := &model.Release{
		Project: st.Project, Workspace: st.Workspace, Stack: st.Stack,
		Spec:  spec,
		State: carriedState(latest),
		Phase: phase, CreateTime: now, ModifiedTime: now,
		Origin: st.Origin,
	}
	if rel.Origin != nil {
		rel.Origin.Heartbeat = now
	}
	var prior *model.Release
	if opts.Precondition != nil {
		cs, ok := e.Store.(conditionalStore)
		if !ok {
			return nil, fmt.Errorf("%s %s: the release store cannot check a precondition when taking the stack", verb, st.Stack)
		}
		prior, err = cs.BeginIf(ctx, rel, opts.Precondition)
	} else {
		prior, err = e.Store.Begin(ctx, rel)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", verb, st.Stack, err)
	}
	log := e.logger().With("project", st.Project, "workspace", st.Workspace, "stack", st.Stack, "revision", rel.Revision)
	ctx, lose := context.WithCancelCause(ctx)
	defer lose(nil)
	saver := newStateSaver(e.Store, rel, log, lose)
	stopBeat := make(chan struct{})
	go saver.heartbeat(e.heartbeat(), e.now, stopBeat)
	if !sameRevision(prior, latest) {
		// Another runner released a revision between our read and our slot:
		// carry its state, not the older one.
		saver.replaceState(carriedState(prior))
		if phase == model.PhaseDestroying {
			saver.replaceSpec(destroyedSpec(prior))
		}
	}

	res := &Result{Release: rel, Failed: map[string]error{}}
	finish := func(err error) (*Result, error) {
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		close(stopBeat)
		if cause := context.Cause(ctx); errors.Is(cause, model.ErrSuperseded) {
			err = errors.Join(err, cause)
		}
		// The release must end even when ctx was cancelled.
		endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if serr := saver.finish(endCtx, err == nil, msg, e.now()); serr != nil {
			err = errors.Join(err, fmt.Errorf("save release %d: %w", rel.Revision, serr))
		}
		log.Info(verb+" finished", "phase", rel.Phase, "failed", len(res.Failed))
		if err != nil {
			return res, fmt.Errorf("%s %s: %w", verb, st.Stack, err)
		}
		return res, nil
	}

	p := early
	if p == nil || !sameRevision(prior, latest) {
		p, err = e.preview(ctx, st, prior)
	}
	res.Preview = p
	if err != nil {
		return finish(err)
	}
	if perr := p.Err(); perr != nil {
		return finish(fmt.Errorf("preview failed, nothing changed: %w", perr))
	}

	var errMu sync.Mutex
	fail := func(id string, err error) error {
		errMu.Lock()
		res.Failed[id] = err
		errMu.Unlock()
		log.Error("resource failed", "id", id, "error", err)
		return err
	}

	// Creates and updates, dependencies first.
	g, err := graph.New(st.Spec.Resources)
	if err != nil {
		return finish(err)
	}
	desiredIdx := st.Spec.Resources.Index()
	refs := model.NewReferenceIndex(idsOf(st.Spec.Resources))
	var appliedMu sync.Mutex
	applied := map[string]*model.Resource{}
	priorIdx := rel.State.Resources.Index()
	priorState := rel.State.Resources.DeepCopy()
	results := g.Walk(ctx, graph.WalkOptions{Parallelism: e.parallelism(), Unbounded: e.batched(st.Spec.Resources)}, func(ctx context.Context, id string) error {
		step := p.ChangeSteps[id]
		if step.Action == UnChanged {
			cur := p.current[id]
			appliedMu.Lock()
			applied[id] = cur
			appliedMu.Unlock()
			saver.put(withApplied(*cur, step.fingerprint))
			return nil
		}
		desired := st.Spec.Resources[desiredIdx[id]]
		appliedMu.Lock()
		resolved, unknown := resolveReferences(desired, refs, func(ref string) *model.Resource { return applied[ref] })
		appliedMu.Unlock()
		if unknown {
			return fail(id, fmt.Errorf("%s: a $kusion_path it uses has no value after its source was applied", id))
		}
		var priorRes *model.Resource
		if i, ok := priorIdx[id]; ok {
			priorRes = &priorState[i]
		}
		rt, err := e.runtime(desired)
		if err != nil {
			return fail(id, err)
		}
		log.Info("applying", "id", id, "action", step.Action)
		out, err := rt.Apply(ctx, priorRes, resolved, false)
		if err != nil {
			if out != nil {
				// A failed apply may still have changed something (a
				// Terraform resource created, then tainted): record it, but
				// not as this spec's doing.
				saver.put(*out)
			}
			return fail(id, err) // runtimes name the resource and the verb
		}
		paths, err := sensitivePaths(ctx, rt, desired)
		if err != nil {
			saver.put(*out)
			return fail(id, err)
		}
		saver.put(withApplied(*out, appliedFingerprint(model.WithSensitivePaths(resolved, paths))))
		appliedMu.Lock()
		applied[id] = out
		appliedMu.Unlock()
		if !opts.NoWatch {
			if err := rt.Watch(ctx, *out); err != nil {
				return fail(id, err)
			}
		}
		return nil
	})
	collectSkipped(results, res.Failed)

	// Deletions, dependents first.
	var gone model.Resources
	for _, id := range p.StepKeys {
		if p.ChangeSteps[id].Action != Delete {
			continue
		}
		if r, ok := priorState.ByID(id); ok {
			gone = append(gone, r)
		}
	}
	if len(gone) > 0 && ctx.Err() == nil {
		dg, err := graph.New(withinDependencies(gone))
		if err != nil {
			return finish(err)
		}
		results := dg.Walk(ctx, graph.WalkOptions{Parallelism: e.parallelism(), Reverse: true, Unbounded: e.batched(gone)}, func(ctx context.Context, id string) error {
			r, _ := gone.ByID(id)
			rt, err := e.runtime(r)
			if err != nil {
				return fail(id, err)
			}
			log.Info("deleting", "id", id)
			if err := rt.Delete(ctx, r); err != nil {
				return fail(id, err)
			}
			saver.remove(id)
			return nil
		})
		collectSkipped(results, res.Failed)
	}
	if err := ctx.Err(); err != nil {
		return finish(fmt.Errorf("interrupted: %w", err))
	}
	return finish(failureError(res.Failed))
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
