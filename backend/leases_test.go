package backend

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestLeases: on every backend, of processes taking a lease at once exactly
// one holds it; it stays held until released or lapsed; the next taker sees
// what the last did; a holder whose lease lapsed and was taken cannot renew
// or release it; a refusing condition takes nothing.
func TestLeases(t *testing.T) {
	ctx := context.Background()
	for _, b := range allBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := openURL(t, b.url(t))
			now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
			var mu sync.Mutex
			s.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

			const takers = 8
			var wg sync.WaitGroup
			won := make(chan *Lease, takers)
			for i := range takers {
				wg.Go(func() {
					l, err := s.TakeLease(ctx, "drift-1", string(rune('a'+i)), time.Minute, nil)
					var held *LeaseHeldError
					switch {
					case err == nil:
						won <- l
					case !errors.As(err, &held):
						t.Errorf("taker %d: %v, want the lease held", i, err)
					}
				})
			}
			wg.Wait()
			close(won)
			var first *Lease
			for l := range won {
				if first != nil {
					t.Fatalf("two holders at once: %s and %s", first.Holder, l.Holder)
				}
				first = l
			}
			if first == nil || first.Generation != 1 {
				t.Fatalf("no taker holds the lease: %+v", first)
			}

			advance(30 * time.Second)
			if _, err := s.TakeLease(ctx, "drift-1", "late", time.Minute, nil); err == nil {
				t.Fatal("taken while held")
			}
			if err := s.RenewLease(ctx, first, time.Minute); err != nil {
				t.Fatal(err)
			}
			advance(45 * time.Second) // past the first minute, within the renewal
			if _, err := s.TakeLease(ctx, "drift-1", "late", time.Minute, nil); err == nil {
				t.Fatal("taken while renewed")
			}
			if err := s.ReleaseLease(ctx, first); err != nil {
				t.Fatal(err)
			}
			refusal := errors.New("scanned a moment ago")
			var seen *Lease
			if _, err := s.TakeLease(ctx, "drift-1", "next", time.Minute, func(last *Lease) error { seen = last; return refusal }); !errors.Is(err, refusal) {
				t.Fatalf("a refusing condition: %v", err)
			}
			if seen == nil || seen.Holder != first.Holder || seen.Released.IsZero() {
				t.Fatalf("the condition saw %+v, want the first holder's released lease", seen)
			}
			second, err := s.TakeLease(ctx, "drift-1", "next", time.Minute, nil)
			if err != nil || second.Generation != 2 {
				t.Fatalf("taking a released lease: %+v, %v (a refused condition must take nothing)", second, err)
			}

			// The holder dies: past its lease, another takes it, and the
			// first, waking up, can neither renew nor release.
			advance(2 * time.Minute)
			third, err := s.TakeLease(ctx, "drift-1", "after", time.Minute, nil)
			if err != nil || third.Generation != 3 {
				t.Fatalf("taking a lapsed lease: %+v, %v", third, err)
			}
			if err := s.RenewLease(ctx, second, time.Minute); !errors.Is(err, ErrLeaseLost) {
				t.Errorf("renewing a lapsed and taken lease: %v", err)
			}
			if err := s.ReleaseLease(ctx, second); !errors.Is(err, ErrLeaseLost) {
				t.Errorf("releasing a lapsed and taken lease: %v", err)
			}
			if _, err := s.TakeLease(ctx, "../releases", "x", time.Minute, nil); err == nil {
				t.Error("a lease named out of its folder was taken")
			}
			if revs, err := s.Revisions(ctx, "drift-1", "default"); err != nil || len(revs) != 0 {
				t.Errorf("leases seen as releases: %v, %v", revs, err)
			}
		})
	}
}
