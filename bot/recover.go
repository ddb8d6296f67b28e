package bot

import (
	"context"
	"fmt"
	"time"

	"github.com/kusionpr/kusionpr/chatops"
)

// Recover queues the apply of every pull request merged into a branch that
// applies (the default branch, or KUSIONPR_APPLY_BRANCHES) within the
// recovery window, in every repository the App is
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
			// The default branch alone is asked for by name; other
			// branches that apply are found among every merge.
			base := r.DefaultBranch
			if len(b.cfg.ApplyBranches) > 0 {
				base = ""
			}
			merged, err := gh.RecentlyMerged(ctx, base, since)
			if err != nil {
				return queued, fmt.Errorf("recover %s/%s: %w", r.Owner, r.Name, err)
			}
			for _, m := range merged {
				if !b.cfg.appliesFrom(m.Base, r.DefaultBranch) {
					continue
				}
				j := job{installation: id, owner: r.Owner, repo: r.Name, repoID: r.ID, defaultBranch: r.DefaultBranch, number: m.Number, sha: m.SHA, actor: m.MergedBy,
					command: chatops.Command{Verb: chatops.Apply}, afterMerge: true, mergedAt: m.MergedAt, recovering: true}
				if b.enqueue(j) {
					queued++
				}
			}
		}
	}
	return queued, nil
}
