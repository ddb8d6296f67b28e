package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/chatops"
	"github.com/kusionpr/kusionpr/executor/ghactions"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/workflow"
	"k8s.io/apimachinery/pkg/util/wait"
)

// gitHub is what the bot's commands ask of GitHub through one
// installation's token; *githubapi.Client is the implementation.
type gitHub interface {
	workflow.GitHub
	Claim(ctx context.Context, commentID int64) (bool, error)
	React(ctx context.Context, commentID int64, content string) error
	Reply(ctx context.Context, issue int, body string) error
	Permission(ctx context.Context, user string) (githubapi.Access, error)
	PullRequestDetail(ctx context.Context, number int) (*githubapi.PullRequestDetail, error)
	WaitMergeable(ctx context.Context, number int, b wait.Backoff, within time.Duration) (*githubapi.PullRequestDetail, error)
	Approvals(ctx context.Context, number int, author, pusher, headSHA string) ([]githubapi.Approval, error)
	Pusher(ctx context.Context, branch, sha string) (string, error)
	ChecksGreen(ctx context.Context, sha string, own githubapi.Own) (bool, []string, error)
	Checkout(ctx context.Context, ref, dir string, lim githubapi.ArchiveLimits) error
	FileAt(ctx context.Context, path, ref string, limit int) ([]byte, error)
	BranchHead(ctx context.Context, branch string) (string, error)
}

// stackWork is what an authorised command does to the stacks of a
// checkout; workflowWork, the bot's workflow.Runner, is the implementation.
type stackWork interface {
	Change(ctx context.Context, c *workflow.Change) (*workflow.Outcome, error)
	Unlock(ctx context.Context, req workflow.Request, who, why string) (*model.Release, error)
	Cancel(ctx context.Context, req workflow.Request, who, why string) (*model.Release, *model.Cancel, error)
	Releases(ctx context.Context, req workflow.Request, limit int) (*workflow.History, error)
}

// workflowWork runs each stack through stacks (the runner itself, or an
// executor away from the bot); unlocks, which only touch the release
// store, through the runner.
type workflowWork struct {
	runner *workflow.Runner
	stacks workflow.StackRunner
}

func (w workflowWork) Change(ctx context.Context, c *workflow.Change) (*workflow.Outcome, error) {
	if c.Runner == nil {
		c.Runner = w.stacks
	}
	if c.Runner == nil {
		c.Runner = w.runner
	}
	return c.Run(ctx)
}

func (w workflowWork) Unlock(ctx context.Context, req workflow.Request, who, why string) (*model.Release, error) {
	return w.runner.Unlock(ctx, req, who, why)
}

func (w workflowWork) Cancel(ctx context.Context, req workflow.Request, who, why string) (*model.Release, *model.Cancel, error) {
	return w.runner.Cancel(ctx, req, who, why)
}

func (w workflowWork) Releases(ctx context.Context, req workflow.Request, limit int) (*workflow.History, error) {
	return w.runner.Releases(ctx, req, backend.ReleaseQuery{Limit: limit})
}

// command is one job being handled: what it asks, of whom, and how it
// answers on the pull request.
type command struct {
	j   job
	gh  gitHub
	log *slog.Logger
	// pr is the pull request as read once the command is authorised; ref
	// the commit it runs at (the head, pinned, or the merge).
	pr  *githubapi.PullRequestDetail
	ref string
	// dir is the checkout of ref.
	dir string
}

func (c *command) react(ctx context.Context, content string) {
	if c.j.commentID != 0 {
		if err := c.gh.React(ctx, c.j.commentID, content); err != nil {
			c.log.Warn("reaction failed", "error", err)
		}
	}
}

func (c *command) reply(ctx context.Context, body string) {
	if err := c.gh.Reply(ctx, c.j.number, body); err != nil {
		c.log.Warn("reply failed", "error", err)
	}
}

// refuse answers with reason, Markdown in which every value from the
// repository or the comment is escaped (mdsafe).
func (c *command) refuse(ctx context.Context, reason string) {
	c.log.Info("refused", "reason", reason)
	if c.j.queueBase != "" {
		// No one to reply to: the queue reads the check run.
		ck := githubapi.Check{Name: workflow.PreviewCheck, Conclusion: "failure", Title: string(c.j.command.Verb) + " refused", Summary: reason}
		if err := c.gh.SetCheck(ctx, c.j.sha, ck); err != nil {
			c.log.Error("the merge group's check run could not be set", "error", err)
		}
		return
	}
	c.react(ctx, "-1")
	c.reply(ctx, fmt.Sprintf("@%s %s refused: %s", c.j.actor, mdsafe.Code("/kusion "+string(c.j.command.Verb)), reason))
}

