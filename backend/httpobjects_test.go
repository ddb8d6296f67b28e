package backend

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/kusionpr/kusionpr/internal/storeserver"
	"github.com/kusionpr/kusionpr/model"
)

func TestHTTPStoreRedirectPolicy(t *testing.T) {
	store, _ := url.Parse("https://store.example.com/kusion")
	for _, tc := range []struct {
		to   string
		hops int
		ok   bool
	}{
		{"https://store.example.com/kusion/elsewhere", 0, true},
		{"https://evil.example.com/kusion", 0, false},
		{"https://mirror.store.example.com/kusion", 0, false}, // Go would send the header to a subdomain
		{"http://store.example.com/kusion", 0, false},         // nor in the clear
		{"https://store.example.com:8443/kusion", 0, false},
		{"https://store.example.com/kusion", 5, false},
	} {
		req, _ := http.NewRequest(http.MethodGet, tc.to, nil)
		err := sameOrigin(store)(req, make([]*http.Request, tc.hops))
		if (err == nil) != tc.ok {
			t.Errorf("a redirect to %s after %d: %v, want followed %v", tc.to, tc.hops, err, tc.ok)
		}
	}
}

// recorder answers every request with 404 and remembers the
// Authorization headers it was sent.
type recorder struct {
	mu   sync.Mutex
	auth []string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.auth = append(r.auth, req.Header.Get("Authorization"))
	r.mu.Unlock()
	http.NotFound(w, req)
}

// TestHTTPStoreKeepsItsAuthorization: the operator's credential goes to
// the store alone. A store (or whoever took over its answers) redirecting
// to another server gets no request there; an answer quoting the
// credential back does not put it in an error; a missing or wrong one
// names the setting.
func TestHTTPStoreKeepsItsAuthorization(t *testing.T) {
	ctx := context.Background()
	const token = "Bearer kusionpr-store-token-6d1e"
	t.Setenv(StoreAuthorizationVar, token)

	elsewhere := &recorder{}
	other := httptest.NewServer(elsewhere)
	defer other.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	s := openURL(t, redirecting.URL+"/kusion")
	_, err := s.Latest(ctx, "p", "w")
	if err == nil || !strings.Contains(err.Error(), "not followed") {
		t.Errorf("Latest through a redirect to another host: %v", err)
	}
	if err := s.Create(ctx, &model.Release{Project: "p", Workspace: "w", Revision: 1, Stack: "s", Phase: model.PhaseSucceeded}); err == nil {
		t.Error("a create through a redirect to another host succeeded")
	}
	if len(elsewhere.auth) != 0 {
		t.Errorf("the other host was sent %d requests (authorizations %q)", len(elsewhere.auth), elsewhere.auth)
	}

	quoting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "denied: "+r.Header.Get("Authorization"), http.StatusForbidden)
	}))
	defer quoting.Close()
	_, err = openURL(t, quoting.URL+"/kusion").Latest(ctx, "p", "w")
	if err == nil || strings.Contains(err.Error(), "kusionpr-store-token-6d1e") || !strings.Contains(err.Error(), "check "+StoreAuthorizationVar) {
		t.Errorf("a refusal quoting the credential: %v", err)
	}

	guarded := httptest.NewServer(&storeserver.Server{Authorization: "Bearer the-right-one"})
	defer guarded.Close()
	_, err = openURL(t, guarded.URL+"/kusion").Latest(ctx, "p", "w")
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized") || !strings.Contains(err.Error(), "check "+StoreAuthorizationVar) {
		t.Errorf("a wrong credential: %v", err)
	}
	t.Setenv(StoreAuthorizationVar, "Bearer the-right-one")
	if _, err := openURL(t, guarded.URL+"/kusion").Latest(ctx, "p", "w"); err != nil {
		t.Errorf("the right credential: %v", err)
	}
}

func TestHTTPStoreRefusesPlainHTTPElsewhere(t *testing.T) {
	_, err := Open(context.Background(), "http://store.example.com/kusion")
	if err == nil || !strings.Contains(err.Error(), "plain http is for a store on this machine only: use https") {
		t.Errorf("plain http to another machine: %v", err)
	}
}
