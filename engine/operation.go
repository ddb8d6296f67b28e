package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kusionpr/kusionpr/engine/graph"
	"github.com/kusionpr/kusionpr/model"
)

// operation is one apply or destroy, from taking the stack to recording how
// it ended. What its steps share (the release it holds, the plan it follows,
// what it applied so far) lives here, and each step is a method, as in
// Kusion's engine/operation: begin takes the stack, plan makes the plan under
// it, applyNode and deleteNode work on one resource each in the walks of
// applyAll and deleteAll, and finish records the phase and the message.
type operation struct {
	engine *Engine
	stack  Stack
	phase  model.Phase
	opts   ApplyOptions
	// verb names the operation in errors and logs: apply or destroy.
	verb string

	// Set by begin.
	rel   *model.Release
	prior *model.Release
	// overtaken: a release came in between the latest release read before
	// the stack was taken and the one the slot follows.
	overtaken bool
	log       *slog.Logger
	saver     *stateSaver
	stopBeat  chan struct{}
	beating   sync.WaitGroup
	// stop closes when someone asked the release to stop (a cancel seen
	// at a heartbeat): nothing more starts, what runs finishes.
	stop chan struct{}
	// lose ends the operation's context; the saver calls it when the store
	// says someone else ended the release.
	lose context.CancelCauseFunc
	res  *Result

	// Set by plan.
	preview *Preview
	index   *planIndex

	mu sync.Mutex
	// applied holds the objects applied so far (or found unchanged), which
	// the references of their dependents resolve against.
	applied map[string]*model.Resource
	// cancel is the request that stopped the operation, once seen.
	cancel *model.Cancel
}

// cancelRequests is a store that keeps requests that a running release
// stop; backend.Store is one.
type cancelRequests interface {
	CancelRequest(ctx context.Context, project, workspace string, revision uint64) (*model.Cancel, error)
}

// Why a resource of a cancelled operation was not applied or deleted.
var (
	errNotStarted = errors.New("not applied: the run was cancelled")
	errNotDeleted = errors.New("not deleted: the run was cancelled")
)

// CancelledError is the error of an operation stopped by a cancel request:
// what was in flight finished, nothing more started.
type CancelledError struct {
	Cancel *model.Cancel
	// NotDone counts the resources not applied or deleted.
	NotDone int
}

func (e *CancelledError) Error() string {
	return fmt.Sprintf("%s; %d resource(s) not applied or deleted", e.Cancel, e.NotDone)
}

func newOperation(e *Engine, st Stack, phase model.Phase, opts ApplyOptions) *operation {
	verb := "apply"
	if phase == model.PhaseDestroying {
		verb = "destroy"
	}
	return &operation{engine: e, stack: st, phase: phase, opts: opts, verb: verb, applied: map[string]*model.Resource{}}
}

// begin takes the stack: it writes the running release in the next revision
// slot, asking the precondition about the latest release atomically with it,
// then keeps the release's state saved and its heartbeat beating. latest is
// the release read before; when another came in between, the release carries
// that one's state instead. The context begin returns ends when the store
// says someone else ended the release; the caller must call op.lose once done.
func (op *operation) begin(ctx context.Context, latest *model.Release) (context.Context, error) {
	e, st := op.engine, op.stack
	now := e.now()
	var spec *model.Spec
	if op.phase == model.PhaseDestroying {
		spec = destroyedSpec(latest)
	} else {
		spec = e.redactSpec(ctx, st.Spec)
	}
	rel := &model.Release{
		Project: st.Project, Workspace: st.Workspace, Stack: st.Stack,
		Spec:  spec,
		State: carriedState(latest),
		Phase: op.phase, CreateTime: now, ModifiedTime: now,
		Origin: st.Origin,
	}
	if rel.Origin != nil {
		rel.Origin.Heartbeat = now
	}
	var prior *model.Release
	var err error
	if op.opts.Precondition != nil {
		cs, ok := e.Store.(conditionalStore)
		if !ok {
			return ctx, fmt.Errorf("%s %s: the release store cannot check a precondition when taking the stack", op.verb, st.Stack)
		}
		prior, err = cs.BeginIf(ctx, rel, op.opts.Precondition)
	} else {
		prior, err = e.Store.Begin(ctx, rel)
	}
	if err != nil {
		return ctx, fmt.Errorf("%s %s: %w", op.verb, st.Stack, err)
	}
	op.rel, op.prior, op.overtaken = rel, prior, !sameRevision(prior, latest)
	op.log = e.logger().With("project", st.Project, "workspace", st.Workspace, "stack", st.Stack, "revision", rel.Revision)
	ctx, op.lose = context.WithCancelCause(ctx)
	op.saver = newStateSaver(e.Store, rel, op.log, op.lose)
	op.stopBeat, op.stop = make(chan struct{}), make(chan struct{})
	op.beating.Go(func() { op.heartbeat(ctx) })
	op.watchStop(ctx)
	if op.overtaken {
		// Another runner released a revision between our read and our slot:
		// carry its state, not the older one.
		op.saver.replaceState(carriedState(prior))
		if op.phase == model.PhaseDestroying {
			op.saver.replaceSpec(destroyedSpec(prior))
		}
	}
	op.res = &Result{Release: rel, Failed: map[string]error{}}
	return ctx, nil
}

