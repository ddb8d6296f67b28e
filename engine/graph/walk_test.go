package graph

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/model"
)

func mustNew(t *testing.T, rs model.Resources) *Graph {
	t.Helper()
	g, err := New(rs)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return g
}

func TestWalkParallelismBound(t *testing.T) {
	var rs model.Resources
	for i := range 100 {
		rs = append(rs, plain(fmt.Sprintf("n%03d", i)))
	}
	g := mustNew(t, rs)
	tests := []struct {
		name        string
		parallelism int
		want        int64
	}{
		{"explicit bound", 4, 4},
		{"default bound", 0, DefaultParallelism},
		{"sequential", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var now, peak atomic.Int64
			// Every call waits until the bound is reached (or it is clear it
			// will not be), so the peak is exactly the bound, not a race.
			release := make(chan struct{})
			var once sync.Once
			res := g.Walk(context.Background(), WalkOptions{Parallelism: tt.parallelism}, func(ctx context.Context, id string) error {
				n := now.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				if n >= tt.want {
					once.Do(func() { close(release) })
				}
				select {
				case <-release:
				case <-time.After(5 * time.Second):
				}
				now.Add(-1)
				return nil
			})
			if got := peak.Load(); got != tt.want {
				t.Errorf("peak concurrent calls = %d, want %d", got, tt.want)
			}
			if len(res) != 100 {
				t.Errorf("got %d results, want 100", len(res))
			}
			for id, r := range res {
				if r.Status != Succeeded {
					t.Errorf("%s: %+v, want Succeeded", id, r)
				}
			}
		})
	}
}

// TestWalkUnbounded: nodes marked unbounded all run at once, beside the
// bounded ones, which stay within Parallelism.
func TestWalkUnbounded(t *testing.T) {
	var rs model.Resources
	for i := range 20 {
		rs = append(rs, plain(fmt.Sprintf("free%02d", i)), plain(fmt.Sprintf("kept%02d", i)))
	}
	g := mustNew(t, rs)
	var freeNow, keptNow, keptPeak atomic.Int64
	allFree := make(chan struct{})
	var once sync.Once
	res := g.Walk(context.Background(), WalkOptions{Parallelism: 2, Unbounded: func(id string) bool { return id[:4] == "free" }},
		func(ctx context.Context, id string) error {
			if id[:4] == "free" {
				// Each free call waits for all twenty: only possible if
				// they run at once.
				if freeNow.Add(1) == 20 {
					once.Do(func() { close(allFree) })
				}
				select {
				case <-allFree:
					return nil
				case <-time.After(5 * time.Second):
					return errors.New("the free nodes did not all run at once")
				}
			}
			n := keptNow.Add(1)
			for p := keptPeak.Load(); n > p && !keptPeak.CompareAndSwap(p, n); p = keptPeak.Load() {
			}
			time.Sleep(time.Millisecond)
			keptNow.Add(-1)
			return nil
		})
	for id, r := range res {
		if r.Status != Succeeded {
			t.Errorf("%s: %+v", id, r)
		}
	}
	if p := keptPeak.Load(); p > 2 {
		t.Errorf("bounded nodes peaked at %d at once, want at most 2", p)
	}
}

// recorder logs start and finish events of fn calls.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(e string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) index(e string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, x := range r.events {
		if x == e {
			return i
		}
	}
	return -1
}

func TestWalkOrder(t *testing.T) {
	// a <- b, a <- c, {b, c} <- d (diamond), plus a chain x <- y.
	rs := model.Resources{
		plain("d", "b", "c"), plain("b", "a"), plain("c", "a"), plain("a"), plain("y", "x"), plain("x"),
	}
	g := mustNew(t, rs)
	tests := []struct {
		name    string
		reverse bool
	}{
		{"forward: dependencies first", false},
		{"reverse: dependents first", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			res := g.Walk(context.Background(), WalkOptions{Parallelism: 3, Reverse: tt.reverse}, func(ctx context.Context, id string) error {
				rec.add("start " + id)
				time.Sleep(time.Millisecond)
				rec.add("finish " + id)
				return nil
			})
			for _, id := range g.IDs() {
				if res[id].Status != Succeeded {
					t.Errorf("%s: %+v, want Succeeded", id, res[id])
				}
				for _, dep := range g.Dependencies(id) {
					first, then := dep, id
					if tt.reverse {
						first, then = id, dep
					}
					if f, s := rec.index("finish "+first), rec.index("start "+then); f < 0 || s < 0 || f > s {
						t.Errorf("%s started (event %d) before %s finished (event %d): %q", then, s, first, f, rec.events)
					}
				}
			}
		})
	}
}

