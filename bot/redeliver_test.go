package bot

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/githubapi"
)

func TestToRedeliver(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	// attempt is an attempt of delivery guid n, at a time, answered status.
	id := int64(0)
	attempt := func(n int, event string, at time.Time, status int) githubapi.HookDelivery {
		id++
		return githubapi.HookDelivery{ID: id, GUID: guid(n), Event: event, Action: "created", DeliveredAt: at, StatusCode: status, Redelivery: id > 1}
	}
	for _, tc := range []struct {
		name  string
		log   []githubapi.HookDelivery
		asked map[string]time.Time
		want  []int // the deliveries asked for, by n
	}{
		{name: "refused for want of room", log: []githubapi.HookDelivery{attempt(1, "issue_comment", ago(time.Minute), 503)}, want: []int{1}},
		{name: "no answer: the bot was down", log: []githubapi.HookDelivery{attempt(1, "pull_request", ago(time.Minute), 0)}, want: []int{1}},
		{name: "cut off, throttled, a proxy's error", log: []githubapi.HookDelivery{
			attempt(1, "issue_comment", ago(time.Minute), 408), attempt(2, "check_run", ago(time.Minute), 429), attempt(3, "merge_group", ago(time.Minute), 502),
		}, want: []int{1, 2, 3}},
		{name: "taken", log: []githubapi.HookDelivery{attempt(1, "issue_comment", ago(time.Minute), 202)}},
		{name: "redelivered since, and taken", log: []githubapi.HookDelivery{
			attempt(1, "issue_comment", ago(2*time.Minute), 503), attempt(1, "issue_comment", ago(time.Minute), 202),
		}},
		{name: "taken, then a redelivery someone asked for failed", log: []githubapi.HookDelivery{
			attempt(1, "issue_comment", ago(2*time.Minute), 200), attempt(1, "issue_comment", ago(time.Minute), 503),
		}},
		{name: "refused for what it is: bad signature, malformed, too large", log: []githubapi.HookDelivery{
			attempt(1, "issue_comment", ago(time.Minute), 401), attempt(2, "issue_comment", ago(time.Minute), 400), attempt(3, "issue_comment", ago(time.Minute), 413),
		}},
		{name: "refused for want of room, then for what it is", log: []githubapi.HookDelivery{
			attempt(1, "issue_comment", ago(2*time.Minute), 503), attempt(1, "issue_comment", ago(time.Minute), 400),
		}},
		{name: "an event the bot does not act on", log: []githubapi.HookDelivery{attempt(1, "star", ago(time.Minute), 503)}},
		{name: "failing for 9 minutes, last tried a minute ago: not yet", log: []githubapi.HookDelivery{
			attempt(1, "issue_comment", ago(10*time.Minute), 503), attempt(1, "issue_comment", ago(time.Minute), 503),
		}},
		{name: "failing for 4 minutes, last tried 6 minutes ago: again", log: []githubapi.HookDelivery{
			attempt(1, "issue_comment", ago(10*time.Minute), 503), attempt(1, "issue_comment", ago(6*time.Minute), 0),
		}, want: []int{1}},
		{name: "asked for 20 s ago, GitHub's attempt not logged yet", log: []githubapi.HookDelivery{attempt(1, "issue_comment", ago(time.Minute), 503)},
			asked: map[string]time.Time{guid(1): ago(20 * time.Second)}},
		{name: "asked for by another replica long ago, failed again since", log: []githubapi.HookDelivery{
			attempt(1, "issue_comment", ago(3*time.Minute), 503), attempt(1, "issue_comment", ago(2*time.Minute), 503),
		}, want: []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			picks, more := toRedeliver(tc.log, tc.asked, now, redeliverMost)
			var got []string
			for _, p := range picks {
				got = append(got, p.guid)
				// Its latest attempt is the one asked for again.
				var latest githubapi.HookDelivery
				for _, d := range tc.log {
					if d.GUID == p.guid && !d.DeliveredAt.Before(latest.DeliveredAt) {
						latest = d
					}
				}
				if p.attempt != latest.ID {
					t.Errorf("delivery %s: asked for attempt %d, not its latest, %d", p.guid, p.attempt, latest.ID)
				}
			}
			var want []string
			for _, n := range tc.want {
				want = append(want, guid(n))
			}
			if strings.Join(got, ",") != strings.Join(want, ",") || more {
				t.Errorf("asked for %v (more %v), want %v", got, more, want)
			}
		})
	}

	t.Run("at most a pass's worth, the oldest first", func(t *testing.T) {
		var log []githubapi.HookDelivery
		for n := range redeliverMost + 5 {
			// Newest first, as GitHub lists them.
			log = append(log, attempt(n, "pull_request", ago(time.Duration(n)*time.Minute), 503))
		}
		picks, more := toRedeliver(log, nil, now, redeliverMost)
		if len(picks) != redeliverMost || !more {
			t.Fatalf("%d picked (more %v), want %d and more", len(picks), more, redeliverMost)
		}
		if picks[0].guid != guid(redeliverMost+4) || picks[len(picks)-1].guid != guid(5) {
			t.Errorf("picked %s to %s, want the oldest %s to %s", picks[0].guid, picks[len(picks)-1].guid, guid(redeliverMost+4), guid(5))
		}
	})
}

// TestRedeliveryDebounce: refusals, which anyone can cause, bring one pass
// at a time, redeliverAfter the refusal and never sooner than redeliverGap
// after the pass before (the one at start included); without refusals
// there are none but the periodic ones.
func TestRedeliveryDebounce(t *testing.T) {
	r := newRedelivery()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slept := make(chan time.Duration, 10)
	wake := make(chan struct{})
	r.sleep = func(ctx context.Context, d time.Duration) bool {
		slept <- d
		select {
		case <-wake:
			return true
		case <-ctx.Done():
			return false
		}
	}
	passes := make(chan bool, 10)
	more := true // the first pass leaves more to ask for
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.schedule(ctx, time.Hour, func(context.Context) bool {
			passes <- true
			m := more
			more = false
			return m
		})
	}()

	for range 100 {
		r.refused()
	}
	if d := <-slept; d < redeliverAfter || d > redeliverGap {
		t.Errorf("100 refusals just after the pass at start: a pass in %s, want between %s and %s", d, redeliverAfter, redeliverGap)
	}
	for range 100 {
		r.refused() // while the pass waits: it covers them
	}
	wake <- struct{}{}
	<-passes
	// The refusals during the wait bring one more pass; the first one's
	// "more" asks for the same pass, not another.
	if d := <-slept; d <= redeliverAfter || d > redeliverGap {
		t.Errorf("refusals during the wait: the next pass in %s, want redeliverGap (%s) after the last", d, redeliverGap)
	}
	wake <- struct{}{}
	<-passes
	cancel()
	<-done
	if len(passes) != 0 || len(slept) != 0 {
		t.Errorf("%d more passes and %d more waits after 200 refusals, want 2 passes in all", len(passes), len(slept))
	}
}
