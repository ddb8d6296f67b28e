package githubapi_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// TestAppInstallationsAndRepositories: the App finds every installation
// and every repository one reaches, past GitHub's pages of 100, each
// repository with its owner and id.
func TestAppInstallationsAndRepositories(t *testing.T) {
	for _, tc := range []struct {
		name         string
		installs     int // installations, one repository each
		reposOfFirst int // repositories the first installation reaches
	}{
		{"one of each", 1, 1},
		{"past a page", 103, 205},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			gh := githubfake.New(t)
			app := testApp(t, gh, 77)
			var wantRepos []string
			for i := range tc.reposOfFirst {
				name := fmt.Sprintf("repo-%03d", i)
				gh.AddInstallationRepo(1, "octo", name)
				wantRepos = append(wantRepos, "octo/"+name)
			}
			gh.SetRepositoryID("octo", "repo-000", 4242)
			for i := 2; i <= tc.installs; i++ {
				gh.AddInstallationRepo(int64(i), fmt.Sprintf("org%d", i), "infra")
			}
			ids, err := app.Installations(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != tc.installs || ids[0] != 1 || ids[len(ids)-1] != int64(tc.installs) {
				t.Errorf("installations %d (%v...), want 1..%d", len(ids), ids[:min(3, len(ids))], tc.installs)
			}
			repos, err := app.Repositories(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range repos {
				got = append(got, r.Owner+"/"+r.Name)
			}
			if !slices.Equal(got, wantRepos) {
				t.Errorf("repositories %d, want %d: %v", len(got), len(wantRepos), got[:min(3, len(got))])
			}
			if repos[0].ID != 4242 || repos[0].DefaultBranch == "" {
				t.Errorf("first repository %+v, want GitHub's id 4242 and a default branch", repos[0])
			}
		})
	}
}

// TestAppInstallationWritesAsItsBot: an installation client's comments
// and reactions are the App's bot's; reacting twice with one content is
// one reaction, as on GitHub, and a reaction to a deleted comment is an
// error naming it.
func TestAppInstallationWritesAsItsBot(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	app := testApp(t, gh, 78)
	gh.AddInstallationRepo(5, "octo", "web")
	gh.AddInstallationRepo(5, "octo", "api")
	gh.SetPullRequest("octo", "web", 3, head, "main", false)
	gh.SetPullRequest("octo", "api", 3, head, "main", false)

	web, err := app.Installation(5, "octo", "web")
	if err != nil {
		t.Fatal(err)
	}
	if err := web.Reply(ctx, 3, "on it"); err != nil {
		t.Fatal(err)
	}
	cs := gh.Comments("octo", "web", 3)
	if len(cs) != 1 || cs[0].User != gh.AppLogin() || cs[0].Body != "on it" {
		t.Fatalf("comments %+v, want the reply by %s", cs, gh.AppLogin())
	}
	for _, content := range []string{"eyes", "eyes", "rocket"} {
		if err := web.React(ctx, cs[0].ID, content); err != nil {
			t.Fatalf("react %s: %v", content, err)
		}
	}
	if got := gh.Reactions("octo", "web", cs[0].ID); !slices.Equal(got, []string{"eyes", "rocket"}) {
		t.Errorf("reactions %v: reacting twice with one content is one reaction", got)
	}
	if err := web.React(ctx, 999999, "eyes"); err == nil || !strings.Contains(err.Error(), "999999") {
		t.Errorf("a reaction to a deleted comment: %v, want an error naming it", err)
	}

	// The same installation reaches octo/api, with a token of its own.
	api, err := app.Installation(5, "octo", "api")
	if err != nil {
		t.Fatal(err)
	}
	if pr, err := api.PullRequest(ctx, 3); err != nil || pr.HeadSHA != head {
		t.Errorf("the installation's other repository: %+v, %v", pr, err)
	}
}
