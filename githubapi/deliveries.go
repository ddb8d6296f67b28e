package githubapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-github/v60/github"
)

// HookDelivery is one attempt GitHub made at delivering an event to the
// App's webhook, as its delivery log keeps it (three days of them).
type HookDelivery struct {
	// ID names this attempt; GUID is the event's X-GitHub-Delivery, the
	// same on every attempt at one event.
	ID          int64
	GUID        string
	DeliveredAt time.Time
	Redelivery  bool
	// StatusCode is what the webhook answered, 0 when it did not (no
	// connection, or no answer within GitHub's ten seconds).
	StatusCode    int
	Event, Action string
}

// deliveriesPerPage is the most GitHub gives a page of its delivery log.
const deliveriesPerPage = 100

// HookDeliveries reads the App's webhook delivery log back to since, newest
// first, at most maxPages pages of 100 attempts (with the App's JWT); more
// says the log goes on within since past what was read.
func (a *App) HookDeliveries(ctx context.Context, since time.Time, maxPages int) (out []HookDelivery, more bool, err error) {
	c, err := a.appsClient()
	if err != nil {
		return nil, false, err
	}
	opts := &github.ListCursorOptions{PerPage: deliveriesPerPage}
	for range maxPages {
		list, resp, err := c.gh.Apps.ListHookDeliveries(ctx, opts)
		if err != nil {
			return nil, false, fmt.Errorf("read the webhook delivery log of app %d: %w", a.ID, err)
		}
		for _, d := range list {
			if d.GetDeliveredAt().Before(since) {
				return out, false, nil
			}
			out = append(out, HookDelivery{ID: d.GetID(), GUID: d.GetGUID(), DeliveredAt: d.GetDeliveredAt().Time, Redelivery: d.GetRedelivery(),
				StatusCode: d.GetStatusCode(), Event: d.GetEvent(), Action: d.GetAction()})
		}
		// The log pages by a cursor its Link header names.
		if resp.Cursor == "" {
			return out, false, nil
		}
		opts.Cursor = resp.Cursor
	}
	return out, true, nil
}

// Redeliver asks GitHub to make the delivery of attempt id again: the same
// event, body and X-GitHub-Delivery, sent to the webhook as GitHub sends
// any delivery, a little later.
func (a *App) Redeliver(ctx context.Context, id int64) error {
	c, err := a.appsClient()
	if err != nil {
		return err
	}
	// GitHub answers 202: go-github reports it as an AcceptedError.
	if _, _, err := c.gh.Apps.RedeliverHookDelivery(ctx, id); err != nil && !errors.As(err, new(*github.AcceptedError)) {
		return fmt.Errorf("ask for delivery %d again: %w", id, err)
	}
	return nil
}