// TestWalkOneAtATimeFollowsOrder: walked one node at a time, a forward walk
// goes in Order() and a reverse one in its reverse, whatever the spec order,
// so an apply goes in the order its preview lists and a destroy deletes in
// the order its preview lists the deletions.
func TestWalkOneAtATimeFollowsOrder(t *testing.T) {
	// Spec order puts z first, but z depends on y: Order() is a, y, z, b
	// where the spec says z, a, y, b.
	rs := model.Resources{plain("z", "y"), plain("a"), plain("y", "a"), plain("b")}
	g := mustNew(t, rs)
	if got, want := g.Order(), []string{"a", "y", "z", "b"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Order() = %v, want %v", got, want)
	}
	for _, tt := range []struct {
		name    string
		reverse bool
		want    []string
	}{
		{"forward", false, []string{"a", "y", "z", "b"}},
		{"reverse", true, []string{"b", "z", "y", "a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			g.Walk(context.Background(), WalkOptions{Parallelism: 1, Reverse: tt.reverse}, func(ctx context.Context, id string) error {
				got = append(got, id)
				return nil
			})
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("walked %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWalkFailure(t *testing.T) {
	// Diamond a <- {b, c} <- d <- e, and an independent branch x <- y.
	rs := model.Resources{
		plain("a"), plain("b", "a"), plain("c", "a"), plain("d", "b", "c"), plain("e", "d"),
		plain("x"), plain("y", "x"),
	}
	g := mustNew(t, rs)
	boom := errors.New("boom")
	tests := []struct {
		name    string
		reverse bool
		fail    string
		want    map[string]Result
	}{
		{
			name: "failed node's subtree is skipped, the rest goes on",
			fail: "b",
			want: map[string]Result{
				"a": {Status: Succeeded},
				"b": {Status: Failed, Err: boom},
				"c": {Status: Succeeded},
				"d": {Status: Skipped, Cause: "b"},
				"e": {Status: Skipped, Cause: "b"},
				"x": {Status: Succeeded},
				"y": {Status: Succeeded},
			},
		},
		{
			name: "root failure skips everything that needs it",
			fail: "a",
			want: map[string]Result{
				"a": {Status: Failed, Err: boom},
				"b": {Status: Skipped, Cause: "a"},
				"c": {Status: Skipped, Cause: "a"},
				"d": {Status: Skipped, Cause: "a"},
				"e": {Status: Skipped, Cause: "a"},
				"x": {Status: Succeeded},
				"y": {Status: Succeeded},
			},
		},
		{
			name:    "reverse: a failed deletion keeps its dependencies",
			reverse: true,
			fail:    "d",
			want: map[string]Result{
				"e": {Status: Succeeded},
				"d": {Status: Failed, Err: boom},
				"b": {Status: Skipped, Cause: "d"},
				"c": {Status: Skipped, Cause: "d"},
				"a": {Status: Skipped, Cause: "d"},
				"x": {Status: Succeeded},
				"y": {Status: Succeeded},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls sync.Map
			got := g.Walk(context.Background(), WalkOptions{Parallelism: 2, Reverse: tt.reverse}, func(ctx context.Context, id string) error {
				calls.Store(id, true)
				if id == tt.fail {
					return boom
				}
				return nil
			})
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Walk results:\n got  %+v\n want %+v", got, tt.want)
			}
			for id, r := range tt.want {
				if _, called := calls.Load(id); called != (r.Status != Skipped) {
					t.Errorf("%s: called = %v with status %s", id, called, r.Status)
				}
			}
		})
	}
}

func TestWalkPanicFailsNode(t *testing.T) {
	g := mustNew(t, model.Resources{plain("a"), plain("b", "a")})
	res := g.Walk(context.Background(), WalkOptions{}, func(ctx context.Context, id string) error {
		if id == "a" {
			panic("kaboom")
		}
		return nil
	})
	if res["a"].Status != Failed || res["a"].Err == nil {
		t.Errorf("a: %+v, want Failed with the panic", res["a"])
	}
	if want := (Result{Status: Skipped, Cause: "a"}); res["b"] != want {
		t.Errorf("b: %+v, want %+v", res["b"], want)
	}
}

func TestWalkCancel(t *testing.T) {
	// 4 roots run and block until ctx ends; 50 nodes wait behind them.
	var rs model.Resources
	var roots []string
	for i := range 4 {
		id := fmt.Sprintf("root%d", i)
		roots = append(roots, id)
		rs = append(rs, plain(id))
	}
	for i := range 50 {
		rs = append(rs, plain(fmt.Sprintf("wait%02d", i), roots[i%len(roots)]))
	}
	g := mustNew(t, rs)

	tests := []struct {
		name string
		// ret is what a root returns once ctx ends.
		ret        func(ctx context.Context) error
		wantRootSt Status
	}{
		{"fn returns ctx error", func(ctx context.Context) error { return ctx.Err() }, Canceled},
		{"fn finishes its work anyway", func(ctx context.Context) error { return nil }, Succeeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var started atomic.Int64
			var calls sync.Map
			type walked struct{ res map[string]Result }
			out := make(chan walked, 1)
			go func() {
				out <- walked{g.Walk(ctx, WalkOptions{Parallelism: 4}, func(ctx context.Context, id string) error {
					calls.Store(id, true)
					if started.Add(1) == int64(len(roots)) {
						cancel() // every root is running: cancel now
					}
					select {
					case <-ctx.Done():
						return tt.ret(ctx)
					case <-time.After(10 * time.Second):
						return errors.New("ctx never ended")
					}
				})}
			}()
			var res map[string]Result
			select {
			case w := <-out:
				res = w.res
			case <-time.After(8 * time.Second):
				// Not a timing assertion: fns only return on ctx.Done() or
				// after 10s, so a Walk still running here ignored cancellation.
				t.Fatal("Walk did not return after cancellation")
			}
			if len(res) != len(rs) {
				t.Errorf("got %d results, want %d", len(res), len(rs))
			}
			for _, r := range rs {
				got := res[r.ID]
				_, called := calls.Load(r.ID)
				if r.DependsOn == nil {
					if got.Status != tt.wantRootSt || !called {
						t.Errorf("%s: %+v (called %v), want %s", r.ID, got, called, tt.wantRootSt)
					}
					continue
				}
				if called || got.Status != Canceled || !errors.Is(got.Err, context.Canceled) {
					t.Errorf("%s: %+v (called %v), want Canceled and never called", r.ID, got, called)
				}
			}
		})
	}
}

