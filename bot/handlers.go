package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kusionpr/kusionpr/chatops"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/webhook"
	"github.com/kusionpr/kusionpr/workflow"
)

// job is one unit of work taken from a webhook.
type job struct {
	installation int64
	owner, repo  string
	repoID       int64 // GitHub's id of owner/repo: what owns a project's releases
	// defaultBranch is where the repository's own settings are read
	// from, never the pull request's head.
	defaultBranch string
	number        int
	sha           string
	actor         string
	command       chatops.Command
	commentID     int64
	afterMerge    bool
	// pressedAt is the commit whose check run's Apply button was pressed:
	// the apply refuses a pull request that has moved since.
	pressedAt string
	// queueBase is set for a merge queue's group: the commit the group (at
	// sha) was made on, the base branch's or the group ahead's;
	// queueBranch is the branch it lands on.
	queueBase, queueBranch string
	// driftIssue: the command came on a drift issue, not a pull request.
	driftIssue bool
	// mergedAt is when the merge applied happened; recovering marks the
	// applies Recover queued, and those of merges the bot asked GitHub to
	// deliver again.
	mergedAt   time.Time
	recovering bool
}

// handledEvent says whether the bot acts on deliveries of the event: the
// others are acknowledged and ignored, and not asked for again when they
// fail.
func handledEvent(event string) bool {
	switch event {
	case "pull_request", "issue_comment", "merge_group", "check_run", "workflow_run":
		return true
	}
	return false
}

// dispatch turns a verified delivery into a queued job; the outcome names
// what happened for the metrics and the answer. redelivered says the bot
// asked GitHub for this delivery again: a merge it brings is applied as
// Recover applies one, quietly skipped if found done (Recover, at start,
// may have applied it).
func (b *Bot) dispatch(d *webhook.Delivery, redelivered bool) (string, error) {
	if !handledEvent(d.Event) || (d.Event == "workflow_run" && b.actions == nil) {
		// News of workflow runs is for the executor that follows them.
		return "ignored", nil
	}
	ev, err := githubapi.ParseEvent(d.Event, d.Body)
	if err != nil {
		return "", fmt.Errorf("malformed payload: %w", err)
	}
	if d.Event == "workflow_run" {
		return b.workflowRun(ev)
	}
	if ev.Installation == 0 || ev.Repository.FullName == "" {
		return "", fmt.Errorf("%s payload without installation or repository", d.Event)
	}
	if !b.cfg.allowed(ev.Repository.FullName) {
		b.log.Info("repository not allowed", "repository", ev.Repository.FullName)
		return "ignored", nil
	}
	j := job{installation: ev.Installation, owner: ev.Repository.Owner, repo: ev.Repository.Name, repoID: ev.Repository.ID,
		defaultBranch: ev.Repository.DefaultBranch}
	// Each reads its event into j: "" queues it, anything else is the
	// outcome.
	var outcome string
	switch d.Event {
	case "pull_request":
		outcome = b.pullRequestJob(ev, &j, redelivered)
	case "merge_group":
		outcome, err = b.mergeGroupJob(ev, &j)
	case "check_run":
		outcome, err = checkRunJob(ev, &j)
	case "issue_comment":
		outcome = b.commentJob(ev, &j)
	}
	if outcome != "" || err != nil {
		return outcome, err
	}
	if !b.enqueue(j) {
		return "coalesced", nil
	}
	return "accepted", nil
}

// pullRequestJob applies a merge into a branch that applies.
func (b *Bot) pullRequestJob(ev *githubapi.Event, j *job, redelivered bool) string {
	pr := ev.PullRequest
	if ev.Action != "closed" || pr == nil || !pr.Merged {
		return "ignored"
	}
	if !b.cfg.appliesFrom(pr.BaseRef, ev.Repository.DefaultBranch) {
		// What is deployed follows the default branch (or those
		// KUSIONPR_APPLY_BRANCHES names); a merge into another
		// branch is not a release.
		b.log.Info("merge into a branch that does not apply ignored (KUSIONPR_APPLY_BRANCHES)", "repository", ev.Repository.FullName,
			"pullRequest", pr.Number, "base", pr.BaseRef)
		return "ignored"
	}
	j.number, j.sha, j.afterMerge, j.mergedAt, j.recovering = pr.Number, pr.MergeCommitSHA, true, pr.MergedAt, redelivered
	j.command = chatops.Command{Verb: chatops.Apply}
	j.actor = cmp.Or(pr.MergedBy, ev.Sender.Login)
	return ""
}

// mergeGroupJob previews (or applies) a merge queue's group when the
// queue asks for its checks, and stops the wait of one GitHub destroyed.
func (b *Bot) mergeGroupJob(ev *githubapi.Event, j *job) (string, error) {
	g := ev.MergeGroup
	switch {
	case g == nil:
		return "ignored", nil
	case ev.Action == "checks_requested":
		// A merge queue asks for the checks of a group: the commit that
		// lands if they pass. Previewed as the default branch would be
		// after it (see SECURITY.md), with a check run on it.
		if !fullSHA.MatchString(g.HeadSHA) || !fullSHA.MatchString(g.BaseSHA) {
			return "", fmt.Errorf("merge_group payload: head_sha and base_sha must be commits")
		}
		j.sha, j.queueBase, j.queueBranch, j.actor = g.HeadSHA, g.BaseSHA, strings.TrimPrefix(g.BaseRef, "refs/heads/"), ev.Sender.Login
		j.command = chatops.Command{Verb: chatops.Preview}
		if b.cfg.appliesInQueue(ev.Repository.FullName) && b.cfg.appliesFrom(j.queueBranch, ev.Repository.DefaultBranch) {
			// What is deployed follows the branches that apply, as for
			// merges: a queue into another branch is previewed only.
			j.command.Verb = chatops.Apply
		}
		return "", nil
	case ev.Action == "destroyed":
		// Merged, dequeued, or invalidated by a group ahead leaving the
		// queue: a group still waiting for the group ahead stops.
		if b.stopGroup(ev.Repository.FullName, g.HeadSHA, g.Reason) {
			return "accepted", nil
		}
	}
	return "ignored", nil
}

