package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/workflow"
	"k8s.io/apimachinery/pkg/util/wait"
)

// A merge queue tests each queued pull request on a group: a commit made of
// the base branch, every group ahead and the pull request. GitHub asks for
// the group's checks (merge_group checks_requested) and, once the required
// ones pass, fast-forwards the base branch to the group's commit, so the
// commit checked is the commit that lands. Each group's base_sha is the
// commit it was made on: the base branch's, or the commit of the group
// ahead of it.

// previewGroup previews a merge queue's group: the stacks its commits
// change against the base branch, at the group's commit, with check runs
// on it (kusion/preview, the one branch protection requires) and no
// comment, as the group belongs to no one pull request. A group that
// cannot be checked out or compared (the workflow compares it: Base) gets
// a failed kusion/preview saying why: the queue must not wait for a check
// that never comes.
func (b *Bot) previewGroup(ctx context.Context, c *command) {
	if b.checkoutGroup(ctx, c) {
		b.change(ctx, c, workflow.Preview)
	}
}

// applyGroup applies a merge queue's group on its commit, in a repository
// the operator lets apply in the queue (KUSIONPR_APPLY_IN_QUEUE): once the
// group ahead of it has applied (awaitGroupAhead, before the job takes a
// slot), so groups apply in the order they land;
// kusion/preview on the group says how the apply went, and a failed one
// takes the pull request out of the queue. The queue is the authority, as
// the merge is: only pull requests that passed the branch's protection are
// queued, by someone who may merge them.
func (b *Bot) applyGroup(ctx context.Context, c *command) {
	if b.checkoutGroup(ctx, c) {
		b.change(ctx, c, workflow.Apply)
	}
}

// checkoutGroup unpacks the group's commit; b.handle removes it.
func (b *Bot) checkoutGroup(ctx context.Context, c *command) bool {
	c.ref = c.j.sha
	return b.unpack(ctx, c, c.ref)
}

// errGroupDestroyed ends the wait of a group GitHub destroyed.
type errGroupDestroyed struct{ reason string }

func (e errGroupDestroyed) Error() string {
	return "the merge queue destroyed the group (" + e.reason + ")"
}

// waitingGroup is a group waiting for the group ahead (Bot.groups).
type waitingGroup struct{ cancel context.CancelCauseFunc }

func groupKey(repo, sha string) string { return strings.ToLower(repo) + "@" + sha }

// stopGroup ends the wait of the group at sha, if one waits: it reports
// whether one did.
func (b *Bot) stopGroup(repo, sha, reason string) bool {
	w, ok := b.groups.LoadAndDelete(groupKey(repo, sha))
	if ok {
		w.(*waitingGroup).cancel(errGroupDestroyed{reason: reason})
	}
	return ok
}

// awaitGroupAhead is the first step of a merge queue's apply, before the
// job takes a slot: it waits for the group ahead and reports whether to
// apply; a group that is not to be applied fails kusion/preview saying why,
// unless GitHub destroyed it (there is no one to tell then).
func (b *Bot) awaitGroupAhead(ctx context.Context, j job) bool {
	log := b.log.With("repository", j.owner+"/"+j.repo, "group", j.sha, "command", j.command.Verb)
	gh, err := b.client(j.installation, j.owner, j.repo)
	if err != nil {
		log.Error("installation client", "error", err)
		return false
	}
	c := &command{j: j, gh: gh, log: log}
	ctx, cancel := context.WithCancelCause(ctx)
	key, w := groupKey(j.owner+"/"+j.repo, j.sha), &waitingGroup{cancel: cancel}
	b.groups.Store(key, w)
	defer func() {
		b.groups.CompareAndDelete(key, w)
		cancel(nil)
	}()
	why := b.waitGroupAhead(ctx, c)
	if d, ok := errors.AsType[errGroupDestroyed](context.Cause(ctx)); ok {
		log.Info("the group left the merge queue while it waited for the group ahead: not applied", "reason", d.reason)
		return false
	}
	if why != "" {
		// The job's own context may be the one that ended: the check
		// is set regardless, so the queue does not wait for it.
		c.refuse(context.WithoutCancel(ctx), why)
		return false
	}
	return true
}

// queueGitHub is what waiting for the group ahead reads of GitHub;
// *githubapi.Client is the implementation.
type queueGitHub interface {
	Contains(ctx context.Context, branch, sha string) (bool, error)
	CheckRunOf(ctx context.Context, sha, name string, appID int64) (githubapi.CheckRunState, error)
}

// waitGroupAhead waits until the commit the group was made on has landed
// on the base branch or, when it is the group ahead's, until that group's
// kusion/preview, the bot's own, has passed: "" to go on, else why the
// group is not applied. A group ahead that failed leaves this one
// unapplied: its commit holds the failed group's changes, and GitHub makes
// the groups behind a failed one again without it.
func (b *Bot) waitGroupAhead(ctx context.Context, c *command) string {
	gh, ok := c.gh.(queueGitHub)
	if !ok {
		return "this bot's GitHub client cannot read the merge queue"
	}
	base := c.j.queueBase
	deadline := time.Now().Add(b.cfg.QueueWait)
	// A group lands within minutes of its check: the pauses are short,
	// and the reads stay far below an installation's rate limit.
	pace := wait.Backoff{Duration: time.Second, Factor: 2, Cap: 10 * time.Second, Steps: 10}
	for {
		landed, err := gh.Contains(ctx, c.j.queueBranch, base)
		if err != nil {
			return "reading whether the commit this group was made on has landed failed:\n\n" + mdsafe.Fence("text", err.Error())
		}
		if landed {
			return ""
		}
		ahead, err := gh.CheckRunOf(ctx, base, workflow.PreviewCheck, b.cfg.AppID)
		if err != nil {
			return "reading the check of the group ahead failed:\n\n" + mdsafe.Fence("text", err.Error())
		}
		if ahead.Status == "completed" {
			if ahead.Conclusion == "success" {
				return ""
			}
			return fmt.Sprintf("nothing of this group was applied: the group ahead of it in the merge queue (%s) did not pass %s (%s: %s), and this group holds its changes",
				short(base), mdsafe.Code(workflow.PreviewCheck), mdsafe.Plain(ahead.Conclusion), mdsafe.Plain(ahead.Title))
		}
		// Checked before the pause, not set on ctx: a read is not cut
		// short, and no pause is spent that the bound would end.
		pause := pace.Step()
		if time.Now().Add(pause).After(deadline) {
			return fmt.Sprintf("nothing of this group was applied: the group ahead of it in the merge queue (%s) neither landed nor passed %s within %s (the bot's KUSIONPR_QUEUE_WAIT)",
				short(base), mdsafe.Code(workflow.PreviewCheck), b.cfg.QueueWait)
		}
		c.log.Info("waiting for the group ahead in the merge queue", "ahead", base, "wait", pause)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return "nothing of this group was applied: the bot stopped while it waited for the group ahead (" + short(base) + ")"
		case <-t.C:
		}
	}
}

// queueCheck names the overview check run of a merge queue's apply: the
// check the queue waits for, whatever the command.
func queueCheck(j job, cmd workflow.Command) string {
	if j.queueBase != "" && cmd == workflow.Apply {
		return workflow.PreviewCheck
	}
	return ""
}
