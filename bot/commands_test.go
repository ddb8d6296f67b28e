package bot

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/chatops"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/workflow"
	"k8s.io/apimachinery/pkg/util/wait"
)

// fakeGitHub answers the bot's commands as one installation of GitHub
// would, from what a test sets, and keeps what the bot said.
type fakeGitHub struct {
	workflow.GitHub // the workflow's calls are fakeWork's

	permission string
	claimed    bool                          // the comment was taken before
	prs        []githubapi.PullRequestDetail // read in turn; the last stays
	reads      int
	approvals  []githubapi.Approval
	failing    []string // check runs not green
	checkout   error
	replies    []string
	reactions  []string
	asked      []string          // who Permission was asked for
	files      map[string]string // "ref:path" to content
	fileReads  []string
	checks     []githubapi.Check
}

func (f *fakeGitHub) SetCheck(_ context.Context, _ string, ck githubapi.Check) error {
	f.checks = append(f.checks, ck)
	return nil
}

func (f *fakeGitHub) FileAt(_ context.Context, path, ref string, _ int) ([]byte, error) {
	f.fileReads = append(f.fileReads, ref+":"+path)
	body, ok := f.files[ref+":"+path]
	if !ok {
		return nil, nil
	}
	return []byte(body), nil
}

func (f *fakeGitHub) Claim(context.Context, int64) (bool, error) { return !f.claimed, nil }

func (f *fakeGitHub) React(_ context.Context, _ int64, content string) error {
	f.reactions = append(f.reactions, content)
	return nil
}

func (f *fakeGitHub) Reply(_ context.Context, _ int, body string) error {
	f.replies = append(f.replies, body)
	return nil
}

func (f *fakeGitHub) Permission(_ context.Context, user string) (githubapi.Access, error) {
	f.asked = append(f.asked, user)
	return githubapi.Access{Permission: f.permission}, nil
}

func (f *fakeGitHub) PullRequestDetail(context.Context, int) (*githubapi.PullRequestDetail, error) {
	pr := f.prs[min(f.reads, len(f.prs)-1)]
	f.reads++
	return &pr, nil
}

func (f *fakeGitHub) WaitMergeable(ctx context.Context, n int, _ wait.Backoff, _ time.Duration) (*githubapi.PullRequestDetail, error) {
	return f.PullRequestDetail(ctx, n)
}

func (f *fakeGitHub) Approvals(context.Context, int, string, string, string) ([]githubapi.Approval, error) {
	return f.approvals, nil
}

func (f *fakeGitHub) Pusher(context.Context, string, string) (string, error) {
	return "", errors.New("no pushes here")
}

func (f *fakeGitHub) ChecksGreen(context.Context, string, githubapi.Own) (bool, []string, error) {
	return len(f.failing) == 0, f.failing, nil
}

func (f *fakeGitHub) Checkout(context.Context, string, string, githubapi.ArchiveLimits) error {
	return f.checkout
}

func (f *fakeGitHub) BranchHead(context.Context, string) (string, error) { return headSHA, nil }

// fakeWork does a command's work on no cluster: it keeps what it was asked.
type fakeWork struct {
	changes []*workflow.Change
	unlocks []string
	out     *workflow.Outcome
	err     error
}

func (w *fakeWork) Change(_ context.Context, c *workflow.Change) (*workflow.Outcome, error) {
	w.changes = append(w.changes, c)
	return w.out, w.err
}

func (w *fakeWork) Cancel(_ context.Context, _ workflow.Request, who, why string) (*model.Release, *model.Cancel, error) {
	w.unlocks = append(w.unlocks, "cancel "+who+": "+why)
	return &model.Release{Revision: 4, Phase: model.PhaseApplying}, &model.Cancel{Revision: 4, By: who}, w.err
}

func (w *fakeWork) Releases(context.Context, workflow.Request, int) (*workflow.History, error) {
	return &workflow.History{}, nil
}