func TestWalkAlreadyCanceled(t *testing.T) {
	g := mustNew(t, model.Resources{plain("a"), plain("b", "a")})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := g.Walk(ctx, WalkOptions{}, func(ctx context.Context, id string) error {
		t.Errorf("fn called for %s after ctx ended", id)
		return nil
	})
	for _, id := range []string{"a", "b"} {
		if res[id].Status != Canceled {
			t.Errorf("%s: %+v, want Canceled", id, res[id])
		}
	}
}

func TestWalkEmpty(t *testing.T) {
	g := mustNew(t, nil)
	if res := g.Walk(context.Background(), WalkOptions{}, func(context.Context, string) error { return nil }); len(res) != 0 {
		t.Errorf("results = %v, want none", res)
	}
}

// BenchmarkWalkWide walks 1,000 independent nodes 10 at a time, as an apply
// of a wide stack does: the walk's own cost per node, the calls doing
// nothing.
func BenchmarkWalkWide(b *testing.B) {
	var rs model.Resources
	for i := range 1000 {
		rs = append(rs, model.Resource{ID: fmt.Sprintf("v1:ConfigMap:ns:c%04d", i)})
	}
	g, err := New(rs)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		g.Walk(context.Background(), WalkOptions{Parallelism: 10}, func(context.Context, string) error { return nil })
	}
}
