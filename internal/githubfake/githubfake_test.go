package githubfake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"
)

func client(t *testing.T, s *Server) *github.Client {
	t.Helper()
	c, err := github.NewClient(nil).WithAuthToken("test-token").WithEnterpriseURLs(s.URL, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// raw sends a request as it is, for the requests go-github would not make.
func raw(t *testing.T, s *Server, method, path, body string, auth bool) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, strings.TrimSuffix(s.URL, "/")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.Header.Set("Authorization", "Bearer test-token")
	}
	req.Header.Set("Accept", "application/vnd.github.v3+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// handledOperations are the operations handler answers from state: each must
// still exist in the description, or the fake would answer it from the example.
var handledOperations = [...]string{
	"issues/list-comments", "issues/create-comment", "issues/get-comment", "issues/update-comment",
	"issues/delete-comment", "reactions/create-for-issue-comment", "checks/create", "checks/update",
	"checks/get", "checks/list-for-ref", "repos/create-commit-status", "pulls/get", "pulls/list-files",
	"repos/list-pull-requests-associated-with-commit", "repos/get-collaborator-permission-level",
	"apps/create-installation-access-token", "pulls/list", "pulls/list-reviews", "repos/get-combined-status-for-ref",
	"repos/download-tarball-archive", "apps/list-repos-accessible-to-installation", "apps/get-repo-installation",
	"apps/get-installation", "apps/list-installations", "repos/list-commit-statuses-for-ref", "apps/get-authenticated",
	"actions/create-workflow-dispatch", "actions/list-workflow-runs", "actions/get-workflow-run",
	"actions/list-workflow-run-artifacts", "actions/download-artifact", "users/get-by-username",
}

// needsDescription skips a test of the check against GitHub's description
// when the fake serves without it (a plain go test); under make test the
// fake fails the test before, as the description must be installed there.
func needsDescription(t *testing.T, s *Server) {
	t.Helper()
	if !s.checked {
		t.Skip("GitHub's REST description is not installed: the fake does not check against it")
	}
}

func TestDescription(t *testing.T) {
	s := New(t)
	needsDescription(t, s)
	t.Logf("GitHub's REST description: %d operations, loaded in %v", len(s.desc.ops), s.desc.loadTime)
	for _, id := range handledOperations {
		if s.desc.ops[id] == nil {
			t.Errorf("the fake answers %s from state, but the description has no such operation", id)
		}
		if handler(id) == nil {
			t.Errorf("%s has no handler", id)
		}
	}
}

func TestComments(t *testing.T) {
	s := New(t)
	gh := client(t, s)
	ctx := context.Background()
	s.SetPullRequest("octo", "web", 7, "abc123", "main", false)
	for i := range 150 {
		c, _, err := gh.Issues.CreateComment(ctx, "octo", "web", 7, &github.IssueComment{Body: github.String(fmt.Sprintf("comment %d", i))})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if c.GetUser().GetLogin() != "github-actions[bot]" || !strings.HasPrefix(c.GetHTMLURL(), "https://github.com/octo/web/pull/7#issuecomment-") {
				t.Errorf("created comment: user %q, html_url %q", c.GetUser().GetLogin(), c.GetHTMLURL())
			}
		}
	}
	var all []*github.IssueComment
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	pages := 0
	for {
		cs, resp, err := gh.Issues.ListComments(ctx, "octo", "web", 7, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		all = append(all, cs...)
		if resp.NextPage == 0 {
			if resp.LastPage != 0 {
				t.Errorf("last page still names a last page %d", resp.LastPage)
			}
			break
		}
		if resp.LastPage != 2 {
			t.Errorf("page %d: LastPage = %d, want 2", pages, resp.LastPage)
		}
		opts.Page = resp.NextPage
	}
	if pages != 2 || len(all) != 150 || all[149].GetBody() != "comment 149" {
		t.Fatalf("listed %d comments in %d pages", len(all), pages)
	}

	id := all[3].GetID()
	if _, _, err := gh.Issues.EditComment(ctx, "octo", "web", id, &github.IssueComment{Body: github.String("edited")}); err != nil {
		t.Fatal(err)
	}
	got, _, err := gh.Issues.GetComment(ctx, "octo", "web", id)
	if err != nil || got.GetBody() != "edited" {
		t.Fatalf("get after edit: %v, %q", err, got.GetBody())
	}
	if _, err := gh.Issues.DeleteComment(ctx, "octo", "web", all[0].GetID()); err != nil {
		t.Fatal(err)
	}
	cs := s.Comments("octo", "web", 7)
	if len(cs) != 149 || cs[2].Body != "edited" || cs[2].ID != id || cs[0].User != "github-actions[bot]" {
		t.Fatalf("state after edit and delete: %d comments, third %+v", len(cs), cs[2])
	}
	if _, _, err := gh.Issues.GetComment(ctx, "octo", "web", all[0].GetID()); !is404(err) {
		t.Fatalf("get of a deleted comment: %v, want 404", err)
	}
	if len(s.Comments("octo", "web", 8)) != 0 {
		t.Fatal("comments leaked to another issue")
	}
	last := s.Calls()[len(s.Calls())-1]
	if last.Operation != "issues/get-comment" || last.Method != http.MethodGet || last.Path != fmt.Sprintf("/repos/octo/web/issues/comments/%d", all[0].GetID()) {
		t.Fatalf("last call %+v", last)
	}
}

func is404(err error) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response.StatusCode == http.StatusNotFound
}

func TestCommentLength(t *testing.T) {
	for _, tc := range []struct {
		name      string
		char      string
		length    int
		edit      bool
		wantError bool
	}{
		{"create at the limit", "x", 65536, false, false},
		{"create over the limit", "x", 65537, false, true},
		{"edit over the limit", "x", 70000, true, true},
		// GitHub counts characters, not bytes.
		{"multibyte at the limit", "é", 65536, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, false, nil)
			gh := client(t, s)
			ctx := context.Background()
			body := strings.Repeat(tc.char, tc.length)
			var err error
			if tc.edit {
				c, _, cerr := gh.Issues.CreateComment(ctx, "o", "r", 1, &github.IssueComment{Body: github.String("short")})
				if cerr != nil {
					t.Fatal(cerr)
				}
				_, _, err = gh.Issues.EditComment(ctx, "o", "r", c.GetID(), &github.IssueComment{Body: github.String(body)})
			} else {
				_, _, err = gh.Issues.CreateComment(ctx, "o", "r", 1, &github.IssueComment{Body: github.String(body)})
			}
			if !tc.wantError {
				if err != nil || len(s.Violations()) != 0 {
					t.Fatalf("err %v, violations %v", err, s.Violations())
				}
				return
			}
			var er *github.ErrorResponse
			if !errors.As(err, &er) || er.Response.StatusCode != http.StatusUnprocessableEntity || er.Message != "Validation Failed" ||
				len(er.Errors) != 1 || er.Errors[0].Resource != "IssueComment" || er.Errors[0].Field != "body" ||
				er.Errors[0].Code != "custom" || er.Errors[0].Message != "body is too long (maximum is 65536 characters)" {
				t.Fatalf("got %v (%#v), want GitHub's 422 for a long body", err, er)
			}
			if v := s.Violations(); len(v) != 1 || !strings.Contains(v[0], "body is too long") {
				t.Fatalf("violations %q", v)
			}
			if len(s.Comments("o", "r", 1)) != map[bool]int{true: 1, false: 0}[tc.edit] || (tc.edit && s.Comments("o", "r", 1)[0].Body != "short") {
				t.Fatal("the refused body was kept")
			}
		})
	}
}