// refuseErr refuses with an error, whose text is the repository's as much
// as ours.
func (c *command) refuseErr(ctx context.Context, what string, err error) {
	c.refuse(ctx, what+":\n\n"+mdsafe.Fence("text", model.MaskFingerprints(err.Error())))
}

// handlers are the verbs' handlers: each authorises its command, then does
// its work; each answers every refusal on the pull request.
func (b *Bot) handlers() map[chatops.Verb]func(context.Context, *command) {
	return map[chatops.Verb]func(context.Context, *command){
		chatops.Help:     b.help,
		chatops.Preview:  b.preview,
		chatops.Apply:    b.apply,
		chatops.Unlock:   b.unlock,
		chatops.Rollback: b.rollback,
		chatops.Cancel:   b.cancelRun,
	}
}

// handle does one job; every refusal and failure is answered on the pull request.
func (b *Bot) handle(ctx context.Context, j job) {
	log := b.log.With("repository", j.owner+"/"+j.repo, "pullRequest", j.number, "command", j.command.Verb, "actor", j.actor)
	gh, err := b.client(j.installation, j.owner, j.repo)
	if err != nil {
		log.Error("installation client", "error", err)
		return
	}
	c := &command{j: j, gh: gh, log: log}
	if j.commentID != 0 {
		// The bot's "eyes" reaction says the command was taken; GitHub
		// keeps one per user and content, so only the first to add it,
		// in this replica or another, before or after a restart, goes on.
		took, err := gh.Claim(ctx, j.commentID)
		if err != nil {
			log.Error("the command could not be marked as taken, so it was not run", "comment", j.commentID, "error", err)
			return
		}
		if !took {
			log.Warn("the command was taken before (the bot's eyes reaction is on its comment): not run again", "comment", j.commentID)
			return
		}
	}
	handle, ok := b.handlers()[j.command.Verb]
	if j.driftIssue && !onDriftIssues(j.command.Verb) {
		c.refuse(ctx, "on a drift issue, `/kusion apply` applies the stack's latest release again, and `/kusion rollback` and `/kusion cancel` work as on a pull request; the other commands are for pull requests")
		return
	}
	if !ok {
		c.refuse(ctx, "the bot has no such command")
		return
	}
	defer func() {
		if c.dir != "" {
			os.RemoveAll(c.dir)
		}
	}()
	handle(ctx, c)
}

func (b *Bot) help(ctx context.Context, c *command) {
	c.reply(ctx, chatops.HelpText(c.j.command))
}

// preview needs no permission: whoever can comment may see what their
// pull request would do, a fork's against the prior release only.
func (b *Bot) preview(ctx context.Context, c *command) {
	if c.j.queueBase != "" {
		b.previewGroup(ctx, c)
		return
	}
	if !b.checkout(ctx, c, false) {
		return
	}
	b.change(ctx, c, workflow.Preview)
}

// apply, before the merge, needs write permission and the gates
// (approval, mergeability, green checks) at a head that does not move
// while it is checked out; after the merge, the merge is the authority.
func (b *Bot) apply(ctx context.Context, c *command) {
	switch {
	case c.j.queueBase != "":
		b.applyGroup(ctx, c)
		return
	case c.j.driftIssue:
		b.revertDrift(ctx, c)
		return
	}
	if !c.j.afterMerge && (!b.canWrite(ctx, c) || !b.mayOverride(ctx, c)) {
		return
	}
	if !b.checkout(ctx, c, true) {
		return
	}
	b.change(ctx, c, workflow.Apply)
}

// unlock needs write permission: it ends someone's release.
func (b *Bot) unlock(ctx context.Context, c *command) {
	if b.cfg.Executor == "github-actions" && b.cfg.Backend == "" {
		// The store is the workflows'; this bot was given none.
		c.refuse(ctx, "this bot runs stacks in the repository's GitHub Actions workflow and holds no release store (KUSIONPR_BACKEND is not set): unlock the release where the workflow's store is, with `kusion release unlock`")
		return
	}
	if !b.canWrite(ctx, c) || !b.checkout(ctx, c, false) {
		return
	}
	stack := c.j.command.Stacks[0]
	var rel *model.Release
	req, err := b.request(c).For(workflow.Apply, filepath.Join(c.dir, b.cfg.Root, stack))
	if err == nil {
		rel, err = b.work.Unlock(ctx, req, c.j.actor, fmt.Sprintf("/kusion unlock on #%d", c.j.number))
	}
	if err != nil {
		c.refuseErr(ctx, "the unlock failed", c.inRepository(err))
		return
	}
	c.react(ctx, "+1")
	c.reply(ctx, fmt.Sprintf("Release %d of %s is now %s: %s", rel.Revision, mdsafe.Code(stack),
		mdsafe.Plain(string(rel.Phase)), mdsafe.Code(rel.Message)))
}

