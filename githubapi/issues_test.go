package githubapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// TestMarkedIssues: of the issues labelled so, only those the client's own
// user opened with a marker (its first part) are ours, open or closed;
// anyone who may label an issue can copy the marker into theirs.
func TestMarkedIssues(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	c := newClient(t, gh)
	marked := func(key string, part int) string { return githubapi.Marker(key, part) + "\nbody" }
	me := githubapi.ActionsLogin
	for _, is := range []struct{ user, title, body, label string }{
		{me, "ours", marked("drift apps/web", 1), "kusion-drift"},
		{me, "ours, closed", marked("drift apps/api", 1), "kusion-drift"},
		{"mallory", "a copied marker", marked("drift apps/db", 1), "kusion-drift"},
		{me, "no marker", "plain body", "kusion-drift"},
		{me, "a later part", marked("drift apps/cache", 2), "kusion-drift"},
		{me, "another label", marked("drift apps/queue", 1), "bug"},
	} {
		gh.OpenIssue(owner, repo, is.user, is.title, is.body, []string{is.label})
	}
	gh.CloseIssue(owner, repo, 2, me)

	got, err := c.MarkedIssues(ctx, "kusion-drift")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]githubapi.Issue{}
	for _, is := range got {
		keys[is.Key] = is
	}
	if len(got) != 2 || keys["drift apps/web"].State != "open" || keys["drift apps/api"].State != "closed" {
		t.Fatalf("marked issues %+v, want ours: apps/web open and apps/api closed", got)
	}
	if web := keys["drift apps/web"]; web.Number != 1 || web.Title != "ours" || !strings.HasSuffix(web.URL, "/issues/1") {
		t.Errorf("issue read as %+v", web)
	}

	// The App's bot, writing through the same repository, opened none.
	app := testApp(t, gh, 9)
	gh.AddInstallationRepo(3, owner, repo)
	inst, err := app.Installation(3, owner, repo)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := inst.MarkedIssues(ctx, "kusion-drift"); err != nil || len(got) != 0 {
		t.Errorf("the App's bot opened none of them: %+v, %v", got, err)
	}
}

// TestCreateAndEditIssue: an issue opened with a marker and labels reads
// back with its key; one without a marker is refused before GitHub is
// asked; GitHub's 422 past 65,536 characters and an issue deleted meanwhile
// are errors a caller can tell.
func TestCreateAndEditIssue(t *testing.T) {
	ctx := context.Background()
	key := "drift apps/web"
	body := githubapi.Marker(key, 1) + "\nThe stack drifted."
	for _, tc := range []struct {
		name    string
		do      func(c *githubapi.Client) (githubapi.Issue, error)
		wantErr func(error) bool // nil: no error
		want    githubapi.Issue
		// refused is what GitHub says refusing a request the test makes on
		// purpose.
		refused string
	}{
		{name: "open", do: func(c *githubapi.Client) (githubapi.Issue, error) {
			return c.CreateIssue(ctx, "Drift in apps/web", body, []string{"kusion-drift"})
		}, want: githubapi.Issue{Number: 1, Title: "Drift in apps/web", Body: body, State: "open", Key: key}},
		{name: "no marker", do: func(c *githubapi.Client) (githubapi.Issue, error) {
			return c.CreateIssue(ctx, "Drift", "no marker here", nil)
		}, wantErr: func(err error) bool { return strings.Contains(err.Error(), "marker") }},
		{name: "no labels, body at GitHub's limit", do: func(c *githubapi.Client) (githubapi.Issue, error) {
			long := body + strings.Repeat("é", githubapi.MaxIssueBodyLength-len([]rune(body)))
			is, err := c.CreateIssue(ctx, "Long", long, nil)
			is.Body = ""
			return is, err
		}, want: githubapi.Issue{Number: 1, Title: "Long", State: "open", Key: key}},
		{name: "body past GitHub's limit", do: func(c *githubapi.Client) (githubapi.Issue, error) {
			return c.CreateIssue(ctx, "Too long", body+strings.Repeat("x", githubapi.MaxIssueBodyLength), nil)
		}, wantErr: func(err error) bool {
			return strings.Contains(err.Error(), "422") && strings.Contains(err.Error(), "too long")
		},
			refused: "body is too long (maximum is 65536 characters)"},
		{name: "close as completed", do: func(c *githubapi.Client) (githubapi.Issue, error) {
			if _, err := c.CreateIssue(ctx, "Drift in apps/web", body, nil); err != nil {
				return githubapi.Issue{}, err
			}
			return c.EditIssue(ctx, 1, githubapi.IssueEdit{State: "closed", StateReason: "completed", Title: "Drift in apps/web (fixed)"})
		}, want: githubapi.Issue{Number: 1, Title: "Drift in apps/web (fixed)", Body: body, State: "closed", Key: key}},
		{name: "edit the body", do: func(c *githubapi.Client) (githubapi.Issue, error) {
			if _, err := c.CreateIssue(ctx, "t", body, nil); err != nil {
				return githubapi.Issue{}, err
			}
			return c.EditIssue(ctx, 1, githubapi.IssueEdit{Body: githubapi.Marker("drift apps/api", 1)})
		}, want: githubapi.Issue{Number: 1, Title: "t", Body: githubapi.Marker("drift apps/api", 1), State: "open", Key: "drift apps/api"}},
		{name: "an issue gone", do: func(c *githubapi.Client) (githubapi.Issue, error) {
			return c.EditIssue(ctx, 42, githubapi.IssueEdit{State: "closed"})
		}, wantErr: func(err error) bool {
			return errors.Is(err, githubapi.ErrIssueGone) && strings.Contains(err.Error(), "#42")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := githubfake.New(t)
			if tc.refused != "" {
				gh.ExpectViolation(tc.refused)
			}
			c := newClient(t, gh)
			got, err := tc.do(c)
			if tc.wantErr != nil {
				if err == nil || !tc.wantErr(err) {
					t.Fatalf("error %v, want it told apart", err)
				}
				if is := gh.Issues(owner, repo); len(is) != 0 {
					t.Errorf("a refused issue was opened: %+v", is)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(got.URL, "/issues/1") {
				t.Errorf("URL %q", got.URL)
			}
			got.URL = ""
			if got != tc.want {
				t.Errorf("issue %+v\nwant  %+v", got, tc.want)
			}
			if is := gh.Issues(owner, repo); len(is) != 1 || is[0].State != tc.want.State {
				t.Errorf("GitHub holds %+v", is)
			}
		})
	}
}
