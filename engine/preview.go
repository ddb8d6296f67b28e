package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/kusionpr/kusionpr/engine/graph"
	"github.com/kusionpr/kusionpr/model"
)

// Action is what an apply would do to one resource (Kusion's names).
type Action string

const (
	UnChanged Action = "UnChanged"
	Create    Action = "Create"
	Update    Action = "Update"
	Delete    Action = "Delete"
	// Failed is ours, not Kusion's: the resource could not be previewed
	// (its live object or its schema could not be read, its dry run was
	// refused, a dependency failed). Its Error says why; it has no From or
	// To, as nothing about it is known, and it is counted as none of the
	// actions above.
	Failed Action = "Failed"
)

// KnownAfterApply stands for a value that exists only once another resource is applied.
const KnownAfterApply = model.KnownAfterApply

// Step is the preview of one resource. The JSON keeps Kusion's ChangeStep
// fields (id, action, from, to) and adds the field-level views.
type Step struct {
	ID     string          `json:"id"`
	Action Action          `json:"action"`
	From   *model.Resource `json:"from"`
	To     *model.Resource `json:"to"`
	// Changes is what the apply will change on the live object (live → planned).
	Changes []FieldChange `json:"changes,omitempty"`
	// SpecChanges is what this spec changes against the prior release's spec.
	SpecChanges []FieldChange `json:"specChanges,omitempty"`
	// Drift is what changed on the live object since the prior release, outside of us.
	Drift []FieldChange `json:"drift,omitempty"`
	// Replace lists the fields that force the object to be destroyed and
	// created again; the action stays Update, as in Kusion.
	Replace []string `json:"replace,omitempty"`
	// Error explains why this resource could not be previewed.
	Error string `json:"error,omitempty"`
	// NotChecked says what of a resource being created no dry run could
	// check, as what it needs is created by the same apply first (see
	// Unplannable); To is then the spec as it is.
	NotChecked string `json:"notChecked,omitempty"`

	// fingerprint identifies the resolved spec this step planned
	// (appliedFingerprint); an apply records it with the object.
	fingerprint string
}

// Preview is the three-way difference of one stack: desired spec, prior
// release and live objects. StepKeys and ChangeSteps are Kusion's preview JSON.
type Preview struct {
	Project       string           `json:"project"`
	Workspace     string           `json:"workspace"`
	Stack         string           `json:"stack"`
	PriorRevision uint64           `json:"priorRevision,omitempty"`
	StepKeys      []string         `json:"stepKeys"`
	ChangeSteps   map[string]*Step `json:"changeSteps"`
	// Offline: compared with the prior release only, live objects unread.
	Offline bool `json:"offline,omitempty"`
	// WorkspaceOrigin says where Workspace came from, for people; nil when
	// the caller did not say (a destroy, which needs none).
	WorkspaceOrigin *WorkspaceOrigin `json:"workspaceOrigin,omitempty"`

	// current holds the live objects as their runtimes returned them, private
	// state included, for an apply to record the unchanged ones.
	current map[string]*model.Resource
	// index is what the preview compared, for the apply that follows it.
	index *planIndex
}

// Summary counts the steps by action, and the steps with drift. Errors
// counts the steps that failed: none of them is counted in another action.
type Summary struct {
	Create, Update, Delete, UnChanged, Drift, Errors int
}

// Total is the number of steps.
func (s Summary) Total() int { return s.Create + s.Update + s.Delete + s.UnChanged + s.Errors }

// Summary counts p's steps.
func (p *Preview) Summary() Summary {
	var s Summary
	for _, id := range p.StepKeys {
		st := p.ChangeSteps[id]
		if st.Action == Failed || st.Error != "" {
			s.Errors++
			continue
		}
		switch st.Action {
		case Create:
			s.Create++
		case Update:
			s.Update++
		case Delete:
			s.Delete++
		default:
			s.UnChanged++
		}
		if len(st.Drift) > 0 {
			s.Drift++
		}
	}
	return s
}

// Incomplete reports whether some resource could not be previewed: what the
// preview shows is then not all an apply would do.
func (p *Preview) Incomplete() bool { return p.Summary().Errors > 0 }

