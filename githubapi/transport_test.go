package githubapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// scripted answers each request with the next of its answers (the last one
// repeated), recording what it was sent.
type scripted struct {
	mu      sync.Mutex
	answers []answer
	sent    []sent
}

type answer struct {
	status int
	header map[string]string
	body   string
}

type sent struct {
	method, body, version string
}

func (s *scripted) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
	}
	s.sent = append(s.sent, sent{method: r.Method, body: string(body), version: r.Header.Get("X-GitHub-Api-Version")})
	a := s.answers[min(len(s.sent)-1, len(s.answers)-1)]
	h := http.Header{}
	for k, v := range a.header {
		h.Set(k, v)
	}
	return &http.Response{StatusCode: a.status, Header: h, Body: io.NopCloser(strings.NewReader(a.body)), Request: r}, nil
}

// fakeClock is the transport's clock: sleeping moves it on.
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) install(t *Transport) {
	t.now = func() time.Time { return c.now }
	t.sleep = func(_ context.Context, d time.Duration) error {
		c.sleeps = append(c.sleeps, d)
		c.now = c.now.Add(d)
		return nil
	}
	t.jitter = func(time.Duration) time.Duration { return 0 }
}

const secondaryMessage = `{"message":"You have exceeded a secondary rate limit and have been temporarily blocked from content creation. Please retry your request again later."}`

func TestTransportWaits(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	ok := answer{status: 201, body: `{"id":1}`}
	reset := func(after time.Duration) string { return strconv.FormatInt(start.Add(after).Unix(), 10) }
	tests := []struct {
		name    string
		method  string
		answers []answer
		maxWait time.Duration
		// want: the sleeps, the requests sent, the final status; or the error's words.
		sleeps []time.Duration
		sends  int
		status int
		err    []string
	}{
		{name: "secondary limit, Retry-After honoured", method: "POST",
			answers: []answer{{status: 403, header: map[string]string{"Retry-After": "3"}, body: secondaryMessage}, ok},
			sleeps:  []time.Duration{3 * time.Second}, sends: 2, status: 201},
		{name: "429 with Retry-After", method: "POST",
			answers: []answer{{status: 429, header: map[string]string{"Retry-After": "1"}}, ok},
			sleeps:  []time.Duration{time.Second}, sends: 2, status: 201},
		{name: "secondary limit without Retry-After waits a minute", method: "POST",
			answers: []answer{{status: 403, body: secondaryMessage}, ok},
			sleeps:  []time.Duration{time.Minute}, sends: 2, status: 201},
		{name: "primary limit, reset honoured", method: "GET",
			answers: []answer{{status: 403, header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset(30 * time.Second)}, body: `{"message":"API rate limit exceeded"}`}, ok},
			sleeps:  []time.Duration{31 * time.Second}, sends: 2, status: 201},
		{name: "a refusal is not a limit", method: "POST",
			answers: []answer{{status: 403, body: `{"message":"Resource not accessible by integration"}`}},
			sends:   1, status: 403},
		{name: "bound exceeded", method: "POST", maxWait: 90 * time.Second,
			answers: []answer{{status: 403, header: map[string]string{"Retry-After": "60"}, body: secondaryMessage}},
			sleeps:  []time.Duration{time.Minute}, sends: 2,
			err: []string{"POST /repos/o/r/issues/1/comments", "after waiting 1m;", "1m more"}},
		{name: "5xx retried once for a GET", method: "GET",
			answers: []answer{{status: 502}, ok},
			sleeps:  []time.Duration{time.Second}, sends: 2, status: 201},
		{name: "5xx twice is returned", method: "PATCH",
			answers: []answer{{status: 502}, {status: 503}},
			sleeps:  []time.Duration{time.Second}, sends: 2, status: 503},
		{name: "5xx of a POST is not repeated", method: "POST",
			answers: []answer{{status: 502}, ok},
			sends:   1, status: 502},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next := &scripted{answers: tc.answers}
			clock := &fakeClock{now: start}
			tr := &Transport{Next: next, MaxWait: tc.maxWait}
			clock.install(tr)
			req, _ := http.NewRequest(tc.method, "https://api.github.com/repos/o/r/issues/1/comments", strings.NewReader(`{"body":"hi"}`))
			resp, err := tr.RoundTrip(req)
			if len(tc.err) > 0 {
				var rl *RateLimitError
				if !errors.As(err, &rl) {
					t.Fatalf("got %v, %v; want a RateLimitError", resp, err)
				}
				for _, w := range tc.err {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
			} else if err != nil {
				t.Fatal(err)
			} else if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if len(next.sent) != tc.sends {
				t.Errorf("%d requests sent, want %d", len(next.sent), tc.sends)
			}
			for i, s := range next.sent {
				if s.version != APIVersion {
					t.Errorf("request %d: X-GitHub-Api-Version %q", i, s.version)
				}
				if s.body != `{"body":"hi"}` {
					t.Errorf("request %d sent body %q", i, s.body)
				}
			}
			if !equalDurations(clock.sleeps, tc.sleeps) {
				t.Errorf("slept %v, want %v", clock.sleeps, tc.sleeps)
			}
			var total time.Duration
			for _, d := range tc.sleeps {
				total += d
			}
			if tr.Waited() != total {
				t.Errorf("Waited() = %v, want %v", tr.Waited(), total)
			}
		})
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The last request of a window succeeds with no requests left: go-github
// must not see the exhausted count (it would refuse the next call without
// asking), and the transport itself waits for the reset before the next.
func TestTransportWaitsForResetAfterLastRequest(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	next := &scripted{answers: []answer{
		{status: 200, header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(start.Add(20*time.Second).Unix(), 10)}},
		{status: 200},
	}}
	clock := &fakeClock{now: start}
	tr := &Transport{Next: next}
	clock.install(tr)
	for i := range 2 {
		req, _ := http.NewRequest("GET", "https://api.github.com/repos/o/r/pulls/1", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if v := resp.Header.Get("X-RateLimit-Remaining"); v != "" {
			t.Errorf("request %d: go-github is shown X-RateLimit-Remaining %q", i, v)
		}
	}
	if !equalDurations(clock.sleeps, []time.Duration{21 * time.Second}) {
		t.Errorf("slept %v, want [21s] before the second request", clock.sleeps)
	}
}

// gate holds each request in the next transport until released.
type gate struct {
	entered chan string
	release chan struct{}
}

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	g.entered <- r.Method + " " + r.URL.Path
	<-g.release
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

// Content-creating requests go one at a time; reads do not queue behind them.
func TestTransportSerialWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &gate{entered: make(chan string, 10), release: make(chan struct{})}
		tr := &Transport{Next: g}
		send := func(method, path string) {
			req, _ := http.NewRequest(method, "https://api.github.com"+path, strings.NewReader("{}"))
			if _, err := tr.RoundTrip(req); err != nil {
				t.Error(err)
			}
		}
		go send("POST", "/a")
		synctest.Wait()
		go send("POST", "/b")
		go send("GET", "/c")
		synctest.Wait()
		var in []string
		for len(g.entered) > 0 {
			in = append(in, <-g.entered)
		}
		if strings.Join(in, ",") != "POST /a,GET /c" {
			t.Fatalf("in flight while the first POST is: %v, want [POST /a GET /c]", in)
		}
		g.release <- struct{}{} // POST /a or GET /c
		g.release <- struct{}{}
		synctest.Wait()
		if got := <-g.entered; got != "POST /b" {
			t.Fatalf("then %q, want POST /b", got)
		}
		g.release <- struct{}{}
		synctest.Wait()
	})
}
