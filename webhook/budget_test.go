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

// stallingBody is a body that sends sent zero bytes, then nothing until its
// gate opens, as a slow sender does, then the rest of left.
type stallingBody struct {
	sent, left int64
	gate       chan struct{}
	stalled    chan struct{} // closed when the body stops sending
	once       sync.Once
}

func newStallingBody(sent, total int64) *stallingBody {
	return &stallingBody{sent: sent, left: total, gate: make(chan struct{}), stalled: make(chan struct{})}
}

func (g *stallingBody) Read(p []byte) (int, error) {
	if g.sent == 0 {
		g.once.Do(func() { close(g.stalled) })
		<-g.gate
	}
	if g.left == 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), g.left)
	if g.sent > 0 {
		n = min(n, g.sent)
		g.sent -= n
	}
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
		_, err := Receive(nil, deliveryRequest(io.NopCloser(body), 6<<20+1, wrongSig), []byte(testSecret), b)
		if status(err) != http.StatusRequestEntityTooLarge || body.read != 0 {
			t.Fatalf("Receive: %v after reading %d bytes; want 413 before reading", err, body.read)
		}
	})

	t.Run("a chunked body is read up to the most a body may hold, then refused", func(t *testing.T) {
		b := NewBudget(total, time.Hour)
		body := &zeros{}
		_, err := Receive(nil, deliveryRequest(io.NopCloser(body), -1, wrongSig), []byte(testSecret), b)
		if status(err) != http.StatusRequestEntityTooLarge || body.read > 6<<20+1 {
			t.Fatalf("Receive: %v after reading %d bytes; want 413 within 6 MiB", err, body.read)
		}
		if b.InUse() != 0 {
			t.Errorf("%d bytes of the budget still held after Receive returned", b.InUse())
		}
	})

	t.Run("no room: 503 with Retry-After, the body unread", func(t *testing.T) {
		b := NewBudget(total, 10*time.Millisecond)
		// A slow sender has sent all but the last byte of 6 MiB: it
		// holds all the room big bodies have.
		held := newStallingBody(6<<20-1, 6<<20)
		done := make(chan error, 1)
		go func() {
			_, err := Receive(nil, deliveryRequest(io.NopCloser(held), 6<<20, wrongSig), []byte(testSecret), b)
			done <- err
		}()
		<-held.stalled

		body := &zeros{}
		_, err := Receive(nil, deliveryRequest(io.NopCloser(io.LimitReader(body, 2<<20)), 2<<20, wrongSig), []byte(testSecret), b)
		e, ok := errors.AsType[*Error](err)
		if !ok || e.Status != http.StatusServiceUnavailable || e.RetryAfter <= 0 || body.read != 0 {
			t.Fatalf("Receive: %v after reading %d bytes; want 503 with Retry-After before reading", err, body.read)
		}

		// A small body still fits, in the room kept for small ones.
		small := `{"zen":"Keep it logically awesome."}`
		d, err := Receive(nil, deliveryRequest(strings.NewReader(small), int64(len(small)), sign(testSecret, small)), []byte(testSecret), b)
		if err != nil || string(d.Body) != small {
			t.Fatalf("a small delivery beside a held big one: %v", err)
		}

		close(held.gate)
		if err := <-done; status(err) != http.StatusUnauthorized {
			t.Errorf("the slow sender's body: %v, want 401", err)
		}
		if b.InUse() != 0 {
			t.Errorf("%d bytes of the budget still held after every Receive returned", b.InUse())
		}
	})

	t.Run("bodies that announce much and send nothing leave room for others", func(t *testing.T) {
		b := NewBudget(total, 10*time.Millisecond)
		// 80 bodies of 1 MiB announced, none sent: 80 MiB on their word,
		// ten times the budget.
		var stalled []*stallingBody
		var wg sync.WaitGroup
		for range 80 {
			s := newStallingBody(0, 1<<20)
			stalled = append(stalled, s)
			wg.Go(func() { Receive(nil, deliveryRequest(io.NopCloser(s), 1<<20, wrongSig), []byte(testSecret), b) })
			<-s.stalled
		}
		if held := b.InUse(); held > 80*firstChunk {
			t.Errorf("80 bodies that sent nothing hold %d bytes, want at most a first chunk each (%d)", held, 80*firstChunk)
		}
		big := strings.Repeat(" ", 5<<20) + "{}"
		if _, err := Receive(nil, deliveryRequest(strings.NewReader(big), int64(len(big)), sign(testSecret, big)), []byte(testSecret), b); err != nil {
			t.Errorf("a signed 5 MiB delivery beside them: %v", err)
		}
		for _, s := range stalled {
			close(s.gate)
		}
		wg.Wait()
		if b.InUse() != 0 {
			t.Errorf("%d bytes still held", b.InUse())
		}
	})

	t.Run("a waiting request goes when room is given back", func(t *testing.T) {
		b := NewBudget(total, time.Hour)
		held := newStallingBody(5<<20-1, 5<<20)
		first := make(chan error, 1)
		go func() {
			_, err := Receive(nil, deliveryRequest(io.NopCloser(held), 5<<20, wrongSig), []byte(testSecret), b)
			first <- err
		}()
		<-held.stalled
		// 3 MiB with 1 MiB of room left: read as far as it fits, then
		// waiting for the rest.
		big := strings.Repeat(" ", 3<<20) + "{}"
		second := make(chan error, 1)
		go func() {
			_, err := Receive(nil, deliveryRequest(strings.NewReader(big), int64(len(big)), sign(testSecret, big)), []byte(testSecret), b)
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
		full := b.share(6 << 20)
		if _, ok := full.grow(context.Background(), 6<<20); !ok {
			t.Fatal("an empty budget had no room")
		}
		defer full.release()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := deliveryRequest(strings.NewReader("{}"), 2<<20, wrongSig).WithContext(ctx)
		if _, err := Receive(nil, r, []byte(testSecret), b); status(err) != http.StatusServiceUnavailable {
			t.Errorf("Receive: %v, want 503", err)
		}
	})
}