// failed is the step of a resource that could not be previewed: the values
// read or planned before the failure are dropped, so no partial or
// masked value passes for a difference.
func failed(id string, err string) *Step {
	return &Step{ID: id, Action: Failed, Error: err}
}

// HasChanges reports whether applying would change anything.
func (p *Preview) HasChanges() bool {
	s := p.Summary()
	return s.Create+s.Update+s.Delete > 0
}

// Settled reports whether an apply of p would neither change anything nor
// record anything its prior release does not say already: every resource
// previewed, unchanged, with no change of its spec and no drift. A spec
// change the live objects already match, or drift in fields the spec does
// not own, is not settled: a release records the new spec or the live
// state. With no prior release, objects that already match are adopted,
// and that is recorded: the release is what later previews, destroys and
// the project's ownership know them by.
func (p *Preview) Settled() bool {
	if p.PriorRevision == 0 && len(p.StepKeys) > 0 {
		return false
	}
	for _, st := range p.Steps() {
		if st.Action != UnChanged || st.Error != "" || len(st.SpecChanges) > 0 || len(st.Drift) > 0 {
			return false
		}
	}
	return true
}

// Steps returns the steps in walk order.
func (p *Preview) Steps() []*Step {
	out := make([]*Step, 0, len(p.StepKeys))
	for _, id := range p.StepKeys {
		out = append(out, p.ChangeSteps[id])
	}
	return out
}

// Err joins the errors of the steps that could not be previewed.
func (p *Preview) Err() error {
	var errs []error
	for _, st := range p.Steps() {
		if st.Error != "" {
			errs = append(errs, errors.New(st.Error))
		}
	}
	return errors.Join(errs...)
}

// Preview compares st's spec with the latest release and the live objects.
// It changes nothing.
func (e *Engine) Preview(ctx context.Context, st Stack) (*Preview, error) {
	prior, err := e.Store.Latest(ctx, st.Project, st.Workspace)
	if err != nil {
		return nil, fmt.Errorf("preview %s: read latest release: %w", st.Stack, err)
	}
	return e.preview(ctx, st, prior)
}

// preview computes the plan against a given prior release; apply calls it
// with the release its slot followed.
func (e *Engine) preview(ctx context.Context, st Stack, prior *model.Release) (*Preview, error) {
	if st.Spec == nil {
		return nil, fmt.Errorf("preview %s: no spec", st.Stack)
	}
	ix, err := e.newPlanIndex(st.Spec, prior)
	if err != nil {
		return nil, fmt.Errorf("preview %s: %w", st.Stack, err)
	}
	p := &Preview{Project: st.Project, Workspace: st.Workspace, Stack: st.Stack, ChangeSteps: map[string]*Step{}, current: map[string]*model.Resource{}, index: ix}
	if prior != nil {
		p.PriorRevision = prior.Revision
	}
	e.prefetch(ctx, append(append(model.Resources(nil), ix.desired...), ix.gone...))

	var mu sync.Mutex
	live := map[string]*model.Resource{}
	steps := map[string]*Step{}
	results := ix.graph.Walk(ctx, graph.WalkOptions{Parallelism: e.parallelism(), Unbounded: ix.batched}, func(ctx context.Context, id string) error {
		desired := ix.desired[ix.desiredIdx[id]]
		priorRes, priorSpecRes := ix.priorResource(id), ix.priorSpecResource(id)
		mu.Lock()
		resolved, unknown := resolveReferences(desired, ix.refs, func(ref string) *model.Resource { return live[ref] })
		var created model.Resources
		for _, dep := range ix.graph.Dependencies(id) {
			if s := steps[dep]; s != nil && s.Action == Create {
				created = append(created, ix.desired[ix.desiredIdx[dep]])
			}
		}
		mu.Unlock()
		step, cur, planned, err := e.previewResource(ctx, priorRes, priorSpecRes, desired, resolved, unknown, created)
		mu.Lock()
		steps[id] = step
		// What refers to a resource being updated sees its planned values
		// (unknown ones included), not the ones it is about to lose. One
		// being created has none yet: a dry run's server-made values (a
		// Service's cluster IP) are not the ones the create will get.
		live[id] = cur
		if step.Action == Update {
			live[id] = planned
		}
		p.current[id] = cur
		mu.Unlock()
		return err
	})
	for _, id := range ix.graph.Order() {
		step := steps[id]
		if step == nil {
			step = failed(id, fmt.Sprintf("%s: not previewed: %s", id, describe(results[id])))
		}
		p.StepKeys = append(p.StepKeys, id)
		p.ChangeSteps[id] = step
	}
	if err := ctx.Err(); err != nil {
		return p, fmt.Errorf("preview %s: %w", st.Stack, err)
	}

	// Resources the prior release holds that the spec no longer has are deleted,
	// dependents first: listed in the reverse of their order, which is the
	// order the deletion walk starts them in.
	if ix.deletions != nil {
		order := ix.deletions.Order()
		deletions := make([]*Step, len(order))
		// Read concurrently, as the walk above does: one by one, a stack's
		// destroy waited for a Terraform refresh per resource in turn. A
		// batching runtime's reads all start at once, first, so that they
		// make one batch; the others a few at a time.
		var batched, limited errgroup.Group
		limited.SetLimit(e.parallelism())
		for _, all := range []bool{true, false} {
			for i, id := range order {
				if ix.batched(id) != all {
					continue
				}
				g := &limited
				if all {
					g = &batched
				}
				r := ix.gone[ix.goneIdx[id]]
				g.Go(func() error {
					deletions[i] = e.previewDeletion(ctx, r, p.PriorRevision)
					return nil
				})
			}
		}
		batched.Wait()
		limited.Wait()
		for i := len(deletions) - 1; i >= 0; i-- {
			p.StepKeys = append(p.StepKeys, deletions[i].ID)
			p.ChangeSteps[deletions[i].ID] = deletions[i]
		}
	}
	sameErrorOnce(p)
	return p, nil
}

