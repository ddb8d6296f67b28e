package engine

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/kusionpr/kusionpr/engine/graph"
	"github.com/kusionpr/kusionpr/model"
)

// Drift compares the live objects of rel's resources with what rel
// recorded of them: what changed outside of this tool since rel was
// applied. It only reads (no dry run, no release, no lock), so a scan of
// many stacks costs a read per object, or a list per namespace and kind
// with a prefetching runtime.
//
// The answer has the shape of a preview of rel's own spec: a step per
// resource of rel's spec, in walk order, whose Drift lists the fields the
// spec sets that changed on the live object; its Changes are what an
// apply of rel's spec would put back (live → recorded), From is the live
// object, To the one rel recorded. A resource gone from the cluster is a
// Create; one that drifted an Update; the others UnChanged. SpecChanges
// stays empty: CompareSpecs tells what a spec changes against rel.
//
// Drift cannot re-plan rel's spec by dry run: a release records its
// sensitive values as fingerprints, which no runtime can apply.
func (e *Engine) Drift(ctx context.Context, rel *model.Release) (*Preview, error) {
	if rel == nil {
		return nil, fmt.Errorf("drift: no release")
	}
	p := &Preview{Project: rel.Project, Workspace: rel.Workspace, Stack: rel.Stack, PriorRevision: rel.Revision,
		ChangeSteps: map[string]*Step{}, current: map[string]*model.Resource{}}
	if rel.Spec == nil || len(rel.Spec.Resources) == 0 {
		return p, nil
	}
	ix, err := e.newPlanIndex(rel.Spec, rel)
	if err != nil {
		return nil, fmt.Errorf("drift %s: release %d: %w", rel.Stack, rel.Revision, err)
	}
	e.prefetch(ctx, ix.desired)
	order := ix.graph.Order()
	steps := make([]*Step, len(order))
	// References are resolved with the values the release recorded: they
	// are what the release's apply resolved them to.
	lookup := func(id string) *model.Resource { return ix.priorResource(id) }
	var batched, limited errgroup.Group
	limited.SetLimit(e.parallelism())
	for _, all := range []bool{true, false} {
		for i, id := range order {
			if ix.batched(id) != all {
				continue
			}
			g := &limited
			if all {
				// A batching runtime's reads start together, so that they
				// make one batch.
				g = &batched
			}
			g.Go(func() error {
				steps[i] = e.driftResource(ctx, ix, id, lookup)
				return nil
			})
		}
	}
	batched.Wait()
	limited.Wait()
	for i, id := range order {
		p.StepKeys = append(p.StepKeys, id)
		p.ChangeSteps[id] = steps[i]
	}
	if err := ctx.Err(); err != nil {
		return p, fmt.Errorf("drift %s: %w", rel.Stack, err)
	}
	sameErrorOnce(p)
	return p, nil
}

// driftResource reads one resource of the release and compares it with
// what the release recorded.
func (e *Engine) driftResource(ctx context.Context, ix *planIndex, id string, lookup func(string) *model.Resource) *Step {
	spec := ix.desired[ix.desiredIdx[id]]
	prior, priorSpec := ix.priorResource(id), ix.priorSpecResource(id)
	if prior == nil {
		return failed(id, fmt.Sprintf("%s: the release's state does not record it", id))
	}
	if err := ctx.Err(); err != nil {
		return failed(id, fmt.Sprintf("%s: not read: %v", id, err))
	}
	rt, err := e.runtime(ctx, spec)
	if err != nil {
		return failed(id, err.Error())
	}
	resolved, _ := resolveReferences(spec, ix.refs, lookup)
	cur, err := rt.Read(ctx, prior, resolved)
	if err != nil {
		return failed(id, err.Error())
	}
	recorded := model.Public(*prior)
	step := &Step{ID: id, To: &recorded}
	if cur == nil {
		step.Action = Create
		step.Drift = []FieldChange{{Path: ".", Op: "remove", From: "deleted outside of a release"}}
		return step
	}
	step.From = ptr(model.Public(*cur))
	if step.Drift, err = e.drift(prior, priorSpec, cur); err != nil {
		return failed(id, err.Error())
	}
	if len(step.Drift) == 0 {
		step.Action = UnChanged
		return step
	}
	step.Action = Update
	for _, d := range step.Drift {
		step.Changes = append(step.Changes, FieldChange{Path: d.Path, Op: reverseOp(d.Op), From: d.To, To: d.From})
	}
	return step
}

