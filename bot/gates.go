package bot

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/workflow"
	"k8s.io/apimachinery/pkg/util/wait"
)

// mergeableWait is how the bot waits for GitHub to compute whether a pull
// request merges (it answers mergeable: null until then, and starts only
// when the pull request is read): a second, then doubling up to 8 s, for at
// most mergeableWithin.
func mergeableWait() wait.Backoff {
	// Steps only has to outlast the doubling: reaching Cap ends it.
	return wait.Backoff{Duration: time.Second, Factor: 2, Cap: 8 * time.Second, Steps: 10}
}

const mergeableWithin = 30 * time.Second

// applyRefusal checks what an apply before merge needs; "" when allowed.
// The reasons are for the person who asked: what stops the apply and what
// to do about it.
func (b *Bot) applyRefusal(ctx context.Context, c *command, pr *githubapi.PullRequestDetail) string {
	switch {
	case !workflow.DecideFork(&pr.PullRequest, false, false).MayApply:
		return "pull requests from forks are never applied"
	case pr.State != "open":
		return "the pull request is " + pr.State
	case !b.cfg.appliesFrom(pr.BaseRef, c.j.defaultBranch):
		// Its base's rules and protection are whatever a writer made
		// them: what it changes is applied once it reaches a branch
		// that applies.
		return fmt.Sprintf("it is into %s, and the bot applies only what goes into %s (KUSIONPR_APPLY_BRANCHES): it is previewed, never applied",
			mdsafe.Code(pr.BaseRef), workflow.ApplyBranchesText(c.j.defaultBranch, b.cfg.ApplyBranches))
	}
	if b.cfg.RequireApproval {
		if reason := b.approvalRefusal(ctx, c.gh, pr); reason != "" {
			return reason
		}
	}
	if b.cfg.RequireMergeable {
		if !pr.Computed() {
			now, err := c.gh.WaitMergeable(ctx, pr.Number, mergeableWait(), mergeableWithin)
			if err != nil {
				return mdsafe.Code(err.Error())
			}
			if now.HeadSHA != pr.HeadSHA {
				return fmt.Sprintf("the pull request moved from %s while the command was read; comment again to apply the new head", short(pr.HeadSHA))
			}
			pr = now
		}
		if reason := b.mergeRefusal(pr); reason != "" {
			return reason
		}
	}
	if b.cfg.RequireChecks {
		return b.checksRefusal(ctx, c.gh, pr)
	}
	return ""
}

// approvalRefusal says why the pull request's head lacks an approval that
// counts; "" when it has one.
func (b *Bot) approvalRefusal(ctx context.Context, gh gitHub, pr *githubapi.PullRequestDetail) string {
	pusher := ""
	if b.cfg.RequireLastPushApproval {
		// GitHub's "approval of the most recent reviewable push":
		// whoever pushed the head, onto anyone's pull request, does
		// not approve it.
		var err error
		if pusher, err = gh.Pusher(ctx, pr.HeadRef, pr.HeadSHA); err != nil {
			return "who pushed its head could not be told (KUSIONPR_REQUIRE_LAST_PUSH_APPROVAL): " + mdsafe.Code(err.Error())
		}
	}
	approvals, err := gh.Approvals(ctx, pr.Number, pr.Author, pusher, pr.HeadSHA)
	if err != nil {
		return "the reviews could not be read: " + mdsafe.Code(err.Error())
	}
	var ignored []string
	for _, a := range approvals {
		if a.Why == "" {
			return ""
		}
		// A login in a code span: named, not mentioned.
		ignored = append(ignored, mdsafe.Code(a.User)+" "+a.Why)
	}
	reason := fmt.Sprintf("it needs an approval of its head %s by someone with write access other than its author", short(pr.HeadSHA))
	if pusher != "" {
		reason += " and " + mdsafe.Code(pusher) + ", who pushed it"
	}
	if len(ignored) > 0 {
		reason += "; not counted: " + strings.Join(ignored, "; ")
	}
	return reason
}

// checksRefusal says which checks of the head, other than the bot's own,
// are not green; "" when all are.
func (b *Bot) checksRefusal(ctx context.Context, gh gitHub, pr *githubapi.PullRequestDetail) string {
	login, err := b.login(ctx)
	if err != nil {
		return "the checks could not be read: " + mdsafe.Code(err.Error())
	}
	ok, failing, err := gh.ChecksGreen(ctx, pr.HeadSHA, githubapi.Own{AppID: b.cfg.AppID, Login: login})
	if err != nil {
		return "the checks could not be read: " + mdsafe.Code(err.Error())
	}
	if ok {
		return ""
	}
	// Anyone who can run a workflow names check runs.
	names := make([]string, len(failing))
	for i, n := range failing {
		names[i] = mdsafe.Code(n)
	}
	return "checks of the head are not green: " + strings.Join(names, ", ")
}

// mergeRefusal says why a pull request's mergeable_state stops an apply
// before merge; "" when KUSIONPR_MERGEABLE_STATES accepts it.
func (b *Bot) mergeRefusal(pr *githubapi.PullRequestDetail) string {
	state := pr.MergeableState
	if !pr.Computed() {
		state = "unknown"
	}
	if slices.Contains(b.cfg.MergeableStates, state) {
		return ""
	}
	base := mdsafe.Code(pr.BaseRef)
	switch state {
	case "behind":
		return "the branch is behind " + base + ": update it first, an apply would revert what was merged since"
	case "dirty":
		return "the branch conflicts with " + base + ": resolve the conflicts first"
	case "blocked":
		return "merging is blocked by a rule of " + base + " (a required review or check is missing): meet it first"
	case "draft":
		return "the pull request is a draft: mark it ready for review first"
	case "unknown":
		// GitHub answers null while it computes, in the background, and the
		// bot asked until mergeableWithin: name what it last said.
		gave := cmp.Or(pr.MergeableState, "null")
		return fmt.Sprintf("GitHub has not computed mergeability yet (after %s it still answered mergeable null, mergeable_state %s); comment %s again in a minute",
			mergeableWithin, mdsafe.Code(gave), mdsafe.Code("/kusion apply"))
	case "unstable":
		return "a check of the head failed (mergeable_state unstable, which KUSIONPR_MERGEABLE_STATES does not accept)"
	case "has_hooks":
		return "the pull request would merge through pre-receive hooks (mergeable_state has_hooks, which KUSIONPR_MERGEABLE_STATES does not accept)"
	}
	// A state GitHub may add later: refused, not guessed at.
	return fmt.Sprintf("its mergeable_state is %q, which KUSIONPR_MERGEABLE_STATES does not accept", state)
}
