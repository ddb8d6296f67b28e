package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
)

// TestFailedPlanRecordsNothing: an apply or destroy whose plan cannot be
// made (the cluster out of reach, a dry run refused) changes nothing and
// records nothing, whatever the latest release was and whether unchanged
// runs are recorded: no failed release tells a drift scan or the next run
// that something may be half applied. The stack's releases stay as they
// were.
func TestFailedPlanRecordsNothing(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		opts   engine.ApplyOptions
		prior  bool // a succeeded release 1 first
		broken func(b brokenRuntime)
		// unreachable: reads fail, so a destroy's plan fails too (it
		// dry-runs nothing).
		unreachable bool
	}{
		{name: "unreachable, first apply", broken: func(b brokenRuntime) { b.noRead[id("a")] = true }},
		{name: "unreachable, over a release", prior: true, unreachable: true, broken: func(b brokenRuntime) { b.noRead[id("a")], b.noRead[id("b")] = true, true }},
		{name: "unreachable, recording unchanged runs", prior: true, unreachable: true, opts: engine.ApplyOptions{SkipUnchanged: false}, broken: func(b brokenRuntime) { b.noRead[id("b")] = true }},
		{name: "a dry run refused, skipping unchanged runs", prior: true, opts: engine.ApplyOptions{SkipUnchanged: true}, broken: func(b brokenRuntime) { b.noDryRun[id("b")] = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, rt, store := setup(t)
			st := stack(res("a", map[string]any{"v": 1}), res("b", map[string]any{"v": 2}, id("a")))
			if tc.prior {
				if _, err := e.Apply(ctx, st, engine.ApplyOptions{}); err != nil {
					t.Fatal(err)
				}
				st = stack(res("a", map[string]any{"v": 10}), res("b", map[string]any{"v": 20}, id("a")))
			}
			b := brokenRuntime{fakeRuntime: rt, noRead: map[string]bool{}, noDryRun: map[string]bool{}}
			tc.broken(b)
			// A new engine: each builds its runtimes once, on first use.
			e = &engine.Engine{Runtimes: map[model.ResourceType]engine.Driver{model.Terraform: engine.Built(b)}, Store: store, Parallelism: 4}
			before, _ := store.Revisions(ctx, "p", "w")
			applied := len(rt.applied)
			res, err := e.Apply(ctx, st, tc.opts)
			if err == nil || !strings.Contains(err.Error(), "preview failed, nothing changed") {
				t.Fatalf("apply: %v; want the preview's failure", err)
			}
			if res != nil && res.Release != nil {
				t.Errorf("the result holds release %d", res.Release.Revision)
			}
			if after, _ := store.Revisions(ctx, "p", "w"); len(after) != len(before) {
				t.Errorf("releases %v after the failed plan, want %v as before", after, before)
			}
			if len(rt.applied) != applied {
				t.Errorf("the failed plan applied %v", rt.applied[applied:])
			}
			if !tc.unreachable {
				return
			}
			if _, err := e.Destroy(ctx, st, tc.opts); err == nil || !strings.Contains(err.Error(), "nothing changed") {
				t.Errorf("destroy: %v; want the preview's failure", err)
			}
			if after, _ := store.Revisions(ctx, "p", "w"); len(after) != len(before) {
				t.Errorf("releases %v after the failed destroy, want %v as before", after, before)
			}
		})
	}
}
