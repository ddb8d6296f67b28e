package webhook

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestDedup(t *testing.T) {
	type step struct {
		after  time.Duration // the clock moves this much before the call
		id     string
		forget bool // Forget(id) instead of Seen(id)
		seen   bool
	}
	tests := []struct {
		name  string
		size  int
		ttl   time.Duration
		steps []step
	}{
		{name: "same id twice", size: 10, ttl: time.Hour, steps: []step{
			{id: "a"}, {id: "a", seen: true}, {id: "b"}, {id: "a", seen: true},
		}},
		{name: "evicted by size, oldest first", size: 2, ttl: time.Hour, steps: []step{
			{id: "a"}, {id: "b"}, {id: "c"}, // a goes
			{id: "b", seen: true}, {id: "c", seen: true},
			{id: "a"}, // back in, b goes
			{id: "c", seen: true}, {id: "b"},
		}},
		{name: "a repeat does not keep an id from eviction", size: 2, ttl: time.Hour, steps: []step{
			{id: "a"}, {id: "b"}, {id: "a", seen: true}, {id: "c"}, {id: "a"},
		}},
		{name: "evicted by age", size: 10, ttl: time.Minute, steps: []step{
			{id: "a"},
			{after: 30 * time.Second, id: "b"},
			{after: 29 * time.Second, id: "a", seen: true},
			{after: time.Second, id: "a"}, // a is a minute old: forgotten, then seen anew
			{after: 29 * time.Second, id: "b", seen: true},
			{after: time.Second, id: "b"},
			{after: 29 * time.Second, id: "a", seen: true}, // re-seen at 60s: 59s old
		}},
		{name: "a repeat does not extend the age", size: 10, ttl: time.Minute, steps: []step{
			{id: "a"}, {after: 50 * time.Second, id: "a", seen: true}, {after: 10 * time.Second, id: "a"},
		}},
		{name: "no ttl keeps ids until size", size: 1, ttl: 0, steps: []step{
			{id: "a"}, {after: 1000 * time.Hour, id: "a", seen: true}, {id: "b"}, {id: "a"},
		}},
		{name: "size below one is one", size: 0, ttl: time.Hour, steps: []step{
			{id: "a"}, {id: "a", seen: true}, {id: "b"}, {id: "a"},
		}},
		{name: "forget lets a failed delivery through again", size: 10, ttl: time.Hour, steps: []step{
			{id: "a"}, {id: "a", forget: true}, {id: "a"}, {id: "a", seen: true},
			{id: "unknown", forget: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDedup(tt.size, tt.ttl)
			clock := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			d.now = func() time.Time { return clock }
			for i, s := range tt.steps {
				clock = clock.Add(s.after)
				if s.forget {
					d.Forget(s.id)
					continue
				}
				if got := d.Seen(s.id); got != s.seen {
					t.Fatalf("step %d: Seen(%q) = %v, want %v", i, s.id, got, s.seen)
				}
			}
			if n := d.order.Len(); n != len(d.ids) || n > max(tt.size, 1) {
				t.Errorf("holds %d ids in order and %d in the map, size %d", n, len(d.ids), tt.size)
			}
		})
	}
}

// TestDedupConcurrent: of many handlers receiving one delivery at once,
// exactly one goes on.
func TestDedupConcurrent(t *testing.T) {
	d := NewDedup(100, time.Hour)
	var fresh atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if !d.Seen("delivery") {
				fresh.Add(1)
			}
			d.Seen("other")
		})
	}
	wg.Wait()
	if fresh.Load() != 1 {
		t.Fatalf("%d handlers saw the delivery as new, want 1", fresh.Load())
	}
}
