package webhook

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// request is a delivery of body as GitHub sends it, signed with secret;
// contentLength -1 sends it chunked (no length announced).
func deliveryRequest(body io.Reader, contentLength int64, signature string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhook", body)
	r.ContentLength = contentLength
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-GitHub-Event", "ping")
	r.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	r.Header.Set("X-Hub-Signature-256", signature)
	return r
}

func status(err error) int {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Status
	}
	return 0
}

// gatedBody is a body that sends nothing until its gate opens, as a slow
// sender does, then n zero bytes.
type gatedBody struct {
	gate    chan struct{}
	started chan struct{}
	once    sync.Once
	left    int64
}

func (g *gatedBody) Read(p []byte) (int, error) {
	g.once.Do(func() { close(g.started) })
	<-g.gate
	if g.left == 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), g.left)
	clear(p[:n])
	g.left -= n
	return int(n), nil
}

func TestBudget(t *testing.T) {
	const total = 8 << 20 // 2 MiB kept for small bodies: big ones share 6 MiB
	wrongSig := sign("not the secret", "")

	t.Run("a body bigger than the budget allows is refused unread", func(t *testing.T) {
		b := NewBudget(total, time.Hour)
		body := &zeros{}
		_, err := Receive(deliveryRequest(io.NopCloser(body), 6<<20+1, wrongSig), []byte(testSecret), b)
		if status(err) != http.StatusRequestEntityTooLarge || body.read != 0 {
			t.Fatalf("Receive: %v after reading %d bytes; want 413 before reading", err, body.read)
		}
	})

	t.Run("a chunked body counts as the most it may send", func(t *testing.T) {
		b := NewBudget(total, time.Hour)
		body := &zeros{}
		_, err := Receive(deliveryRequest(io.NopCloser(body), -1, wrongSig), []byte(testSecret), b)
		if status(err) != http.StatusRequestEntityTooLarge || body.read > 6<<20+1 {
			t.Fatalf("Receive: %v after reading %d bytes; want 413 within 6 MiB", err, body.read)
		}
		if b.inUse() != 0 {
			t.Errorf("%d bytes of the budget still held after Receive returned", b.inUse())
		}
	})

	t.Run("no room: 503 with Retry-After, the body unread", func(t *testing.T) {
		b := NewBudget(total, 10*time.Millisecond)
		held := &gatedBody{gate: make(chan struct{}), started: make(chan struct{}), left: 5 << 20}
		done := make(chan error, 1)
		go func() {
			_, err := Receive(deliveryRequest(held, 5<<20, wrongSig), []byte(testSecret), b)
			done <- err
		}()
		<-held.started // the slow sender holds 5 MiB

		body := &zeros{}
		_, err := Receive(deliveryRequest(io.NopCloser(io.LimitReader(body, 2<<20)), 2<<20, wrongSig), []byte(testSecret), b)
		e, ok := errors.AsType[*Error](err)
		if !ok || e.Status != http.StatusServiceUnavailable || e.RetryAfter <= 0 || body.read != 0 {
			t.Fatalf("Receive: %v after reading %d bytes; want 503 with Retry-After before reading", err, body.read)
		}

		// A small body still fits, in the room kept for small ones.
		small := `{"zen":"Keep it logically awesome."}`
		d, err := Receive(deliveryRequest(strings.NewReader(small), int64(len(small)), sign(testSecret, small)), []byte(testSecret), b)
		if err != nil || string(d.Body) != small {
			t.Fatalf("a small delivery beside a held big one: %v", err)
		}

		close(held.gate)
		if err := <-done; status(err) != http.StatusUnauthorized {
			t.Errorf("the slow sender's body: %v, want 401", err)
		}
		if b.inUse() != 0 {
			t.Errorf("%d bytes of the budget still held after every Receive returned", b.inUse())
		}
	})

	t.Run("a waiting request goes when room is given back", func(t *testing.T) {
		b := NewBudget(total, time.Hour)
		held := &gatedBody{gate: make(chan struct{}), started: make(chan struct{}), left: 5 << 20}
		first := make(chan error, 1)
		go func() {
			_, err := Receive(deliveryRequest(held, 5<<20, wrongSig), []byte(testSecret), b)
			first <- err
		}()
		<-held.started
		big := strings.Repeat(" ", 3<<20) + "{}"
		second := make(chan error, 1)
		go func() {
			_, err := Receive(deliveryRequest(strings.NewReader(big), int64(len(big)), sign(testSecret, big)), []byte(testSecret), b)
			second <- err
		}()
		close(held.gate)
		if err := <-first; status(err) != http.StatusUnauthorized {
			t.Errorf("first: %v, want 401", err)
		}
		if err := <-second; err != nil {
			t.Errorf("second, signed: %v, want accepted once the first gave its room back", err)
		}
	})

	t.Run("a client that goes away stops waiting", func(t *testing.T) {
		b := NewBudget(total, time.Hour)
		release, ok := b.take(context.Background(), 6<<20)
		if !ok {
			t.Fatal("an empty budget had no room")
		}
		defer release()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := deliveryRequest(strings.NewReader("{}"), 2<<20, wrongSig).WithContext(ctx)
		if _, err := Receive(r, []byte(testSecret), b); status(err) != http.StatusServiceUnavailable {
			t.Errorf("Receive: %v, want 503", err)
		}
	})
}

// TestBudgetFlood: strangers posting big bodies with well-formed, wrong
// signatures all at once never hold more than the budget, and are all
// refused.
func TestBudgetFlood(t *testing.T) {
	const total, size = 8 << 20, 3 << 20
	b := NewBudget(total, time.Minute)
	var peak atomic.Int64
	var wg sync.WaitGroup
	var refused atomic.Int32
	for range 20 {
		wg.Go(func() {
			body := &peakReader{r: io.LimitReader(&zeros{}, size), b: b, peak: &peak}
			_, err := Receive(deliveryRequest(body, size, sign("not the secret", "")), []byte(testSecret), b)
			if status(err) == http.StatusUnauthorized {
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	if refused.Load() != 20 {
		t.Errorf("%d of 20 refused with 401", refused.Load())
	}
	if peak.Load() > total || peak.Load() < size {
		t.Errorf("the budget held at most %d bytes while bodies were read, want between %d and %d", peak.Load(), size, total)
	}
	if b.inUse() != 0 {
		t.Errorf("%d bytes still held", b.inUse())
	}
}

// peakReader records the most of the budget in use while it is read.
type peakReader struct {
	r    io.Reader
	b    *Budget
	peak *atomic.Int64
}

func (p *peakReader) Read(buf []byte) (int, error) {
	for u := p.b.inUse(); ; {
		old := p.peak.Load()
		if u <= old || p.peak.CompareAndSwap(old, u) {
			break
		}
	}
	return p.r.Read(buf)
}

func TestDedupKeepsFixedSizeKeys(t *testing.T) {
	// 300 ids of 900 KB each: remembered as hashes, they cost kilobytes.
	d := NewDedup(10000, time.Hour)
	long := strings.Repeat("x", 900<<10)
	var before, after runtimeMem
	before.read()
	for i := range 300 {
		d.Seen(long[:len(long)-i])
	}
	after.read()
	if grew := after.heap - before.heap; grew > 1<<20 {
		t.Errorf("the dedup grew the live heap by %d bytes for 300 ids", grew)
	}
	if !d.Seen(long) || d.Seen(long[:100]) {
		t.Error("hashed ids are not told apart as the ids were")
	}
}

type runtimeMem struct{ heap int64 }

func (m *runtimeMem) read() {
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.heap = int64(s.HeapAlloc)
}