// sameErrorOnce keeps a long error shown once: a resource whose error is
// word for word an earlier one's, or part of it (every read fails alike
// when the cluster cannot be reached, and such an error names no
// resource, while the first resource's wraps it with its own id) points
// to that resource instead of repeating it.
func sameErrorOnce(p *Preview) {
	type shown struct{ id, err string }
	var earlier []shown
	for _, id := range p.StepKeys {
		st := p.ChangeSteps[id]
		if st.Error == "" {
			continue
		}
		repeated := ""
		if len(st.Error) >= minRepeated {
			for _, e := range earlier {
				if strings.Contains(e.err, st.Error) {
					repeated = e.id
					break
				}
			}
		}
		if repeated != "" {
			st.Error = fmt.Sprintf("%s: not previewed: the error shown for %s", id, repeated)
			continue
		}
		earlier = append(earlier, shown{id, st.Error})
	}
}

// minRepeated is the shortest error sameErrorOnce replaces: a short one
// ("not found") costs less to repeat than to point to.
const minRepeated = 40

// previewDeletion reads the live object of r, which the spec no longer has.
func (e *Engine) previewDeletion(ctx context.Context, r model.Resource, priorRevision uint64) *Step {
	step := &Step{ID: r.ID, Action: Delete, From: ptr(model.Public(r))}
	if rt, err := e.runtime(ctx, r); err != nil {
		return failed(r.ID, err.Error())
	} else if cur, err := rt.Read(ctx, &r, r); err != nil {
		return failed(r.ID, err.Error())
	} else if cur == nil {
		step.Drift = []FieldChange{{Path: ".", Op: "remove", From: "exists in release " + fmt.Sprint(priorRevision)}}
	} else {
		step.From = ptr(model.Public(*cur))
	}
	return step
}

