package bot

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kusionpr/kusionpr/githubapi"
)

// GitHub never delivers a failed delivery again by itself: a delivery the
// bot answered 503 (no room among the bodies being received), or one
// that came while no bot listened, is lost unless the App asks for it
// again. The redelivery pass reads the App's delivery log and asks for
// each event the bot acts on whose every attempt failed in a way another
// attempt may not; GitHub then delivers it again, with the same delivery
// id (never recorded, as the failed attempt was refused before), and it
// is handled as any delivery.
//
// A pass runs when the bot starts, every KUSIONPR_REDELIVER_INTERVAL, and
// after the bot refused a delivery for lack of room or time; those last
// are anyone's to cause, so such a pass comes at most once per
// redeliverGap. Replicas each run theirs: a delivery asked for twice comes
// twice, and is done once (delivery ids, comment claims and the releases
// of a merge see to it).
const (
	// redeliverAfter is how long after a refusal its pass comes: by then
	// GitHub has logged the refused attempt, and the bodies that filled
	// the budget have been read or cut off (10 s at most, 5 s of waiting).
	redeliverAfter = 15 * time.Second
	// redeliverGap is the least time between two passes a refusal
	// brings.
	redeliverGap = 30 * time.Second
	// Bounds of one pass: the log's pages read (100 attempts each), and
	// the deliveries asked for, under GitHub's limits on requests that
	// write (a pass that finds more asks for another soon after).
	redeliverPages = 10
	redeliverMost  = 30
)

// redelivery is the state of the bot's redelivery passes.
type redelivery struct {
	kick chan struct{} // a refusal asks for a pass; holds one
	// sleep waits d, unless ctx ends first (false); tests replace it.
	sleep func(ctx context.Context, d time.Duration) bool

	mu sync.Mutex
	// asked is when this bot last asked GitHub for each delivery id
	// (kept for the window): an attempt GitHub has not logged yet counts.
	asked map[string]time.Time
}

func newRedelivery() *redelivery {
	return &redelivery{kick: make(chan struct{}, 1), asked: map[string]time.Time{}, sleep: sleep}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// refused asks for a pass after the bot refused a delivery for want of
// room or time; it never blocks, and a pass already asked for covers it.
func (r *redelivery) refused() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// askedFor says whether this bot asked GitHub for the delivery id.
func (r *redelivery) askedFor(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.asked[id]
	return ok
}

// ScheduleRedelivery runs redelivery passes until ctx ends: every
// KUSIONPR_REDELIVER_INTERVAL, and after refusals. The pass at start is
// Redeliver's, called apart.
func (b *Bot) ScheduleRedelivery(ctx context.Context) {
	if b.cfg.RedeliverInterval <= 0 || b.cfg.RecoverWindow <= 0 {
		return
	}
	b.redeliver.schedule(ctx, b.cfg.RedeliverInterval, func(ctx context.Context) bool {
		_, more, err := b.Redeliver(ctx)
		if err != nil {
			b.log.Error("redelivery pass failed", "error", err)
		}
		return more
	})
}

// schedule runs pass every interval (give or take a tenth, so replicas
// spread out), and redeliverAfter a refusal but never sooner than
// redeliverGap after the pass before, the one at start included; a pass
// that leaves more to do is followed by another as if after a refusal.
func (r *redelivery) schedule(ctx context.Context, interval time.Duration, pass func(context.Context) (more bool)) {
	last := time.Now()
	periodic := time.NewTimer(wait.Jitter(interval, 0.1))
	defer periodic.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-periodic.C:
		case <-r.kick:
			delay := max(redeliverAfter, time.Until(last.Add(redeliverGap)))
			if !r.sleep(ctx, delay) {
				return
			}
		}
		last = time.Now()
		if pass(ctx) {
			r.refused()
		}
		periodic.Reset(wait.Jitter(interval, 0.1))
	}
}

