package webhook

import (
	"context"
	"sync"
	"time"
)

// Budget bounds the bytes of request bodies read before their signature is
// checked, across every request at once. Without it, each request may hold
// up to MaxBody, and 40 strangers posting 25 MB each hold a gigabyte: the
// signature can be checked only once the whole body is in. A request takes
// its share before reading (the Content-Length it announces, or the most it
// may send when it announces none) and gives it back when Receive returns.
// It is safe for concurrent use.
type Budget struct {
	total   int64
	reserve int64 // kept for small bodies: GitHub's deliveries for pull requests and comments are far below smallBody
	wait    time.Duration

	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed, and replaced, whenever bytes are given back
}

// smallBody is the size up to which a body may use the budget's reserve.
// The events the bot acts on (pull_request, issue_comment) are tens of
// kilobytes, a few hundred at the very most; only a stranger sends
// megabytes, and a flood of big bodies must leave room for them.
const smallBody = 1 << 20

// NewBudget lets at most total bytes of unverified bodies be in memory at
// once. A request that does not fit waits up to wait for room, then is
// refused with 503 and Retry-After. A quarter of total is kept for bodies
// up to 1 MiB, so that big bodies alone cannot crowd out GitHub's usual
// deliveries. A body larger than total can never be read: it is refused
// with 413.
func NewBudget(total int64, wait time.Duration) *Budget {
	return &Budget{total: total, reserve: total / 4, wait: wait, freed: make(chan struct{})}
}

// take holds n bytes of the budget until release is called; ok is false if
// there was no room for them within the wait, or ctx ended first.
func (b *Budget) take(ctx context.Context, n int64) (release func(), ok bool) {
	limit := b.total
	if n > smallBody {
		limit -= b.reserve
	}
	var timeout <-chan time.Time
	for {
		b.mu.Lock()
		if b.used+n <= limit {
			// Whoever fits goes, not whoever came first: a small
			// delivery need not queue behind strangers' big bodies.
			b.used += n
			b.mu.Unlock()
			return func() { b.give(n) }, true
		}
		freed := b.freed
		b.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(b.wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-freed:
		case <-timeout:
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
}

func (b *Budget) give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
}

// inUse is the bytes held now (for tests).
func (b *Budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// largest is the biggest body that can ever fit.
func (b *Budget) largest() int64 {
	return max(b.total-b.reserve, min(b.total, smallBody))
}