func (w *fakeWork) Unlock(_ context.Context, _ workflow.Request, who, why string) (*model.Release, error) {
	w.unlocks = append(w.unlocks, who+": "+why)
	return &model.Release{Revision: 4, Phase: model.PhaseFailed, Message: "unlocked by " + who}, w.err
}

const headSHA = "1111111111111111111111111111111111111111"

// open is an open, mergeable pull request from a branch of the repository.
func open() githubapi.PullRequestDetail {
	return githubapi.PullRequestDetail{
		PullRequest: githubapi.PullRequest{Number: 7, HeadSHA: headSHA, BaseRef: "main", HeadRepoID: 1, BaseRepoID: 1,
			HeadRepo: "octo/infra", BaseRepo: "octo/infra", Author: "author"},
		Mergeable: new(true), MergeableState: "clean", State: "open",
	}
}

func fork() githubapi.PullRequestDetail {
	pr := open()
	pr.HeadRepoID, pr.HeadRepo = 2, "someone/infra"
	return pr
}

func testBot(t *testing.T, gh *fakeGitHub, work *fakeWork) *Bot {
	t.Helper()
	cfg := &Config{WebhookSecret: "s3cr3t-for-tests", Concurrency: 1, Root: ".", RequireApproval: true, RequireMergeable: true,
		RequireChecks: true, MergeableStates: []string{"clean"}, Comment: "always", MaxCheckoutBytes: 1 << 20, MaxCheckoutFiles: 100, MaxUnverifiedBytes: 64 << 20}
	b, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	b.client = func(int64, string, string) (gitHub, error) { return gh, nil }
	b.login = func(context.Context) (string, error) { return "kusionpr[bot]", nil }
	b.work = work
	return b
}

