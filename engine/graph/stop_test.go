package graph

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/kusionpr/kusionpr/model"
)

// TestWalkStop: once Stop closes, the calls running finish with a live
// context and succeed, no other call starts, and every node not started
// is Canceled with StopErr.
func TestWalkStop(t *testing.T) {
	var rs model.Resources
	for i := range 20 {
		rs = append(rs, plain(fmt.Sprintf("n%02d", i)))
	}
	g := mustNew(t, rs)
	stop := make(chan struct{})
	errStopped := errors.New("cancelled by octocat")
	var mu sync.Mutex
	var ran []string
	gate := make(chan struct{})
	var closeOnce sync.Once
	res := g.Walk(context.Background(), WalkOptions{Parallelism: 4, Stop: stop, StopErr: errStopped}, func(ctx context.Context, id string) error {
		mu.Lock()
		ran = append(ran, id)
		n := len(ran)
		mu.Unlock()
		if n == 4 {
			// The fourth call starts: stop, then let the four finish.
			closeOnce.Do(func() { close(stop); close(gate) })
		}
		<-gate
		if ctx.Err() != nil {
			return fmt.Errorf("%s: the context ended in flight", id)
		}
		return nil
	})
	if len(ran) != 4 {
		t.Fatalf("%d calls ran, want the 4 in flight when Stop closed: %v", len(ran), ran)
	}
	var succeeded, canceled int
	for id, r := range res {
		switch {
		case r.Status == Succeeded:
			succeeded++
		case r.Status == Canceled && errors.Is(r.Err, errStopped):
			canceled++
		default:
			t.Errorf("%s: %+v", id, r)
		}
	}
	if succeeded != 4 || canceled != 16 {
		t.Errorf("%d succeeded and %d canceled, want 4 and 16", succeeded, canceled)
	}
}
