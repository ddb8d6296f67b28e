package bot

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/workflow"
)

const prHead = "abcabcabcabcabcabcabcabcabcabcabcabcabca"

// pullRequestWorld is pull request #7 of owner/name into main, at prHead,
// by "author", set up as a test case asks: dev's permission ("" for none),
// the reviews, the mergeable_state GitHub answers after reads answering
// null, and a CI check run's conclusion.
type pullRequestWorld struct {
	permission     string
	reviews        []githubfake.Review
	nullReads      int
	mergeableState string
	ci             string
}

func (w pullRequestWorld) set(t *testing.T, gh *githubfake.Server) {
	t.Helper()
	gh.SetPullRequest(owner, name, 7, prHead, "main", false)
	gh.SetPullRequestDetails(owner, name, 7, "author", true)
	gh.SetTree(owner, name, prHead, tree(t))
	if w.permission != "" {
		gh.SetPermission(owner, name, "dev", w.permission)
	}
	for _, r := range w.reviews {
		gh.SetPermission(owner, name, r.User, "write")
	}
	gh.SetReviews(owner, name, 7, w.reviews)
	gh.SetMergeableAfter(owner, name, 7, w.nullReads, w.mergeableState)
	if w.ci != "" {
		gh.SetCheckRun(owner, name, prHead, "ci/build", w.ci)
	}
}

// comment posts body on #7 as dev and delivers GitHub's issue_comment
// event of it to the bot; it returns the comment.
func comment(t *testing.T, gh *githubfake.Server, body string) githubfake.Comment {
	t.Helper()
	c := gh.PostComment(owner, name, 7, "dev", body)
	p := payload(t, "issue_comment", "created")
	issue, _ := p["issue"].(map[string]any)
	issue["number"] = 7
	issue["pull_request"] = map[string]any{"url": gh.URL + "repos/octo/infra/pulls/7"}
	cm, _ := p["comment"].(map[string]any)
	cm["id"], cm["body"] = c.ID, body
	cm["user"] = map[string]any{"login": "dev", "type": "User"}
	if d := gh.Deliver(t, "issue_comment", p); d.Status != http.StatusAccepted {
		t.Fatalf("the comment's delivery answered %d %s", d.Status, d.Body)
	}
	return c
}

// TestCommentCommands: a command in a pull request's comment, delivered by
// GitHub, through the App's installation: the bot marks it taken (eyes),
// checks who asked and the gates as GitHub answers them (write permission,
// an approval of the head, mergeability GitHub may still be computing,
// green checks), runs it at the head or refuses saying why, on the pull
// request.
func TestCommentCommands(t *testing.T) {
	approved := []githubfake.Review{{User: "reviewer", State: "APPROVED"}}
	ready := pullRequestWorld{permission: "write", reviews: approved, mergeableState: "clean", ci: "success"}
	with := func(f func(*pullRequestWorld)) pullRequestWorld { w := ready; f(&w); return w }
	for _, tc := range []struct {
		name      string
		world     pullRequestWorld
		command   string
		wantWork  []string // "command@sha by actor"
		wantReply string   // a substring of the bot's reply; "" for none
		reactions []string // the bot's reactions to the command
	}{
		{name: "an apply that passes every gate", world: ready, command: "/kusion apply",
			wantWork: []string{"apply@" + prHead + " by dev"}, wantReply: "No stack is touched", reactions: []string{"eyes"}},
		{name: "mergeability still computed when asked", world: with(func(w *pullRequestWorld) { w.nullReads = 1 }), command: "/kusion apply",
			wantWork: []string{"apply@" + prHead + " by dev"}, wantReply: "No stack is touched", reactions: []string{"eyes"}},
		{name: "no collaborator", world: with(func(w *pullRequestWorld) { w.permission = "" }), command: "/kusion apply",
			wantReply: "needs write or admin permission", reactions: []string{"eyes", "-1"}},
		{name: "a reader", world: with(func(w *pullRequestWorld) { w.permission = "read" }), command: "/kusion apply",
			wantReply: "@dev has read", reactions: []string{"eyes", "-1"}},
		{name: "no approval", world: with(func(w *pullRequestWorld) { w.reviews = nil }), command: "/kusion apply",
			wantReply: "needs an approval of its head", reactions: []string{"eyes", "-1"}},
		{name: "changes requested after the approval", world: with(func(w *pullRequestWorld) {
			w.reviews = []githubfake.Review{{User: "reviewer", State: "APPROVED"}, {User: "reviewer", State: "CHANGES_REQUESTED"}}
		}), command: "/kusion apply", wantReply: "needs an approval", reactions: []string{"eyes", "-1"}},
		{name: "conflicts", world: with(func(w *pullRequestWorld) { w.mergeableState = "dirty" }), command: "/kusion apply",
			wantReply: "conflicts with `main`", reactions: []string{"eyes", "-1"}},
		{name: "behind", world: with(func(w *pullRequestWorld) { w.mergeableState = "behind" }), command: "/kusion apply",
			wantReply: "behind `main`", reactions: []string{"eyes", "-1"}},
		{name: "a failed check", world: with(func(w *pullRequestWorld) { w.ci = "failure" }), command: "/kusion apply",
			wantReply: "checks of the head are not green: `ci/build (by github-actions)`", reactions: []string{"eyes", "-1"}},
		{name: "a preview is anyone's", world: pullRequestWorld{mergeableState: "dirty"}, command: "/kusion preview",
			wantWork: []string{"preview@" + prHead + " by dev"}, wantReply: "No stack is touched", reactions: []string{"eyes"}},
		{name: "help", world: pullRequestWorld{mergeableState: "clean"}, command: "/kusion help",
			wantReply: "/kusion apply", reactions: []string{"eyes"}},
		{name: "unlock", world: ready, command: "/kusion unlock apps/web/dev",
			wantReply: "Release 4 of `apps/web/dev` is now failed", reactions: []string{"eyes", "+1"}},
		{name: "unlock by a reader", world: with(func(w *pullRequestWorld) { w.permission = "read" }), command: "/kusion unlock apps/web/dev",
			wantReply: "needs write or admin permission", reactions: []string{"eyes", "-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := githubfake.New(t)
			work := &fakeWork{out: &workflow.Outcome{}}
			b, _ := appBot(t, gh, work, nil)
			listen(t, gh, b)
			tc.world.set(t, gh)
			c := comment(t, gh, tc.command)
			drain(t, b)
			if got := changes(work); !slices.Equal(got, tc.wantWork) {
				t.Errorf("work %q, want %q", got, tc.wantWork)
			}
			var replies []string
			for _, r := range gh.Comments(owner, name, 7) {
				if r.ID != c.ID {
					replies = append(replies, r.Body)
					if r.User != gh.AppLogin() {
						t.Errorf("a reply by %s, not the App's bot", r.User)
					}
				}
			}
			switch {
			case tc.wantReply == "" && len(replies) != 0:
				t.Errorf("replies %q, want none", replies)
			case tc.wantReply != "" && (len(replies) != 1 || !strings.Contains(replies[0], tc.wantReply)):
				t.Errorf("replies %q, want one with %q", replies, tc.wantReply)
			}
			if got := gh.Reactions(owner, name, c.ID); !slices.Equal(got, tc.reactions) {
				t.Errorf("reactions %v, want %v", got, tc.reactions)
			}
			if strings.HasPrefix(tc.command, "/kusion unlock") && len(work.unlocks) != map[bool]int{true: 1, false: 0}[tc.reactions[len(tc.reactions)-1] == "+1"] {
				t.Errorf("unlocks %q", work.unlocks)
			}
		})
	}
}
