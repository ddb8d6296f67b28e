package cloudtoken

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// countingSource hands out tok-1, tok-2, ... each valid for lifetime.
type countingSource struct {
	now      func() time.Time
	lifetime time.Duration
	calls    int
	err      error
}

func (s *countingSource) Token(context.Context) (Token, error) {
	s.calls++
	if s.err != nil {
		return Token{}, s.err
	}
	return Token{Value: fmt.Sprintf("tok-%d", s.calls), Expiry: s.now().Add(s.lifetime)}, nil
}

func TestCacheRefreshesBeforeExpiry(t *testing.T) {
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	now := start
	clock := func() time.Time { return now }
	src := &countingSource{now: clock, lifetime: 10 * time.Minute}
	c := &Cache{Source: src, RefreshMargin: 2 * time.Minute, Now: clock}
	steps := []struct {
		at   time.Duration
		want string
	}{
		{0, "tok-1"},
		{5 * time.Minute, "tok-1"},
		{7*time.Minute + 59*time.Second, "tok-1"},
		{8 * time.Minute, "tok-2"}, // within the margin of tok-1's expiry
		{15 * time.Minute, "tok-2"},
		{16 * time.Minute, "tok-3"},
	}
	for _, st := range steps {
		now = start.Add(st.at)
		tok, err := c.Token(context.Background())
		if err != nil {
			t.Fatalf("at %s: %v", st.at, err)
		}
		if tok.Value != st.want {
			t.Errorf("at %s: token %s, want %s", st.at, tok.Value, st.want)
		}
	}
}

func TestCacheDoesNotKeepFailures(t *testing.T) {
	now := time.Now()
	src := &countingSource{now: func() time.Time { return now }, lifetime: time.Hour, err: errors.New("denied")}
	c := &Cache{Source: src, RefreshMargin: time.Minute, Now: func() time.Time { return now }}
	if _, err := c.Token(context.Background()); err == nil {
		t.Fatal("want the source's error")
	}
	src.err = nil
	tok, err := c.Token(context.Background())
	if err != nil || tok.Value != "tok-2" {
		t.Fatalf("after recovery: %v, %v; want tok-2", tok.Value, err)
	}
}

func TestTokenIsRedactedWhenPrinted(t *testing.T) {
	tok := Token{Value: "k8s-aws-v1.secret", Expiry: time.Now()}
	for _, f := range []string{"%v", "%+v", "%s", "%#v"} {
		if s := fmt.Sprintf(f, tok); strings.Contains(s, tok.Value) {
			t.Errorf("%s prints the token: %s", f, s)
		}
	}
}

// TestConfigureReplacesExec: a rest.Config whose exec command does not
// exist still authenticates, so no process was started for it.
func TestConfigureReplacesExec(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("Authorization"))
		_, _ = io.WriteString(w, `{}`)
	}))
	defer srv.Close()

	wrapped := false
	cfg := &rest.Config{
		Host: srv.URL,
		ExecProvider: &clientcmdapi.ExecConfig{
			APIVersion:      "client.authentication.k8s.io/v1beta1",
			Command:         "/nonexistent/aws",
			Args:            []string{"eks", "get-token", "--cluster-name", "demo"},
			InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		},
		BearerToken: "stale",
		// An earlier wrapper stays in the chain.
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			wrapped = true
			return rt
		},
	}
	now := time.Now()
	src := &countingSource{now: func() time.Time { return now }, lifetime: time.Hour}
	Configure(cfg, NewCache(src))
	if cfg.ExecProvider != nil || cfg.BearerToken != "" {
		t.Fatalf("exec or static token left in the config")
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatalf("HTTPClientFor: %v", err)
	}
	for i := 0; i < 3; i++ {
		resp, err := client.Get(srv.URL + "/version")
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		_ = resp.Body.Close()
	}
	for _, got := range seen {
		if got != "Bearer tok-1" {
			t.Errorf("Authorization = %q, want Bearer tok-1", got)
		}
	}
	if src.calls != 1 {
		t.Errorf("source asked %d times for 3 requests, want 1", src.calls)
	}
	if !wrapped {
		t.Error("the earlier WrapTransport was dropped")
	}
}