// Redeliver reads the App's delivery log back KUSIONPR_RECOVER_WINDOW and
// asks GitHub to deliver again what failed (toRedeliver); more says there
// was more to ask for than one pass does.
func (b *Bot) Redeliver(ctx context.Context) (asked int, more bool, err error) {
	if b.cfg.RedeliverInterval <= 0 || b.cfg.RecoverWindow <= 0 {
		return 0, false, nil
	}
	now := time.Now()
	log, partial, err := b.app.HookDeliveries(ctx, now.Add(-b.cfg.RecoverWindow), redeliverPages)
	if err != nil {
		return 0, false, err
	}
	if partial {
		b.log.Warn("the webhook delivery log holds more within the recovery window than a pass reads: failures older than the last attempts read are not asked for again",
			"read", len(log), "window", b.cfg.RecoverWindow.String())
	}
	r := b.redeliver
	r.mu.Lock()
	for id, at := range r.asked {
		if now.Sub(at) > b.cfg.RecoverWindow {
			delete(r.asked, id)
		}
	}
	picks, more := toRedeliver(log, r.asked, now, redeliverMost)
	r.mu.Unlock()
	var errs []error
	for _, p := range picks {
		if err := b.app.Redeliver(ctx, p.attempt); err != nil {
			errs = append(errs, err)
			continue
		}
		r.mu.Lock()
		r.asked[p.guid] = now
		r.mu.Unlock()
		asked++
		b.m.redeliveries.Inc()
		b.log.Info("asked GitHub to deliver again a delivery the bot could not take", "delivery", p.guid, "event", p.event,
			"action", p.action, "attempts", p.attempts, "firstAttempt", p.first.UTC().Format(time.RFC3339))
	}
	return asked, more, errors.Join(errs...)
}

// redeliveryPick is a delivery to ask for again.
type redeliveryPick struct {
	guid, event, action string
	attempt             int64 // the attempt to ask GitHub to make again
	attempts            int
	first               time.Time
}

// toRedeliver picks, from GitHub's delivery log (every attempt within the
// window read), the deliveries to ask for again, at most most of them,
// oldest first; more says others were left for another pass. A delivery
// is asked for again when it is of an event the bot acts on, no attempt
// at it succeeded, and its last attempt failed in a way the next may not:
// no answer, 408, 429 or a server error (not the bot's refusal of a bad
// signature or body, which would only be refused again). Its attempts are
// spaced out: after failing for a while, a delivery waits as long again
// (asked counts as an attempt at the time the bot asked), so a delivery
// that cannot be taken is asked for a dozen times a day, not at every
// pass.
func toRedeliver(log []githubapi.HookDelivery, asked map[string]time.Time, now time.Time, most int) (picks []redeliveryPick, more bool) {
	type history struct {
		redeliveryPick
		ok, retryable bool
		last          time.Time // of the latest attempt
	}
	byGUID := map[string]*history{}
	for _, d := range log {
		h := byGUID[d.GUID]
		if h == nil {
			h = &history{redeliveryPick: redeliveryPick{guid: d.GUID, event: d.Event, action: d.Action, first: d.DeliveredAt}}
			byGUID[d.GUID] = h
		}
		h.attempts++
		h.ok = h.ok || d.StatusCode >= 200 && d.StatusCode < 300
		h.first = minTime(h.first, d.DeliveredAt)
		if !d.DeliveredAt.Before(h.last) {
			h.last, h.attempt, h.retryable = d.DeliveredAt, d.ID, retryable(d.StatusCode)
		}
	}
	var all []redeliveryPick
	for _, h := range byGUID {
		if h.ok || !h.retryable || !handledEvent(h.event) {
			continue
		}
		last := h.last
		if at, ok := asked[h.guid]; ok && at.After(last) {
			last = at
		}
		if now.Sub(last) < last.Sub(h.first) {
			continue
		}
		all = append(all, h.redeliveryPick)
	}
	sort.Slice(all, func(i, j int) bool {
		if !all[i].first.Equal(all[j].first) {
			return all[i].first.Before(all[j].first)
		}
		return all[i].guid < all[j].guid
	})
	if len(all) > most {
		return all[:most], true
	}
	return all, false
}

// retryable says whether a delivery that got this answer may be taken on
// another attempt.
func retryable(status int) bool {
	return status == 0 || status == 408 || status == 429 || status >= 500
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
