package githubfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// HookDelivery is one attempt at delivering an event to the App's webhook,
// as GitHub's delivery log keeps it (GET /app/hook/deliveries).
type HookDelivery struct {
	ID   int64
	GUID string // X-GitHub-Delivery: the same on every attempt at one event
	// Event and Action are the event's; Action is "" for an event
	// without one.
	Event, Action string
	Redelivery    bool
	// StatusCode is the webhook's answer, 0 when none came; Status is
	// GitHub's words for it ("OK", "Invalid HTTP Response: 503", "timed
	// out").
	StatusCode  int
	Status      string
	DeliveredAt time.Time
	Duration    time.Duration
	// InstallationID and RepositoryID are the payload's, 0 when it has
	// none.
	InstallationID, RepositoryID int64
}

// hookAttempt is an entry of the delivery log with what was sent, to send
// it again.
type hookAttempt struct {
	HookDelivery
	req *hookRequest
}

// SetWebhook points the App's webhook at url, its deliveries signed with
// secret: where Server.Deliver delivers, and where a redelivery asked for
// with POST /app/hook/deliveries/{id}/attempts goes.
func (s *Server) SetWebhook(url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.hookURL, s.st.hookSecret = url, secret
}

// Deliver delivers payload as event to the App's webhook (SetWebhook) as
// GitHub does, opts changing it as for the package's Deliver, and keeps
// the attempt in the App's delivery log, whatever the answer: a webhook
// that is down or too slow is no failure of the test (Delivered.Err says
// why no answer came).
func (s *Server) Deliver(t testing.TB, event string, payload map[string]any, opts ...DeliverOption) Delivered {
	t.Helper()
	s.mu.Lock()
	url, secret := s.st.hookURL, s.st.hookSecret
	s.mu.Unlock()
	if url == "" {
		t.Fatal("githubfake: Deliver before SetWebhook")
	}
	return s.attempt(newHookRequest(t, secret, event, payload, opts), url, false)
}

// HookDeliveries is the App's delivery log, oldest first.
func (s *Server) HookDeliveries() []HookDelivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]HookDelivery, len(s.st.hooks))
	for i, h := range s.st.hooks {
		out[i] = h.HookDelivery
	}
	return out
}

// attempt sends h to url, without holding the fake's lock (the receiver
// may call the fake while it answers), and logs the attempt.
func (s *Server) attempt(h *hookRequest, url string, redelivery bool) Delivered {
	start := time.Now()
	d, err := h.post(url)
	took := time.Since(start)
	entry := hookAttempt{req: h, HookDelivery: HookDelivery{GUID: h.id, Event: h.event, Redelivery: redelivery,
		StatusCode: d.Status, DeliveredAt: start, Duration: took}}
	switch {
	case err != nil:
		d.Err = err
		entry.Status = failure(err)
	case d.Status >= 200 && d.Status < 300:
		entry.Status = "OK"
	default:
		entry.Status = fmt.Sprintf("Invalid HTTP Response: %d", d.Status)
	}
	var p struct {
		Action       string `json:"action"`
		Installation struct {
			ID int64 `json:"id"`
		} `json:"installation"`
		Repository struct {
			ID int64 `json:"id"`
		} `json:"repository"`
	}
	_ = json.Unmarshal(h.body, &p)
	entry.Action, entry.InstallationID, entry.RepositoryID = p.Action, p.Installation.ID, p.Repository.ID
	s.mu.Lock()
	defer s.mu.Unlock()
	entry.ID = int64(len(s.st.hooks)) + 1
	s.st.hooks = append(s.st.hooks, entry)
	return d
}

// deliveryJSON is an entry of the log as GitHub's hook-delivery-item.
func deliveryJSON(h HookDelivery) map[string]any {
	m := map[string]any{
		"id": h.ID, "guid": h.GUID, "delivered_at": stamp(h.DeliveredAt), "redelivery": h.Redelivery,
		"duration": h.Duration.Seconds(), "status": h.Status, "status_code": h.StatusCode, "event": h.Event,
		"action": nil, "installation_id": nil, "repository_id": nil,
	}
	if h.Action != "" {
		m["action"] = h.Action
	}
	if h.InstallationID != 0 {
		m["installation_id"] = h.InstallationID
	}
	if h.RepositoryID != 0 {
		m["repository_id"] = h.RepositoryID
	}
	return m
}

// cursorPrefix starts the cursors of the delivery log's pages: a page
// goes on from the attempt before the one the cursor names.
const cursorPrefix = "v1_"

// listHookDeliveries answers GET /app/hook/deliveries: the log newest
// first, paged as GitHub pages it, by a cursor in the Link header.
func (s *Server) listHookDeliveries(rq *request) response {
	per := 30
	if n, err := strconv.Atoi(rq.query.Get("per_page")); err == nil && n > 0 {
		per = min(n, 100)
	}
	before := int64(len(s.st.hooks)) + 1
	if c := rq.query.Get("cursor"); c != "" {
		n, err := strconv.ParseInt(strings.TrimPrefix(c, cursorPrefix), 10, 64)
		if !strings.HasPrefix(c, cursorPrefix) || err != nil {
			return ghError(http.StatusBadRequest, "Invalid cursor")
		}
		before = n
	}
	out := []any{}
	for i := before - 2; i >= 0 && len(out) < per; i-- {
		out = append(out, deliveryJSON(s.st.hooks[i].HookDelivery))
	}
	h := http.Header{}
	if last := before - int64(len(out)); len(out) == per && last > 1 {
		q := url.Values{"per_page": {strconv.Itoa(per)}, "cursor": {cursorPrefix + strconv.FormatInt(last, 10)}}
		u := url.URL{Scheme: "http", Host: rq.r.Host, Path: rq.r.URL.Path, RawQuery: q.Encode()}
		h.Set("Link", fmt.Sprintf("<%s>; rel=\"next\"", u.String()))
	}
	return response{status: http.StatusOK, body: out, header: h}
}

// hookDelivery finds the log's entry the path's delivery_id names.
func (s *Server) hookDelivery(rq *request) (hookAttempt, bool) {
	id := intParam(rq, "delivery_id")
	if id < 1 || id > int64(len(s.st.hooks)) {
		return hookAttempt{}, false
	}
	return s.st.hooks[id-1], true
}

// redeliverHookDelivery answers POST .../deliveries/{delivery_id}/attempts
// as GitHub does: 202 at once, and the delivery made again soon after, the
// same event, delivery id and body, signed with the webhook's secret of
// now, as a new entry of the log marked a redelivery.
func (s *Server) redeliverHookDelivery(rq *request) response {
	h, ok := s.hookDelivery(rq)
	if !ok {
		return notFound()
	}
	again := *h.req
	again.secret, again.unsigned = s.st.hookSecret, false
	url := s.st.hookURL
	go s.attempt(&again, url, true)
	return response{status: http.StatusAccepted, body: map[string]any{}}
}
