package webhook

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"
)

// Dedup remembers recent delivery ids so that a redelivery (GitHub's own
// retry, or someone pressing "Redeliver") does not run a command twice.
// It is bounded in both size and age, so a flood of deliveries cannot grow
// it without limit; the price is that an id pushed out early is handled
// again if it comes back. An id is kept as its SHA-256, so an entry costs
// the same whatever the id's length. It is safe for concurrent use.
type Dedup struct {
	mu    sync.Mutex
	size  int
	ttl   time.Duration
	order *list.List // of entry, oldest first: ids are never refreshed, so first seen is also first to expire
	ids   map[key]*list.Element
	now   func() time.Time // replaced in tests
}

type key [sha256.Size]byte

type entry struct {
	id   key
	seen time.Time
}

// NewDedup remembers at most size ids (at least 1), each for ttl; a ttl of
// zero or less keeps ids until size pushes them out.
func NewDedup(size int, ttl time.Duration) *Dedup {
	return &Dedup{
		size:  max(size, 1),
		ttl:   ttl,
		order: list.New(),
		ids:   make(map[key]*list.Element),
		now:   time.Now,
	}
}

// Seen reports whether id was seen before, and records it. A repeat does
// not extend how long id is remembered, which keeps the ids in the order
// they expire in, so expiring is done from the front only.
func (d *Dedup) Seen(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	d.expire(now)
	k := key(sha256.Sum256([]byte(id)))
	if _, ok := d.ids[k]; ok {
		return true
	}
	d.ids[k] = d.order.PushBack(entry{id: k, seen: now})
	for d.order.Len() > d.size {
		d.remove(d.order.Front())
	}
	return false
}

// Forget drops id, so that a delivery the bot failed to handle is handled
// when GitHub delivers it again.
func (d *Dedup) Forget(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.ids[key(sha256.Sum256([]byte(id)))]; ok {
		d.remove(e)
	}
}

func (d *Dedup) expire(now time.Time) {
	if d.ttl <= 0 {
		return
	}
	for e := d.order.Front(); e != nil && now.Sub(e.Value.(entry).seen) >= d.ttl; e = d.order.Front() {
		d.remove(e)
	}
}

func (d *Dedup) remove(e *list.Element) {
	delete(d.ids, e.Value.(entry).id)
	d.order.Remove(e)
}