func TestTransportFailsWithoutToken(t *testing.T) {
	called := false
	base := roundTripFunc(func(*http.Request) (*http.Response, error) {
		called = true
		return nil, errors.New("unreachable")
	})
	src := &countingSource{now: time.Now, err: &Error{Cloud: GKE, Identity: "service account ci@p.iam.gserviceaccount.com", Doing: "getting an access token", Err: errors.New("metadata: 404")}}
	tr := &Transport{Base: base, Source: src}
	req := httptest.NewRequest(http.MethodGet, "https://cluster.example/api", nil)
	_, err := tr.RoundTrip(req)
	if err == nil || called {
		t.Fatalf("err = %v, base called = %v; want the token error and no request", err, called)
	}
	if want := "gke token for service account ci@p.iam.gserviceaccount.com: getting an access token: metadata: 404"; err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
	if req.Header.Get("Authorization") != "" {
		t.Error("the caller's request was modified")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestLazySourceBuildsOnFirstToken(t *testing.T) {
	ctx := context.Background()
	p, err := Recognise(&clientcmdapi.ExecConfig{Command: "aws", Args: []string{"eks", "get-token", "--cluster-name", "demo", "--region", "eu-west-1"}})
	if err != nil {
		t.Fatal(err)
	}
	src := NewLazySource(p, Options{Getenv: func(string) string { return "" }, AWS: staticAWS("")})
	first, err := src.Token(ctx)
	if err != nil {
		t.Fatalf("Token: %v", err)
	}
	if u := decodeEKSToken(t, first.Value); u.Host != "sts.eu-west-1.amazonaws.com" {
		t.Errorf("host %s", u.Host)
	}
	again, err := src.Token(ctx)
	if err != nil || again.Value != first.Value {
		t.Errorf("second token not reused: %v", err)
	}

	// A plugin that cannot be built fails at the first token, naming it.
	bad := NewLazySource(Plugin{Cloud: AKS, AKS: AKSParams{ServerID: DefaultAKSServerID, Login: "azurecli"}}, Options{})
	if _, err := bad.Token(ctx); err == nil || !strings.Contains(err.Error(), "aks token") {
		t.Errorf("err = %v, want an aks error", err)
	}
}

// TestUnauthorizedDropsToken: a 401 makes the next request fetch a new
// token though the old one has not expired.
func TestUnauthorizedDropsToken(t *testing.T) {
	var seen []string
	status := http.StatusUnauthorized
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("Authorization"))
		w.WriteHeader(status)
	}))
	defer srv.Close()
	now := time.Now()
	src := &countingSource{now: func() time.Time { return now }, lifetime: time.Hour}
	client := &http.Client{Transport: &Transport{Base: srv.Client().Transport, Source: NewCache(src)}}
	for i := 0; i < 3; i++ {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		status = http.StatusOK
	}
	want := []string{"Bearer tok-1", "Bearer tok-2", "Bearer tok-2"}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("Authorization sent %v, want %v", seen, want)
	}
}

// TestCacheConcurrent: concurrent requests share one token (run with -race).
func TestCacheConcurrent(t *testing.T) {
	now := time.Now()
	src := &countingSource{now: func() time.Time { return now }, lifetime: time.Hour}
	c := NewCache(src)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if tok, err := c.Token(context.Background()); err != nil || tok.Value != "tok-1" {
				t.Errorf("token %v, err %v", tok.Value, err)
			}
		}()
	}
	wg.Wait()
	if src.calls != 1 {
		t.Errorf("source asked %d times, want 1", src.calls)
	}
}

func TestErrorUnwraps(t *testing.T) {
	cause := errors.New("denied")
	err := fmt.Errorf("reaching the cluster: %w", &Error{Cloud: AKS, Identity: "client id c", Doing: "getting an Entra ID token", Err: cause})
	var e *Error
	if !errors.Is(err, cause) || !errors.As(err, &e) || e.Cloud != AKS {
		t.Errorf("errors.Is/As do not see through %v", err)
	}
}