func TestViolations(t *testing.T) {
	for _, tc := range []struct {
		name, method, path, body string
		noAuth                   bool
		status                   int
		violation                string // a substring; "" for none
		// schemas: the check needs the schemas of GitHub's whole
		// description; the others hold without it too.
		schemas bool
	}{
		{"valid request", "POST", "/repos/o/r/issues/1/comments", `{"body":"hi"}`, false, 201, "", false},
		{"valid under /api/v3", "POST", "/api/v3/repos/o/r/issues/1/comments", `{"body":"hi"}`, false, 201, "", false},
		{"documented example answer", "GET", "/repos/o/r/issues/1/labels?per_page=5", "", false, 200, "", false},
		{"no token", "GET", "/repos/o/r/pulls/1", "", true, 401, "no Authorization", false},
		{"unknown path", "GET", "/repos/o/r/no-such-thing", "", false, 404, "no such operation", false},
		{"wrong method", "PUT", "/repos/o/r/issues/1/comments", `{"body":"hi"}`, false, 404, "only for GET, POST", false},
		{"bad JSON", "POST", "/repos/o/r/issues/1/comments", `{"body":`, false, 400, "body: unexpected EOF", false},
		{"status description too long", "POST", "/repos/o/r/statuses/abc", `{"state":"success","description":"` + strings.Repeat("d", 141) + `"}`, false, 422, "description is too long", false},
		{"wrong field type", "POST", "/repos/o/r/issues/1/comments", `{"body":5}`, false, 422, `5 is not a string`, true},
		{"misspelt field", "POST", "/repos/o/r/issues/1/comments", `{"bdy":"hi"}`, false, 422, `unknown property "bdy"`, true},
		{"missing body", "POST", "/repos/o/r/issues/1/comments", ``, false, 422, "requires a request body", true},
		{"non-integer path parameter", "GET", "/repos/o/r/issues/one/comments", "", false, 422, "is not an integer", true},
		{"unknown query parameter", "GET", "/repos/o/r/pulls/1/files?perpage=100", "", false, 422, `unknown parameter "perpage"`, true},
		{"wrong query type", "GET", "/repos/o/r/pulls/1/files?per_page=many", "", false, 422, "per_page", true},
		{"enum", "POST", "/repos/o/r/statuses/abc", `{"state":"green"}`, false, 422, `"green" is not one of`, true},
		{"missing required field", "POST", "/repos/o/r/check-runs", `{"name":"x"}`, false, 422, `missing required property "head_sha"`, true},
		{"nested field", "POST", "/repos/o/r/check-runs", `{"name":"x","head_sha":"a","output":{"title":"t"}}`, false, 422, `body.output: missing required property "summary"`, true},
		{"check run summary too long", "POST", "/repos/o/r/check-runs", `{"name":"x","head_sha":"a","output":{"title":"t","summary":"` + strings.Repeat("s", 65536) + `"}}`, false, 422, "Only 65535 characters are allowed; 65536 were supplied.", true},
		{"completed without conclusion", "PATCH", "/repos/o/r/check-runs/1", `{"status":"completed"}`, false, 422, `missing required property "conclusion"`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, false, nil)
			if tc.schemas {
				needsDescription(t, s)
			}
			status, body := raw(t, s, tc.method, tc.path, tc.body, !tc.noAuth)
			if status != tc.status {
				t.Errorf("status %d, want %d: %s", status, tc.status, body)
			}
			v := s.Violations()
			switch {
			case tc.violation == "" && len(v) != 0:
				t.Errorf("violations %q, want none", v)
			case tc.violation != "" && (len(v) != 1 || !strings.Contains(v[0], tc.violation)):
				t.Errorf("violations %q, want one with %q", v, tc.violation)
			}
			if c := s.Calls(); len(c) != 1 || c[0].Method != tc.method || c[0].Body == nil && tc.body != "" {
				t.Errorf("calls %+v", c)
			}
		})
	}
}