// TestCommandRules: each verb's authorisation and what it answers, on a
// fake GitHub and no cluster. A refused command does no work and says why
// to whoever asked; a preview is anyone's, a fork's offline; an apply
// before merge needs write access, an approval, a mergeable head, green
// checks and a head that stays put; after the merge, the merge decides.
func TestCommandRules(t *testing.T) {
	approved := []githubapi.Approval{{User: "reviewer", CommitID: headSHA}}
	moved := open()
	moved.HeadSHA = "2222222222222222222222222222222222222222"
	weak := open()
	weak.BaseRef = "weak"
	touched := &workflow.Outcome{Stacks: []*workflow.StackOutcome{{Dir: "apps/web"}}}
	for _, tc := range []struct {
		name        string
		verb        chatops.Verb
		afterMerge  bool
		gh          fakeGitHub
		out         *workflow.Outcome
		runErr      error
		wantWork    string // "Preview", "Apply", "unlock" or "" for none
		wantOffline bool
		wantReply   string
		wantReact   string
		// executor and backend, when set, are the bot's settings.
		executor, backend string
	}{
		{name: "help", verb: chatops.Help, gh: fakeGitHub{prs: []githubapi.PullRequestDetail{open()}}, wantReply: "/kusion"},
		{name: "a preview by a reader", verb: chatops.Preview, gh: fakeGitHub{permission: "read", prs: []githubapi.PullRequestDetail{open()}},
			out: touched, wantWork: "preview", wantReact: "rocket"},
		{name: "a fork's preview, offline", verb: chatops.Preview, gh: fakeGitHub{prs: []githubapi.PullRequestDetail{fork()}},
			out: touched, wantWork: "preview", wantOffline: true, wantReact: "rocket"},
		{name: "an apply by a reader", verb: chatops.Apply, gh: fakeGitHub{permission: "read", prs: []githubapi.PullRequestDetail{open()}, approvals: approved},
			wantReply: "it needs write or admin permission on the repository; @alice has read", wantReact: "-1"},
		{name: "a fork's apply", verb: chatops.Apply, gh: fakeGitHub{permission: "write", prs: []githubapi.PullRequestDetail{fork()}, approvals: approved},
			wantReply: "pull requests from forks are never applied", wantReact: "-1"},
		{name: "an apply not approved", verb: chatops.Apply, gh: fakeGitHub{permission: "write", prs: []githubapi.PullRequestDetail{open()}},
			wantReply: "it needs an approval of its head 1111111", wantReact: "-1"},
		{name: "an apply with a red check", verb: chatops.Apply, gh: fakeGitHub{permission: "write", prs: []githubapi.PullRequestDetail{open()}, approvals: approved, failing: []string{"ci/lint (by ci)"}},
			wantReply: "checks of the head are not green: `ci/lint (by ci)`", wantReact: "-1"},
		{name: "an apply whose head moves during the checkout", verb: chatops.Apply, gh: fakeGitHub{permission: "write", prs: []githubapi.PullRequestDetail{open(), moved}, approvals: approved},
			wantReply: "the pull request moved from 1111111", wantReact: "-1"},
		{name: "an apply into a branch that does not apply", verb: chatops.Apply, gh: fakeGitHub{permission: "admin", prs: []githubapi.PullRequestDetail{weak}, approvals: approved},
			wantReply: "it is into `weak`, and the bot applies only what goes into `main` (KUSIONPR_APPLY_BRANCHES): it is previewed, never applied", wantReact: "-1"},
		{name: "a preview into a branch that does not apply, without the Apply button", verb: chatops.Preview, gh: fakeGitHub{prs: []githubapi.PullRequestDetail{weak}},
			out: touched, wantWork: "preview", wantReact: "rocket"},
		{name: "an apply that may", verb: chatops.Apply, gh: fakeGitHub{permission: "admin", prs: []githubapi.PullRequestDetail{open()}, approvals: approved},
			out: touched, wantWork: "apply", wantReact: "rocket"},
		{name: "a merge's apply, its author unasked", verb: chatops.Apply, afterMerge: true, gh: fakeGitHub{permission: "none", prs: []githubapi.PullRequestDetail{open()}},
			out: touched, wantWork: "apply"},
		{name: "an apply that fails", verb: chatops.Apply, gh: fakeGitHub{permission: "write", prs: []githubapi.PullRequestDetail{open()}, approvals: approved},
			runErr: errors.New("list files of pull request #7: 502"), wantWork: "apply", wantReply: "the run failed", wantReact: "-1"},
		{name: "a checkout refused", verb: chatops.Preview, gh: fakeGitHub{prs: []githubapi.PullRequestDetail{open()}, checkout: errors.New("unpack: boom")},
			wantReply: "the checkout failed", wantReact: "-1"},
		{name: "no stack touched", verb: chatops.Preview, gh: fakeGitHub{prs: []githubapi.PullRequestDetail{open()}},
			out: &workflow.Outcome{}, wantWork: "preview", wantReply: "No stack is touched by this pull request"},
		{name: "stacks skipped", verb: chatops.Apply, afterMerge: true, gh: fakeGitHub{prs: []githubapi.PullRequestDetail{open()}},
			out: &workflow.Outcome{Stacks: []*workflow.StackOutcome{{Dir: "apps/web", Skipped: "a newer merge was applied"}}}, wantWork: "apply", wantReply: "Not applied at 3333333:\n- `apps/web`: a newer merge was applied"},
		{name: "an unlock by a reader", verb: chatops.Unlock, gh: fakeGitHub{permission: "read", prs: []githubapi.PullRequestDetail{open()}},
			wantReply: "it needs write or admin permission", wantReact: "-1"},
		{name: "an unlock", verb: chatops.Unlock, gh: fakeGitHub{permission: "write", prs: []githubapi.PullRequestDetail{open()}},
			wantWork: "unlock", wantReply: "Release 4 of `apps/web` is now failed: `unlocked by alice`", wantReact: "+1"},
		{name: "an unlock where the workflows hold the store", verb: chatops.Unlock, gh: fakeGitHub{permission: "write", prs: []githubapi.PullRequestDetail{open()}},
			executor: "github-actions", wantReply: "holds no release store (KUSIONPR_BACKEND is not set)", wantReact: "-1"},
		{name: "an unlock by a github-actions bot given a store", verb: chatops.Unlock, gh: fakeGitHub{permission: "write", prs: []githubapi.PullRequestDetail{open()}},
			executor: "github-actions", backend: "s3://releases", wantWork: "unlock", wantReply: "is now failed", wantReact: "+1"},
		{name: "a command taken before", verb: chatops.Apply, gh: fakeGitHub{claimed: true, permission: "write", prs: []githubapi.PullRequestDetail{open()}, approvals: approved}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := tc.gh
			work := &fakeWork{out: tc.out, err: tc.runErr}
			b := testBot(t, &gh, work)
			if tc.executor != "" {
				b.cfg.Executor, b.cfg.Backend = tc.executor, tc.backend
			}
			j := job{installation: 1, owner: "octo", repo: "infra", defaultBranch: "main", number: 7, actor: "alice", commentID: 99,
				command: chatops.Command{Verb: tc.verb}, afterMerge: tc.afterMerge}
			if tc.verb == chatops.Unlock {
				j.command.Stacks = []string{"apps/web"}
			}
			if tc.afterMerge {
				j.commentID, j.sha = 0, "3333333333333333333333333333333333333333"
			}
			b.handle(context.Background(), j)

			did := ""
			switch {
			case len(work.changes) == 1:
				did = string(work.changes[0].Command)
				if got := work.changes[0].Request.Offline; got != tc.wantOffline {
					t.Errorf("offline %v, want %v", got, tc.wantOffline)
				}
				if want := map[bool]string{false: headSHA, true: j.sha}[tc.afterMerge]; work.changes[0].SHA != want {
					t.Errorf("ran at %s, want %s", work.changes[0].SHA, want)
				}
				// A merge is one request however often it comes; a
				// comment is its own (an executor's Job is named so).
				if want := map[bool]string{false: "comment 99", true: "merge"}[tc.afterMerge]; work.changes[0].Request.Trigger != want {
					t.Errorf("trigger %q, want %q", work.changes[0].Request.Trigger, want)
				}
				if got := work.changes[0].Request.Merge != nil; got != tc.afterMerge {
					t.Errorf("merge order set: %v, want %v", got, tc.afterMerge)
				}
				// The Apply button only where an apply may follow.
				if want := tc.verb == chatops.Preview && !strings.Contains(tc.name, "does not apply"); work.changes[0].ApplyAction != want {
					t.Errorf("Apply button offered: %v, want %v", work.changes[0].ApplyAction, want)
				}
			case len(work.unlocks) == 1:
				did = "unlock"
			case len(work.changes)+len(work.unlocks) > 1:
				t.Fatalf("%d changes and %d unlocks, want one at most", len(work.changes), len(work.unlocks))
			}
			if did != tc.wantWork {
				t.Errorf("work done: %q, want %q", did, tc.wantWork)
			}
			replies := strings.Join(gh.replies, "\n---\n")
			if tc.wantReply == "" && len(gh.replies) > 0 || !strings.Contains(replies, tc.wantReply) {
				t.Errorf("replies:\n%s\nwant one with %q", replies, tc.wantReply)
			}
			if tc.wantReact != "" && !strings.Contains(strings.Join(gh.reactions, " "), tc.wantReact) {
				t.Errorf("reactions %v, want %s", gh.reactions, tc.wantReact)
			}
			if tc.afterMerge && len(gh.asked) > 0 {
				t.Errorf("a merge's apply asked for %v's permission: the merge decides", gh.asked)
			}
		})
	}
}

