package githubapi_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// TestSetCheck: a stack's outcome is a completed check run on the commit,
// with its title, summary, link and buttons; a summary past GitHub's 65,535
// characters is cut with an ellipsis rather than refused.
func TestSetCheck(t *testing.T) {
	for _, tc := range []struct {
		name        string
		check       githubapi.Check
		wantSummary func(string) bool
	}{
		{"plain", githubapi.Check{Name: "kusion/preview: apps/web/dev", Conclusion: "success", Title: "2 to create", Summary: "all good",
			DetailsURL: "https://github.com/octo/web/pull/1#issuecomment-1"},
			func(s string) bool { return s == "all good" }},
		{"with buttons", githubapi.Check{Name: "kusion/apply: apps/web/dev", Conclusion: "neutral", Title: "waiting", Summary: "press apply",
			Actions: []githubapi.CheckAction{{Label: "Apply", Description: "Apply apps/web/dev", Identifier: "apply"}}},
			func(s string) bool { return s == "press apply" }},
		{"summary past the limit", githubapi.Check{Name: "kusion/preview: apps/big", Conclusion: "failure", Title: "huge",
			Summary: strings.Repeat("é", 70000)},
			func(s string) bool { return utf8.RuneCountInString(s) == 65535 && strings.HasSuffix(s, "…") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := githubfake.New(t)
			c := newClient(t, gh)
			if err := c.SetCheck(context.Background(), head, tc.check); err != nil {
				t.Fatal(err)
			}
			runs := gh.CheckRuns(owner, repo)
			if len(runs) != 1 {
				t.Fatalf("%d check runs", len(runs))
			}
			r := runs[0]
			if r.Name != tc.check.Name || r.HeadSHA != head || r.Status != "completed" || r.Conclusion != tc.check.Conclusion || r.Title != tc.check.Title {
				t.Errorf("check run %+v", r)
			}
			if !tc.wantSummary(r.Summary) {
				t.Errorf("summary of %d characters, ending %q", utf8.RuneCountInString(r.Summary), r.Summary[max(0, len(r.Summary)-10):])
			}
			var labels []string
			for _, a := range r.Actions {
				labels = append(labels, a.Label+"/"+a.Identifier)
			}
			var want []string
			for _, a := range tc.check.Actions {
				want = append(want, a.Label+"/"+a.Identifier)
			}
			if !slices.Equal(labels, want) {
				t.Errorf("buttons %v, want %v", labels, want)
			}
			// A workflow's token writes as GitHub Actions.
			st, err := c.CheckRunOf(context.Background(), head, tc.check.Name, githubfake.GitHubActions().ID)
			if err != nil || st.Status != "completed" || st.Conclusion != tc.check.Conclusion {
				t.Errorf("read back as %+v, %v", st, err)
			}
		})
	}
}

// TestSecondaryRateLimit: GitHub's secondary rate limit (403, Retry-After)
// on a write is waited out and the write made once; a wait longer than the
// client may wait fails with an error that says so, and writes nothing.
func TestSecondaryRateLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxWait time.Duration
		wantErr bool
	}{
		{"waited out", time.Minute, false},
		{"past the allowed wait", 100 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := githubfake.New(t)
			var waits []time.Duration
			tr := &githubapi.Transport{MaxWait: tc.maxWait, OnWait: func(d time.Duration) { waits = append(waits, d) }}
			c, err := githubapi.New("test-token", gh.URL, owner, repo, &http.Client{Transport: tr})
			if err != nil {
				t.Fatal(err)
			}
			gh.SecondaryLimitOnOperation("checks/create")
			err = c.SetCheck(context.Background(), head, githubapi.Check{Name: "kusion/preview: apps/web", Conclusion: "success", Title: "t", Summary: "s"})
			runs := gh.CheckRuns(owner, repo)
			if tc.wantErr {
				var rl *githubapi.RateLimitError
				if !errors.As(err, &rl) || rl.Status != http.StatusForbidden || !strings.Contains(err.Error(), "rate-limit-wait") {
					t.Errorf("error %v, want the rate limit named", err)
				}
				if len(runs) != 0 || len(waits) != 0 {
					t.Errorf("%d check runs after %v of waits, want none", len(runs), waits)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Retry-After: 1, plus up to a tenth of jitter.
			if len(runs) != 1 || len(waits) != 1 || waits[0] < time.Second || waits[0] > 1100*time.Millisecond {
				t.Errorf("%d check runs after waits %v, want one after a wait of Retry-After", len(runs), waits)
			}
			var creates int
			for _, call := range gh.Calls() {
				if call.Operation == "checks/create" {
					creates++
				}
			}
			if creates != 2 {
				t.Errorf("%d requests to create the check run, want the refused one and its retry", creates)
			}
		})
	}
}