// TestAnswersChecked makes sure a fake answer GitHub's schema does not
// allow is caught, while the documented example's own slips are not.
func TestAnswersChecked(t *testing.T) {
	s := newServer(t, false, nil)
	needsDescription(t, s)
	op := s.desc.ops["issues/get-comment"]
	good := s.template(op.id, "200")
	s.checkResponse(op, 200, mustJSON(t, good))
	if v := s.Violations(); len(v) != 0 {
		t.Fatalf("the documented example itself: %q", v)
	}
	bad := s.template(op.id, "200")
	bad["id"] = "not a number"
	delete(bad, "user")
	s.checkResponse(op, 200, mustJSON(t, bad))
	v := strings.Join(s.Violations(), "\n")
	if !strings.Contains(v, `response.id: "not a number" is not an integer`) || !strings.Contains(v, `missing required property "user"`) {
		t.Fatalf("violations %q", v)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheckRuns(t *testing.T) {
	s := New(t)
	gh := client(t, s)
	ctx := context.Background()
	cr, _, err := gh.Checks.CreateCheckRun(ctx, "o", "r", github.CreateCheckRunOptions{
		Name: "kusion preview", HeadSHA: "abc", Status: github.String("in_progress"),
		Output: &github.CheckRunOutput{Title: github.String("Preview"), Summary: github.String("running")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if cr.GetName() != "kusion preview" || cr.GetStatus() != "in_progress" || cr.GetHeadSHA() != "abc" || cr.Conclusion != nil {
		t.Fatalf("created %+v", cr)
	}
	up, _, err := gh.Checks.UpdateCheckRun(ctx, "o", "r", cr.GetID(), github.UpdateCheckRunOptions{
		Name: "kusion preview", Conclusion: github.String("success"),
		Output: &github.CheckRunOutput{Title: github.String("Done"), Summary: github.String("2 stacks"), Text: github.String("details")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if up.GetStatus() != "completed" || up.GetConclusion() != "success" || up.CompletedAt == nil || up.GetOutput().GetSummary() != "2 stacks" {
		t.Fatalf("updated %+v", up)
	}
	if _, _, err := gh.Checks.CreateCheckRun(ctx, "o", "r", github.CreateCheckRunOptions{Name: "other", HeadSHA: "def"}); err != nil {
		t.Fatal(err)
	}
	list, _, err := gh.Checks.ListCheckRunsForRef(ctx, "o", "r", "abc", &github.ListCheckRunsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if list.GetTotal() != 1 || list.CheckRuns[0].GetID() != cr.GetID() || list.CheckRuns[0].GetConclusion() != "success" {
		t.Fatalf("listed %+v", list)
	}
	want := []CheckRun{
		{ID: cr.GetID(), Name: "kusion preview", HeadSHA: "abc", Status: "completed", Conclusion: "success", Title: "Done", Summary: "2 stacks", Text: "details"},
		{ID: cr.GetID() + 1, Name: "other", HeadSHA: "def", Status: "queued"},
	}
	if got := s.CheckRuns("o", "r"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("state %+v, want %+v", got, want)
	}
}

func TestPullFiles(t *testing.T) {
	s := New(t)
	files := make([]PullFile, 250)
	for i := range files {
		files[i] = PullFile{Filename: fmt.Sprintf("stacks/%03d/main.k", i), Status: "modified"}
	}
	files[5] = PullFile{Filename: "new.k", Status: "renamed", PreviousFilename: "old.k"}
	s.SetPullFiles("o", "r", 3, files)

	for _, tc := range []struct {
		query string
		n     int
		link  []string // rels, in order
	}{
		{"per_page=100", 100, []string{"next", "last"}},
		{"per_page=100&page=2", 100, []string{"prev", "next", "last", "first"}},
		{"per_page=100&page=3", 50, []string{"prev", "first"}},
		{"", 30, []string{"next", "last"}},
		{"per_page=500", 100, []string{"next", "last"}},
		{"per_page=100&page=4", 0, []string{"prev", "first"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			req, _ := http.NewRequest("GET", s.URL+"repos/o/r/pulls/3/files?"+tc.query, nil)
			req.Header.Set("Authorization", "token t")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if n := strings.Count(string(b), `"filename"`); n != tc.n {
				t.Errorf("%d files, want %d", n, tc.n)
			}
			var rels []string
			for _, l := range strings.Split(resp.Header.Get("Link"), ", ") {
				if _, rel, ok := strings.Cut(l, `; rel="`); ok {
					rels = append(rels, strings.TrimSuffix(rel, `"`))
				}
				if !strings.HasPrefix(l, "<"+strings.TrimSuffix(s.URL, "/")+"/repos/o/r/pulls/3/files?") {
					t.Errorf("link %q", l)
				}
			}
			if fmt.Sprint(rels) != fmt.Sprint(tc.link) {
				t.Errorf("Link %q, want rels %v", resp.Header.Get("Link"), tc.link)
			}
		})
	}

	// go-github follows the Link header.
	gh := client(t, s)
	var got []*github.CommitFile
	opts := &github.ListOptions{PerPage: 100}
	for {
		fs, resp, err := gh.PullRequests.ListFiles(context.Background(), "o", "r", 3, opts)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fs...)
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if len(got) != 250 || got[249].GetFilename() != "stacks/249/main.k" || got[5].GetPreviousFilename() != "old.k" || got[6].PreviousFilename != nil {
		t.Fatalf("go-github listed %d files", len(got))
	}
}

func TestPullRequests(t *testing.T) {
	s := New(t)
	gh := client(t, s)
	ctx := context.Background()
	s.SetPullRequest("o", "r", 12, "headsha", "release", true)
	s.SetPullRequest("o", "r", 13, "other", "main", false)
	s.MergePullRequest("o", "r", 13, "mergesha")
	s.SetCommitPulls("o", "r", "mergesha", []int{13, 12})

	pr, _, err := gh.PullRequests.Get(ctx, "o", "r", 12)
	if err != nil {
		t.Fatal(err)
	}
	if pr.GetNumber() != 12 || pr.GetHead().GetSHA() != "headsha" || pr.GetBase().GetRef() != "release" ||
		!pr.GetHead().GetRepo().GetFork() || pr.GetState() != "open" || pr.GetMerged() {
		t.Fatalf("pull request %+v", pr)
	}
	pr, _, err = gh.PullRequests.Get(ctx, "O", "R", 13)
	if err != nil {
		t.Fatal(err)
	}
	if !pr.GetMerged() || pr.GetState() != "closed" || pr.GetMergeCommitSHA() != "mergesha" {
		t.Fatalf("merged pull request %+v", pr)
	}
	if _, _, err := gh.PullRequests.Get(ctx, "o", "r", 99); !is404(err) {
		t.Fatalf("unknown pull request: %v", err)
	}
	prs, _, err := gh.PullRequests.ListPullRequestsWithCommit(ctx, "o", "r", "mergesha", &github.ListOptions{PerPage: 100})
	if err != nil || len(prs) != 2 || prs[0].GetNumber() != 13 || prs[0].GetHead().GetSHA() != "other" || prs[1].GetNumber() != 12 {
		t.Fatalf("pulls of commit: %v %+v", err, prs)
	}
	prs, _, err = gh.PullRequests.ListPullRequestsWithCommit(ctx, "o", "r", "unknown", nil)
	if err != nil || len(prs) != 0 {
		t.Fatalf("pulls of an unknown commit: %v %+v", err, prs)
	}
}

func TestStatusesPermissionsReactionsTokens(t *testing.T) {
	s := New(t)
	gh := client(t, s)
	ctx := context.Background()

	st, _, err := gh.Repositories.CreateStatus(ctx, "o", "r", "sha1", &github.RepoStatus{
		State: github.String("pending"), Context: github.String("kusion/preview"), Description: github.String("running"),
	})
	if err != nil || st.GetState() != "pending" || st.GetContext() != "kusion/preview" {
		t.Fatalf("status: %v %+v", err, st)
	}
	if got := s.Statuses("o", "r", "sha1"); len(got) != 1 || got[0] != (Status{Context: "kusion/preview", State: "pending", Description: "running"}) {
		t.Fatalf("statuses %+v", got)
	}

	s.SetPermission("o", "r", "alice", "maintain")
	p, _, err := gh.Repositories.GetPermissionLevel(ctx, "o", "r", "alice")
	if err != nil || p.GetPermission() != "write" || p.GetUser().GetLogin() != "alice" {
		t.Fatalf("permission: %v %+v", err, p)
	}
	if _, _, err := gh.Repositories.GetPermissionLevel(ctx, "o", "r", "mallory"); !is404(err) {
		t.Fatalf("permission of a stranger: %v", err)
	}

	c, _, err := gh.Issues.CreateComment(ctx, "o", "r", 1, &github.IssueComment{Body: github.String("/kusion apply")})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Reactions.CreateIssueCommentReaction(ctx, "o", "r", c.GetID(), "eyes"); err != nil {
		t.Fatal(err)
	}
	if got := s.Reactions("o", "r", c.GetID()); fmt.Sprint(got) != "[eyes]" {
		t.Fatalf("reactions %v", got)
	}

	tok, _, err := gh.Apps.CreateInstallationToken(ctx, 42, nil)
	if err != nil || !strings.HasPrefix(tok.GetToken(), "ghs_") || tok.GetExpiresAt().Before(c.GetCreatedAt().Time) {
		t.Fatalf("installation token: %v %+v", err, tok)
	}
	app, err := github.NewClient(nil).WithAuthToken(tok.GetToken()).WithEnterpriseURLs(s.URL, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	c2, _, err := app.Issues.CreateComment(ctx, "o", "r", 1, &github.IssueComment{Body: github.String("as the app")})
	if err != nil || c2.GetUser().GetLogin() != "octoapp[bot]" || c2.GetUser().GetType() != "Bot" {
		t.Fatalf("comment with an installation token: %v, user %+v", err, c2.GetUser())
	}
}

func TestEvents(t *testing.T) {
	for _, tc := range []struct{ name, action string }{
		{"pull_request", "opened"},
		{"pull_request", "closed"},
		{"issue_comment", "created"},
		{"push", ""},
	} {
		t.Run(tc.name+"/"+tc.action, func(t *testing.T) {
			ev := Event(t, tc.name, tc.action)
			if a, _ := ev["action"].(string); a != tc.action {
				t.Fatalf("action %q", a)
			}
			if ev["repository"] == nil {
				t.Fatal("no repository")
			}
		})
	}
	ev := Event(t, "pull_request", "opened")
	pr := ev["pull_request"].(map[string]any)
	if ev["number"] == nil || pr["head"].(map[string]any)["sha"] == "" {
		t.Fatalf("pull_request opened: number %v", ev["number"])
	}
	// A copy: changing it leaves the next one as published.
	pr["merged"] = true
	ev["number"] = 99.0
	if again := Event(t, "pull_request", "opened"); again["number"] == 99.0 || again["pull_request"].(map[string]any)["merged"] == true {
		t.Fatal("Event returned shared state")
	}
	path := WriteEvent(t, t.TempDir(), ev)
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), `"number": 99`) {
		t.Fatalf("written event: %v", err)
	}
}

// TestWorkflowRunActors: a dispatch asking for the run's details is
// answered 200 with them, one that does not 204, and so is every dispatch
// of a GitHub answering without the run; each run names who dispatched it
// (the token's user, or DispatchAs's writer from a branch's copy) as its
// actor and triggering actor, by the same id GET /users gives the login,
// and a re-run by another user changes the triggering actor only.
func TestWorkflowRunActors(t *testing.T) {
	s := New(t)
	s.SetWorkflow("octo", "infra", "run.yml", Workflow{Inputs: []string{"id"}, RunName: "run [${{ inputs.id }}]"})
	s.SetTokenUser("test-token", "octoapp[bot]")
	const dispatches = "/repos/octo/infra/actions/workflows/run.yml/dispatches"
	status, body := raw(t, s, "POST", dispatches, `{"ref":"master","inputs":{"id":"a"},"return_run_details":true}`, true)
	var details struct {
		RunID   int64  `json:"workflow_run_id"`
		HTMLURL string `json:"html_url"`
	}
	if err := json.Unmarshal([]byte(body), &details); status != http.StatusOK || err != nil || details.RunID != s.Dispatches()[0].RunID || details.HTMLURL == "" {
		t.Fatalf("a dispatch asking for the run: %d %s", status, body)
	}
	if status, body := raw(t, s, "POST", dispatches, `{"ref":"master","inputs":{"id":"b"}}`, true); status != http.StatusNoContent {
		t.Errorf("a dispatch not asking for the run: %d %s", status, body)
	}
	s.SetTree("octo", "infra", "weak", t.TempDir())
	forged, err := s.DispatchAs("mallory", "octo", "infra", "run.yml", "weak", map[string]any{"id": "a"})
	if err != nil || forged.Actor != "mallory" || forged.Ref != "weak" {
		t.Fatalf("a writer's dispatch: %+v, %v", forged, err)
	}
	if _, err := s.DispatchAs("mallory", "octo", "infra", "run.yml", "master", map[string]any{"other": "x"}); err == nil {
		t.Error("a dispatch with an undeclared input was taken")
	}
	s.AnswerDispatchWithoutRun()
	if status, body := raw(t, s, "POST", dispatches, `{"ref":"master","inputs":{"id":"c"},"return_run_details":true}`, true); status != http.StatusNoContent {
		t.Errorf("an older GitHub's answer: %d %s", status, body)
	}

	ctx := context.Background()
	c := client(t, s)
	bot, _, err := c.Users.Get(ctx, "octoapp%5Bbot%5D")
	if err != nil || bot.GetLogin() != "octoapp[bot]" || bot.GetType() != "Bot" || bot.GetID() == 0 {
		t.Fatalf("the bot's account: %+v, %v", bot, err)
	}
	mallory, _, err := c.Users.Get(ctx, "mallory")
	if err != nil || mallory.GetID() == 0 || mallory.GetID() == bot.GetID() {
		t.Fatalf("mallory's account: %+v, %v", mallory, err)
	}
	s.RerunAs("mallory", "octo", "infra", details.RunID)
	runs, _, err := c.Actions.ListWorkflowRunsByFileName(ctx, "octo", "infra", "run.yml", nil)
	if err != nil || len(runs.WorkflowRuns) != 4 {
		t.Fatalf("runs: %+v, %v", runs, err)
	}
	for _, r := range runs.WorkflowRuns {
		actor, triggering := r.GetActor(), r.GetTriggeringActor()
		want, wantTriggering := bot, bot
		switch r.GetID() {
		case forged.RunID:
			want, wantTriggering = mallory, mallory
			if r.GetHeadBranch() != "weak" {
				t.Errorf("the writer's run is on %q", r.GetHeadBranch())
			}
		case details.RunID:
			wantTriggering = mallory
			if r.GetStatus() != "queued" || r.GetRunAttempt() != 2 {
				t.Errorf("the re-run: %s, attempt %d", r.GetStatus(), r.GetRunAttempt())
			}
		}
		if actor.GetID() != want.GetID() || actor.GetLogin() != want.GetLogin() || triggering.GetID() != wantTriggering.GetID() || triggering.GetLogin() != wantTriggering.GetLogin() {
			t.Errorf("run %d: actor %s (%d), triggering %s (%d)", r.GetID(), actor.GetLogin(), actor.GetID(), triggering.GetLogin(), triggering.GetID())
		}
	}
	onWeak, _, err := c.Actions.ListWorkflowRunsByFileName(ctx, "octo", "infra", "run.yml", &github.ListWorkflowRunsOptions{Branch: "weak"})
	if err != nil || len(onWeak.WorkflowRuns) != 1 || onWeak.WorkflowRuns[0].GetID() != forged.RunID {
		t.Errorf("runs on weak: %+v, %v", onWeak, err)
	}
}
