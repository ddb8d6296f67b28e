package githubapi_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// TestDeployments: an apply is recorded as a deployment of its commit to
// its environment, which GitHub is told neither to merge the default
// branch into nor to wait for checks on (the fake answers 409 as GitHub
// does otherwise), then its statuses with their log; descriptions past
// GitHub's 140 characters are cut with an ellipsis rather than refused.
func TestDeployments(t *testing.T) {
	long := strings.Repeat("é", 200)
	for _, tc := range []struct {
		name, description string
		logURL            string
		wantDescription   func(string) bool
	}{
		{"short", "apply apps/web/dev", "https://github.com/octo/web/pull/1#issuecomment-9",
			func(s string) bool { return s == "apply apps/web/dev" }},
		{"past 140 characters", long, "",
			func(s string) bool { return utf8.RuneCountInString(s) == 140 && strings.HasSuffix(s, "…") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			gh := githubfake.New(t)
			c := newClient(t, gh)
			id, err := c.CreateDeployment(ctx, head, "apps/web/dev", tc.description)
			if err != nil {
				t.Fatal(err)
			}
			for _, state := range []string{"in_progress", "success"} {
				if err := c.SetDeploymentStatus(ctx, id, state, tc.description, tc.logURL); err != nil {
					t.Fatal(err)
				}
			}
			ds := gh.Deployments(owner, repo)
			if len(ds) != 1 || ds[0].ID != id || ds[0].Ref != head || ds[0].Environment != "apps/web/dev" || !tc.wantDescription(ds[0].Description) {
				t.Fatalf("deployments %+v", ds)
			}
			if st := ds[0].Statuses; len(st) != 2 || st[0].State != "in_progress" || st[1].State != "success" ||
				st[1].LogURL != tc.logURL || !tc.wantDescription(st[1].Description) {
				t.Errorf("statuses %+v", st)
			}
			if err := c.SetDeploymentStatus(ctx, id+1000, "failure", "x", ""); err == nil || !strings.Contains(err.Error(), "failure") {
				t.Errorf("the status of a deployment that does not exist: %v", err)
			}
		})
	}
}