// TestMergeGroupPreview: a merge queue's group is previewed at its own
// commit, compared with its base (the workflow lists what it changes),
// with no comment and no reply; a group that cannot be checked out or
// compared gets a failed kusion/preview saying why, so that the queue does
// not wait for a check that never comes.
func TestMergeGroupPreview(t *testing.T) {
	const head, base = "4444444444444444444444444444444444444444", "5555555555555555555555555555555555555555"
	for _, tc := range []struct {
		name      string
		gh        fakeGitHub
		runErr    error
		wantCheck string
	}{
		{name: "a group"},
		{name: "a group that cannot be compared", runErr: errors.New("compare the group with its base: 502 Bad Gateway"), wantCheck: "502 Bad Gateway"},
		{name: "a group that cannot be checked out", gh: fakeGitHub{checkout: errors.New("unpack: boom")}, wantCheck: "the checkout failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := tc.gh
			work := &fakeWork{out: &workflow.Outcome{}, err: tc.runErr}
			b := testBot(t, &gh, work)
			b.handle(context.Background(), job{installation: 1, owner: "octo", repo: "infra", sha: head, queueBase: base, actor: "github-merge-queue[bot]",
				command: chatops.Command{Verb: chatops.Preview}})
			if len(gh.replies)+len(gh.reactions) > 0 || gh.reads > 0 {
				t.Errorf("replies %q, reactions %q, pull request reads %d: a group belongs to no pull request", gh.replies, gh.reactions, gh.reads)
			}
			if tc.wantCheck != "" {
				if len(gh.checks) != 1 || gh.checks[0].Name != "kusion/preview" || gh.checks[0].Conclusion != "failure" ||
					!strings.Contains(gh.checks[0].Summary, tc.wantCheck) {
					t.Fatalf("checks %+v; want one failed kusion/preview saying %q", gh.checks, tc.wantCheck)
				}
				return
			}
			if len(work.changes) != 1 {
				t.Fatalf("%d changes, want one", len(work.changes))
			}
			c := work.changes[0]
			if c.Command != workflow.Preview || c.SHA != head || c.Base != base || c.Number != 0 || c.Files != nil ||
				c.Request.Offline || c.Request.Origin.Command != "merge queue" {
				t.Errorf("the change: command %s at %s against %s, #%d, files %v, offline %v, origin %+v",
					c.Command, c.SHA, c.Base, c.Number, c.Files, c.Request.Offline, c.Request.Origin)
			}
		})
	}
}

