package bot

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/workflow"
)

// atDefaultBranch checks the default branch's head out for a command on
// the stack as the repository now has it, not as a pull request would
// make it: a rollback or a cancel acts on what is released, and a pull
// request's author does not choose the project, workspace or policies it
// acts with.
func (b *Bot) atDefaultBranch(ctx context.Context, c *command) bool {
	head, err := c.gh.BranchHead(ctx, c.j.defaultBranch)
	if err != nil {
		c.refuseErr(ctx, "reading the head of "+mdsafe.Code(c.j.defaultBranch)+" failed", err)
		return false
	}
	c.ref = head
	return b.unpack(ctx, c, head)
}

// rollback puts a stack back as one of its releases left it: the spec the
// release recorded is applied as a new release, through the executors,
// with the gates of an apply that are not a pull request's own: write
// permission, the default branch's policies, deployments. Approval,
// mergeability and checks are a pull request's, whose change a rollback
// does not apply.
func (b *Bot) rollback(ctx context.Context, c *command) {
	if !b.canWrite(ctx, c) || !b.atDefaultBranch(ctx, c) {
		return
	}
	stack, n := c.j.command.Stacks[0], c.j.command.Revision
	req := b.request(c)
	req.RollbackTo = n
	req.Origin.Command = "rollback"
	// A rollback is the command's, not the pull request's change: its
	// stack is the one touched.
	files := []workflow.ChangedFile{{Path: filepath.ToSlash(filepath.Join(b.cfg.Root, stack, "stack.yaml")), Status: "modified"}}
	change := &workflow.Change{
		Root: filepath.Join(c.dir, b.cfg.Root), Number: c.j.number, SHA: c.ref, Command: workflow.Apply, Request: req,
		Files: files, Selection: workflow.Selection{Dirs: []string{stack}}, GitHub: c.gh, Renderer: b.renderer, Log: c.log,
		// Its report is the reply below, not a stack's comment of the pull
		// request, which is about the pull request's own change.
		Comment: "never", Deployments: b.cfg.Deployments, OverviewCheck: "kusion/rollback",
	}
	change.Request.Policy = b.policies(ctx, c, workflow.Apply)
	if !b.withExecutors(ctx, c, change) {
		return
	}
	from := b.latestRelease(ctx, c, stack)
	out, err := b.work.Change(ctx, change)
	if err != nil {
		c.refuseErr(ctx, "the rollback failed", err)
		return
	}
	if len(out.Stacks) != 1 {
		c.refuse(ctx, fmt.Sprintf("%s is not a stack folder of %s", mdsafe.Code(stack), mdsafe.Code(c.j.defaultBranch)))
		return
	}
	so := out.Stacks[0]
	b.m.runs.WithLabelValues(stack, "rollback", map[bool]string{true: "failure", false: "success"}[so.Err != nil]).Inc()
	if so.Err != nil {
		c.failed(ctx, fmt.Sprintf("rollback of %s to release %d", mdsafe.Code(stack), n), so.Err)
		return
	}
	c.react(ctx, "rocket")
	reply := rollbackReply(c.j.actor, stack, n, from, so.Result)
	if len(reply)+len(so.Markdown) < maxReply {
		reply += "\n\n" + so.Markdown
	}
	c.reply(ctx, reply)
}

// maxReply keeps a reply under GitHub's 65,536 characters of a comment;
// past it, the rollback's check run holds the report.
const maxReply = 60000

// latestRelease is the stack's release before the rollback, for its
// reply; nil when this bot holds no store or it cannot be read.
func (b *Bot) latestRelease(ctx context.Context, c *command, stack string) *model.Release {
	if b.cfg.Backend == "" {
		return nil
	}
	req, err := b.request(c).For(workflow.Apply, filepath.Join(c.dir, b.cfg.Root, stack))
	if err != nil {
		return nil
	}
	h, err := b.work.Releases(ctx, req, 1)
	if err != nil || len(h.Releases) == 0 {
		return nil
	}
	return h.Releases[0]
}

// rollbackReply says which releases the rollback moved between, each
// with the pull request and commit that made it.
func rollbackReply(actor, stack string, n uint64, from *model.Release, r *workflow.StackResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "@%s rolled %s back to release %d", actor, mdsafe.Code(stack), n)
	if from != nil {
		fmt.Fprintf(&b, " from release %d%s", from.Revision, madeBy(from))
	}
	switch {
	case r != nil && r.Release != nil:
		fmt.Fprintf(&b, ": now release %d, %s.", r.Release.Revision, mdsafe.Plain(string(r.Release.Phase)))
	case r != nil && r.Unchanged:
		b.WriteString(": the stack was already as that release left it; no release written.")
	default:
		b.WriteString(".")
	}
	return b.String()
}

// madeBy names what made a release: its pull request and commit, or its
// command and who ran it.
func madeBy(r *model.Release) string {
	o := r.Origin
	if o == nil {
		return ""
	}
	var parts []string
	if o.PullRequest != 0 {
		parts = append(parts, fmt.Sprintf("#%d", o.PullRequest))
	}
	if o.SHA != "" {
		// As every value of a release: the store's, which the workflows
		// of the github-actions executor write too.
		parts = append(parts, mdsafe.Code(o.ShortSHA()))
	}
	if len(parts) == 0 && o.Command != "" {
		parts = append(parts, mdsafe.Code(o.Command))
	}
	if who := o.Who(); who != "" {
		parts = append(parts, "by "+mdsafe.Code(who))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// cancelRun asks the stack's running release to stop, wherever its runner
// is (this process, a Job, a workflow run): the runner looks at each
// heartbeat, so the record of what was applied stays whole.
func (b *Bot) cancelRun(ctx context.Context, c *command) {
	if b.cfg.Executor == "github-actions" && b.cfg.Backend == "" {
		c.refuse(ctx, "this bot runs stacks in the repository's GitHub Actions workflow and holds no release store (KUSIONPR_BACKEND is not set): cancel the workflow run in GitHub Actions instead")
		return
	}
	if !b.canWrite(ctx, c) || !b.atDefaultBranch(ctx, c) {
		return
	}
	stack := c.j.command.Stacks[0]
	req, err := b.request(c).For(workflow.Apply, filepath.Join(c.dir, b.cfg.Root, stack))
	var (
		rel *model.Release
		cn  *model.Cancel
	)
	if err == nil {
		rel, cn, err = b.work.Cancel(ctx, req, c.j.actor, fmt.Sprintf("/kusion cancel on #%d", c.j.number))
	}
	var nothing *backend.NothingRunningError
	if errors.As(err, &nothing) {
		c.react(ctx, "confused")
		c.reply(ctx, fmt.Sprintf("@%s nothing to cancel: %s", c.j.actor, mdsafe.Plain(nothing.Error())))
		return
	}
	if err != nil {
		c.refuseErr(ctx, "the cancel failed", c.inRepository(err))
		return
	}
	c.react(ctx, "+1")
	c.reply(ctx, fmt.Sprintf("@%s asked release %d of %s%s to stop (%s): its runner stops at its next heartbeat, lets what is in flight finish, applies nothing more and ends the release failed.",
		c.j.actor, rel.Revision, mdsafe.Code(stack), madeBy(rel), mdsafe.Plain(cn.String())))
}
