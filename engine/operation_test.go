package engine_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
)

// taintingRuntime is fakeRuntime whose apply of chosen ids creates the
// object and then fails, returning it: a Terraform resource created, then
// tainted by a failing provisioner or readiness check.
type taintingRuntime struct {
	*fakeRuntime
	taint map[string]bool
}

func (t taintingRuntime) Apply(ctx context.Context, prior *model.Resource, r model.Resource, dryRun bool) (*model.Resource, error) {
	out, err := t.fakeRuntime.Apply(ctx, prior, r, dryRun)
	if err != nil || dryRun || !t.taint[r.ID] {
		return out, err
	}
	return out, fmt.Errorf("apply %s: created, then tainted", r.ID)
}

// TestFailureAfterItsDependencySucceeded: b refers to a's applied value and
// fails after a applied. a stays recorded as this spec made it, so the next
// preview trusts it without a dry run; c, which needs b, is not applied and
// is reported with b as the reason; whatever b's failed apply left is
// recorded, but not as this spec's doing, so the next preview plans it
// again.
func TestFailureAfterItsDependencySucceeded(t *testing.T) {
	for _, tc := range []struct {
		name string
		// leaves: b's failed apply created its object.
		leaves bool
	}{
		{"the failed apply changed nothing", false},
		{"the failed apply left an object", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e, rt, store := setup(t)
			if tc.leaves {
				e.Runtimes[model.Terraform] = engine.Built(taintingRuntime{fakeRuntime: rt, taint: map[string]bool{id("b"): true}})
			} else {
				rt.failOn[id("b")] = true
			}
			st := stack(
				res("a", map[string]any{"host": "db.local"}),
				res("b", map[string]any{"aStatus": "$kusion_path." + id("a") + ".status"}),
				res("c", map[string]any{"v": 3}, id("b")),
			)
			result, err := e.Apply(ctx, st, engine.ApplyOptions{})
			if err == nil || !strings.Contains(err.Error(), id("b")) {
				t.Fatalf("apply error %v, want b's failure", err)
			}
			if cerr := result.Failed[id("c")]; cerr == nil || !strings.Contains(cerr.Error(), "because of "+id("b")) {
				t.Errorf("c: %v, want it not applied because of b", cerr)
			}
			if _, ok := rt.objects[id("c")]; ok {
				t.Error("c was applied though b, which it needs, failed")
			}

			rel, err := store.Latest(ctx, "p", "w")
			if err != nil {
				t.Fatal(err)
			}
			if rel.Phase != model.PhaseFailed || !strings.Contains(rel.Message, id("b")) {
				t.Errorf("release %s %q, want failed naming b", rel.Phase, rel.Message)
			}
			recorded := map[string]model.Resource{}
			for _, r := range rel.State.Resources {
				recorded[r.ID] = r
			}
			if a, ok := recorded[id("a")]; !ok || a.Extensions[model.AppliedExtension] == nil {
				t.Errorf("a recorded %v (%+v), want it with what applied it", ok, a.Extensions)
			}
			b, ok := recorded[id("b")]
			if ok != tc.leaves {
				t.Errorf("b recorded: %v, want %v", ok, tc.leaves)
			}
			if ok && b.Extensions[model.AppliedExtension] != nil {
				t.Errorf("b is recorded as this spec's doing though its apply failed")
			}
			if tc.leaves && rt.objects[id("b")]["aStatus"] != "ready" {
				t.Errorf("b applied with aStatus %v, want a's applied value %q", rt.objects[id("b")]["aStatus"], "ready")
			}
			if _, ok := recorded[id("c")]; ok {
				t.Error("c is recorded though it was never applied")
			}

			rt.failOn[id("b")] = false
			// A runtime is built once per Engine: the next run, with the
			// plain runtime, is another Engine on the same store.
			e = &engine.Engine{Runtimes: map[model.ResourceType]engine.Driver{model.Terraform: engine.Built(rt)}, Store: store, Parallelism: 4}
			dryRuns := map[string]int{id("a"): rt.dryRuns[id("a")], id("b"): rt.dryRuns[id("b")]}
			if _, err := e.Preview(ctx, st); err != nil {
				t.Fatal(err)
			}
			if rt.dryRuns[id("a")] != dryRuns[id("a")] {
				t.Errorf("the next preview dry-ran a, which this spec applied")
			}
			if rt.dryRuns[id("b")] == dryRuns[id("b")] {
				t.Errorf("the next preview trusted b, whose apply failed")
			}
		})
	}
}

