package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kusionpr/kusionpr/chatops"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/webhook"
	"github.com/kusionpr/kusionpr/workflow"
)

// event is the part of GitHub's pull_request and issue_comment payloads the
// bot reads.
type event struct {
	Action      string `json:"action"`
	Number      int    `json:"number"`
	PullRequest *struct {
		Number         int        `json:"number"`
		Merged         bool       `json:"merged"`
		MergeCommitSHA string     `json:"merge_commit_sha"`
		MergedBy       *user      `json:"merged_by"`
		MergedAt       *time.Time `json:"merged_at"`
		Base           struct {
			Ref string `json:"ref"`
		} `json:"base"`
	} `json:"pull_request"`
	Issue *struct {
		Number      int       `json:"number"`
		PullRequest *struct{} `json:"pull_request"`
	} `json:"issue"`
	Comment *struct {
		ID   int64  `json:"id"`
		Body string `json:"body"`
		User user   `json:"user"`
	} `json:"comment"`
	Repository struct {
		ID            int64  `json:"id"`
		FullName      string `json:"full_name"`
		Name          string `json:"name"`
		Owner         user   `json:"owner"`
		DefaultBranch string `json:"default_branch"`
	} `json:"repository"`
	Installation *struct {
		ID int64 `json:"id"`
	} `json:"installation"`
	Sender user `json:"sender"`
}

type user struct {
	Login string `json:"login"`
	Type  string `json:"type"`
}

// job is one unit of work taken from a webhook.
type job struct {
	installation int64
	owner, repo  string
	repoID       int64 // GitHub's id of owner/repo: what owns a project's releases
	number       int
	sha          string
	actor        string
	command      chatops.Command
	commentID    int64
	afterMerge   bool
	// mergedAt is when the merge applied happened; recovering marks the
	// applies Recover queued.
	mergedAt   time.Time
	recovering bool
}

// dispatch turns a verified delivery into a queued job; the outcome names
// what happened for the metrics and the answer.
func (b *Bot) dispatch(d *webhook.Delivery) (string, error) {
	if d.Event != "pull_request" && d.Event != "issue_comment" {
		return "ignored", nil
	}
	var ev event
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		return "", fmt.Errorf("malformed %s payload: %v", d.Event, err)
	}
	if ev.Installation == nil || ev.Repository.FullName == "" {
		return "", fmt.Errorf("%s payload without installation or repository", d.Event)
	}
	if !b.cfg.allowed(ev.Repository.FullName) {
		b.log.Info("repository not allowed", "repository", ev.Repository.FullName)
		return "ignored", nil
	}
	j := job{installation: ev.Installation.ID, owner: ev.Repository.Owner.Login, repo: ev.Repository.Name, repoID: ev.Repository.ID}
	switch {
	case d.Event == "pull_request" && ev.Action == "closed" && ev.PullRequest != nil && ev.PullRequest.Merged:
		if ev.PullRequest.Base.Ref != ev.Repository.DefaultBranch {
			// What is deployed follows the default branch; a merge into
			// another branch is not a release.
			b.log.Info("merge into a branch other than the default ignored", "repository", ev.Repository.FullName,
				"pullRequest", ev.PullRequest.Number, "base", ev.PullRequest.Base.Ref)
			return "ignored", nil
		}
		j.number, j.sha, j.afterMerge = ev.PullRequest.Number, ev.PullRequest.MergeCommitSHA, true
		if ev.PullRequest.MergedAt != nil {
			j.mergedAt = *ev.PullRequest.MergedAt
		}
		j.command = chatops.Command{Verb: chatops.Apply}
		j.actor = ev.Sender.Login
		if ev.PullRequest.MergedBy != nil {
			j.actor = ev.PullRequest.MergedBy.Login
		}
	case d.Event == "issue_comment" && ev.Action == "created" && ev.Issue != nil && ev.Issue.PullRequest != nil && ev.Comment != nil:
		if ev.Comment.User.Type == "Bot" || strings.HasSuffix(ev.Comment.User.Login, "[bot]") {
			return "ignored", nil
		}
		cmd, ok := chatops.Parse(ev.Comment.Body)
		if !ok {
			return "ignored", nil
		}
		j.number, j.command, j.commentID, j.actor = ev.Issue.Number, cmd, ev.Comment.ID, ev.Comment.User.Login
		// One command per comment, whatever delivery brought it: a
		// signed body replayed under a fresh delivery id is the same
		// comment. The id is GitHub's, so the key is fixed in size.
		if b.commands.Seen(fmt.Sprintf("%d/%d", ev.Installation.ID, ev.Comment.ID)) {
			return "duplicate", nil
		}
	default:
		return "ignored", nil
	}
	if !b.enqueue(j) {
		return "coalesced", nil
	}
	return "accepted", nil
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
	return b.q.add(b.base, key, func(ctx context.Context) { b.run(ctx, j) })
}

