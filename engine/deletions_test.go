package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
)

// gatedReads holds every Read until want of them are waiting at once (or a
// while has passed), and counts the most that ever ran together.
type gatedReads struct {
	*fakeRuntime

	mu         sync.Mutex
	gate       chan struct{}
	want       int
	in, most   int
	gateClosed bool
}

func (g *gatedReads) Read(ctx context.Context, prior *model.Resource, r model.Resource) (*model.Resource, error) {
	g.mu.Lock()
	gate := g.gate
	if gate != nil {
		g.in++
		g.most = max(g.most, g.in)
		if g.in == g.want && !g.gateClosed {
			g.gateClosed = true
			close(gate)
		}
	}
	g.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-time.After(2 * time.Second):
		}
		defer func() {
			g.mu.Lock()
			g.in--
			g.mu.Unlock()
		}()
	}
	return g.fakeRuntime.Read(ctx, prior, r)
}

// TestDeletionsAreReadConcurrently: a destroy reads what it is about to
// delete as many at a time as the parallelism allows, and all at once for
// a runtime that batches (Terraform: one refresh for them all). Read one by
// one, a destroy of 50 Terraform resources took ten seconds.
func TestDeletionsAreReadConcurrently(t *testing.T) {
	for _, tc := range []struct {
		name    string
		batches bool
		want    int
	}{
		{"bounded by the parallelism", false, 4},
		{"a batching runtime: all at once", true, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e, rt, _ := setup(t)
			g := &gatedReads{fakeRuntime: rt}
			d := engine.Built(g)
			d.Batches = tc.batches
			e.Runtimes[model.Terraform] = d
			var rs []model.Resource
			for i := range 12 {
				rs = append(rs, res(fmt.Sprintf("r%02d", i), map[string]any{"n": i}))
			}
			st := stack(rs...)
			if _, err := e.Apply(ctx, st, engine.ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			g.mu.Lock()
			g.gate, g.want = make(chan struct{}), tc.want
			g.mu.Unlock()
			res, err := e.Destroy(ctx, st, engine.ApplyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Failed) != 0 || len(rt.objects) != 0 {
				t.Fatalf("destroy: %d failed, %d objects left", len(res.Failed), len(rt.objects))
			}
			if g.most != tc.want {
				t.Errorf("at most %d deletions read at once, want %d", g.most, tc.want)
			}
		})
	}
}
