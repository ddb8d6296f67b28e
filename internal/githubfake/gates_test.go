package githubfake

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"
)

// TestCheckRunApps: a check run carries the app whose token made it, as on
// GitHub: the App for its installation tokens, GitHub Actions for a
// workflow's token; SetCheckRunBy plants any other.
func TestCheckRunApps(t *testing.T) {
	ctx := context.Background()
	key, pemKey := appKey(t)
	s := New(t)
	s.SetAppKey(42, &key.PublicKey)
	s.AddInstallationRepo(7, "octo", "web")
	asApp := installationClient(t, s, 42, 7, pemKey)
	asWorkflow := client(t, s)
	opts := func(name string) github.CreateCheckRunOptions {
		return github.CreateCheckRunOptions{Name: name, HeadSHA: "abc", Status: github.String("completed"), Conclusion: github.String("failure")}
	}
	if _, _, err := asApp.Checks.CreateCheckRun(ctx, "octo", "web", opts("by the app")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := asWorkflow.Checks.CreateCheckRun(ctx, "octo", "web", opts("by a workflow")); err != nil {
		t.Fatal(err)
	}
	s.SetCheckRunBy("octo", "web", "abc", "by another app", "failure", CheckApp{ID: 99, Slug: "other", Name: "Other"})
	s.SetCheckRun("octo", "web", "abc", "by CI", "success")

	res, _, err := asWorkflow.Checks.ListCheckRunsForRef(ctx, "octo", "web", "abc", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"by the app": 42, "by a workflow": 15368, "by another app": 99, "by CI": 15368}
	for _, cr := range res.CheckRuns {
		if got := cr.GetApp().GetID(); got != want[cr.GetName()] {
			t.Errorf("%s: app %d (%s), want %d", cr.GetName(), got, cr.GetApp().GetSlug(), want[cr.GetName()])
		}
	}
	if len(res.CheckRuns) != len(want) {
		t.Errorf("%d check runs, want %d", len(res.CheckRuns), len(want))
	}
}

// TestStatusCreators: the list of a commit's statuses, newest first, says
// who set each; the App's installation token sets them as its bot user.
func TestStatusCreators(t *testing.T) {
	ctx := context.Background()
	key, pemKey := appKey(t)
	s := New(t)
	s.SetAppKey(42, &key.PublicKey)
	s.AddInstallationRepo(7, "octo", "web")
	asApp := installationClient(t, s, 42, 7, pemKey)
	s.SetStatus("octo", "web", "abc", "ci/lint", "failure", "ci-user")
	if _, _, err := asApp.Repositories.CreateStatus(ctx, "octo", "web", "abc", &github.RepoStatus{State: github.String("pending"), Context: github.String("kusion/apply")}); err != nil {
		t.Fatal(err)
	}
	s.SetStatus("octo", "web", "abc", "ci/lint", "success", "ci-user")
	sts, _, err := asApp.Repositories.ListStatuses(ctx, "octo", "web", "abc", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range sts {
		got = append(got, st.GetContext()+"="+st.GetState()+" by "+st.GetCreator().GetLogin())
	}
	want := []string{"ci/lint=success by ci-user", "kusion/apply=pending by " + s.App().Slug + "[bot]", "ci/lint=failure by ci-user"}
	if len(got) != len(want) {
		t.Fatalf("statuses %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("status %d: %q, want %q", i, got[i], want[i])
		}
	}
}

// TestPullRequestGates: mergeable null for the first reads, then the state
// set; reviews of a commit gone; a deleted head repository.
func TestPullRequestGates(t *testing.T) {
	ctx := context.Background()
	s := New(t)
	gh := client(t, s)
	s.SetPullRequest("o", "r", 1, "headsha", "main", false)
	s.SetMergeableAfter("o", "r", 1, 2, "behind")
	var got []string
	for range 3 {
		pr, _, err := gh.PullRequests.Get(ctx, "o", "r", 1)
		if err != nil {
			t.Fatal(err)
		}
		m := "null"
		if pr.Mergeable != nil {
			m = map[bool]string{true: "true", false: "false"}[*pr.Mergeable]
		}
		got = append(got, m+"/"+pr.GetMergeableState())
	}
	if want := "null/unknown null/unknown true/behind"; strings.Join(got, " ") != want {
		t.Errorf("reads: %s, want %s", strings.Join(got, " "), want)
	}

	s.SetReviews("o", "r", 1, []Review{{User: "a", State: "APPROVED", CommitGone: true}, {User: "b", State: "APPROVED"}, {User: "c", State: "APPROVED", CommitID: "older"}})
	rs, _, err := gh.PullRequests.ListReviews(ctx, "o", "r", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].CommitID != nil || rs[1].GetCommitID() != "headsha" || rs[2].GetCommitID() != "older" {
		t.Errorf("reviews' commit_id: %v %v %v", rs[0].CommitID, rs[1].CommitID, rs[2].CommitID)
	}

	s.SetHeadRepoDeleted("o", "r", 1)
	pr, _, err := gh.PullRequests.Get(ctx, "o", "r", 1)
	if err != nil || pr.GetHead().Repo != nil || pr.GetHead().GetSHA() != "headsha" {
		t.Errorf("a deleted fork's pull request: %v, head %+v", err, pr.GetHead())
	}
}
