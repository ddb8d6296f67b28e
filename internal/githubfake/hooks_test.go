package githubfake

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v60/github"
)

// received is what a webhook receiver was sent.
type received struct {
	id, event, signature string
	body                 []byte
}

// TestHookDeliveries: deliveries made through the fake are in the App's
// delivery log as GitHub keeps it (validated against GitHub's description
// as every answer is), paged by cursor, newest first; asking for one again
// sends the same delivery id and body, signed, and logs a redelivery.
func TestHookDeliveries(t *testing.T) {
	ctx := context.Background()
	key, pemKey := appKey(t)
	s := New(t)
	s.SetAppKey(42, &key.PublicKey)

	var mu sync.Mutex
	var got []received
	answer := http.StatusServiceUnavailable
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, received{id: r.Header.Get("X-GitHub-Delivery"), event: r.Header.Get("X-GitHub-Event"),
			signature: r.Header.Get("X-Hub-Signature-256"), body: body})
		w.WriteHeader(answer)
	}))
	defer hook.Close()
	const secret = "hook-secret"
	s.SetWebhook(hook.URL, secret)

	refused := s.Deliver(t, "issue_comment", map[string]any{"action": "created", "installation": map[string]any{"id": 7}, "repository": map[string]any{"id": 99}})
	mu.Lock()
	answer = http.StatusAccepted
	mu.Unlock()
	for range 4 {
		s.Deliver(t, "ping", map[string]any{"zen": "Design for failure."})
	}
	if refused.Status != http.StatusServiceUnavailable {
		t.Fatalf("the first delivery: %d, want the receiver's 503", refused.Status)
	}

	atr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, 42, pemKey)
	if err != nil {
		t.Fatal(err)
	}
	atr.BaseURL = strings.TrimSuffix(s.URL, "/")
	app, _ := github.NewClient(&http.Client{Transport: atr}).WithEnterpriseURLs(s.URL, s.URL)

	// Two at a time: three pages, newest first.
	var log []*github.HookDelivery
	opts := &github.ListCursorOptions{PerPage: 2}
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("the log's pages go on past its five attempts")
		}
		page, resp, err := app.Apps.ListHookDeliveries(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, page...)
		if resp.Cursor == "" {
			break
		}
		opts.Cursor = resp.Cursor
	}
	if len(log) != 5 {
		t.Fatalf("the log lists %d attempts, want 5", len(log))
	}
	first := log[4]
	if first.GetGUID() != got[0].id || first.GetStatusCode() != 503 || first.GetStatus() != "Invalid HTTP Response: 503" ||
		first.GetEvent() != "issue_comment" || first.GetAction() != "created" || first.GetInstallationID() != 7 || first.GetRepositoryID() != 99 || first.GetRedelivery() {
		t.Errorf("the oldest attempt is logged as %v", first)
	}
	if log[0].GetStatus() != "OK" || log[0].GetEvent() != "ping" || log[0].Action != nil || !log[0].GetDeliveredAt().After(first.GetDeliveredAt().Add(-time.Second)) {
		t.Errorf("the newest attempt is logged as %v", log[0])
	}

	// Asked for again: 202, then the same delivery, signed again.
	if _, _, err := app.Apps.RedeliverHookDelivery(ctx, first.GetID()); !errors.As(err, new(*github.AcceptedError)) {
		t.Fatalf("redeliver: %v, want GitHub's 202", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(s.HookDeliveries()) < 6 {
		if time.Now().After(deadline) {
			t.Fatal("the redelivery never came")
		}
		time.Sleep(10 * time.Millisecond)
	}
	again := s.HookDeliveries()[5]
	mu.Lock()
	last := got[len(got)-1]
	mu.Unlock()
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(last.body)
	if last.id != got[0].id || string(last.body) != string(got[0].body) || last.event != "issue_comment" || last.signature != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
		t.Errorf("the redelivery sent %+v, want the first delivery again, signed", last)
	}
	if !again.Redelivery || again.GUID != got[0].id || again.StatusCode != http.StatusAccepted {
		t.Errorf("the redelivery is logged as %+v", again)
	}
	if _, _, err := app.Apps.RedeliverHookDelivery(ctx, 1000); err == nil || errors.As(err, new(*github.AcceptedError)) {
		t.Errorf("an attempt the log does not hold was redelivered: %v", err)
	}

	// Nobody listening: logged with no status.
	hook.Close()
	if d := s.Deliver(t, "ping", map[string]any{}); d.Status != 0 || d.Err == nil {
		t.Errorf("a delivery to a closed webhook: %+v", d)
	}
	if l := s.HookDeliveries(); l[len(l)-1].StatusCode != 0 || l[len(l)-1].Status != "failed to connect to host" {
		t.Errorf("a delivery to a closed webhook is logged as %+v", l[len(l)-1])
	}
}
