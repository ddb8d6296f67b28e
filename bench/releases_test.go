package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// The releases scenario: finding the latest release of a workspace on
// MinIO, through the S3 driver, as every preview and apply starts by
// doing. Target: a constant number of requests, however many releases the
// workspace has.
//
// Metric units: requests@10, requests@100, requests@1000 (requests one
// store.Latest made with that many releases in the workspace), latest-ms
// (milliseconds one store.Latest took with 1,000, median).
const (
	releasesProject   = "shop"
	releasesWorkspace = "prod"
)

// requestCounter is a reverse proxy in front of the object store that
// counts what passes through it, and remembers what, for the message of
// a failure.
type requestCounter struct {
	proxy *httputil.ReverseProxy
	mu    sync.Mutex
	seen  []string
}

func (c *requestCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.seen = append(c.seen, r.Method+" "+r.URL.Path)
	c.mu.Unlock()
	c.proxy.ServeHTTP(w, r)
}

// reset forgets the requests so far and returns them.
func (c *requestCounter) reset() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := c.seen
	c.seen = nil
	return seen
}

// BenchmarkLatestRelease grows one workspace to 10, 100 and 1,000 releases
// and, after each, counts the requests of store.Latest; at 1,000 it also
// times it, once per iteration. Every measurement opens the store afresh,
// so nothing read before helps it; the requests of opening (the bucket's
// accessibility check) are not counted.
func BenchmarkLatestRelease(b *testing.B) {
	bucket := testenv.S3(b).NewBucket(b)
	counter, storeURL := countingProxy(b, bucket)
	ctx := context.Background()

	writer, err := backend.Open(ctx, storeURL)
	if err != nil {
		b.Fatal(err)
	}
	defer writer.Close()

	// latest opens the store afresh and returns the latest release, the
	// requests it took and how long.
	latest := func() (*model.Release, []string, time.Duration) {
		s, err := backend.Open(ctx, storeURL)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		counter.reset()
		start := time.Now()
		r, err := s.Latest(ctx, releasesProject, releasesWorkspace)
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		return r, counter.reset(), took
	}
	check := func(r *model.Release, want uint64) {
		b.Helper()
		if r == nil || r.Revision != want || r.Phase != model.PhaseSucceeded {
			b.Fatalf("latest release: got %s, want revision %d, succeeded", describeRelease(r), want)
		}
	}

	// Reported after the loop: b.Loop's start deletes metrics reported before it.
	counts := map[uint64]int{}
	have := uint64(0)
	for _, level := range []uint64{10, 100} {
		fillReleases(b, writer, have, level)
		have = level
		r, reqs, _ := latest()
		check(r, level)
		counts[level] = len(reqs)
	}
	fillReleases(b, writer, have, 1000)

	var (
		times []time.Duration
		first []string
	)
	for n := 0; b.Loop(); n++ {
		r, reqs, took := latest()
		check(r, 1000)
		if n == 0 {
			first = reqs
		} else if len(reqs) != len(first) {
			b.Fatalf("store.Latest made %d requests, then %d:\n%s\nthen\n%s", len(first), len(reqs), strings.Join(first, "\n"), strings.Join(reqs, "\n"))
		}
		times = append(times, took)
	}
	for _, level := range []uint64{10, 100} {
		b.ReportMetric(float64(counts[level]), fmt.Sprintf("requests@%d", level))
	}
	b.ReportMetric(float64(len(first)), "requests@1000")
	b.ReportMetric(ms(median(times)), "latest-ms")
}

