package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
)

// awaiting is the error of a dry run that needs another resource to exist
// first, as the Kubernetes runtime's for an object whose namespace is missing.
type awaiting struct{ dep string }

func (a awaiting) Error() string                { return "namespace " + a.dep + " not found" }
func (a awaiting) Awaits(r model.Resource) bool { return r.ID == a.dep }
func (a awaiting) NotChecked() string           { return "in a namespace this apply creates: schema only" }

var _ engine.Unplannable = awaiting{}

// awaitingRuntime is fakeRuntime whose dry runs of chosen ids fail with
// the chosen error while their dependency does not exist.
type awaitingRuntime struct {
	*fakeRuntime
	fail map[string]error
}

func (a awaitingRuntime) Apply(ctx context.Context, prior *model.Resource, r model.Resource, dryRun bool) (*model.Resource, error) {
	if err := a.fail[r.ID]; err != nil && dryRun {
		if cur, _ := a.Read(ctx, nil, model.Resource{ID: r.DependsOn[0]}); cur == nil {
			return nil, fmt.Errorf("dry-run apply %s: %w", r.ID, err)
		}
	}
	return a.fakeRuntime.Apply(ctx, prior, r, dryRun)
}

// TestUnplannableDryRuns: a resource whose dry run fails because a
// dependency the apply creates does not exist yet is previewed as the spec
// has it, with what was not checked, only when its runtime's error says it
// awaits that very dependency; any other dry-run error fails its preview,
// created dependency or not, and an apply of the stack changes nothing.
func TestUnplannableDryRuns(t *testing.T) {
	tests := []struct {
		name string
		// err is the dry run's error of "app" while "ns" does not exist;
		// existing: "ns" exists before the preview.
		err      error
		existing bool
		want     engine.Action
	}{
		{name: "awaits the namespace being created", err: awaiting{dep: id("ns")}, want: engine.Create},
		{name: "awaits another resource than the one created", err: awaiting{dep: id("other")}, want: engine.Failed},
		{name: "an error that awaits nothing", err: fmt.Errorf(".spec.replicas: expected numeric (int or float), got string"), want: engine.Failed},
		{name: "nothing to await: the dependency exists", err: awaiting{dep: id("ns")}, existing: true, want: engine.Create},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e, rt, store := setup(t)
			e.Runtimes[model.Terraform] = engine.Built(awaitingRuntime{fakeRuntime: rt, fail: map[string]error{id("app"): tc.err}})
			st := stack(res("ns", map[string]any{"v": 1}), res("app", map[string]any{"v": 1}, id("ns")))
			if tc.existing {
				rt.objects[id("ns")] = map[string]any{"v": 1}
			}
			p, err := e.Preview(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			step := p.ChangeSteps[id("app")]
			if step.Action != tc.want {
				t.Fatalf("app previewed %s (error %q), want %s", step.Action, step.Error, tc.want)
			}
			switch {
			case tc.want == engine.Failed:
				if !strings.Contains(step.Error, tc.err.Error()) || step.NotChecked != "" {
					t.Errorf("app's error %q (not checked %q), want the dry run's %q", step.Error, step.NotChecked, tc.err)
				}
				if _, err := e.Apply(ctx, st, engine.ApplyOptions{}); err == nil {
					t.Error("the apply of a stack whose preview failed succeeded")
				}
				if len(rt.applied) != 0 {
					t.Errorf("an apply whose preview failed applied %v", rt.applied)
				}
			case tc.existing:
				if step.NotChecked != "" || step.To.Attributes["status"] != "ready" {
					t.Errorf("app was not dry-run though its dependency exists: %+v", step)
				}
			default:
				if step.NotChecked != tc.err.(engine.Unplannable).NotChecked() || step.Error != "" {
					t.Errorf("app's step says not checked %q, error %q; want the runtime's note and no error", step.NotChecked, step.Error)
				}
				if step.To == nil || step.To.Attributes["v"] != 1 || step.To.Attributes["status"] != nil {
					t.Errorf("app's planned object %+v, want the spec as it is", step.To)
				}
				if _, err := e.Apply(ctx, st, engine.ApplyOptions{}); err != nil {
					t.Fatal(err)
				}
				if rel, _ := store.Latest(ctx, "p", "w"); rel == nil || rel.Phase != model.PhaseSucceeded {
					t.Errorf("release after the apply: %+v", rel)
				}
			}
		})
	}
}
