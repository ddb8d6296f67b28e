package bot

import (
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/model"
)

func TestRecoverySkip(t *testing.T) {
	merged := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	const sha = "aaaaaaa"
	rel := func(rev uint64, phase model.Phase, sha string, created time.Time, msg string) *model.Release {
		return &model.Release{Revision: rev, Phase: phase, CreateTime: created, Message: msg, Origin: &model.Origin{SHA: sha}}
	}
	for _, tc := range []struct {
		name   string
		latest *model.Release
		skip   string // "" means apply
	}{
		{"no release at all", nil, ""},
		{"an older release of another merge", rel(3, model.PhaseSucceeded, "bbbbbbb", merged.Add(-time.Hour), ""), ""},
		{"this merge applied", rel(4, model.PhaseSucceeded, sha, merged.Add(time.Minute), ""), "release 4 applied this merge already"},
		{"this merge's apply left running by a dead bot", rel(4, model.PhaseApplying, sha, merged.Add(time.Minute), ""), ""},
		{"this merge's apply cancelled by a drain", rel(4, model.PhaseFailed, sha, merged.Add(time.Minute), "apply dev: context canceled"), ""},
		{"this merge's apply failed by itself", rel(4, model.PhaseFailed, sha, merged.Add(time.Minute), "apply v1:ConfigMap:ns:x: invalid"), "release 4 of this merge failed"},
		{"this merge's apply unlocked by hand", rel(4, model.PhaseFailed, sha, merged.Add(time.Minute), "unlocked by octocat at ...: stuck"), "release 4 of this merge failed"},
		{"a newer release of another merge", rel(5, model.PhaseSucceeded, "ccccccc", merged.Add(time.Hour), ""), "release 5, newer than this merge"},
		{"a newer release by hand", &model.Release{Revision: 6, Phase: model.PhaseSucceeded, CreateTime: merged.Add(time.Hour)}, "release 6, newer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := recoverySkip(sha, merged)(tc.latest)
			if (tc.skip == "") != (got == "") || !strings.HasPrefix(got, tc.skip) {
				t.Errorf("skip %q, want %q", got, tc.skip)
			}
		})
	}
}
