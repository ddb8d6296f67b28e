package bot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kusionpr/kusionpr/chatops"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/model"
)

// Recover queues the apply of every pull request merged into the default
// branch within the recovery window, in every repository the App is
// installed on, newest first. Each stack such a merge touched is applied unless the backend
// shows it done: a release of that merge succeeded or failed on its own,
// or something newer than the merge was applied since. So an apply lost to
// a crash, a cancelled drain or a webhook that came while no bot ran is
// done now, and nothing done is done twice.
func (b *Bot) Recover(ctx context.Context) (queued int, err error) {
	if b.cfg.RecoverWindow <= 0 {
		return 0, nil
	}
	since := time.Now().Add(-b.cfg.RecoverWindow)
	ids, err := b.app.Installations(ctx)
	if err != nil {
		return 0, fmt.Errorf("recover: %w", err)
	}
	for _, id := range ids {
		repos, err := b.app.Repositories(ctx, id)
		if err != nil {
			return queued, fmt.Errorf("recover: %w", err)
		}
		for _, r := range repos {
			if !b.cfg.allowed(r.Owner + "/" + r.Name) {
				continue
			}
			gh, err := b.app.Installation(id, r.Owner, r.Name)
			if err != nil {
				return queued, fmt.Errorf("recover: %w", err)
			}
			merged, err := gh.RecentlyMerged(ctx, r.DefaultBranch, since)
			if err != nil {
				return queued, fmt.Errorf("recover %s/%s: %w", r.Owner, r.Name, err)
			}
			for _, m := range merged {
				j := job{installation: id, owner: r.Owner, repo: r.Name, repoID: r.ID, number: m.Number, sha: m.SHA, actor: m.MergedBy,
					command: chatops.Command{Verb: chatops.Apply}, afterMerge: true, mergedAt: m.MergedAt, recovering: true}
				if b.enqueue(j) {
					queued++
				}
			}
		}
	}
	return queued, nil
}

// mergeSkip decides, from a stack's latest release, whether the apply of
// the merge sha (merged at mergedAt) is still to be done, and says why not.
// A merge older than the one the stack's latest release applied is never
// applied over it: deliveries and queues do not keep merge order. A
// recovery pass (recovering) also leaves alone a merge whose apply failed
// and was reported, and a stack someone applied by other means since the
// merge; a delivery, which GitHub redelivers only when asked, retries.
func mergeSkip(sha string, mergedAt time.Time, recovering bool) func(*model.Release) string {
	return func(latest *model.Release) string {
		if latest == nil {
			return ""
		}
		o := latest.Origin
		if o == nil {
			o = &model.Origin{}
		}
		ours := o.SHA == sha
		switch {
		case ours && latest.Phase == model.PhaseSucceeded:
			return fmt.Sprintf("release %d applied this merge already", latest.Revision)
		case ours && recovering && latest.Phase == model.PhaseFailed && !interrupted(latest.Message):
			return fmt.Sprintf("release %d of this merge failed and was reported; apply again with /kusion apply", latest.Revision)
		case ours:
			// Running (its holder may be dead: the backend's lease decides)
			// or interrupted: do it again.
			return ""
		case !o.MergedAt.IsZero() && o.MergedAt.After(mergedAt):
			return fmt.Sprintf("release %d applied a newer merge (#%d, %s)", latest.Revision, o.PullRequest, mdsafe.Code(short(o.SHA)))
		case recovering && o.MergedAt.IsZero() && latest.CreateTime.After(mergedAt):
			return fmt.Sprintf("release %d, made after this merge, applied the stack since", latest.Revision)
		}
		return ""
	}
}

// interrupted tells a release its run's cancellation ended (a drain past
// its deadline) from one that failed by itself or was unlocked by hand.
func interrupted(msg string) bool {
	return strings.Contains(msg, context.Canceled.Error()) || strings.Contains(msg, context.DeadlineExceeded.Error())
}