// reverseOp is the operation that undoes op.
func reverseOp(op string) string {
	switch op {
	case "add":
		return "remove"
	case "remove":
		return "add"
	}
	return op
}

// SpecChange is how a spec differs from a release's spec in one resource.
type SpecChange struct {
	ID string `json:"id"`
	// Action is Create (the spec adds it), Delete (the spec no longer has
	// it) or Update.
	Action Action `json:"action"`
	// Changes are the attributes that differ, release → spec, sensitive
	// values fingerprinted.
	Changes []FieldChange `json:"changes,omitempty"`
}

// CompareSpecs says how spec differs from the spec release recorded, in
// the resources and attributes each holds: an apply of spec that has not
// happened. Sensitive values are compared by fingerprint, as the release
// holds only those. It reads nothing live; a runtime is built only to ask
// which attributes it holds sensitive.
func (e *Engine) CompareSpecs(ctx context.Context, recorded, spec *model.Spec) ([]SpecChange, error) {
	var was, now model.Resources
	if recorded != nil {
		was = recorded.Resources
	}
	if spec != nil {
		now = spec.Resources
	}
	wasIdx, nowIdx := was.Index(), now.Index()
	var out []SpecChange
	ids := graphOrder(now)
	for _, id := range ids {
		r := e.publicSpec(ctx, now[nowIdx[id]])
		i, ok := wasIdx[id]
		if !ok {
			out = append(out, SpecChange{ID: id, Action: Create})
			continue
		}
		old := was[i]
		// The release's own list of sensitive paths masks the same values
		// in both.
		r = model.Redact(model.WithSensitivePaths(r, model.SensitivePaths(old)))
		changes, err := Diff(model.Redact(old).Attributes, r.Attributes)
		if err != nil {
			return nil, fmt.Errorf("compare %s with the release's spec: %w", id, err)
		}
		if len(changes) > 0 {
			out = append(out, SpecChange{ID: id, Action: Update, Changes: changes})
		}
	}
	for _, r := range was {
		if _, ok := nowIdx[r.ID]; !ok {
			out = append(out, SpecChange{ID: r.ID, Action: Delete})
		}
	}
	return out, nil
}

// graphOrder is rs's ids in walk order, or as listed when they form no
// graph (a spec's own error, which its preview reports).
func graphOrder(rs model.Resources) []string {
	if g, err := graph.New(rs); err == nil {
		return g.Order()
	}
	return idsOf(rs)
}

// secretData is the template drift is judged on for spec r, whose
// redacted attributes are attrs: a Kubernetes Secret's stringData is
// write-only, stored and read back as data, so each key it sets is judged
// in data too. Without it a Secret written with stringData never showed
// drift, and the preview took a Secret changed by hand for unchanged.
func secretData(r model.Resource, attrs map[string]any) map[string]any {
	sd, ok := attrs["stringData"].(map[string]any)
	if r.Type != model.Kubernetes || attrs["kind"] != "Secret" || !ok || len(sd) == 0 {
		return attrs
	}
	out := make(map[string]any, len(attrs)+1)
	for k, v := range attrs {
		out[k] = v
	}
	data := map[string]any{}
	if d, ok := attrs["data"].(map[string]any); ok {
		for k, v := range d {
			data[k] = v
		}
	}
	for k, v := range sd {
		if _, set := data[k]; !set {
			data[k] = v
		}
	}
	out["data"] = data
	return out
}
