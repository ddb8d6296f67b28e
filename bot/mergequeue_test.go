package bot

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/githubapi"
)

// queueFake answers the reads of the wait for the group ahead: whether its
// commit has landed and its check, one answer per read, the last repeated.
type queueFake struct {
	*fakeGitHub
	landed []bool
	ahead  []githubapi.CheckRunState
	reads  int
}

func (q *queueFake) Contains(context.Context, string, string) (bool, error) {
	q.reads++
	return q.landed[min(q.reads, len(q.landed))-1], nil
}

func (q *queueFake) CheckRunOf(context.Context, string, string, int64) (githubapi.CheckRunState, error) {
	return q.ahead[min(q.reads, len(q.ahead))-1], nil
}

// TestWaitGroupAhead: a group applies once the group ahead landed or
// passed, not when it failed; the wait pauses a second, then longer, and
// gives up before a pause that would end past KUSIONPR_QUEUE_WAIT, or when
// the bot stops.
func TestWaitGroupAhead(t *testing.T) {
	pending := githubapi.CheckRunState{Status: "in_progress"}
	passed := githubapi.CheckRunState{Status: "completed", Conclusion: "success"}
	failed := githubapi.CheckRunState{Status: "completed", Conclusion: "failure", Title: "apply failed"}
	stopped, stop := context.WithCancel(context.Background())
	stop()
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		queueWait time.Duration
		landed    []bool
		ahead     []githubapi.CheckRunState
		want      string // in the reason; "" to apply
		wantReads int
		minTime   time.Duration
	}{
		{name: "landed", landed: []bool{true}, ahead: []githubapi.CheckRunState{pending}, wantReads: 1},
		{name: "the group ahead passed", landed: []bool{false}, ahead: []githubapi.CheckRunState{passed}, wantReads: 1},
		{name: "the group ahead failed", landed: []bool{false}, ahead: []githubapi.CheckRunState{failed}, want: "did not pass", wantReads: 1},
		{name: "landed after a pause of a second", landed: []bool{false, true}, ahead: []githubapi.CheckRunState{pending}, wantReads: 2, minTime: time.Second},
		{name: "no pause past the bound", queueWait: 500 * time.Millisecond, landed: []bool{false}, ahead: []githubapi.CheckRunState{pending},
			want: "neither landed nor passed", wantReads: 1},
		{name: "the bot stops", ctx: stopped, landed: []bool{false}, ahead: []githubapi.CheckRunState{pending}, want: "the bot stopped", wantReads: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := testBot(t, &fakeGitHub{}, &fakeWork{})
			b.cfg.QueueWait = time.Minute
			if tc.queueWait > 0 {
				b.cfg.QueueWait = tc.queueWait
			}
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = tc.ctx
			}
			q := &queueFake{fakeGitHub: &fakeGitHub{}, landed: tc.landed, ahead: tc.ahead}
			c := &command{j: job{queueBase: "7777777777777777777777777777777777777777", queueBranch: "main"}, gh: q, log: slog.New(slog.DiscardHandler)}
			start := time.Now()
			got := b.waitGroupAhead(ctx, c)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("waitGroupAhead = %q, want %q", got, tc.want)
			}
			if q.reads != tc.wantReads {
				t.Errorf("%d reads, want %d", q.reads, tc.wantReads)
			}
			if took := time.Since(start); took < tc.minTime || took > tc.minTime+5*time.Second {
				t.Errorf("took %s, want %s", took, tc.minTime)
			}
		})
	}
}