// run does one job; every refusal and failure is answered on the pull request.
func (b *Bot) run(ctx context.Context, j job) {
	log := b.log.With("repository", j.owner+"/"+j.repo, "pullRequest", j.number, "command", j.command.Verb, "actor", j.actor)
	gh, err := b.app.Installation(j.installation, j.owner, j.repo)
	if err != nil {
		log.Error("installation client", "error", err)
		return
	}
	react := func(content string) {
		if j.commentID != 0 {
			if err := gh.React(ctx, j.commentID, content); err != nil {
				log.Warn("reaction failed", "error", err)
			}
		}
	}
	// refuse answers with reason, Markdown in which every value from the
	// repository or the comment is escaped (mdsafe); refuseErr with an
	// error, whose text is the repository's as much as ours.
	refuse := func(reason string) {
		log.Info("refused", "reason", reason)
		react("-1")
		if err := gh.Reply(ctx, j.number, fmt.Sprintf("@%s %s refused: %s", j.actor, mdsafe.Code("/kusion "+string(j.command.Verb)), reason)); err != nil {
			log.Warn("reply failed", "error", err)
		}
	}
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
	refuseErr := func(what string, err error) {
		refuse(what + ":\n\n" + mdsafe.Fence("text", model.MaskFingerprints(err.Error())))
	}

	switch j.command.Verb {
	case chatops.Help:
		if err := gh.Reply(ctx, j.number, chatops.HelpText(j.command)); err != nil {
			log.Warn("reply failed", "error", err)
		}
		return
	case chatops.Apply, chatops.Unlock:
		if !j.afterMerge {
			access, err := gh.Permission(ctx, j.actor)
			if err != nil {
				refuseErr("the permission check failed", err)
				return
			}
			if !access.CanWrite() {
				refuse(fmt.Sprintf("it needs write or admin permission on the repository; @%s has %s", j.actor, access))
				return
			}
		}
	}

	pr, err := gh.PullRequestDetail(ctx, j.number)
	if err != nil {
		refuseErr("reading the pull request failed", err)
		return
	}
	ref := j.sha
	if !j.afterMerge {
		// The head is pinned now; a push after this command is not applied.
		ref = pr.HeadSHA
		if j.command.Verb == chatops.Apply {
			if reason := b.applyRefusal(ctx, gh, pr); reason != "" {
				refuse(reason)
				return
			}
		}
	}
	dir, err := os.MkdirTemp("", "kusionpr-checkout")
	if err != nil {
		refuseErr("the checkout failed", err)
		return
	}
	defer os.RemoveAll(dir)
	if err := gh.Checkout(ctx, ref, dir, githubapi.ArchiveLimits{MaxBytes: b.cfg.MaxCheckoutBytes, MaxFiles: b.cfg.MaxCheckoutFiles}); err != nil {
		refuse(checkoutRefusal(ref, err))
		return
	}
	if !j.afterMerge && j.command.Verb == chatops.Apply {
		if now, err := gh.PullRequestDetail(ctx, j.number); err != nil || now.HeadSHA != ref {
			refuse(fmt.Sprintf("the pull request moved from %s while the command was read; comment again to apply the new head", short(ref)))
			return
		}
	}

	opts := workflow.Options{Workspace: b.cfg.Workspace, Backend: b.cfg.Backend, ForceConflicts: true, Lease: b.cfg.Lease, ReadyTimeout: b.cfg.ReadyTimeout,
		WaitHeld: b.cfg.HoldWait, Logger: log, CheckoutRoot: dir, Clusters: b.cfg.clusters(), ModuleEnv: b.cfg.ModuleEnv,
		Origin: &model.Origin{PullRequest: j.number, SHA: ref, Actor: j.actor, Command: commandName(j), MergedAt: j.mergedAt,
			Repository: &model.Repository{ID: j.repoID, FullName: j.owner + "/" + j.repo}}}
	opts.TerraformProviders, opts.TerraformEnv = b.cfg.TerraformProviders, b.cfg.TerraformEnv
	opts.TerraformProviderSettings = b.cfg.TerraformProviderSettings
	// The bot records every apply, changed or not: the release is what
	// mergeSkip reads to keep merges in order and to know a merge done.
	// Unrecorded, a no-op merge B would let an older merge A delivered
	// after it apply A's spec over B's, and every recovery pass would
	// apply B again.
	opts.RecordUnchanged = true
	if j.afterMerge {
		opts.Skip = mergeSkip(ref, j.mergedAt, j.recovering)
	}
	// A fork's code runs nothing with the bot's credentials (a Terraform
	// plan can run code): previewed against the prior release only, as
	// the action does; the bot trusts no fork.
	opts.Offline = workflow.DecideFork(&pr.PullRequest, j.afterMerge, false).Offline
	if j.command.Verb == chatops.Unlock {
		rel, err := workflow.Unlock(ctx, filepath.Join(dir, b.cfg.Root, j.command.Stacks[0]), opts, j.actor, fmt.Sprintf("/kusion unlock on #%d", j.number))
		if err != nil {
			// Paths are the repository's, not the bot's checkout folder's.
			refuseErr("the unlock failed", errors.New(strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")))
			return
		}
		react("+1")
		_ = gh.Reply(ctx, j.number, fmt.Sprintf("Release %d of %s is now %s: %s", rel.Revision, mdsafe.Code(j.command.Stacks[0]),
			mdsafe.Plain(string(rel.Phase)), mdsafe.Code(rel.Message)))
		return
	}
	cmd := workflow.Apply
	if j.command.Verb == chatops.Preview {
		cmd = workflow.Preview
	}
	change := &workflow.Change{
		Root: filepath.Join(dir, b.cfg.Root), Number: j.number, SHA: ref, Command: cmd, Options: opts,
		Selection: workflow.Selection{Dirs: j.command.Stacks}, GitHub: gh, Renderer: b.renderer, Log: log,
		Comment: b.cfg.Comment, CombineAbove: b.cfg.CombineAbove, CombineSetting: "KUSIONPR_COMBINE_ABOVE",
	}
	start := time.Now()
	out, err := change.Run(ctx)
	b.m.durations.WithLabelValues(string(cmd)).Observe(time.Since(start).Seconds())
	if err != nil {
		refuseErr("the run failed", err)
		return
	}
	if len(out.Unreported) > 0 {
		log.Error("GitHub took neither the comment nor the check run of some stacks: their results are only in this log", "unreported", out.Unreported)
	}
	if out.Err != nil {
		log.Error("reporting the run failed", "error", out.Err)
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
	if len(skipped) > 0 && !j.recovering {
		// A recovery pass skips what was done and reported already.
		msg := fmt.Sprintf("Not applied at %s:\n%s", short(ref), strings.Join(skipped, "\n"))
		if err := gh.Reply(ctx, j.number, msg); err != nil {
			log.Warn("reply failed", "error", err)
		}
	}
	switch {
	case out.Failed:
		react("confused")
	case len(out.Stacks) == 0 && j.afterMerge:
		// Most merges touch no stack: nothing to say.
	case len(out.Stacks) == 0:
		_ = gh.Reply(ctx, j.number, "No stack is touched by this pull request"+stacksNote(j.command.Stacks)+".")
	default:
		react("rocket")
	}
}

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
	if j.afterMerge {
		return "merge"
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