// BenchmarkLatestReleasePostgres is BenchmarkLatestRelease's question on
// PostgreSQL: store.Latest with 10 releases in the workspace, then with
// 1,000 (timed once per iteration, each on a freshly opened store, its
// connection made before the clock starts), and the questions only the
// database answers over those 1,000: what runs now, and the workspace's
// newest 20 across projects. Metrics, in milliseconds: latest-ms@10,
// latest-ms (1,000), running-ms, workspace-ms (medians).
func BenchmarkLatestReleasePostgres(b *testing.B) {
	storeURL := testenv.Postgres(b).NewBucket(b)
	ctx := context.Background()
	writer, err := backend.Open(ctx, storeURL)
	if err != nil {
		b.Fatal(err)
	}
	defer writer.Close()
	timed := func(f func(s *backend.Store) error) time.Duration {
		s, err := backend.Open(ctx, storeURL)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		start := time.Now()
		if err := f(s); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	latestIs := func(want uint64) func(s *backend.Store) error {
		return func(s *backend.Store) error {
			r, err := s.Latest(ctx, releasesProject, releasesWorkspace)
			if err == nil && (r == nil || r.Revision != want || r.Phase != model.PhaseSucceeded) {
				err = fmt.Errorf("latest release: got %s, want revision %d, succeeded", describeRelease(r), want)
			}
			return err
		}
	}
	fillReleases(b, writer, 0, 10)
	var at10 []time.Duration
	for range 5 {
		at10 = append(at10, timed(latestIs(10)))
	}
	fillReleases(b, writer, 10, 1000)

	var latest, running, workspace []time.Duration
	for b.Loop() {
		latest = append(latest, timed(latestIs(1000)))
		running = append(running, timed(func(s *backend.Store) error {
			rels, _, err := s.Query(ctx, backend.ReleaseQuery{Running: true})
			if err == nil && len(rels) != 0 {
				err = fmt.Errorf("%d releases running, want none", len(rels))
			}
			return err
		}))
		workspace = append(workspace, timed(func(s *backend.Store) error {
			rels, more, err := s.Query(ctx, backend.ReleaseQuery{Workspace: releasesWorkspace, Limit: 20})
			if err == nil && (len(rels) != 20 || more != 980 || rels[0].Revision != 1000) {
				err = fmt.Errorf("the workspace's newest 20: %d releases, %d more, the first %d", len(rels), more, rels[0].Revision)
			}
			return err
		}))
	}
	b.ReportMetric(ms(median(at10)), "latest-ms@10")
	b.ReportMetric(ms(median(latest)), "latest-ms")
	b.ReportMetric(ms(median(running)), "running-ms")
	b.ReportMetric(ms(median(workspace)), "workspace-ms")
}

func ms(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}

// countingProxy starts the counting proxy in front of bucket's endpoint and
// returns it with the bucket's URL rewritten to go through it.
func countingProxy(b *testing.B, bucket string) (*requestCounter, string) {
	b.Helper()
	u, err := url.Parse(bucket)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	target, err := url.Parse(q.Get("endpoint"))
	if err != nil || target.Host == "" {
		b.Fatalf("the bucket's URL has no usable endpoint=: %v", err)
	}
	// The S3 client signs the Host header it sends, the proxy's, and the
	// proxy passes it on unchanged, so MinIO checks the signature against
	// what was signed.
	c := &requestCounter{proxy: httputil.NewSingleHostReverseProxy(target)}
	srv := httptest.NewServer(c)
	b.Cleanup(srv.Close)
	q.Set("endpoint", srv.URL)
	u.RawQuery = q.Encode()
	return c, u.String()
}

// fillReleases adds releases from revision have+1 up to want as applies
// leave them: Begin in a running phase, then Update to succeeded, each
// carrying the spec and state of a small stack.
func fillReleases(b *testing.B, s *backend.Store, have, want uint64) {
	b.Helper()
	ctx := context.Background()
	for rev := have + 1; rev <= want; rev++ {
		spec, state := releaseContent(rev)
		// A running release starts with the state it carries over from
		// the one before (the engine's carriedState).
		carried := &model.State{}
		if rev > 1 {
			_, carried = releaseContent(rev - 1)
		}
		now := time.Now().UTC()
		r := &model.Release{
			Project: releasesProject, Workspace: releasesWorkspace, Stack: "prod",
			Spec: spec, State: carried,
			Phase: model.PhaseApplying, CreateTime: now, ModifiedTime: now,
			Origin: &model.Origin{User: "bench", Command: "apply", Heartbeat: now},
		}
		if _, err := s.Begin(ctx, r); err != nil {
			b.Fatalf("release %d: %v", rev, err)
		}
		if r.Revision != rev {
			b.Fatalf("began revision %d, want %d", r.Revision, rev)
		}
		r.State = state
		r.Phase = model.PhaseSucceeded
		if err := s.Update(ctx, r); err != nil {
			b.Fatalf("release %d: %v", rev, err)
		}
	}
}

// releaseContent is the spec and state of revision rev of a stack of 20
// ConfigMaps whose version changes with every release.
func releaseContent(rev uint64) (*model.Spec, *model.State) {
	spec, state := &model.Spec{}, &model.State{}
	for i := range 20 {
		name := fmt.Sprintf("%s-%02d", component(i), i)
		attrs := func() map[string]any {
			return map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name, "namespace": "shop", "labels": map[string]any{"app.kubernetes.io/name": name}},
				"data":     map[string]any{"VERSION": fmt.Sprintf("1.%d.0", rev), "LOG_LEVEL": "info"},
			}
		}
		id := "v1:ConfigMap:shop:" + name
		spec.Resources = append(spec.Resources, model.Resource{ID: id, Type: model.Kubernetes, Attributes: attrs()})
		state.Resources = append(state.Resources, model.Resource{ID: id, Type: model.Kubernetes, Attributes: attrs()})
	}
	return spec, state
}

func describeRelease(r *model.Release) string {
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("revision %d, %s", r.Revision, r.Phase)
}