// TestApplyButtonOfAnOlderPreview: the Apply button of a preview the pull
// request has moved on from applies nothing and says to press the new one;
// the button of the current one applies, at that commit, for whoever
// pressed it.
func TestApplyButtonOfAnOlderPreview(t *testing.T) {
	approved := []githubapi.Approval{{User: "reviewer", CommitID: headSHA}}
	for _, tc := range []struct {
		name, pressedAt, wantReply string
		wantWork                   bool
	}{
		{name: "the current preview's", pressedAt: headSHA, wantWork: true},
		{name: "an older preview's", pressedAt: "9999999999999999999999999999999999999999", wantReply: "the Apply button pressed is of the preview of 9999999, and the pull request is now at 1111111"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := &fakeGitHub{permission: "write", prs: []githubapi.PullRequestDetail{open()}, approvals: approved}
			work := &fakeWork{out: &workflow.Outcome{Stacks: []*workflow.StackOutcome{{Dir: "apps/web/dev"}}}}
			b := testBot(t, gh, work)
			b.handle(context.Background(), job{installation: 1, owner: "octo", repo: "infra", defaultBranch: "main", number: 7, actor: "presser", pressedAt: tc.pressedAt,
				command: chatops.Command{Verb: chatops.Apply, Stacks: []string{"apps/web/dev"}}})
			if got := len(work.changes) == 1; got != tc.wantWork {
				t.Fatalf("applied: %v, want %v; replies %q", got, tc.wantWork, gh.replies)
			}
			if tc.wantWork {
				c := work.changes[0]
				if c.SHA != headSHA || c.Request.Origin.Actor != "presser" || c.Request.Origin.Command != "Apply button" || len(c.Selection.Dirs) != 1 {
					t.Errorf("the apply: at %s by %s (%s), stacks %v", c.SHA, c.Request.Origin.Actor, c.Request.Origin.Command, c.Selection.Dirs)
				}
				return
			}
			if !strings.Contains(strings.Join(gh.replies, "\n"), tc.wantReply) {
				t.Errorf("replies %q, want one saying %q", gh.replies, tc.wantReply)
			}
		})
	}
}