// inRepository is err with the bot's checkout folder taken out of its
// paths: they are the repository's, not the bot's.
func (c *command) inRepository(err error) error {
	return errors.New(strings.ReplaceAll(err.Error(), c.dir+string(filepath.Separator), ""))
}

// failed answers that the run of what failed, its error (sensitive values
// masked, paths the repository's) fenced.
func (c *command) failed(ctx context.Context, what string, err error) {
	c.react(ctx, "confused")
	c.reply(ctx, fmt.Sprintf("@%s the %s failed:\n\n%s", c.j.actor, what,
		mdsafe.Fence("text", model.MaskFingerprints(c.inRepository(err).Error()))))
}

// canWrite is the authorisation of a command that changes something: the
// commenter may write to the repository.
func (b *Bot) canWrite(ctx context.Context, c *command) bool {
	access, err := c.gh.Permission(ctx, c.j.actor)
	if err != nil {
		c.refuseErr(ctx, "the permission check failed", err)
		return false
	}
	if !access.CanWrite() {
		c.refuse(ctx, fmt.Sprintf("it needs write or admin permission on the repository; @%s has %s", c.j.actor, access))
		return false
	}
	return true
}

// checkout reads the pull request, pins the commit the command runs at
// and unpacks it; gated, an apply before merge first passes the gates and
// after the checkout finds the head where it was. b.handle removes the
// checkout when the command is done.
func (b *Bot) checkout(ctx context.Context, c *command, gated bool) bool {
	pr, err := c.gh.PullRequestDetail(ctx, c.j.number)
	if err != nil {
		c.refuseErr(ctx, "reading the pull request failed", err)
		return false
	}
	c.pr, c.ref = pr, c.j.sha
	if !c.j.afterMerge {
		if c.j.pressedAt != "" && pr.HeadSHA != c.j.pressedAt {
			// The button was of a preview the pull request has moved on
			// from: what was seen is not what would be applied.
			c.refuse(ctx, fmt.Sprintf("the Apply button pressed is of the preview of %s, and the pull request is now at %s: press the button of its new preview", short(c.j.pressedAt), short(pr.HeadSHA)))
			return false
		}
		// The head is pinned now; a push after this command is not applied.
		c.ref = pr.HeadSHA
		if gated {
			if reason := b.applyRefusal(ctx, c, pr); reason != "" {
				c.refuse(ctx, reason)
				return false
			}
		}
	}
	if !b.unpack(ctx, c, c.ref) {
		return false
	}
	if gated && !c.j.afterMerge {
		if now, err := c.gh.PullRequestDetail(ctx, c.j.number); err != nil || now.HeadSHA != c.ref {
			c.refuse(ctx, fmt.Sprintf("the pull request moved from %s while the command was read; comment again to apply the new head", short(c.ref)))
			return false
		}
	}
	return true
}

// unpack checks ref out into a new folder, c.dir (b.handle removes it),
// refusing the command with the reason when it cannot.
func (b *Bot) unpack(ctx context.Context, c *command, ref string) bool {
	dir, err := os.MkdirTemp("", "kusionpr-checkout")
	if err != nil {
		c.refuseErr(ctx, "the checkout failed", err)
		return false
	}
	c.dir = dir
	if err := c.gh.Checkout(ctx, ref, dir, githubapi.ArchiveLimits{MaxBytes: b.cfg.MaxCheckoutBytes, MaxFiles: b.cfg.MaxCheckoutFiles}); err != nil {
		c.refuse(ctx, checkoutRefusal(ref, err))
		return false
	}
	return true
}

// request is what every stack's request of the command shares: the
// checkout, who asked and why, the merge order, a fork's offline preview.
func (b *Bot) request(c *command) workflow.Request {
	j := c.j
	req := workflow.Request{Workspace: b.cfg.Workspace, Log: c.log, Root: c.dir, Commit: c.ref,
		Origin: &model.Origin{PullRequest: j.number, SHA: c.ref, Actor: j.actor, Command: commandName(j), MergedAt: j.mergedAt,
			Repository: &model.Repository{ID: j.repoID, FullName: j.owner + "/" + j.repo}}}
	// The bot records every apply, changed or not: the release is what
	// the merge order reads to keep merges in order and to know a merge done.
	// Unrecorded, a no-op merge B would let an older merge A delivered
	// after it apply A's spec over B's, and every recovery pass would
	// apply B again.
	req.RecordUnchanged = true
	// What made the request: one merge is one request however often it
	// is delivered or recovered; each comment is its own.
	req.Trigger = fmt.Sprintf("comment %d", j.commentID)
	switch {
	case j.afterMerge:
		req.Trigger = "merge"
		req.Merge = &workflow.MergeOrder{SHA: c.ref, MergedAt: j.mergedAt, Recovering: j.recovering}
	case j.queueBase != "" && j.command.Verb == chatops.Apply:
		// The queue lands its groups in order, each right after its apply:
		// the apply's time is its place among merges, and the merge it
		// becomes finds its commit applied (workflow's appliedInQueue).
		req.Trigger = "merge queue"
		req.Origin.MergeQueue = true
		req.Origin.MergedAt = time.Now().UTC()
		req.Merge = &workflow.MergeOrder{SHA: c.ref, MergedAt: req.Origin.MergedAt}
	}
	// A fork's code runs nothing with the bot's credentials (a Terraform
	// plan can run code): previewed against the prior release only, as
	// the action does; the bot trusts no fork.
	if c.pr != nil {
		req.Offline = workflow.DecideFork(&c.pr.PullRequest, j.afterMerge, false).Offline
	}
	return req
}

