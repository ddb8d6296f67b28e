package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
)

// cancellingRuntime is fakeRuntime whose applies take a moment, the
// tenth of which has someone ask the release to stop.
type cancellingRuntime struct {
	*fakeRuntime
	store   *backend.Store
	applies atomic.Int32
}

func (c *cancellingRuntime) Apply(ctx context.Context, prior *model.Resource, r model.Resource, dryRun bool) (*model.Resource, error) {
	if !dryRun {
		if c.applies.Add(1) == 10 {
			if _, _, err := c.store.RequestCancel(context.Background(), "p", "w", "alice", "wrong change"); err != nil {
				return nil, err
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return c.fakeRuntime.Apply(ctx, prior, r, dryRun)
}

// TestCancelStopsAtTheNextBeat: a cancel asked in the middle of a
// 60-resource apply is seen at the next heartbeat; what is in flight
// finishes, nothing more starts, and the release ends failed saying who
// cancelled, its state exactly the objects applied. The next apply
// finishes the rest.
func TestCancelStopsAtTheNextBeat(t *testing.T) {
	ctx := context.Background()
	e, rt, store := setup(t)
	e.Heartbeat = 20 * time.Millisecond
	crt := &cancellingRuntime{fakeRuntime: rt, store: store}
	e.Runtimes[model.Terraform] = engine.Built(crt)
	var rs []model.Resource
	for i := range 60 {
		rs = append(rs, res(fmt.Sprintf("n%02d", i), map[string]any{"v": i}))
	}
	result, err := e.Apply(ctx, stack(rs...), engine.ApplyOptions{})
	var ce *engine.CancelledError
	if !errors.As(err, &ce) || ce.Cancel.By != "alice" {
		t.Fatalf("apply error %v, want a CancelledError by alice", err)
	}
	applied := len(rt.objects)
	if applied < 10 || applied >= 60 {
		t.Fatalf("%d objects applied, want the cancel to stop the apply part way", applied)
	}
	if ce.NotDone != 60-applied || len(result.Failed) != 60-applied {
		t.Errorf("%d not done, %d failed; want %d (60 less the %d applied)", ce.NotDone, len(result.Failed), 60-applied, applied)
	}
	rel, err := store.Latest(ctx, "p", "w")
	if err != nil {
		t.Fatal(err)
	}
	if rel.Phase != model.PhaseFailed || !strings.HasPrefix(rel.Message, "cancelled by alice at ") || !strings.Contains(rel.Message, "wrong change") {
		t.Errorf("release %s %q, want failed, cancelled by alice", rel.Phase, rel.Message)
	}
	var inState, live []string
	for _, r := range rel.State.Resources {
		inState = append(inState, r.ID)
	}
	for id := range rt.objects {
		live = append(live, id)
	}
	slices.Sort(inState)
	slices.Sort(live)
	if !slices.Equal(inState, live) {
		t.Errorf("the release records %d objects, %d are live:\nrecorded %v\nlive     %v", len(inState), len(live), inState, live)
	}

	// The next apply (no cancel for its revision) finishes the rest.
	if _, err := e.Apply(ctx, stack(rs...), engine.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(rt.objects) != 60 {
		t.Errorf("after the next apply %d objects, want 60", len(rt.objects))
	}
}

// stoppingRuntime is fakeRuntime whose last apply of a stack of n closes
// stop, as a process told to stop once its apply is all but done.
type stoppingRuntime struct {
	*fakeRuntime
	n       int32
	stop    chan struct{}
	applies atomic.Int32
}

func (s *stoppingRuntime) Apply(ctx context.Context, prior *model.Resource, r model.Resource, dryRun bool) (*model.Resource, error) {
	out, err := s.fakeRuntime.Apply(ctx, prior, r, dryRun)
	if !dryRun && s.applies.Add(1) == s.n {
		close(s.stop)
		time.Sleep(100 * time.Millisecond) // the operation sees the stop before it ends
	}
	return out, err
}

// TestStopAfterEverythingSucceeds: a stop that comes while the last
// resource is applied stops nothing, so the release ends succeeded, not
// cancelled with nothing left undone.
func TestStopAfterEverythingSucceeds(t *testing.T) {
	e, rt, store := setup(t)
	srt := &stoppingRuntime{fakeRuntime: rt, n: 3, stop: make(chan struct{})}
	e.Runtimes[model.Terraform] = engine.Built(srt)
	ctx := engine.WithStop(context.Background(), srt.stop, func() *model.Cancel { return &model.Cancel{By: "SIGTERM"} })
	if _, err := e.Apply(ctx, stack(res("a", map[string]any{"v": 1}), res("b", map[string]any{"v": 2}, id("a")), res("c", map[string]any{"v": 3}, id("b"))), engine.ApplyOptions{}); err != nil {
		t.Fatalf("apply: %v", err)
	}
	rel, err := store.Latest(context.Background(), "p", "w")
	if err != nil || rel.Phase != model.PhaseSucceeded || len(rel.State.Resources) != 3 {
		t.Fatalf("release %+v (%v), want succeeded with the three", rel, err)
	}
}

// TestStopCancelsWhatDoesNotHeedIt: with no apply under way, a stop
// cancels the context at once (a preview stops), and a preview or apply
// begun after it does not begin.
func TestStopCancelsWhatDoesNotHeedIt(t *testing.T) {
	stop := make(chan struct{})
	ctx := engine.WithStop(context.Background(), stop, func() *model.Cancel { return &model.Cancel{By: "SIGINT"} })
	close(stop)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the context outlived a stop no operation heeded")
	}
	e, _, store := setup(t)
	for _, dry := range []bool{true, false} {
		if _, err := e.Apply(ctx, stack(res("a", map[string]any{"v": 1})), engine.ApplyOptions{DryRun: dry}); !errors.Is(err, engine.ErrStopped) {
			t.Errorf("apply (dry run %v) after the stop: %v, want ErrStopped", dry, err)
		}
	}
	if revs, _ := store.Revisions(context.Background(), "p", "w"); len(revs) != 0 {
		t.Errorf("releases %v after the stop, want none", revs)
	}
}
