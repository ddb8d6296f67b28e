package webhook

import (
	"context"
	"sync"
	"time"
)

// Budget bounds the bytes of request bodies held before their signature is
// checked, across every request at once. Without it, each request may hold
// up to MaxBody, and 40 strangers posting 25 MB each hold a gigabyte: the
// signature can be checked only once the whole body is in.
//
// A body is charged what it has sent, chunk by chunk as it arrives, never
// more than it announced: a sender who announces a big body and sends
// nothing holds one first chunk (4 KiB), not the size it announced. What a
// body took is given back when Receive returns, and a body that stops
// coming is cut off at its deadline (bodyTime), so a stalled sender frees
// its share within seconds instead of holding it for as long as the
// server's own timeouts allow. It is safe for concurrent use.
type Budget struct {
	total   int64
	reserve int64 // kept for small bodies: GitHub's deliveries for pull requests and comments are far below smallBody
	wait    time.Duration
	pace    pace

	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed, and replaced, whenever bytes are given back
	// holders are the bodies holding some of the budget, waiting those of
	// them waiting for more.
	holders, waiting int
}

// smallBody is the size up to which a body may use the budget's reserve.
// The events the bot acts on (pull_request, issue_comment) are tens of
// kilobytes, a few hundred at the very most; only a stranger sends
// megabytes, and a flood of big bodies must leave room for them.
const smallBody = 1 << 20

// NewBudget lets at most total bytes of unverified bodies be in memory at
// once. A request that finds no room for its next chunk waits for room, up
// to wait in all, then is refused with 503 and Retry-After. A quarter of
// total is kept for bodies that announce at most 1 MiB, so that big bodies
// alone cannot crowd out GitHub's usual deliveries. A body larger than
// total can never be read: it is refused with 413.
func NewBudget(total int64, wait time.Duration) *Budget {
	return &Budget{total: total, reserve: total / 4, wait: wait, pace: githubPace, freed: make(chan struct{})}
}

// share is what one body holds of the budget. A nil share bounds nothing.
type share struct {
	b *Budget
	// limit is how full the budget may be after this body's next chunk:
	// all of it for a small body, all but the reserve for any other.
	limit    int64
	held     int64
	waitLeft time.Duration
	waiting  bool // counted in b.waiting
}

// share starts a body's share, for a body announcing the given length (-1:
// none, which counts as a big body).
func (b *Budget) share(announced int64) *share {
	if b == nil {
		return nil
	}
	limit := b.total
	if announced < 0 || announced > smallBody {
		limit -= b.reserve
	}
	return &share{b: b, limit: limit, waitLeft: b.wait}
}

// grow takes n more bytes for the body, waiting for room no longer than
// what is left of the budget's wait, unless ctx ends first; it returns how
// long it waited, and whether it got them.
//
// Bodies charged as they arrive can hold each other up: each holding part
// of the budget, each waiting for room the others hold. So a body that
// finds no room while every other body holding some is waiting too is
// refused at once, and what it gives back lets the others go on; while
// any body holding some is still reading (a slow sender, whose deadline
// will come), the others wait for it.
func (s *share) grow(ctx context.Context, n int64) (waited time.Duration, ok bool) {
	if s == nil || n <= 0 {
		return 0, true
	}
	b := s.b
	start := time.Now()
	var timeout <-chan time.Time
	b.mu.Lock()
	defer b.mu.Unlock()
	defer s.stopWaiting()
	defer func() {
		if timeout != nil {
			s.waitLeft -= time.Since(start)
		}
	}()
	for {
		if b.used+n <= s.limit {
			// Whoever fits goes, not whoever came first: a small
			// delivery need not queue behind strangers' big bodies.
			b.used += n
			if s.held == 0 {
				b.holders++
			}
			s.held += n
			return time.Since(start), true
		}
		if s.held > 0 && !s.waiting {
			s.waiting = true
			b.waiting++
		}
		if s.held > 0 && b.waiting == b.holders {
			return time.Since(start), false
		}
		if timeout == nil {
			if s.waitLeft <= 0 {
				return 0, false
			}
			t := time.NewTimer(s.waitLeft)
			defer t.Stop()
			timeout = t.C
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
			b.mu.Lock()
		case <-timeout:
			b.mu.Lock()
			return time.Since(start), false
		case <-ctx.Done():
			b.mu.Lock()
			return time.Since(start), false
		}
	}
}

// stopWaiting takes the body out of the waiting count; b.mu is held.
func (s *share) stopWaiting() {
	if s.waiting {
		s.waiting = false
		s.b.waiting--
	}
}

// release gives back all the body took.
func (s *share) release() {
	if s == nil || s.held == 0 {
		return
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= s.held
	b.holders--
	s.held = 0
	close(b.freed)
	b.freed = make(chan struct{})
}

// InUse is the bytes of unverified bodies held now: what a flood costs.
func (b *Budget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// largest is the biggest body that can ever fit.
func (b *Budget) largest() int64 {
	return max(b.total-b.reserve, min(b.total, smallBody))
}

// pace is how long a body may take to arrive: grace, plus the time its
// announced length takes at rate bytes a second, and never more than most.
type pace struct {
	grace time.Duration
	rate  int64
	most  time.Duration
}

// githubPace is generous to GitHub and short for anyone who stalls.
// GitHub sends a delivery at once and gives up on an answer after ten
// seconds, so a body still arriving after that is no delivery anyone
// waits for; 128 KiB a second (a megabit) is far below the pace of
// GitHub's servers, and the grace covers a slow start across the
// internet. A 30 KB pull request event may take 3.2 s, a 1 MiB body or
// one of unknown length 10 s.
var githubPace = pace{grace: 3 * time.Second, rate: 128 << 10, most: 10 * time.Second}

// bodyTime is how long a body announcing the given length (-1: unknown)
// may take to arrive, not counting the time it waited for room in the
// budget.
func (p pace) bodyTime(announced int64) time.Duration {
	if announced < 0 || announced/p.rate >= int64(p.most/time.Second) {
		return p.most
	}
	return min(p.most, p.grace+time.Duration(announced)*time.Second/time.Duration(p.rate))
}