// onDriftIssues says whether verb works on a drift issue: those that act
// on what is released. An issue has no head to preview or unlock from,
// and a command added later is refused there until it is listed.
func onDriftIssues(verb chatops.Verb) bool {
	switch verb {
	case chatops.Help, chatops.Apply, chatops.Rollback, chatops.Cancel:
		return true
	}
	return false
}

// withExecutors has the change's stacks run by the bot's executors, as
// the repository's settings on its default branch choose; false when
// those cannot be used, the command refused saying why.
func (b *Bot) withExecutors(ctx context.Context, c *command, change *workflow.Change) bool {
	if b.executors == nil {
		return true
	}
	rules, err := b.repositoryRules(ctx, c)
	if err != nil {
		c.refuseErr(ctx, "the repository's "+mdsafe.Code(repositorySettings)+" on "+mdsafe.Code(c.j.defaultBranch)+" could not be used", err)
		return false
	}
	// The github-actions executor dispatches through the command's own
	// installation client.
	gh, _ := c.gh.(ghactions.GitHub)
	change.Runner = b.executors.with(rules, gh)
	return true
}

// change previews or applies the stacks the command names (or the pull
// request touches) and answers how it went.
func (b *Bot) change(ctx context.Context, c *command, cmd workflow.Command) {
	j := c.j
	change := &workflow.Change{
		Root: filepath.Join(c.dir, b.cfg.Root), Number: j.number, SHA: c.ref, Command: cmd, Request: b.request(c),
		Selection: workflow.Selection{Dirs: j.command.Stacks}, GitHub: c.gh, Renderer: b.renderer, Log: c.log,
		Comment: b.cfg.Comment, CombineAbove: b.cfg.CombineAbove, CombineSetting: "KUSIONPR_COMBINE_ABOVE",
		// A merge queue's group: no pull request lists what it changes.
		Base: j.queueBase,
		// and its apply answers the check the queue waits for.
		OverviewCheck: queueCheck(j, cmd),
		// The bot hears a press of its check runs' Apply button
		// (check_run requested_action).
		// Only where an apply may follow: a pull request into a branch
		// that applies.
		ApplyAction: cmd == workflow.Preview && c.pr != nil && b.cfg.appliesFrom(c.pr.BaseRef, j.defaultBranch),
		Deployments: b.cfg.Deployments,
	}
	change.Request.Policy = b.policies(ctx, c, cmd)
	if !b.withExecutors(ctx, c, change) {
		return
	}
	start := time.Now()
	out, err := b.work.Change(ctx, change)
	b.m.durations.WithLabelValues(string(cmd)).Observe(time.Since(start).Seconds())
	if err != nil {
		c.refuseErr(ctx, "the run failed", err)
		return
	}
	if len(out.Unreported) > 0 {
		c.log.Error("GitHub took neither the comment nor the check run of some stacks: their results are only in this log", "unreported", out.Unreported)
	}
	if out.Err != nil {
		c.log.Error("reporting the run failed", "error", out.Err)
	}
	var skipped []string
	for _, so := range out.Stacks {
		result := "success"
		switch {
		case so.Err != nil:
			result = "failure"
		case so.Skipped != "":
			result = "skipped"
			skipped = append(skipped, fmt.Sprintf("- %s: %s", mdsafe.Code(so.Dir), so.Skipped))
		}
		b.m.runs.WithLabelValues(so.Dir, string(cmd), result).Inc()
	}
	if j.queueBase != "" {
		// A merge queue's group: its check runs are the answer.
		return
	}
	if len(skipped) > 0 && !j.recovering {
		// A recovery pass skips what was done and reported already.
		c.reply(ctx, fmt.Sprintf("Not applied at %s:\n%s", short(c.ref), strings.Join(skipped, "\n")))
	}
	switch {
	case out.Failed:
		c.react(ctx, "confused")
	case len(out.Stacks) == 0 && j.afterMerge:
		// Most merges touch no stack: nothing to say.
	case len(out.Stacks) == 0:
		c.reply(ctx, "No stack is touched by this pull request"+stacksNote(j.command.Stacks)+".")
	default:
		c.react(ctx, "rocket")
	}
}
