package bot

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/workflow"
)

// TestRecover: at start the bot applies what was merged while no bot ran:
// each merge within the recovery window into a branch that applies, in
// every repository the App reaches and may act on; nothing older, nothing
// merged elsewhere, nothing closed unmerged. Each apply is the merge's,
// recorded as recovered.
func TestRecover(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	merges := []struct {
		number   int
		base     string    // "": the default branch
		mergedAt time.Time // zero: closed unmerged
	}{
		{1, "", now.Add(-30 * time.Minute)},
		{2, "", now.Add(-3 * time.Hour)},
		{3, "release-1", now.Add(-20 * time.Minute)},
		{4, "", time.Time{}},
		{5, "", now.Add(-10 * time.Minute)},
	}
	sha := func(n int) string { return fmt.Sprintf("%040x", 0xfeed00+n) }
	for _, tc := range []struct {
		name     string
		window   time.Duration
		branches []string // KUSIONPR_APPLY_BRANCHES
		allow    []string // KUSIONPR_ALLOW_REPOS
		want     []int    // the merges applied
	}{
		{name: "the default branch's merges within the window", window: time.Hour, want: []int{5, 1}},
		{name: "and those of the branches the operator names", window: time.Hour, branches: []string{"@default", "release-*"}, want: []int{5, 3, 1}},
		{name: "a longer window", window: 4 * time.Hour, want: []int{5, 1, 2}},
		{name: "a repository not allowed", window: time.Hour, allow: []string{"octo/other"}},
		{name: "no recovery", window: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := githubfake.New(t)
			work := &fakeWork{out: &workflow.Outcome{}}
			b, _ := appBot(t, gh, work, func(c *Config) {
				c.RecoverWindow, c.ApplyBranches, c.AllowRepos = tc.window, tc.branches, tc.allow
			})
			src := tree(t)
			// The default branch as GitHub names it to the App.
			repos, err := b.app.Repositories(t.Context(), inst)
			if err != nil || len(repos) != 1 || repos[0].DefaultBranch == "" {
				t.Fatalf("the App's repositories: %+v, %v", repos, err)
			}
			for _, m := range merges {
				gh.SetPullRequest(owner, name, m.number, fmt.Sprintf("%040x", m.number), cmp.Or(m.base, repos[0].DefaultBranch), false)
				if !m.mergedAt.IsZero() {
					gh.MergePullRequestAt(owner, name, m.number, sha(m.number), m.mergedAt)
					gh.SetTree(owner, name, sha(m.number), src)
				}
			}
			// Another installation's repository, whose merge is recovered
			// only when allowed.
			gh.AddInstallationRepo(inst+1, "octo", "other")
			queued, err := b.Recover(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			drain(t, b)
			var got []int
			for _, c := range work.changes {
				var n int
				for _, m := range merges {
					if sha(m.number) == c.SHA {
						n = m.number
					}
				}
				got = append(got, n)
				if c.Command != workflow.Apply || c.Request.Merge == nil || !c.Request.Merge.Recovering || c.Request.Trigger != "merge" ||
					c.Request.Origin.Repository.ID != repoID {
					t.Errorf("merge #%d applied as %s, merge order %+v, trigger %q, origin %+v", n, c.Command, c.Request.Merge, c.Request.Trigger, c.Request.Origin)
				}
			}
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) || queued != len(tc.want) {
				t.Errorf("%d queued, applied merges %v, want %v", queued, got, want)
			}
			// A merge touching no stack says nothing.
			if cs := gh.Comments(owner, name, 1); len(cs) != 0 {
				t.Errorf("comments on a recovered merge: %+v", cs)
			}
		})
	}
}
