package githubapi_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/githubfake"
	"k8s.io/apimachinery/pkg/util/wait"
)

const (
	owner, repo = "octo", "web"
	head        = "1111111111111111111111111111111111111111"
	older       = "0000000000000000000000000000000000000000"
)

func newClient(t *testing.T, gh *githubfake.Server) *githubapi.Client {
	t.Helper()
	c, err := githubapi.New("test-token", gh.URL, owner, repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestApprovals: GitHub's meaning of an approval. Each reviewer's latest
// review that decides is theirs; only an approval of the head, by a
// writer other than the author, counts.
func TestApprovals(t *testing.T) {
	ctx := context.Background()
	perms := map[string]string{"writer": "write", "maintainer": "maintain", "admin": "admin", "reader": "read", "triager": "triage", "author": "write"}
	for _, tc := range []struct {
		name    string
		reviews []githubfake.Review
		counted []string
		why     map[string]string // user -> why their approval does not count
	}{
		{"a writer's approval of the head", []githubfake.Review{{User: "writer", State: "APPROVED"}}, []string{"writer"}, nil},
		{"a maintainer's, an admin's", []githubfake.Review{{User: "maintainer", State: "APPROVED"}, {User: "admin", State: "APPROVED"}}, []string{"maintainer", "admin"}, nil},
		{"a reader's", []githubfake.Review{{User: "reader", State: "APPROVED"}}, nil, map[string]string{"reader": "has read permission on the repository, not write"}},
		{"a triager's", []githubfake.Review{{User: "triager", State: "APPROVED"}}, nil, map[string]string{"triager": "has triage permission"}},
		{"a stranger's (no collaborator)", []githubfake.Review{{User: "stranger", State: "APPROVED"}}, nil, map[string]string{"stranger": "has none permission"}},
		{"of an older commit", []githubfake.Review{{User: "writer", State: "APPROVED", CommitID: older}}, nil, map[string]string{"writer": "approved 0000000, not the head 1111111"}},
		{"of a commit force-pushed away (commit_id null)", []githubfake.Review{{User: "writer", State: "APPROVED", CommitGone: true}}, nil, map[string]string{"writer": "force-pushed away"}},
		{"the author's own", []githubfake.Review{{User: "Author", State: "APPROVED"}}, nil, map[string]string{"Author": "is the author"}},
		{"then changes requested", []githubfake.Review{{User: "writer", State: "APPROVED"}, {User: "writer", State: "CHANGES_REQUESTED"}}, nil, nil},
		{"then dismissed", []githubfake.Review{{User: "writer", State: "DISMISSED"}}, nil, nil},
		{"approved, dismissed, approved again", []githubfake.Review{{User: "writer", State: "DISMISSED"}, {User: "writer", State: "APPROVED"}}, []string{"writer"}, nil},
		{"then a comment: the approval stands", []githubfake.Review{{User: "writer", State: "APPROVED"}, {User: "writer", State: "COMMENTED"}}, []string{"writer"}, nil},
		{"changes requested, then approved", []githubfake.Review{{User: "writer", State: "CHANGES_REQUESTED"}, {User: "writer", State: "APPROVED"}}, []string{"writer"}, nil},
		{"an approval of the head after one of an older commit", []githubfake.Review{{User: "writer", State: "APPROVED", CommitID: older}, {User: "writer", State: "APPROVED"}}, []string{"writer"}, nil},
		{"an older approval does not outlive a newer one of another commit", []githubfake.Review{{User: "writer", State: "APPROVED"}, {User: "writer", State: "APPROVED", CommitID: older}}, nil, map[string]string{"writer": "approved 0000000"}},
		{"a reader's does not make up for a missing writer's", []githubfake.Review{{User: "reader", State: "APPROVED"}, {User: "writer", State: "CHANGES_REQUESTED"}}, nil, map[string]string{"reader": "read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := githubfake.New(t)
			gh.SetPullRequest(owner, repo, 5, head, "main", false)
			for u, p := range perms {
				gh.SetPermission(owner, repo, u, p)
			}
			gh.SetReviews(owner, repo, 5, tc.reviews)
			got, err := newClient(t, gh).Approvals(ctx, 5, "author", "", head)
			if err != nil {
				t.Fatal(err)
			}
			var counted []string
			for _, a := range got {
				if a.Why == "" {
					counted = append(counted, a.User)
					continue
				}
				if want, ok := tc.why[a.User]; !ok || !strings.Contains(a.Why, want) {
					t.Errorf("%s's approval not counted because %q, want %q", a.User, a.Why, want)
				}
			}
			if strings.Join(counted, ",") != strings.Join(tc.counted, ",") {
				t.Errorf("counted approvals %q, want %q", counted, tc.counted)
			}
			if len(got)-len(counted) != len(tc.why) {
				t.Errorf("approvals %+v, want %d not counted", got, len(tc.why))
			}
		})
	}
}

func TestPermissionRoles(t *testing.T) {
	gh := githubfake.New(t)
	c := newClient(t, gh)
	for role, canWrite := range map[string]bool{"admin": true, "maintain": true, "write": true, "triage": false, "read": false} {
		gh.SetPermission(owner, repo, "u-"+role, role)
		a, err := c.Permission(context.Background(), "u-"+role)
		if err != nil {
			t.Fatal(err)
		}
		if a.CanWrite() != canWrite || a.String() != role {
			t.Errorf("role %s: %+v, CanWrite %v", role, a, a.CanWrite())
		}
		// The levels an override of a policy may ask for.
		levels := map[string][]string{"admin": {"admin", "maintain", "write"}, "maintain": {"maintain", "write"}, "write": {"write"}}[role]
		for _, level := range []string{"admin", "maintain", "write"} {
			if want := slices.Contains(levels, level); a.AtLeast(level) != want {
				t.Errorf("role %s at least %s: %v, want %v", role, level, a.AtLeast(level), want)
			}
		}
	}
}

func TestWaitMergeable(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	c := newClient(t, gh)
	gh.SetPullRequest(owner, repo, 8, head, "main", false)
	reads := func() int {
		n := 0
		for _, call := range gh.Calls() {
			if call.Operation == "pulls/get" {
				n++
			}
		}
		return n
	}

	// GitHub answers null twice, then clean: read three times.
	gh.SetMergeableAfter(owner, repo, 8, 2, "clean")
	first, err := c.PullRequestDetail(ctx, 8)
	if err != nil {
		t.Fatal(err)
	}
	if first.Computed() || first.Mergeable != nil || first.MergeableState != "unknown" {
		t.Fatalf("first read %+v, want mergeable null", first)
	}
	d, err := c.WaitMergeable(ctx, 8, wait.Backoff{Duration: time.Millisecond, Factor: 2, Cap: 2 * time.Millisecond, Steps: 10}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Computed() || d.MergeableState != "clean" || !*d.Mergeable || reads() != 3 {
		t.Errorf("after waiting: %+v in %d reads, want clean in 3", d, reads())
	}

	// Never computed within the bound: the last read, not computed.
	gh.SetMergeableAfter(owner, repo, 8, 1000, "clean")
	before := reads()
	d, err = c.WaitMergeable(ctx, 8, wait.Backoff{Duration: time.Millisecond, Factor: 2, Cap: 4 * time.Millisecond, Steps: 10}, 20*time.Millisecond)
	if err != nil || d.Computed() {
		t.Errorf("past the bound: %+v, %v; want not computed, no error", d, err)
	}
	if reads() == before {
		t.Error("WaitMergeable did not read the pull request")
	}

	// A pause that would end past the bound is not begun: one read.
	before = reads()
	start := time.Now()
	if d, err = c.WaitMergeable(ctx, 8, wait.Backoff{Duration: time.Hour}, time.Minute); err != nil || d.Computed() || reads() != before+1 || time.Since(start) > 10*time.Second {
		t.Errorf("a pause past the bound: %+v, %v after %d reads in %s; want the one read, at once", d, err, reads()-before, time.Since(start))
	}

	// Cancelling the context ends an hour's wait: the last read comes back.
	cctx, cancel := context.WithCancel(ctx)
	type result struct {
		d   *githubapi.PullRequestDetail
		err error
	}
	done := make(chan result)
	before = reads()
	go func() {
		d, err := c.WaitMergeable(cctx, 8, wait.Backoff{Duration: time.Hour}, 2*time.Hour)
		done <- result{d, err}
	}()
	for reads() == before {
		time.Sleep(time.Millisecond)
	}
	cancel()
	// Cancelled during the read (its error) or during the wait (the read).
	if r := <-done; !errors.Is(r.err, context.Canceled) && (r.err != nil || r.d == nil || r.d.Computed()) {
		t.Errorf("a cancelled wait returned %+v, %v", r.d, r.err)
	}

	for _, state := range []string{"blocked", "behind", "dirty", "draft", "unstable", "has_hooks"} {
		gh.SetMergeableState(owner, repo, 8, state)
		d, err := c.PullRequestDetail(ctx, 8)
		if err != nil || d.MergeableState != state || !d.Computed() {
			t.Errorf("%s: %+v, %v", state, d, err)
		}
	}
}

// TestChecksGreenByMaker: the gate leaves out what this App made, by its
// app id and bot user, never what others made under a look-alike name.
func TestChecksGreenByMaker(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	c := newClient(t, gh)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	// The App the bot is; the test's own token still reads as any token.
	gh.SetAppKey(4242, &key.PublicKey)
	self := gh.App()
	own := githubapi.Own{AppID: self.ID, Login: self.Slug + "[bot]"}
	sha := head
	gh.SetCheckRunBy(owner, repo, sha, "kusion/preview: apps/web/dev", "failure", self)
	gh.SetStatus(owner, repo, sha, "kusion/apply", "failure", own.Login)
	gh.SetCheckRunBy(owner, repo, sha, "build", "success", githubfake.GitHubActions())
	gh.SetStatus(owner, repo, sha, "ci/lint", "failure", "ci-user")
	gh.SetStatus(owner, repo, sha, "ci/lint", "success", "ci-user") // newer: supersedes
	ok, bad, err := c.ChecksGreen(ctx, sha, own)
	if err != nil || !ok || len(bad) != 0 {
		t.Fatalf("with only the App's own failing: green %v, failing %q, %v", ok, bad, err)
	}

	gh.SetCheckRunBy(owner, repo, sha, "kusion/preview: apps/api/dev", "failure", githubfake.GitHubActions())
	gh.SetStatus(owner, repo, sha, "kusion/preview", "error", "someone-else")
	gh.SetCheckRunBy(owner, repo, sha, "deploy-gate", "", githubfake.CheckApp{ID: 99, Slug: "other-app", Name: "Other"})
	ok, bad, err = c.ChecksGreen(ctx, sha, own)
	if err != nil || ok {
		t.Fatalf("green %v (%v) with another app's failed kusion/preview", ok, err)
	}
	want := []string{"kusion/preview: apps/api/dev (by github-actions)", "deploy-gate (by other-app)", "kusion/preview (by someone-else)"}
	if strings.Join(bad, "|") != strings.Join(want, "|") {
		t.Errorf("failing %q, want %q", bad, want)
	}
}

// TestForkRule: a pull request is a fork's when its head is in another
// repository than its base, by id, whether GitHub flags that repository a
// fork or not, or when the head's repository was deleted; a pull request
// between two branches of a repository that is itself a fork is not. The
// API and the event payloads say the same.
func TestForkRule(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	c := newClient(t, gh)
	gh.SetPullRequest(owner, repo, 3, head, "main", false)
	gh.SetPullRequest(owner, repo, 4, head, "main", true)
	gh.SetPullRequest(owner, repo, 5, head, "main", false)
	gh.SetRepositoryIsFork(owner, repo, 5)
	gh.SetPullRequest(owner, repo, 6, head, "main", false)
	gh.SetHeadRepoDeleted(owner, repo, 6)
	for number, want := range map[int]bool{3: false, 4: true, 5: false, 6: true} {
		pr, err := c.PullRequest(ctx, number)
		if err != nil {
			t.Fatal(err)
		}
		d, err := c.PullRequestDetail(ctx, number)
		if err != nil {
			t.Fatal(err)
		}
		if pr.Fork() != want || d.Fork() != want {
			t.Errorf("#%d: PullRequest fork %v, PullRequestDetail fork %v, want %v", number, pr.Fork(), d.Fork(), want)
		}
	}

	// The same from event payloads, as the action and the bot read them.
	event := func(headRepo string) []byte {
		return []byte(`{"action": "synchronize", "pull_request": {"number": 9, "head": {"sha": "abc", "repo": ` + headRepo +
			`}, "base": {"ref": "main", "repo": {"id": 10, "full_name": "octo/web", "fork": false}}}}`)
	}
	for _, tc := range []struct {
		name, headRepo string
		want           bool
	}{
		{"a branch of the same repository", `{"id": 10, "full_name": "octo/web", "fork": false}`, false},
		{"the same repository, its name in other case", `{"id": 10, "full_name": "Octo/Web", "fork": false}`, false},
		{"one id, two names: taken for a fork", `{"id": 10, "full_name": "someone/web", "fork": false}`, true},
		{"a fork", `{"id": 11, "full_name": "someone/web", "fork": true}`, true},
		{"a fork of a fork", `{"id": 12, "full_name": "another/web", "fork": true}`, true},
		{"another repository, not flagged a fork", `{"id": 13, "full_name": "someone/web", "fork": false}`, true},
		{"a deleted fork (head.repo null)", `null`, true},
	} {
		ev, err := githubapi.ParseEvent("pull_request", event(tc.headRepo))
		if err != nil || ev.PullRequest == nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		pr := ev.PullRequest
		if pr.Fork() != tc.want || pr.Number != 9 || pr.HeadSHA != "abc" || pr.BaseRef != "main" {
			t.Errorf("%s: %+v fork %v, want fork %v", tc.name, pr, pr.Fork(), tc.want)
		}
	}
	// In a repository that is itself a fork, a pull request between two of
	// its branches: both sides are the one repository.
	ev, _ := githubapi.ParseEvent("pull_request", []byte(`{"pull_request": {"number": 1, "head": {"repo": {"id": 20, "full_name": "me/web", "fork": true}}, "base": {"repo": {"id": 20, "full_name": "me/web", "fork": true}}}}`))
	if ev.PullRequest.Fork() {
		t.Errorf("a pull request inside a fork, between its own branches, is taken for a fork's")
	}
	if ev, err := githubapi.ParseEvent("push", []byte(`{"ref": "refs/heads/main"}`)); err != nil || ev.PullRequest != nil {
		t.Errorf("a push event: %+v, %v; want no pull request", ev, err)
	}
}

func TestAppLogin(t *testing.T) {
	gh := githubfake.New(t)
	app := testApp(t, gh, 4242)
	for range 2 {
		login, err := app.Login(context.Background())
		if err != nil || login != gh.App().Slug+"[bot]" {
			t.Fatalf("AppLogin = %q, %v", login, err)
		}
	}
	n := 0
	for _, c := range gh.Calls() {
		if c.Operation == "apps/get-authenticated" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("GET /app %d times, want once", n)
	}
}

// TestApprovalsLeaveOutThePusher: asked to, the approval of whoever pushed
// the head does not count, as GitHub's "approval of the most recent
// reviewable push" has it; another writer's still does.
func TestApprovalsLeaveOutThePusher(t *testing.T) {
	const head = "1111111111111111111111111111111111111111"
	gh := githubfake.New(t)
	gh.SetPullRequest(owner, repo, 5, head, "main", false)
	gh.SetPermission(owner, repo, "writer", "write")
	gh.SetPermission(owner, repo, "maintainer", "maintain")
	gh.SetReviews(owner, repo, 5, []githubfake.Review{{User: "writer", State: "APPROVED"}, {User: "maintainer", State: "APPROVED"}})
	got, err := newClient(t, gh).Approvals(context.Background(), 5, "author", "Writer", head)
	if err != nil {
		t.Fatal(err)
	}
	why := map[string]string{}
	for _, a := range got {
		why[a.User] = a.Why
	}
	if why["writer"] != "pushed the head" || why["maintainer"] != "" || len(why) != 2 {
		t.Errorf("approvals %+v: want the writer's left out as the pusher, the maintainer's counted", got)
	}
}

// TestPusher: who pushed a branch's head, from the repository's activity:
// the newest push, force-push or creation whose result is the commit; a
// commit nobody is listed pushing is an error, never a guess.
func TestPusher(t *testing.T) {
	const a, b = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	gh := githubfake.New(t)
	gh.Push(owner, repo, "feature", "", a, "author")
	gh.Push(owner, repo, "feature", a, b, "mallory")
	gh.Push(owner, repo, "other", "", b, "someone")
	c := newClient(t, gh)
	for _, tc := range []struct{ branch, sha, want, err string }{
		{"feature", b, "mallory", ""},
		{"feature", a, "author", ""},
		{"other", b, "someone", ""},
		{"other", a, "", "GitHub lists no push"},
	} {
		got, err := c.Pusher(context.Background(), tc.branch, tc.sha)
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Pusher(%s, %s) = %q, %v; want %q, %q", tc.branch, tc.sha[:7], got, err, tc.want, tc.err)
		}
	}
}
