package githubapi_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// testApp is an App of the given id whose key the fake knows, reaching the
// fake.
func testApp(t *testing.T, gh *githubfake.Server, id int64) *githubapi.App {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	gh.SetAppKey(id, &key.PublicKey)
	return &githubapi.App{ID: id, APIURL: gh.URL,
		PrivateKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})}
}

// TestHookDeliveries reads the App's delivery log as GitHub pages it (by a
// cursor), back to a time and no further, within a number of pages, and
// asks for a delivery again.
func TestHookDeliveries(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	app := testApp(t, gh, 99)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer hook.Close()
	gh.SetWebhook(hook.URL, "secret")

	// 50 attempts, then, from the next whole second on (the log's times
	// are in seconds), 230 more.
	for range 50 {
		gh.Deliver(t, "issue_comment", map[string]any{"action": "created"})
	}
	since := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(since))
	for range 230 {
		gh.Deliver(t, "pull_request", map[string]any{"action": "closed"})
	}
	all := gh.HookDeliveries()

	log, more, err := app.HookDeliveries(ctx, since, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 230 || more {
		t.Fatalf("read %d attempts (more %v) since the second batch, want its 230", len(log), more)
	}
	newest := all[len(all)-1]
	if d := log[0]; d.ID != newest.ID || d.GUID != newest.GUID || d.StatusCode != 503 || d.Event != "pull_request" || d.Action != "closed" || d.Redelivery {
		t.Errorf("the newest attempt reads %+v, want %+v", d, newest)
	}
	if log[229].ID != all[50].ID {
		t.Errorf("the oldest attempt read is %d, want %d, the first since", log[229].ID, all[50].ID)
	}

	log, more, err = app.HookDeliveries(ctx, time.Time{}, 2)
	if err != nil || len(log) != 200 || !more {
		t.Fatalf("two pages: %d attempts, more %v, %v; want 200 and more", len(log), more, err)
	}

	if err := app.Redeliver(ctx, all[0].ID); err != nil {
		t.Fatalf("redeliver: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		l := gh.HookDeliveries()
		if last := l[len(l)-1]; len(l) == len(all)+1 && last.Redelivery && last.GUID == all[0].GUID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("GitHub never delivered it again")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := app.Redeliver(ctx, 100000); err == nil {
		t.Error("asking for an attempt the log does not hold succeeded")
	}
}
