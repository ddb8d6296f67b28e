package bot

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/workflow"
)

// TestScheduledDriftScan: the schedule scans the default branch of each
// repository the operator names (KUSIONPR_DRIFT_REPOSITORIES) among those
// the App reaches, and only those; a stack never applied has nothing to
// compare, so no issue is opened; the scan shows in the metrics. Another
// replica sharing the release store leaves a repository scanned within
// the interval alone.
func TestScheduledDriftScan(t *testing.T) {
	gh := githubfake.New(t)
	// A repository of the installation the operator does not name, listed
	// first.
	gh.AddInstallationRepo(inst, owner, "unnamed")
	store := "file://" + t.TempDir()
	set := func(c *Config) {
		c.Backend, c.DriftEvery, c.DriftJitter, c.DriftRepositories = store, time.Hour, 0, []string{owner + "/" + name}
	}
	first, logs := appBot(t, gh, &fakeWork{out: &workflow.Outcome{}}, set)
	repos, err := first.app.Repositories(t.Context(), inst)
	if err != nil || len(repos) != 2 {
		t.Fatalf("the App's repositories: %+v, %v", repos, err)
	}
	gh.SetTree(owner, name, repos[1].DefaultBranch, "../examples/quickstart")

	scan := func(b *Bot, logs *syncBuffer, want string) {
		t.Helper()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { b.ScheduleDrift(ctx); close(done) }()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(logs.String(), want) {
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("no %q in the log:\n%s", want, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		<-done
	}
	scan(first, logs, "drift scan finished")
	if n := countOps(gh, "repos/download-tarball-archive"); n != 1 {
		t.Errorf("%d checkouts, want the named repository's default branch once", n)
	}
	for _, c := range gh.Calls() {
		if strings.Contains(c.Path, "/unnamed/") {
			t.Errorf("the unnamed repository was read: %s %s", c.Method, c.Path)
		}
	}
	if is := gh.Issues(owner, name); len(is) != 0 {
		t.Errorf("issues %+v for a stack never applied", is)
	}
	m := scrape(t, first)
	for _, want := range []string{
		`kusionpr_drift_scans_total{result="success"} 1`,
		`kusionpr_drift_resources{repository="octo/infra",stack="dev"} 0`,
		`kusionpr_drift_scan_duration_seconds_count 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	second, logs2 := appBot(t, gh, &fakeWork{out: &workflow.Outcome{}}, set)
	scan(second, logs2, "drift scan left to another replica")
	if n := countOps(gh, "repos/download-tarball-archive"); n != 1 {
		t.Errorf("%d checkouts: the second replica scanned again within the interval", n)
	}

	// No schedule without an interval.
	off, _ := appBot(t, gh, &fakeWork{}, func(c *Config) { c.DriftEvery = 0 })
	done := make(chan struct{})
	go func() { off.ScheduleDrift(t.Context()); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("the schedule without an interval did not return")
	}
}

// scrape is what the bot's /metrics shows.
func scrape(t *testing.T, b *Bot) string {
	t.Helper()
	w := httptest.NewRecorder()
	b.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(w.Body)
	return string(body)
}

func countOps(gh *githubfake.Server, op string) int {
	n := 0
	for _, c := range gh.Calls() {
		if c.Operation == op {
			n++
		}
	}
	return n
}
