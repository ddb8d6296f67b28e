package bot

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// The tests of this file's kind run the bot as it runs: its App
// authenticates to the fake GitHub with a key the fake knows, and every
// call goes through githubapi's client; only the stacks' work is fakeWork.
const (
	appID  = 4711
	inst   = 5
	owner  = "octo"
	name   = "infra"
	repoID = 42
)

// appBot is a bot of App appID on the fake, installed (inst) on
// owner/name, with the default branch's tree at main; set changes its
// configuration. Its log is in the returned buffer, for failures.
func appBot(t *testing.T, gh *githubfake.Server, work *fakeWork, set func(*Config)) (*Bot, *syncBuffer) {
	t.Helper()
	pemKey := testAppKey(t) // and appKey, its key
	gh.SetAppKey(appID, &appKey.PublicKey)
	gh.AddInstallationRepo(inst, owner, name)
	gh.SetRepositoryID(owner, name, repoID)
	cfg := &Config{WebhookSecret: testSecret, AppID: appID, PrivateKey: pemKey, APIURL: gh.URL,
		Concurrency: 1, Root: ".", RequireApproval: true, RequireMergeable: true, RequireChecks: true,
		MergeableStates: []string{"clean"}, Comment: "always", MaxCheckoutBytes: 1 << 20, MaxCheckoutFiles: 100,
		MaxUnverifiedBytes: 64 << 20, QueueWait: time.Minute, PolicyDir: "none"}
	if set != nil {
		set(cfg)
	}
	logs := &syncBuffer{}
	b, err := New(cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	b.work = work
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("bot log:\n%s", logs.String())
		}
	})
	return b, logs
}

// listen serves the bot's handler and points the App's webhook at it.
func listen(t *testing.T, gh *githubfake.Server, b *Bot) {
	t.Helper()
	srv := httptest.NewServer(b.Handler())
	t.Cleanup(srv.Close)
	gh.SetWebhook(srv.URL+"/webhook", testSecret)
}

// drain waits for the bot's jobs to end.
func drain(t *testing.T, b *Bot) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := b.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}

// tree is a repository of one stack folder, for the fake's archives.
func tree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "apps", "web", "dev", "spec.yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("resources: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// payload is GitHub's published example of event and action, about
// owner/name and sent to the App's installation.
func payload(t *testing.T, event, action string) map[string]any {
	t.Helper()
	p := githubfake.Event(t, event, action)
	p["installation"] = map[string]any{"id": inst}
	r, _ := p["repository"].(map[string]any)
	if r == nil {
		r = map[string]any{}
		p["repository"] = r
	}
	r["id"], r["name"], r["full_name"], r["default_branch"] = repoID, name, owner+"/"+name, "main"
	r["owner"] = map[string]any{"login": owner}
	return p
}

// changes are what the bot's work was asked: "command@sha by actor".
func changes(work *fakeWork) []string {
	var out []string
	for _, c := range work.changes {
		out = append(out, string(c.Command)+"@"+c.SHA+" by "+c.Request.Origin.Actor)
	}
	return out
}

// syncBuffer is a log many goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