// previewResource reads the live object, asks the runtime what an apply would
// make of it, and classifies the difference. created are its dependencies
// the apply creates. It returns the live and the planned object for
// resolving later references.
func (e *Engine) previewResource(ctx context.Context, prior, priorSpec *model.Resource, desired, resolved model.Resource, unknown bool, created model.Resources) (*Step, *model.Resource, *model.Resource, error) {
	step := &Step{ID: desired.ID}
	fail := func(err error) (*Step, *model.Resource, *model.Resource, error) {
		return failed(desired.ID, err.Error()), nil, nil, err
	}
	rt, err := e.runtime(ctx, desired)
	if err != nil {
		return fail(err)
	}
	paths, err := sensitivePaths(ctx, rt, desired)
	if err != nil {
		return fail(err)
	}
	desired, resolved = model.WithSensitivePaths(desired, paths), model.WithSensitivePaths(resolved, paths)
	if priorSpec != nil {
		priorSpec = ptr(model.WithSensitivePaths(*priorSpec, paths))
	}
	cur, err := rt.Read(ctx, prior, resolved)
	if err != nil {
		return fail(err)
	}
	if cur != nil {
		step.From = ptr(model.Public(*cur))
	}

	var planned *model.Resource
	if !unknown {
		step.fingerprint = appliedFingerprint(resolved)
	}
	if e.unchanged(e.Runtimes[desired.Type].Capabilities, prior, priorSpec, cur, step.fingerprint) {
		// The object is as this very spec left it and nobody moved what the
		// spec sets: a dry run would only confirm it. Skipping it makes a
		// preview cost what changed, not what exists.
		planned = ptr(cur.DeepCopy())
	} else if !unknown {
		planned, err = rt.Apply(ctx, prior, resolved, true)
		if err != nil {
			// An object whose namespace or definition is created by this same
			// apply cannot be dry-run yet; what it will be is what the spec
			// says, as far as the runtime could check it.
			var u Unplannable
			if cur != nil || !errors.As(err, &u) || !slices.ContainsFunc(created, u.Awaits) {
				return fail(err)
			}
			step.NotChecked = u.NotChecked()
			planned = nil
		}
	}
	switch {
	case planned == nil && cur != nil:
		// Not plannable yet (a value is known only after another apply): the
		// live object with what the spec sets, so only those fields show.
		merged := cur.DeepCopy()
		merged.Attributes = model.Overlay(merged.Attributes, model.Redact(resolved).Attributes)
		planned = &merged
	case planned == nil:
		planned = ptr(model.Redact(resolved))
	default:
		// What the runtime found sensitive while planning is sensitive in the
		// spec's views too.
		desired = model.WithSensitivePaths(desired, model.SensitivePaths(*planned))
		if priorSpec != nil {
			priorSpec = ptr(model.WithSensitivePaths(*priorSpec, model.SensitivePaths(*planned)))
		}
	}
	step.To = ptr(model.Public(*planned))
	step.Replace = stringList(planned.Extensions[model.ReplacePathsExtension])

	switch {
	case cur == nil:
		step.Action = Create
	case !unknown && Equal(e.compared(cur.Attributes), e.compared(planned.Attributes)):
		step.Action = UnChanged
	default:
		step.Action = Update
		if step.Changes, err = Diff(e.compared(cur.Attributes), e.compared(planned.Attributes)); err != nil {
			return fail(err)
		}
	}

	redDesired := model.Redact(desired)
	if priorSpec != nil {
		red := model.Redact(*priorSpec)
		if step.SpecChanges, err = Diff(red.Attributes, redDesired.Attributes); err != nil {
			return fail(err)
		}
	}
	if prior != nil {
		if cur == nil {
			step.Drift = []FieldChange{{Path: ".", Op: "remove", From: "deleted outside of a release"}}
		} else if step.Drift, err = e.drift(prior, priorSpec, cur); err != nil {
			return fail(err)
		}
	}
	return step, cur, planned, nil
}

// prefetch hands each runtime that reads in bulk the resources a preview
// is about to read.
func (e *Engine) prefetch(ctx context.Context, rs model.Resources) {
	byRuntime := map[model.ResourceType]model.Resources{}
	for _, r := range rs {
		byRuntime[r.Type] = append(byRuntime[r.Type], r)
	}
	for _, list := range byRuntime {
		// A preview that prefetches is about to read, so building the
		// runtime now costs nothing extra; a runtime that cannot be built
		// is reported by the reads.
		if rt, err := e.runtime(ctx, list[0]); err == nil {
			if pf, ok := rt.(Prefetcher); ok {
				pf.Prefetch(ctx, list)
			}
		}
	}
}

