package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
)

// brokenRuntime is fakeRuntime with chosen ids that cannot be read, or
// whose dry run is refused, as with lost credentials or a webhook saying no.
type brokenRuntime struct {
	*fakeRuntime
	noRead, noDryRun map[string]bool
}

func (b brokenRuntime) Read(ctx context.Context, prior *model.Resource, r model.Resource) (*model.Resource, error) {
	if b.noRead[r.ID] {
		return nil, fmt.Errorf("read %s: connection refused", r.ID)
	}
	return b.fakeRuntime.Read(ctx, prior, r)
}

func (b brokenRuntime) Apply(ctx context.Context, prior *model.Resource, r model.Resource, dryRun bool) (*model.Resource, error) {
	if dryRun && b.noDryRun[r.ID] {
		return nil, fmt.Errorf("apply %s: admission webhook denied it", r.ID)
	}
	return b.fakeRuntime.Apply(ctx, prior, r, dryRun)
}

// TestFailedStepsAreCountedApart: a resource that could not be previewed
// is Failed, with its error and no values, and counted as nothing else,
// whichever way it failed: its read, its dry run, a dependency, or the read
// of one the spec no longer has.
func TestFailedStepsAreCountedApart(t *testing.T) {
	ctx := context.Background()
	spec := func(size int) []model.Resource {
		return []model.Resource{
			res("a", map[string]any{"size": 1}),
			res("b", map[string]any{"size": 1}),
			res("c", map[string]any{"size": size}),
			res("d", map[string]any{"size": 1}, id("c")),
			res("e", map[string]any{"size": 1}),
			res("gone", map[string]any{"size": 1}),
		}
	}
	tests := []struct {
		name             string
		noRead, noDryRun []string
		next             []model.Resource
		want             engine.Summary
		failed           []string
	}{
		{name: "nothing fails", next: spec(1)[:5],
			want: engine.Summary{UnChanged: 5, Delete: 1}},
		{name: "one read fails of five", noRead: []string{id("e")}, next: spec(1)[:5],
			want: engine.Summary{UnChanged: 4, Delete: 1, Errors: 1}, failed: []string{id("e")}},
		{name: "a dry run fails, its dependent is not previewed", noDryRun: []string{id("c")}, next: spec(2)[:5],
			want: engine.Summary{UnChanged: 3, Delete: 1, Errors: 2}, failed: []string{id("c"), id("d")}},
		{name: "the read of a deleted one fails", noRead: []string{id("gone")}, next: spec(1)[:5],
			want: engine.Summary{UnChanged: 5, Errors: 1}, failed: []string{id("gone")}},
		{name: "every read fails", noRead: []string{id("a"), id("b"), id("c"), id("d"), id("e"), id("gone")}, next: spec(1)[:5],
			want: engine.Summary{Errors: 6}, failed: []string{id("a"), id("b"), id("c"), id("d"), id("e"), id("gone")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, rt, store := setup(t)
			if _, err := e.Apply(ctx, stack(spec(1)...), engine.ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			set := func(ids []string) map[string]bool {
				m := map[string]bool{}
				for _, i := range ids {
					m[i] = true
				}
				return m
			}
			// A runtime is built once per Engine: the broken one is another
			// Engine's, on the same store.
			broken := engine.Built(brokenRuntime{fakeRuntime: rt, noRead: set(tc.noRead), noDryRun: set(tc.noDryRun)})
			e = &engine.Engine{Runtimes: map[model.ResourceType]engine.Driver{model.Terraform: broken}, Store: store, Parallelism: 4}
			p, err := e.Preview(ctx, stack(tc.next...))
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Summary(); got != tc.want {
				t.Errorf("summary %+v, want %+v", got, tc.want)
			}
			if got := p.Incomplete(); got != (len(tc.failed) > 0) {
				t.Errorf("incomplete %v with %d failed", got, len(tc.failed))
			}
			for _, i := range tc.failed {
				st := p.ChangeSteps[i]
				if st.Action != engine.Failed || st.Error == "" || st.From != nil || st.To != nil || len(st.Changes)+len(st.Drift) > 0 {
					t.Errorf("%s: %+v, want Failed with its error and nothing else", i, st)
				}
			}
			if len(tc.failed) > 0 && p.HasChanges() == (tc.want.Create+tc.want.Update+tc.want.Delete == 0) {
				t.Errorf("HasChanges %v for %+v", p.HasChanges(), tc.want)
			}
			// An apply of an incomplete preview changes nothing.
			if len(tc.failed) > 0 {
				before := len(rt.applied)
				if _, err := e.Apply(ctx, stack(tc.next...), engine.ApplyOptions{}); err == nil {
					t.Error("apply of an incomplete preview succeeded")
				}
				if len(rt.applied) != before {
					t.Errorf("apply of an incomplete preview applied %v", rt.applied[before:])
				}
			}
		})
	}
}
