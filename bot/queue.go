package bot

import (
	"context"
	"sync"
)

// queue runs jobs with bounded concurrency. A job whose key is already
// waiting or running is dropped: duplicate triggers for the same pull
// request, commit and command coalesce into one run.
type queue struct {
	sem     chan struct{}
	m       *metrics
	mu      sync.Mutex
	pending map[string]bool
	wg      sync.WaitGroup
	closed  bool
}

func newQueue(concurrency int, m *metrics) *queue {
	return &queue{sem: make(chan struct{}, concurrency), m: m, pending: map[string]bool{}}
}

// add starts fn in the background unless key is already queued; it reports
// whether fn was taken.
func (q *queue) add(ctx context.Context, key string, fn func(ctx context.Context)) bool {
	return q.addAfter(ctx, key, nil, fn)
}

// addAfter is add with a wait first: before runs without taking one of
// the slots, and fn runs only if before says so. A job waiting on another
// (a merge queue's group waiting for the group ahead) must not hold the
// slot the other needs.
func (q *queue) addAfter(ctx context.Context, key string, before func(ctx context.Context) bool, fn func(ctx context.Context)) bool {
	q.mu.Lock()
	if q.closed || q.pending[key] {
		q.mu.Unlock()
		return false
	}
	q.pending[key] = true
	q.wg.Add(1)
	q.mu.Unlock()
	q.m.queue.Inc()
	go func() {
		defer func() {
			q.mu.Lock()
			delete(q.pending, key)
			q.mu.Unlock()
			q.m.queue.Dec()
			q.wg.Done()
		}()
		if before != nil && !before(ctx) {
			return
		}
		select {
		case q.sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-q.sem }()
		fn(ctx)
	}()
	return true
}

// drain stops taking jobs and waits for the running ones until ctx ends.
func (q *queue) drain(ctx context.Context) error {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	done := make(chan struct{})
	go func() { q.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
