package githubapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// APIVersion is the REST API version the clients are written against.
const APIVersion = "2022-11-28"

// DefaultMaxWait bounds how long one request waits for GitHub's rate limits
// before it fails.
const DefaultMaxWait = 2 * time.Minute

// secondaryBackoff is the first wait for a secondary limit answered without
// Retry-After: GitHub's documentation says to wait at least a minute, then
// exponentially longer.
const secondaryBackoff = time.Minute

// maxAttempts bounds the retries of one request whatever the waits (a
// Retry-After of 0 repeated).
const maxAttempts = 10

// serverErrorBackoff is the wait before the one retry of a 5xx.
const serverErrorBackoff = time.Second

// Transport carries a client's requests to GitHub as GitHub's REST
// best practices ask: it waits out primary and secondary rate limits
// (Retry-After, x-ratelimit-reset, else exponential backoff, with jitter)
// up to MaxWait per request, retries a 5xx once where repeating the request
// cannot create a second object, and sends content-creating requests one at
// a time. Make one per client (per installation token) and keep it.
//
// go-github never sees the limit answers it waited out, and never the
// x-ratelimit-* headers: it would otherwise record the limit and refuse
// later calls itself ("not making remote request") without asking GitHub,
// defeating the wait.
type Transport struct {
	Next http.RoundTripper // default http.DefaultTransport
	// MaxWait bounds the total wait of one request (0: DefaultMaxWait).
	MaxWait time.Duration
	Log     *slog.Logger // each wait, at Info; nil: no log
	// OnWait, if set, hears of each wait as it ends (the bot counts them
	// in its metrics).
	OnWait func(d time.Duration)

	// sleep waits d or until ctx ends; now and jitter are the clock and the
	// random part of a wait. Tests replace them.
	sleep  func(ctx context.Context, d time.Duration) error
	now    func() time.Time
	jitter func(d time.Duration) time.Duration

	// writes is held (one token) by a content-creating request, waits
	// included. A channel rather than a mutex so that a context's end
	// frees a request queued behind another.
	writes chan struct{}

	mu        sync.Mutex
	waited    time.Duration
	exhausted time.Time // primary limit: no requests left until then
}

// Waited is how long the transport's requests waited for rate limits and
// retries in all.
func (t *Transport) Waited() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.waited
}

// RateLimitError is a request given up after waiting MaxWait.
type RateLimitError struct {
	Method, Path string
	Status       int
	Waited, Next time.Duration // waited so far; what GitHub asked for next
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("github: %s %s: still rate limited (%d) after waiting %s; GitHub asks for %s more, past the limit of the wait (rate-limit-wait)",
		e.Method, e.Path, e.Status, Seconds(e.Waited), Seconds(e.Next))
}

// Seconds writes d as a person reads it in a log: 0s, 45s, 2m, 2m30s.
func Seconds(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", d/time.Second)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%dm%ds", d/time.Minute, d%time.Minute/time.Second)
}

func creates(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if creates(req.Method) {
		// GitHub: "make requests for a single user or client ID serially".
		t.mu.Lock()
		if t.writes == nil {
			t.writes = make(chan struct{}, 1)
		}
		writes := t.writes
		t.mu.Unlock()
		select {
		case writes <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("github: %s %s: queued behind another write: %w", req.Method, req.URL.Path, ctx.Err())
		}
		defer func() { <-writes }()
	}
	next := t.Next
	if next == nil {
		next = http.DefaultTransport
	}
	var waited time.Duration
	retried5xx := false
	for attempt := 0; ; attempt++ {
		if d := t.untilReset(); d > 0 {
			if err := t.wait(ctx, req, http.StatusForbidden, d, &waited); err != nil {
				return nil, err
			}
		}
		r := req.Clone(ctx)
		r.Header.Set("X-GitHub-Api-Version", APIVersion)
		if attempt > 0 && req.Body != nil {
			if req.GetBody == nil {
				return nil, fmt.Errorf("github: %s %s: cannot resend its body", req.Method, req.URL.Path)
			}
			b, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("github: %s %s: resend body: %w", req.Method, req.URL.Path, err)
			}
			r.Body = b
		}
		resp, err := next.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		d, retry := t.classify(resp, attempt, &retried5xx, req)
		if !retry || attempt >= maxAttempts {
			stripRateHeaders(resp.Header)
			return resp, nil
		}
		// The answer is dropped: read a little so the connection is reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if err := t.wait(ctx, req, resp.StatusCode, d, &waited); err != nil {
			return nil, err
		}
	}
}

