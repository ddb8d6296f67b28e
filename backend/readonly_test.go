package backend

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/kusionpr/kusionpr/model"
)

// writeCounter counts the writes that reach the objects below it.
type writeCounter struct {
	objects
	writes atomic.Int64
}

func (w *writeCounter) write(ctx context.Context, key string, data []byte, createOnly bool) error {
	w.writes.Add(1)
	return w.objects.write(ctx, key, data, createOnly)
}

// TestReadsNeverWrite: reading releases (the latest, the revisions, one
// release) writes nothing, even when the index differs from the release
// files: Kusion rewrote it without our phase entries, or it lags behind a
// release whose index update was lost. The next write repairs it.
func TestReadsNeverWrite(t *testing.T) {
	ctx := context.Background()
	s := openURL(t, "mem://")
	for _, phase := range []model.Phase{model.PhaseApplying, model.PhaseApplying} {
		r := release("p", "w", phase, "alice")
		if _, err := s.Begin(ctx, r); err != nil {
			t.Fatal(err)
		}
		r.Phase = model.PhaseSucceeded
		if err := s.Update(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// Kusion's CLI rewrote the index, with no phase, and a third release
	// was written without its index entry.
	if err := s.writeIndex(ctx, "p", "w", &index{LatestRevision: 2, Releases: []*indexEntry{{Revision: 1, Stack: "dev"}, {Revision: 2, Stack: "dev"}}}); err != nil {
		t.Fatal(err)
	}
	third := release("p", "w", model.PhaseSucceeded, "alice")
	third.Revision = 3
	data, err := encodeRelease(third)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.obj.write(ctx, s.releaseKey("p", "w", 3), data, true); err != nil {
		t.Fatal(err)
	}

	counter := &writeCounter{objects: s.obj}
	s.obj = counter
	latest, err := s.Latest(ctx, "p", "w")
	if err != nil || latest == nil || latest.Revision != 3 {
		t.Fatalf("Latest = %+v, %v; want revision 3", latest, err)
	}
	revs, err := s.Revisions(ctx, "p", "w")
	if err != nil || len(revs) != 3 {
		t.Fatalf("Revisions = %v, %v; want 1, 2, 3", revs, err)
	}
	if _, err := s.Get(ctx, "p", "w", 2); err != nil {
		t.Fatal(err)
	}
	if n := counter.writes.Load(); n != 0 {
		t.Errorf("reading wrote %d objects, want none", n)
	}

	// A write repairs the index as it goes.
	if _, err := s.Begin(ctx, release("p", "w", model.PhaseApplying, "bob")); err != nil {
		t.Fatal(err)
	}
	ix, _, err := s.readIndex(ctx, "p", "w")
	if err != nil {
		t.Fatal(err)
	}
	if ix.LatestRevision != 4 || ix.entry(3) == nil || ix.entry(4) == nil {
		t.Errorf("index after a write: %+v, want revisions up to 4 listed", ix)
	}
}
