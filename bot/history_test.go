package bot

import (
	"context"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/chatops"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/workflow"
)

// TestRollbackAndCancelOnADriftIssue: on a drift issue, as on a pull
// request, a writer's /kusion rollback runs the stack at the default
// branch's head as an apply of the recorded release's spec (its request
// says which, its origin says rollback), and /kusion cancel asks the
// store; a reader is refused both; a preview there is still refused.
func TestRollbackAndCancelOnADriftIssue(t *testing.T) {
	done := &workflow.Outcome{Stacks: []*workflow.StackOutcome{{Dir: "apps/web",
		Result: &workflow.StackResult{Release: &model.Release{Revision: 7, Phase: model.PhaseSucceeded}}}}}
	for _, tc := range []struct {
		name       string
		cmd        chatops.Command
		permission string
		wantReply  string
	}{
		{"rollback", chatops.Command{Verb: chatops.Rollback, Stacks: []string{"apps/web"}, Revision: 3}, "write", "@alice rolled `apps/web` back to release 3: now release 7, succeeded."},
		{"rollback by a reader", chatops.Command{Verb: chatops.Rollback, Stacks: []string{"apps/web"}, Revision: 3}, "read", "it needs write or admin permission"},
		{"cancel", chatops.Command{Verb: chatops.Cancel, Stacks: []string{"apps/web"}}, "write", "@alice asked release 4 of `apps/web` to stop"},
		{"cancel by a reader", chatops.Command{Verb: chatops.Cancel, Stacks: []string{"apps/web"}}, "read", "it needs write or admin permission"},
		{"preview", chatops.Command{Verb: chatops.Preview}, "write", "on a drift issue, `/kusion apply` applies the stack's latest release again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := &fakeGitHub{permission: tc.permission}
			work := &fakeWork{out: done}
			b := testBot(t, gh, work)
			b.handle(context.Background(), job{installation: 1, owner: "octo", repo: "infra", defaultBranch: "main", number: 12,
				actor: "alice", commentID: 99, command: tc.cmd, driftIssue: true})
			if len(gh.replies) != 1 || !strings.Contains(gh.replies[0], tc.wantReply) {
				t.Fatalf("replies %q, want one saying %q", gh.replies, tc.wantReply)
			}
			ran := len(work.changes) + len(work.unlocks)
			if tc.permission != "write" || tc.cmd.Verb == chatops.Preview {
				if ran != 0 {
					t.Errorf("refused, yet %d things ran", ran)
				}
				return
			}
			if tc.cmd.Verb == chatops.Cancel {
				if len(work.unlocks) != 1 || !strings.HasPrefix(work.unlocks[0], "cancel alice: /kusion cancel on #12") {
					t.Errorf("cancels asked: %q", work.unlocks)
				}
				return
			}
			if len(work.changes) != 1 {
				t.Fatalf("%d changes, want the rollback's", len(work.changes))
			}
			c := work.changes[0]
			if c.Request.RollbackTo != 3 || c.Request.Origin.Command != "rollback" || c.Command != workflow.Apply || c.SHA != headSHA ||
				len(c.Files) != 1 || c.Files[0].Path != "apps/web/stack.yaml" || c.Comment != "never" {
				t.Errorf("the rollback's change: %+v, request %+v", c, c.Request)
			}
		})
	}
}

// TestMadeByEscapesTheRelease: what a reply says of a release comes from
// the store, which the repository's workflows write too: a commit or a
// name that is Markdown renders as text, mentioning and linking no one.
func TestMadeByEscapesTheRelease(t *testing.T) {
	got := madeBy(&model.Release{Origin: &model.Origin{PullRequest: 3, SHA: "@everyone<img>", Actor: "[x](http://evil)"}})
	if want := " (#3, `@everyone<im`, by `[x](http://evil)`)"; got != want {
		t.Errorf("madeBy = %q, want %q", got, want)
	}
}