// checkRunJob reads a press of the Apply button of a preview's check run:
// /kusion apply of its stack (every stack, on the overview) from whoever
// pressed it, with the same authorisation, at the commit the check run is
// on.
func checkRunJob(ev *githubapi.Event, j *job) (string, error) {
	cr := ev.CheckRun
	if ev.Action != "requested_action" || cr == nil || cr.RequestedAction != workflow.ApplyActionID || len(cr.PullRequests) == 0 {
		return "ignored", nil
	}
	stack, ok := workflow.PreviewCheckStack(cr.Name)
	if !ok {
		return "ignored", nil
	}
	cmd := chatops.Command{Verb: chatops.Apply}
	if stack != "" {
		cmd.Stacks = []string{stack}
	}
	if !fullSHA.MatchString(cr.HeadSHA) {
		return "", fmt.Errorf("check_run payload: head_sha must be a commit")
	}
	j.number, j.command, j.actor, j.pressedAt = cr.PullRequests[0], cmd, ev.Sender.Login, cr.HeadSHA
	return "", nil
}

// commentJob reads a command in a new comment on a pull request or on a
// drift issue; a comment delivered again is a "duplicate".
func (b *Bot) commentJob(ev *githubapi.Event, j *job) string {
	is, c := ev.Issue, ev.Comment
	if ev.Action != "created" || is == nil || c == nil {
		return "ignored"
	}
	drift := !is.PullRequest && slices.Contains(is.Labels, workflow.DriftLabel)
	if !is.PullRequest && !drift {
		return "ignored"
	}
	if c.AuthorType == "Bot" || strings.HasSuffix(c.Author.Login, "[bot]") {
		return "ignored"
	}
	cmd, ok := chatops.Parse(c.Body)
	if !ok {
		return "ignored"
	}
	j.number, j.command, j.commentID, j.actor = is.Number, cmd, c.ID, c.Author.Login
	// The bot checks a drift issue is one of its own before acting on it.
	j.driftIssue = drift
	// One command per comment, whatever delivery brought it: a signed
	// body replayed under a fresh delivery id is the same comment. The
	// id is GitHub's, so the key is fixed in size.
	if b.commands.Seen(fmt.Sprintf("%d/%d", ev.Installation, c.ID)) {
		return "duplicate"
	}
	return ""
}

// workflowRun hands news of a workflow run to the executor that follows
// it (github-actions): no job is queued, the executor's wait reads the
// run now instead of at its next poll.
func (b *Bot) workflowRun(ev *githubapi.Event) (string, error) {
	if ev.WorkflowRun == nil || ev.Repository.FullName == "" {
		return "", fmt.Errorf("%s payload without workflow_run or repository", ev.Name)
	}
	if !b.cfg.allowed(ev.Repository.FullName) {
		return "ignored", nil
	}
	b.actions.Heard(ev.WorkflowRun.Name, ev.WorkflowRun.DisplayTitle)
	return "heard", nil
}

// enqueue queues j unless the same work is queued or running already: the
// same merge (a webhook redelivered under a new id, or found again by
// Recover), or the same comment. Two comments are two requests: their
// applies queue up behind each other on the backend's revision slot.
func (b *Bot) enqueue(j job) bool {
	key := fmt.Sprintf("%s/%s#%d@%s:%s:%s", strings.ToLower(j.owner), strings.ToLower(j.repo), j.number, j.sha, j.command.Verb, strings.Join(j.command.Stacks, ","))
	if j.commentID != 0 {
		key += fmt.Sprintf(":%d", j.commentID)
	}
	handle := func(ctx context.Context) { b.handle(ctx, j) }
	if j.queueBase != "" && j.command.Verb == chatops.Apply {
		// The wait for the group ahead takes none of the slots: the
		// group ahead may need one.
		return b.q.addAfter(b.base, key, func(ctx context.Context) bool { return b.awaitGroupAhead(ctx, j) }, handle)
	}
	return b.q.add(b.base, key, handle)
}

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

// checkoutRefusal says why the repository at ref was not checked out,
// naming the setting when a limit was met.
func checkoutRefusal(ref string, err error) string {
	le, ok := errors.AsType[*githubapi.ArchiveLimitError](err)
	if !ok {
		return "the checkout failed:\n\n" + mdsafe.Fence("text", err.Error())
	}
	setting := "KUSIONPR_MAX_CHECKOUT_BYTES"
	if le.Files {
		setting = "KUSIONPR_MAX_CHECKOUT_FILES"
	}
	return fmt.Sprintf("the repository at %s is larger than the bot checks out: %s (the limit is the bot's %s)", short(ref), le.Error(), setting)
}

func commandName(j job) string {
	switch {
	case j.afterMerge:
		return "merge"
	case j.queueBase != "":
		return "merge queue"
	case j.pressedAt != "":
		return "Apply button"
	case j.driftIssue:
		return "/kusion " + string(j.command.Verb) + " on a drift issue"
	}
	return "/kusion " + string(j.command.Verb)
}

func stacksNote(stacks []string) string {
	if len(stacks) == 0 {
		return ""
	}
	named := make([]string, len(stacks))
	for i, s := range stacks {
		named[i] = mdsafe.Code(s)
	}
	return " among " + strings.Join(named, ", ")
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