// TestDeletionWalk: deletions go dependents first, one at a time in the
// order the preview lists them, and a deletion that fails keeps what it
// depends on (in the cluster and in the state) while the rest goes on.
func TestDeletionWalk(t *testing.T) {
	// Spec order differs from dependency order: z needs y, y needs a.
	spec := stack(
		res("z", map[string]any{"v": 1}, id("y")),
		res("a", map[string]any{"v": 2}),
		res("y", map[string]any{"v": 3}, id("a")),
		res("b", map[string]any{"v": 4}),
	)
	for _, tc := range []struct {
		name        string
		failDelete  string
		wantDeleted []string
		wantState   []string
		wantFailed  map[string]string
	}{
		{name: "every deletion succeeds",
			wantDeleted: []string{id("b"), id("z"), id("y"), id("a")}},
		{name: "a deletion fails", failDelete: id("z"),
			wantDeleted: []string{id("b")},
			wantState:   []string{id("a"), id("y"), id("z")},
			wantFailed: map[string]string{
				id("z"): "cannot delete " + id("z"),
				id("y"): "because of " + id("z"),
				id("a"): "because of " + id("z"),
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e, rt, store := setup(t)
			e.Parallelism = 1
			if _, err := e.Apply(ctx, spec, engine.ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.failDelete != "" {
				rt.failOn[tc.failDelete] = true
			}
			result, err := e.Destroy(ctx, spec, engine.ApplyOptions{})
			if (err != nil) != (tc.failDelete != "") {
				t.Fatalf("destroy error %v", err)
			}
			if !reflect.DeepEqual(rt.deleted, tc.wantDeleted) {
				t.Errorf("deleted %v, want %v", rt.deleted, tc.wantDeleted)
			}
			if tc.failDelete == "" && !reflect.DeepEqual(rt.deleted, result.Preview.StepKeys) {
				t.Errorf("deleted %v, but the preview listed %v", rt.deleted, result.Preview.StepKeys)
			}
			rel, err := store.Latest(ctx, "p", "w")
			if err != nil {
				t.Fatal(err)
			}
			var state []string
			for _, r := range rel.State.Resources {
				state = append(state, r.ID)
			}
			slices.Sort(state)
			if !slices.Equal(state, tc.wantState) {
				t.Errorf("state %v after the destroy, want %v", state, tc.wantState)
			}
			for _, left := range tc.wantState {
				if _, ok := rt.objects[left]; !ok {
					t.Errorf("%s was deleted though it is still recorded", left)
				}
			}
			if len(result.Failed) != len(tc.wantFailed) {
				t.Errorf("failed %v, want %v", result.Failed, tc.wantFailed)
			}
			for fid, want := range tc.wantFailed {
				if got := result.Failed[fid]; got == nil || !strings.Contains(got.Error(), want) {
					t.Errorf("%s failed with %v, want %q", fid, got, want)
				}
			}
		})
	}
}

// unlockingRuntime is fakeRuntime where the apply of one id has someone
// unlock the stack by hand while it waits for its context.
type unlockingRuntime struct {
	*fakeRuntime
	store *backend.Store
	on    string
}

func (u unlockingRuntime) Apply(ctx context.Context, prior *model.Resource, r model.Resource, dryRun bool) (*model.Resource, error) {
	if !dryRun && r.ID == u.on {
		if _, err := u.store.Unlock(context.Background(), "p", "w", "alice", "stuck"); err != nil {
			return nil, err
		}
	}
	return u.fakeRuntime.Apply(ctx, prior, r, dryRun)
}

// TestUnlockedOperationStops: an apply whose release someone unlocks while
// it runs stops (what is running is interrupted, nothing further starts),
// says it was superseded, and leaves the unlock's record as it is.
func TestUnlockedOperationStops(t *testing.T) {
	ctx := context.Background()
	e, rt, store := setup(t)
	// The next sign of life is what finds the release ended.
	e.Heartbeat = 10 * time.Millisecond
	rt.block[id("slow")] = true
	e.Runtimes[model.Terraform] = engine.Built(unlockingRuntime{fakeRuntime: rt, store: store, on: id("slow")})
	st := stack(
		res("fast", map[string]any{"v": 1}),
		res("slow", map[string]any{"v": 2}, id("fast")),
		res("after", map[string]any{"v": 3}, id("slow")),
	)
	result, err := e.Apply(ctx, st, engine.ApplyOptions{})
	if !errors.Is(err, model.ErrSuperseded) {
		t.Fatalf("apply error %v, want superseded", err)
	}
	if _, ok := result.Failed[id("slow")]; !ok {
		t.Errorf("failed %v, want slow, which was interrupted", result.Failed)
	}
	if _, ok := rt.objects[id("after")]; ok {
		t.Error("after was applied once the release was ended")
	}
	rel, err := store.Latest(ctx, "p", "w")
	if err != nil {
		t.Fatal(err)
	}
	if rel.Revision != 1 || rel.Phase != model.PhaseFailed || !strings.HasPrefix(rel.Message, "unlocked by alice") {
		t.Errorf("release %d %s %q, want 1 failed with the unlock's message", rel.Revision, rel.Phase, rel.Message)
	}
}
