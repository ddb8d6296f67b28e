package bot

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestQueue(t *testing.T) {
	q := newQueue(2, newMetrics())
	release := make(chan struct{})
	var running, most, ran atomic.Int32
	job := func(context.Context) {
		n := running.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
		running.Add(-1)
		ran.Add(1)
	}
	ctx := context.Background()
	for _, key := range []string{"a", "b", "c", "a", "b"} {
		q.add(ctx, key, job)
	}
	if q.add(ctx, "c", job) {
		t.Error("a job with the key of a waiting one was taken")
	}
	time.Sleep(100 * time.Millisecond)
	close(release)
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := q.drain(dctx); err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 3 || most.Load() != 2 {
		t.Errorf("ran %d jobs, at most %d at once; want 3 (a, b, c once each), 2 at once", ran.Load(), most.Load())
	}
	if q.add(ctx, "d", job) {
		t.Error("a drained queue took a job")
	}
}

func TestQueueDrainDeadline(t *testing.T) {
	q := newQueue(1, newMetrics())
	var wg sync.WaitGroup
	wg.Add(1)
	q.add(context.Background(), "slow", func(context.Context) { defer wg.Done(); time.Sleep(2 * time.Second) })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := q.drain(ctx); err == nil {
		t.Error("drain returned before the running job ended and before its deadline said so")
	}
	wg.Wait()
}
