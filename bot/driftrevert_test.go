package bot

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/executor/ghactions"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/workflow"
)

// driftBody is the body of the bot's drift issue of stack, measured
// against release revision, as the scan writes its first lines.
func driftBody(stack, revision string) string {
	return githubapi.Marker("drift project=quickstart workspace=default stack="+stack, 1) +
		"\n<!-- kusionpr:drift-release " + revision + " -->\nThe stack drifted.\n"
}

// TestRevertDriftRefusals: /kusion apply on a drift issue reverts the
// drift only on an open drift issue the bot itself opened, for someone who
// may write, with the stack run in the bot's own process against its
// release store; anything else is refused on the issue saying why, and a
// revert that fails says so too.
func TestRevertDriftRefusals(t *testing.T) {
	for _, tc := range []struct {
		name       string
		by         string // who opened the issue; "" the App's bot
		body       string
		closed     bool
		permission string
		noStore    bool
		executor   string
		wantReply  string
		reaction   string
	}{
		{name: "a stranger's issue with the label", by: "mallory", body: driftBody("dev", "3"), permission: "write",
			wantReply: "not a drift issue the bot opened", reaction: "-1"},
		{name: "a closed drift issue", body: driftBody("dev", "3"), closed: true, permission: "write",
			wantReply: "this drift issue is closed", reaction: "-1"},
		{name: "a reader", body: driftBody("dev", "3"), permission: "read",
			wantReply: "needs write or admin permission", reaction: "-1"},
		{name: "no release store", body: driftBody("dev", "3"), permission: "write", noStore: true,
			wantReply: "has no release store", reaction: "-1"},
		{name: "stacks run away from the bot", body: driftBody("dev", "3"), permission: "write", executor: "github-actions",
			wantReply: "runs stacks away from its own process", reaction: "-1"},
		{name: "an issue naming no release", body: githubapi.Marker("drift project=quickstart workspace=default stack=dev", 1) + "\nno release line\n",
			permission: "write", wantReply: "does not say which release", reaction: "-1"},
		{name: "a stack outside the repository", body: driftBody("..%2F..%2Fetc", "3"), permission: "write",
			wantReply: "not a folder of the repository", reaction: "-1"},
		{name: "a revert that fails", body: driftBody("dev", "3"), permission: "write",
			wantReply: "the revert of `dev` failed", reaction: "confused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := githubfake.New(t)
			b, _ := appBot(t, gh, &fakeWork{out: &workflow.Outcome{}}, func(c *Config) {
				if !tc.noStore {
					c.Backend = "file://" + t.TempDir()
				}
				if tc.executor != "" {
					c.Executor = tc.executor
					c.GitHubActions = githubActionsConfig()
				}
			})
			listen(t, gh, b)
			gh.SetTree(owner, name, "main", "../examples/quickstart")
			by := tc.by
			if by == "" {
				by = gh.AppLogin()
			}
			is := gh.OpenIssue(owner, name, by, "Drift in dev", tc.body, []string{workflow.DriftLabel})
			if tc.closed {
				gh.CloseIssue(owner, name, is.Number, gh.AppLogin())
			}
			gh.SetPermission(owner, name, "dev", tc.permission)
			c := gh.PostComment(owner, name, is.Number, "dev", "/kusion apply")
			p := payload(t, "issue_comment", "created")
			issue := p["issue"].(map[string]any)
			issue["number"] = is.Number
			delete(issue, "pull_request")
			issue["labels"] = []any{map[string]any{"name": workflow.DriftLabel}}
			cm := p["comment"].(map[string]any)
			cm["id"], cm["body"], cm["user"] = c.ID, "/kusion apply", map[string]any{"login": "dev", "type": "User"}
			if d := gh.Deliver(t, "issue_comment", p); d.Status != http.StatusAccepted {
				t.Fatalf("the comment's delivery answered %d %s", d.Status, d.Body)
			}
			drain(t, b)
			var replies []string
			for _, r := range gh.Comments(owner, name, is.Number) {
				if r.ID != c.ID {
					replies = append(replies, r.Body)
				}
			}
			if len(replies) != 1 || !strings.Contains(replies[0], tc.wantReply) {
				t.Errorf("replies %q, want one with %q", replies, tc.wantReply)
			}
			if got := gh.Reactions(owner, name, c.ID); !slices.Equal(got, []string{"eyes", tc.reaction}) {
				t.Errorf("reactions %v, want eyes and %s", got, tc.reaction)
			}
		})
	}
}

// githubActionsConfig is the github-actions executor's settings, defaults.
func githubActionsConfig() *ghactions.Config { return &ghactions.Config{} }
