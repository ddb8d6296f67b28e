package terraform

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestBatchContexts: a batch is done for only when every call in it is. A
// call whose context ends before its batch runs leaves it with its
// context's error, and the batch runs the others; once the batch runs, a
// call whose context ends still waits for it (the batch may be applying
// its resource) and the batch goes on for the others; when every call's
// context is done, the batch's is too.
func TestBatchContexts(t *testing.T) {
	t.Run("a call gone before the batch runs leaves it", func(t *testing.T) {
		var got []*job
		b := &batcher{run: func(bt *batch) { got = append(got, bt.jobs...) }}
		stay, leave := &job{}, &job{}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); b.do(context.Background(), planBatch, stay) }()
		go func() { defer wg.Done(); b.do(ctx, planBatch, leave) }()
		wg.Wait()
		if !errors.Is(leave.err, context.Canceled) || stay.err != nil {
			t.Errorf("errors: left %v, stayed %v; want the left call's context's, none", leave.err, stay.err)
		}
		if len(got) != 1 || got[0] != stay {
			t.Errorf("the batch ran %d calls, want the one that stayed", len(got))
		}
	})

	t.Run("a call after every other has gone runs in a batch of its own", func(t *testing.T) {
		var runs [][]*job
		var mu sync.Mutex
		b := &batcher{run: func(bt *batch) {
			mu.Lock()
			runs = append(runs, bt.jobs)
			mu.Unlock()
			if err := bt.ctx.Err(); err != nil {
				for _, j := range bt.jobs {
					j.err = err
				}
			}
		}}
		gone, ctx := &job{}, context.Background()
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		b.do(cctx, destroyBatch, gone)
		// Once the gone call's batch knows nobody waits for it...
		for {
			b.mu.Lock()
			bt := b.open[destroyBatch]
			dead := bt == nil || bt.ctx.Err() != nil
			b.mu.Unlock()
			if dead {
				break
			}
			time.Sleep(time.Millisecond)
		}
		later := &job{}
		b.do(ctx, destroyBatch, later)
		if later.err != nil {
			t.Errorf("the later call failed with %v: it joined a batch cancelled for the call before it", later.err)
		}
	})

	t.Run("a running batch outlives one call's context, not all", func(t *testing.T) {
		started, release := make(chan struct{}), make(chan struct{})
		var batchCtx context.Context
		b := &batcher{run: func(bt *batch) {
			batchCtx = bt.ctx
			close(started)
			select {
			case <-release:
			case <-bt.ctx.Done():
			}
		}}
		ctxA, cancelA := context.WithCancel(context.Background())
		ctxB, cancelB := context.WithCancel(context.Background())
		a, bj := &job{}, &job{}
		done := make(chan string, 2)
		go func() { b.do(ctxA, applyBatch, a); done <- "a" }()
		go func() { b.do(ctxB, applyBatch, bj); done <- "b" }()
		<-started
		cancelA()
		select {
		case who := <-done:
			t.Fatalf("call %s returned while its batch ran", who)
		case <-time.After(100 * time.Millisecond):
		}
		if batchCtx.Err() != nil {
			t.Fatalf("the batch was cancelled with one call still waiting for it")
		}
		cancelB()
		for range 2 {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the calls did not return once every context was done")
			}
		}
		if !errors.Is(batchCtx.Err(), context.Canceled) {
			t.Errorf("batch context: %v, want cancelled once every call's was", batchCtx.Err())
		}
	})
}