// drift is what changed on the live object cur since the prior release
// recorded it, in the fields the prior spec sets.
func (e *Engine) drift(prior, priorSpec, cur *model.Resource) ([]FieldChange, error) {
	template := any(prior.Attributes)
	if priorSpec != nil {
		template = secretData(*priorSpec, model.Redact(*priorSpec).Attributes)
	}
	was, _ := Project(model.Redact(*prior).Attributes, template).(map[string]any)
	now, _ := Project(cur.Attributes, template).(map[string]any)
	return Diff(e.compared(was), e.compared(now))
}

// unchanged says whether applying the spec of fingerprint fp would leave
// cur as it is: the prior release records that this spec made the object,
// and the object is as recorded: in the fields the spec sets, for a runtime
// that applies only those; whole, for any other.
func (e *Engine) unchanged(caps Capabilities, prior, priorSpec, cur *model.Resource, fp string) bool {
	if prior == nil || cur == nil || fp == "" {
		return false
	}
	if recorded, _ := prior.Extensions[model.AppliedExtension].(string); recorded != fp {
		return false
	}
	if caps.SpecFieldsOnly {
		d, err := e.drift(prior, priorSpec, cur)
		return err == nil && len(d) == 0
	}
	return Equal(e.compared(model.Redact(*prior).Attributes), e.compared(cur.Attributes))
}

// compared is attrs without the fields the engine is told to ignore (ones a
// controller or a mutating webhook owns), so they count as no change.
func (e *Engine) compared(attrs map[string]any) map[string]any {
	if len(e.IgnoreFields) == 0 || attrs == nil {
		return attrs
	}
	out, _ := model.DeepCopyValue(attrs).(map[string]any)
	for _, p := range e.IgnoreFields {
		model.DeletePath(out, p)
	}
	return out
}

// publicSpec is a spec resource as people may see it, with the sensitive
// paths its runtime knows of masked; everything is masked when they cannot be
// known.
func (e *Engine) publicSpec(ctx context.Context, r model.Resource) model.Resource {
	rt, err := e.runtime(ctx, r)
	if err != nil {
		return model.Public(r)
	}
	paths, err := sensitivePaths(ctx, rt, r)
	if err != nil {
		return model.Public(maskAll(r))
	}
	return model.Public(model.WithSensitivePaths(r, paths))
}

func sensitivePaths(ctx context.Context, rt Runtime, r model.Resource) ([]string, error) {
	sp, ok := rt.(SensitivePather)
	if !ok {
		return nil, nil
	}
	paths, err := sp.SensitivePaths(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("sensitive attributes of %s: %w", r.ID, err)
	}
	return paths, nil
}

// maskAll marks every attribute of r sensitive.
func maskAll(r model.Resource) model.Resource {
	keys := make([]string, 0, len(r.Attributes))
	for k := range r.Attributes {
		keys = append(keys, k)
	}
	return model.WithSensitivePaths(r, keys)
}

func stringList(v any) []string {
	switch t := v.(type) {
	case []string:
		return t
	case []any:
		out := make([]string, 0, len(t))
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func describe(r graph.Result) string {
	switch {
	case r.Err != nil:
		return r.Err.Error()
	case r.Cause != "":
		return fmt.Sprintf("%s (because of %s)", r.Status, r.Cause)
	default:
		return string(r.Status)
	}
}

func ptr[T any](v T) *T { return &v }

// withinDependencies drops dependsOn entries that leave the set, so a subset
// of a spec (the resources being deleted) still forms a graph. A $kusion_path
// to a resource outside the set resolves to no id and makes no edge.
func withinDependencies(rs model.Resources) model.Resources {
	idx := rs.Index()
	out := rs.DeepCopy()
	for i := range out {
		var deps []string
		for _, d := range out[i].DependsOn {
			if _, ok := idx[d]; ok {
				deps = append(deps, d)
			}
		}
		out[i].DependsOn = deps
	}
	return out
}

func idsOf(rs model.Resources) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}