// TestBudgetChargesWhatArrived: a body holds what it has sent, in the
// chunks it is read in (4 KiB doubling to 64 KiB), never more than it
// announced, whatever it announced.
func TestBudgetChargesWhatArrived(t *testing.T) {
	const total = 8 << 20
	for _, tc := range []struct {
		name            string
		announced, sent int64 // announced -1: chunked
		held            int64
	}{
		{"1 MiB announced, nothing sent", 1 << 20, 0, 4 << 10},
		{"1 MiB announced, 10 KiB sent", 1 << 20, 10 << 10, 12 << 10},
		{"1 MiB announced, 12 KiB sent: the next chunk is taken before it comes", 1 << 20, 12 << 10, 28 << 10},
		{"1 MiB announced, all but a byte sent", 1 << 20, 1<<20 - 1, 1 << 20},
		{"100 bytes announced, 50 sent", 100, 50, 100},
		{"5 MiB announced, 2 MiB sent", 5 << 20, 2 << 20, 2108 << 10},
		{"chunked, 300 KiB sent", -1, 300 << 10, 316 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBudget(total, time.Hour)
			size := tc.announced
			if size < 0 {
				size = 1 << 20
			}
			body := newStallingBody(tc.sent, size)
			done := make(chan error, 1)
			go func() {
				_, err := Receive(nil, deliveryRequest(io.NopCloser(body), tc.announced, sign("not the secret", "")), []byte(testSecret), b)
				done <- err
			}()
			<-body.stalled
			held := b.InUse()
			if held != tc.held {
				t.Errorf("holds %d bytes, want %d", held, tc.held)
			}
			if most := tc.sent + maxChunk; held < tc.sent || held > most || (tc.announced >= 0 && held > tc.announced) {
				t.Errorf("holds %d bytes having sent %d: want at least that, and at most one chunk more and what it announced", held, tc.sent)
			}
			close(body.gate)
			if err := <-done; status(err) != http.StatusUnauthorized {
				t.Errorf("Receive: %v, want 401", err)
			}
			if b.InUse() != 0 {
				t.Errorf("%d bytes still held after Receive returned", b.InUse())
			}
		})
	}
}