// plan makes the plan the operation follows: early, made before the stack
// was taken, when no release came in between; else a new one against the
// release the slot follows. A plan that could not preview every resource
// changes nothing.
func (op *operation) plan(ctx context.Context, early *Preview) error {
	p := early
	var err error
	if p == nil || op.overtaken {
		p, err = op.engine.preview(ctx, op.stack, op.prior)
	}
	op.res.Preview = p
	if err != nil {
		return err
	}
	if perr := p.Err(); perr != nil {
		return fmt.Errorf("preview failed, nothing changed: %w", perr)
	}
	op.preview, op.index = p, p.index
	return nil
}

// heartbeat shows the holder alive every interval and, where the store
// keeps cancel requests, looks for one: a cancel stops the operation
// within one beat of being asked.
func (op *operation) heartbeat(ctx context.Context) {
	cs, _ := op.engine.Store.(cancelRequests)
	t := time.NewTicker(op.engine.heartbeat())
	defer t.Stop()
	for {
		select {
		case <-op.stopBeat:
			return
		case <-t.C:
			op.saver.beat(op.engine.now())
			if cs == nil || op.cancelled() != nil {
				continue
			}
			c, err := cs.CancelRequest(ctx, op.stack.Project, op.stack.Workspace, op.rel.Revision)
			switch {
			case err != nil:
				op.log.Warn("looking for a cancel request failed; looked for again at the next beat", "error", err)
			case c != nil:
				op.halt(c)
			}
		}
	}
}

// halt stops the operation for c: nothing more starts, what runs
// finishes. The first request stands, and alone closes stop.
func (op *operation) halt(c *model.Cancel) {
	op.mu.Lock()
	first := op.cancel == nil
	if first {
		op.cancel = c
		close(op.stop)
	}
	op.mu.Unlock()
	if first {
		op.log.Info("asked to stop: applying nothing more, finishing what is in flight", "by", c.By, "reason", c.Reason)
	}
}

// cancelled is the cancel request that stopped the operation, if any.
func (op *operation) cancelled() *model.Cancel {
	op.mu.Lock()
	defer op.mu.Unlock()
	return op.cancel
}

