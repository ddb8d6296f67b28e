package engine_test

import (
	"context"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
)

// scopedRuntime is a fakeRuntime whose apply, like server-side apply,
// leaves fields outside the spec alone; its driver says so.
type scopedRuntime struct{ *fakeRuntime }

func scoped(f *fakeRuntime) engine.Driver {
	d := engine.Built(scopedRuntime{f})
	d.SpecFieldsOnly = true
	return d
}

// Apply keeps what is live outside the fields the spec sets.
func (s scopedRuntime) Apply(ctx context.Context, prior *model.Resource, r model.Resource, dryRun bool) (*model.Resource, error) {
	s.mu.Lock()
	others := map[string]any{}
	for k, v := range s.objects[r.ID] {
		if _, set := r.Attributes[k]; !set {
			others[k] = model.DeepCopyValue(v)
		}
	}
	s.mu.Unlock()
	out, err := s.fakeRuntime.Apply(ctx, prior, r, dryRun)
	if err != nil {
		return out, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range others {
		if _, set := out.Attributes[k]; !set {
			out.Attributes[k] = v
			if !dryRun {
				s.objects[r.ID][k] = model.DeepCopyValue(v)
			}
		}
	}
	return out, nil
}

// TestPreviewSkipsWhatCannotHaveChanged: a preview asks the runtime for a
// dry run only where applying could change something; where the object is
// as the very same spec left it, it knows without asking.
func TestPreviewSkipsWhatCannotHaveChanged(t *testing.T) {
	spec := func(size int) engine.Stack { return stack(res("a", map[string]any{"size": size})) }
	id := res("a", nil).ID
	tests := []struct {
		name   string
		scoped bool
		// after applies spec(1), then does this; the preview is of spec(want)
		after      func(t *testing.T, e *engine.Engine, f *fakeRuntime)
		previewed  int
		wantAction engine.Action
		wantDryRun int
	}{
		{name: "untouched since the last apply", previewed: 1, wantAction: engine.UnChanged, wantDryRun: 0},
		{name: "the spec changed", previewed: 2, wantAction: engine.Update, wantDryRun: 1},
		{name: "a field the spec sets drifted", previewed: 1, wantAction: engine.Update, wantDryRun: 1,
			after: func(_ *testing.T, _ *engine.Engine, f *fakeRuntime) { f.set(id, "size", 5) }},
		{name: "a field outside the spec moved, whole-object runtime", previewed: 1, wantAction: engine.Update, wantDryRun: 1,
			after: func(_ *testing.T, _ *engine.Engine, f *fakeRuntime) { f.set(id, "status", "scaled") }},
		{name: "a field outside the spec moved, field-scoped runtime", scoped: true, previewed: 1, wantAction: engine.UnChanged, wantDryRun: 0,
			after: func(_ *testing.T, _ *engine.Engine, f *fakeRuntime) { f.set(id, "status", "scaled") }},
		{name: "the last release failed to apply this spec", previewed: 2, wantAction: engine.Update, wantDryRun: 1,
			after: func(t *testing.T, e *engine.Engine, f *fakeRuntime) {
				f.failOn[id] = true
				if _, err := e.Apply(context.Background(), spec(2), engine.ApplyOptions{}); err == nil {
					t.Fatal("the failing apply succeeded")
				}
				f.failOn[id] = false
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			e, f, _ := setup(t)
			if tt.scoped {
				e.Runtimes[model.Terraform] = scoped(f)
			}
			if _, err := e.Apply(ctx, spec(1), engine.ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			if tt.after != nil {
				tt.after(t, e, f)
			}
			f.dryRuns[id] = 0
			p, err := e.Preview(ctx, spec(tt.previewed))
			if err != nil {
				t.Fatal(err)
			}
			if got := p.ChangeSteps[id].Action; got != tt.wantAction {
				t.Errorf("action = %s, want %s", got, tt.wantAction)
			}
			if f.dryRuns[id] != tt.wantDryRun {
				t.Errorf("%d dry runs, want %d", f.dryRuns[id], tt.wantDryRun)
			}
		})
	}
}

// TestReleaseRecordsWhatMadeEachObject: every object of a release's state
// says which spec left it so, and the fingerprint stays out of what people
// see.
func TestReleaseRecordsWhatMadeEachObject(t *testing.T) {
	ctx := context.Background()
	e, _, store := setup(t)
	res, err := e.Apply(ctx, stack(res("a", map[string]any{"size": 1}), res("b", map[string]any{"size": 1})), engine.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := store.Latest(ctx, "p", "w")
	for _, r := range rel.State.Resources {
		if fp, _ := r.Extensions[model.AppliedExtension].(string); len(fp) != 32 {
			t.Errorf("%s records %q as what applied it", r.ID, fp)
		}
	}
	for _, step := range res.Preview.ChangeSteps {
		if step.To != nil && step.To.Extensions[model.AppliedExtension] != nil {
			t.Errorf("the preview shows the fingerprint of %s", step.ID)
		}
	}
}