// classify says whether resp asks for a retry, and after how long. It reads
// a 403's body (to tell a secondary limit from a refusal) and puts it back.
func (t *Transport) classify(resp *http.Response, attempt int, retried5xx *bool, req *http.Request) (time.Duration, bool) {
	h := resp.Header
	if resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests {
		if s := h.Get("Retry-After"); s != "" {
			if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n >= 0 {
				return time.Duration(n) * time.Second, true
			}
		}
		if h.Get("X-Ratelimit-Remaining") == "0" {
			if reset, ok := resetOf(h); ok {
				t.mu.Lock()
				t.exhausted = reset
				t.mu.Unlock()
				// One second past the reset: GitHub's clock and ours differ.
				return max(reset.Sub(t.clock())+time.Second, time.Second), true
			}
		}
		if resp.StatusCode == http.StatusTooManyRequests || secondaryBody(resp) {
			return secondaryBackoff << min(attempt, 4), true
		}
		return 0, false
	}
	if h.Get("X-Ratelimit-Remaining") == "0" {
		// The last request of the window succeeded: the next one waits.
		if reset, ok := resetOf(h); ok {
			t.mu.Lock()
			t.exhausted = reset
			t.mu.Unlock()
		}
	}
	if resp.StatusCode >= 500 && !*retried5xx && req.Method != http.MethodPost {
		// A POST that failed with a 5xx may still have created its comment
		// or check run: repeating it could make a second one, so it is not
		// retried. GET, PATCH, PUT and DELETE set a state and can be repeated.
		*retried5xx = true
		return serverErrorBackoff, true
	}
	return 0, false
}

func resetOf(h http.Header) (time.Time, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-Ratelimit-Reset")), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}

// secondaryBody reports whether a 403's body names the secondary rate
// limit, leaving the body readable.
func secondaryBody(resp *http.Response) bool {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(strings.NewReader(string(b)))
	return strings.Contains(strings.ToLower(string(b)), "secondary rate limit")
}

func stripRateHeaders(h http.Header) {
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "x-ratelimit-") {
			delete(h, k)
		}
	}
}

func (t *Transport) untilReset() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.exhausted.IsZero() {
		return 0
	}
	// One second past the reset: GitHub's clock and ours differ.
	d := t.exhausted.Sub(t.clock()) + time.Second
	if d <= 0 {
		t.exhausted = time.Time{}
		return 0
	}
	return d
}

func (t *Transport) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

// wait sleeps d plus jitter, unless that would take the request's total
// past MaxWait.
func (t *Transport) wait(ctx context.Context, req *http.Request, status int, d time.Duration, waited *time.Duration) error {
	if t.jitter != nil {
		d += t.jitter(d)
	} else if d > 0 {
		// Up to a tenth more, so that clients told the same reset do not
		// come back at the same instant.
		d += rand.N(d/10 + 1)
	}
	limit := t.MaxWait
	if limit <= 0 {
		limit = DefaultMaxWait
	}
	if *waited+d > limit {
		return &RateLimitError{Method: req.Method, Path: req.URL.Path, Status: status, Waited: *waited, Next: d}
	}
	if t.Log != nil {
		t.Log.Info("waiting for GitHub", "request", req.Method+" "+req.URL.Path, "status", status,
			"wait", d.Round(time.Millisecond).String(), "waited", waited.Round(time.Millisecond).String())
	}
	sleep := t.sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	if err := sleep(ctx, d); err != nil {
		return fmt.Errorf("github: %s %s: waiting for GitHub: %w", req.Method, req.URL.Path, err)
	}
	*waited += d
	t.mu.Lock()
	t.waited += d
	t.mu.Unlock()
	if t.OnWait != nil {
		t.OnWait(d)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