// TestBudgetFlood: strangers posting big bodies with well-formed, wrong
// signatures all at once never hold more than the budget, are all
// refused, and do not hold each other up: bodies are read to the end (and
// refused for their signature) while others give way.
func TestBudgetFlood(t *testing.T) {
	const total, size = 8 << 20, 3 << 20
	b := NewBudget(total, time.Hour)
	var peak atomic.Int64
	var wg sync.WaitGroup
	var wrong, gaveWay atomic.Int32
	for range 20 {
		wg.Go(func() {
			body := &peakReader{r: io.LimitReader(&zeros{}, size), b: b, peak: &peak}
			_, err := Receive(nil, deliveryRequest(body, size, sign("not the secret", "")), []byte(testSecret), b)
			switch status(err) {
			case http.StatusUnauthorized:
				wrong.Add(1)
			case http.StatusServiceUnavailable:
				gaveWay.Add(1)
			}
		})
	}
	wg.Wait()
	t.Logf("%d read to the end and refused, %d gave way", wrong.Load(), gaveWay.Load())
	if wrong.Load()+gaveWay.Load() != 20 || wrong.Load() == 0 {
		t.Errorf("%d of 20 refused with 401 and %d with 503: want all refused, some read to the end", wrong.Load(), gaveWay.Load())
	}
	if peak.Load() > total || peak.Load() < size {
		t.Errorf("the budget held at most %d bytes while bodies were read, want between %d and %d", peak.Load(), size, total)
	}
	if b.InUse() != 0 {
		t.Errorf("%d bytes still held", b.InUse())
	}
}

// TestBudgetBodiesHoldingEachOtherUp: two bodies that each hold half of
// the budget and each want more would wait for each other until their wait
// ran out; the second to find no room gives way at once, and the first
// goes on. A body still being read (a slow sender) is waited for instead.
func TestBudgetBodiesHoldingEachOtherUp(t *testing.T) {
	const total = 8 << 20 // big bodies share 6 MiB
	for _, tc := range []struct {
		name          string
		otherWaits    bool // the second body asks for more too
		secondRefused bool
	}{
		{name: "both want more: the second gives way", otherWaits: true, secondRefused: true},
		{name: "the other is still reading: waited for", otherWaits: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBudget(total, time.Hour)
			first, second := b.share(4<<20), b.share(4<<20)
			for _, s := range []*share{first, second} {
				if _, ok := s.grow(context.Background(), 3<<20); !ok {
					t.Fatal("no room for 3 MiB in an empty budget")
				}
			}
			got := make(chan bool, 1)
			go func() {
				_, ok := first.grow(context.Background(), 64<<10)
				got <- ok
			}()
			for b.waitingBodies() != 1 {
				time.Sleep(time.Millisecond)
			}
			if tc.otherWaits {
				if _, ok := second.grow(context.Background(), 64<<10); ok == tc.secondRefused {
					t.Fatalf("the second body's growth: %v, want refused %v", ok, tc.secondRefused)
				}
			}
			second.release()
			if !<-got {
				t.Error("the first body got no room once the second gave its back")
			}
			first.release()
			if b.InUse() != 0 || b.waitingBodies() != 0 {
				t.Errorf("%d bytes held and %d bodies waiting after both released", b.InUse(), b.waitingBodies())
			}
		})
	}
}

// waitingBodies is how many bodies wait for room now.
func (b *Budget) waitingBodies() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiting
}

// peakReader records the most of the budget in use while it is read.
type peakReader struct {
	r    io.Reader
	b    *Budget
	peak *atomic.Int64
}

func (p *peakReader) Read(buf []byte) (int, error) {
	for u := p.b.InUse(); ; {
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
