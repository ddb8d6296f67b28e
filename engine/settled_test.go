package engine_test

import (
	"context"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
)

// TestSkipUnchangedWritesNoRelease: with SkipUnchanged, an apply or a
// destroy that would change nothing and record nothing new leaves the
// release history as it was; anything to change or to record (a spec the
// objects already match, drift, a failed last release) still writes one.
func TestSkipUnchangedWritesNoRelease(t *testing.T) {
	spec := func(size int) engine.Stack { return stack(res("a", map[string]any{"size": size})) }
	tests := []struct {
		name string
		// before runs after the first apply of spec(1).
		before        func(t *testing.T, e *engine.Engine, f *fakeRuntime)
		run           func(ctx context.Context, e *engine.Engine, opts engine.ApplyOptions) (*engine.Result, error)
		skip          bool
		wantRevisions int
	}{
		{name: "apply again, skipping", skip: true, wantRevisions: 1,
			run: func(ctx context.Context, e *engine.Engine, o engine.ApplyOptions) (*engine.Result, error) {
				return e.Apply(ctx, spec(1), o)
			}},
		{name: "apply again, recording", skip: false, wantRevisions: 2,
			run: func(ctx context.Context, e *engine.Engine, o engine.ApplyOptions) (*engine.Result, error) {
				return e.Apply(ctx, spec(1), o)
			}},
		{name: "apply a change", skip: true, wantRevisions: 2,
			run: func(ctx context.Context, e *engine.Engine, o engine.ApplyOptions) (*engine.Result, error) {
				return e.Apply(ctx, spec(2), o)
			}},
		{name: "apply a spec the live object already matches", skip: true, wantRevisions: 2,
			before: func(_ *testing.T, _ *engine.Engine, f *fakeRuntime) { f.set(id("a"), "size", 3) },
			run: func(ctx context.Context, e *engine.Engine, o engine.ApplyOptions) (*engine.Result, error) {
				return e.Apply(ctx, spec(3), o)
			}},
		{name: "apply after a failed release", skip: true, wantRevisions: 3,
			before: func(t *testing.T, e *engine.Engine, f *fakeRuntime) {
				f.failOn[id("a")] = true
				if _, err := e.Apply(context.Background(), spec(2), engine.ApplyOptions{}); err == nil {
					t.Fatal("the failing apply succeeded")
				}
				f.failOn[id("a")] = false
			},
			run: func(ctx context.Context, e *engine.Engine, o engine.ApplyOptions) (*engine.Result, error) {
				return e.Apply(ctx, spec(1), o)
			}},
		{name: "destroy an already destroyed stack", skip: true, wantRevisions: 2,
			before: func(t *testing.T, e *engine.Engine, _ *fakeRuntime) {
				if _, err := e.Destroy(context.Background(), spec(1), engine.ApplyOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			run: func(ctx context.Context, e *engine.Engine, o engine.ApplyOptions) (*engine.Result, error) {
				return e.Destroy(ctx, spec(1), o)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			e, f, store := setup(t)
			if _, err := e.Apply(ctx, spec(1), engine.ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			if tt.before != nil {
				tt.before(t, e, f)
			}
			res, err := tt.run(ctx, e, engine.ApplyOptions{SkipUnchanged: tt.skip})
			if err != nil {
				t.Fatal(err)
			}
			revs, err := store.Revisions(ctx, "p", "w")
			if err != nil {
				t.Fatal(err)
			}
			if len(revs) != tt.wantRevisions {
				t.Errorf("%d releases, want %d", len(revs), tt.wantRevisions)
			}
			// A run that wrote nothing says so, and has no release to report.
			written := res.Release != nil
			if res.Unchanged == written {
				t.Errorf("Unchanged = %v with a release written: %v", res.Unchanged, written)
			}
			if last := revs[len(revs)-1]; written && res.Release.Revision != last {
				t.Errorf("the result reports release %d, the store's latest is %d", res.Release.Revision, last)
			}
		})
	}
}

// TestSkipUnchangedRecordsAdoption: the first apply of objects that already
// exist as the spec has them changes nothing live, yet it is recorded: the
// release is what later previews, destroys and the project's ownership know
// those objects by.
func TestSkipUnchangedRecordsAdoption(t *testing.T) {
	ctx := context.Background()
	e, f, store := setup(t)
	st := stack(res("a", map[string]any{"size": 1}))
	if _, err := f.Apply(ctx, nil, st.Spec.Resources[0], false); err != nil {
		t.Fatal(err)
	}
	res, err := e.Apply(ctx, st, engine.ApplyOptions{SkipUnchanged: true})
	if err != nil {
		t.Fatal(err)
	}
	revs, err := store.Revisions(ctx, "p", "w")
	if err != nil {
		t.Fatal(err)
	}
	if len(revs) != 1 || res.Release == nil || res.Unchanged {
		t.Errorf("first apply of existing objects: %d releases, release %v, unchanged %v; want it recorded", len(revs), res.Release != nil, res.Unchanged)
	}
}