// untilStop is ctx, ended too when the operation is asked to stop: for
// waits (readiness) that a cancel cuts short, never for a change in flight.
func (op *operation) untilStop(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-op.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// applyAll creates and updates, dependencies first.
func (op *operation) applyAll(ctx context.Context) {
	ix := op.index
	results := ix.graph.Walk(ctx, graph.WalkOptions{Parallelism: op.engine.parallelism(), Unbounded: ix.batched,
		Stop: op.stop, StopErr: errNotStarted}, op.applyNode)
	collectSkipped(results, op.res.Failed)
}

// applyNode applies one resource of the spec, its references resolved
// against what its dependencies became, records it in the release's state
// and waits for it to be ready (unless NoWatch).
func (op *operation) applyNode(ctx context.Context, id string) error {
	ix, step := op.index, op.preview.ChangeSteps[id]
	if step.Action == UnChanged {
		cur := op.preview.current[id]
		op.setApplied(id, cur)
		op.saver.put(withApplied(*cur, step.fingerprint))
		return nil
	}
	desired := ix.desired[ix.desiredIdx[id]]
	op.mu.Lock()
	resolved, unknown := resolveReferences(desired, ix.refs, func(ref string) *model.Resource { return op.applied[ref] })
	op.mu.Unlock()
	if unknown {
		return op.fail(id, fmt.Errorf("%s: a $kusion_path it uses has no value after its source was applied", id))
	}
	rt, err := op.engine.runtime(ctx, desired)
	if err != nil {
		return op.fail(id, err)
	}
	op.log.Info("applying", "id", id, "action", step.Action)
	out, err := rt.Apply(ctx, ix.priorResource(id), resolved, false)
	if err != nil {
		if out != nil {
			// A failed apply may still have changed something (a
			// Terraform resource created, then tainted): record it, but
			// not as this spec's doing.
			op.saver.put(*out)
		}
		return op.fail(id, err) // runtimes name the resource and the verb
	}
	paths, err := sensitivePaths(ctx, rt, desired)
	if err != nil {
		op.saver.put(*out)
		return op.fail(id, err)
	}
	op.saver.put(withApplied(*out, appliedFingerprint(model.WithSensitivePaths(resolved, paths))))
	op.setApplied(id, out)
	if !op.opts.NoWatch {
		wctx, cancel := op.untilStop(ctx)
		defer cancel()
		if err := rt.Watch(wctx, *out); err != nil {
			if op.cancelled() != nil && ctx.Err() == nil {
				err = fmt.Errorf("%s: applied, not waited for until ready: the run was cancelled", id)
			}
			return op.fail(id, err)
		}
	}
	return nil
}

// deleteAll deletes what the spec no longer has, dependents first, unless
// the operation was interrupted.
func (op *operation) deleteAll(ctx context.Context) {
	ix := op.index
	if ix.deletions == nil || ctx.Err() != nil {
		return
	}
	results := ix.deletions.Walk(ctx, graph.WalkOptions{Parallelism: op.engine.parallelism(), Reverse: true, Unbounded: ix.batched,
		Stop: op.stop, StopErr: errNotDeleted}, op.deleteNode)
	collectSkipped(results, op.res.Failed)
}

// cancelledError is the operation's error once a cancel stopped it.
func (op *operation) cancelledError(c *model.Cancel) error {
	op.mu.Lock()
	defer op.mu.Unlock()
	n := 0
	for _, err := range op.res.Failed {
		if errors.Is(err, errNotStarted) || errors.Is(err, errNotDeleted) {
			n++
		}
	}
	return &CancelledError{Cancel: c, NotDone: n}
}

// deleteNode deletes one resource of the prior state and drops it from the
// release's state.
func (op *operation) deleteNode(ctx context.Context, id string) error {
	r := op.index.gone[op.index.goneIdx[id]]
	rt, err := op.engine.runtime(ctx, r)
	if err != nil {
		return op.fail(id, err)
	}
	op.log.Info("deleting", "id", id)
	if err := rt.Delete(ctx, r); err != nil {
		return op.fail(id, err)
	}
	op.saver.remove(id)
	return nil
}

// finish records how the operation ended, even when ctx was cancelled, and
// returns the result with err, if any, naming the operation.
func (op *operation) finish(ctx context.Context, err error) (*Result, error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	// A beat under way saves through the saver, which finish is about to
	// close: it must be over first.
	close(op.stopBeat)
	op.beating.Wait()
	if cause := context.Cause(ctx); errors.Is(cause, model.ErrSuperseded) {
		err = errors.Join(err, cause)
	}
	// The release must end even when ctx was cancelled.
	endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if serr := op.saver.finish(endCtx, err == nil, msg, op.engine.now()); serr != nil {
		err = errors.Join(err, fmt.Errorf("save release %d: %w", op.rel.Revision, serr))
	}
	op.log.Info(op.verb+" finished", "phase", op.rel.Phase, "failed", len(op.res.Failed))
	if err != nil {
		return op.res, fmt.Errorf("%s %s: %w", op.verb, op.stack.Stack, err)
	}
	return op.res, nil
}

func (op *operation) setApplied(id string, r *model.Resource) {
	op.mu.Lock()
	op.applied[id] = r
	op.mu.Unlock()
}

// fail records that id did not reach its planned state, and returns err for
// the walk.
func (op *operation) fail(id string, err error) error {
	op.mu.Lock()
	op.res.Failed[id] = err
	op.mu.Unlock()
	op.log.Error("resource failed", "id", id, "error", err)
	return err
}
