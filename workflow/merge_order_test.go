package workflow

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/model"
)

// TestMergeOrder: a merge applies unless its own apply is done, a newer
// merge applied first or, when recovering, its failure was reported or
// someone applied the stack by hand since.
func TestMergeOrder(t *testing.T) {
	merged := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	const sha = "aaaaaaaaaa"
	rel := func(rev uint64, phase model.Phase, o model.Origin, created time.Time, msg string) *model.Release {
		return &model.Release{Revision: rev, Phase: phase, CreateTime: created, Message: msg, Origin: &o}
	}
	ours := model.Origin{SHA: sha, PullRequest: 7, MergedAt: merged}
	older := model.Origin{SHA: "bbbbbbbbbb", PullRequest: 6, MergedAt: merged.Add(-time.Hour)}
	newer := model.Origin{SHA: "cccccccccc", PullRequest: 8, MergedAt: merged.Add(time.Second)}
	later := merged.Add(time.Minute)
	for _, tc := range []struct {
		name       string
		latest     *model.Release
		delivery   string // "" means apply
		recovering string
	}{
		{"no release at all", nil, "", ""},
		{"an older merge applied last", rel(3, model.PhaseSucceeded, older, later, ""), "", ""},
		{"this merge applied", rel(4, model.PhaseSucceeded, ours, later, ""), "release 4 applied this merge already", "release 4 applied this merge already"},
		{"this merge's apply left running by a dead bot", rel(4, model.PhaseApplying, ours, later, ""), "", ""},
		{"this merge's apply cancelled by a drain", rel(4, model.PhaseFailed, ours, later, "apply dev: context canceled"), "", ""},
		{"this merge's apply failed by itself", rel(4, model.PhaseFailed, ours, later, "apply v1:ConfigMap:ns:x: invalid"), "", "release 4 of this merge failed"},
		{"this merge's apply unlocked by hand", rel(4, model.PhaseFailed, ours, later, "unlocked by octocat at ...: stuck"), "", "release 4 of this merge failed"},
		{"a newer merge applied first", rel(5, model.PhaseSucceeded, newer, later, ""), "release 5 applied a newer merge (#8, `ccccccc`)", "release 5 applied a newer merge"},
		{"a newer merge failed", rel(5, model.PhaseFailed, newer, later, "x"), "release 5 applied a newer merge", "release 5 applied a newer merge"},
		{"a run by hand since the merge", rel(6, model.PhaseSucceeded, model.Origin{User: "ops"}, later, ""), "", "release 6, made after this merge"},
		{"a run by hand before the merge", rel(6, model.PhaseSucceeded, model.Origin{User: "ops"}, merged.Add(-time.Minute), ""), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []struct {
				recovering bool
				want       string
			}{{false, tc.delivery}, {true, tc.recovering}} {
				got := MergeOrder{SHA: sha, MergedAt: merged, Recovering: mode.recovering}.Skip(tc.latest)
				if (mode.want == "") != (got == "") || !strings.HasPrefix(got, mode.want) {
					t.Errorf("recovering=%v: skip %q, want %q", mode.recovering, got, mode.want)
				}
			}
		})
	}
}

// TestAppliedInQueue: a merge whose commit a merge queue applied is found
// among the queue's releases behind the latest, and no further back than
// the releases the queue made; a failed queue apply is no apply.
func TestAppliedInQueue(t *testing.T) {
	const sha = "aaaaaaaaaa"
	queued := func(rev uint64, s string, phase model.Phase) *model.Release {
		return &model.Release{Revision: rev, Phase: phase, Origin: &model.Origin{SHA: s, MergeQueue: true}}
	}
	merged := func(rev uint64, s string) *model.Release {
		return &model.Release{Revision: rev, Phase: model.PhaseSucceeded, Origin: &model.Origin{SHA: s}}
	}
	for _, tc := range []struct {
		name  string
		chain []*model.Release // revisions 1..n, the last the latest
		want  string
		reads int
	}{
		{"no release", nil, "", 0},
		{"the latest is the queue's apply of this commit", []*model.Release{queued(1, sha, model.PhaseSucceeded)}, "release 1 applied this commit in the merge queue", 0},
		{"groups behind it applied since", []*model.Release{merged(1, "x"), queued(2, sha, model.PhaseSucceeded), queued(3, "b", model.PhaseSucceeded), queued(4, "c", model.PhaseSucceeded)}, "release 2 applied this commit in the merge queue", 2},
		{"its queue apply failed", []*model.Release{queued(1, sha, model.PhaseFailed), queued(2, "b", model.PhaseSucceeded)}, "", 1},
		{"a merge applied since: the queue's releases end there", []*model.Release{queued(1, sha, model.PhaseSucceeded), merged(2, "x"), queued(3, "b", model.PhaseSucceeded)}, "", 1},
		{"the latest is not the queue's", []*model.Release{queued(1, sha, model.PhaseSucceeded), merged(2, "x")}, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads := 0
			get := func(_ context.Context, rev uint64) (*model.Release, error) {
				reads++
				return tc.chain[rev-1], nil
			}
			var latest *model.Release
			if len(tc.chain) > 0 {
				latest = tc.chain[len(tc.chain)-1]
			}
			got, err := appliedInQueue(t.Context(), get, latest, sha)
			if err != nil || got != tc.want || reads != tc.reads {
				t.Errorf("got %q, %v after %d reads; want %q after %d", got, err, reads, tc.want, tc.reads)
			}
		})
	}
	// A queue longer than the walk: the merge is not found, and the walk
	// stops.
	reads := 0
	long := func(_ context.Context, rev uint64) (*model.Release, error) {
		reads++
		return queued(rev, "other", model.PhaseSucceeded), nil
	}
	if got, _ := appliedInQueue(t.Context(), long, queued(1000, "other", model.PhaseSucceeded), sha); got != "" || reads > maxQueueWalk {
		t.Errorf("a walk past %d releases: %q after %d reads", maxQueueWalk, got, reads)
	}
}
