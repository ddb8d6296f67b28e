package deps_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/engine/kcl/deps"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// sources puts counting proxies before the local registry and git server
// and returns the settings that send Kusion's names through them, with
// the default allowlist kept.
func sources(t *testing.T) (ociProxy, gitProxy *testenv.Counting, allow, mirrors string) {
	t.Helper()
	s := testenv.KCLSettings(t)
	return s.OCI, s.Git, deps.DefaultAllow + "," + s.Allow, s.Mirrors
}

// stack writes a checkout holding kcl.mod (and kcl.mod.lock when lock is
// not empty) in its folder "stack".
func stack(t *testing.T, mod, lock string) (checkout, dir string) {
	t.Helper()
	checkout = t.TempDir()
	dir = filepath.Join(checkout, "stack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kcl.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	if lock != "" {
		if err := os.WriteFile(filepath.Join(dir, "kcl.mod.lock"), []byte(lock), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return checkout, dir
}

func fixtures(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "internal", "testenv", "kclpkgs")
}

// lockFor is the kcl.mod.lock kpm writes for the quickstart, with the
// sums of the packages as written in internal/testenv/kclpkgs.
func lockFor(t *testing.T, serviceSum string) string {
	t.Helper()
	sum := func(n string) string {
		s, err := deps.HashDir(filepath.Join(fixtures(t), n))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if serviceSum == "" {
		serviceSum = sum("service")
	}
	return fmt.Sprintf(`[dependencies]
  [dependencies.kam]
    name = "kam"
    full_name = "kam_0.2.0"
    version = "0.2.0"
    sum = %q
    url = "https://github.com/KusionStack/kam.git"
    git_tag = "0.2.0"
  [dependencies.network]
    name = "network"
    full_name = "network_0.2.0"
    version = "0.2.0"
    sum = %q
    reg = "ghcr.io"
    repo = "kusionstack/network"
    oci_tag = "0.2.0"
  [dependencies.service]
    name = "service"
    full_name = "service_0.1.0"
    version = "0.1.0"
    sum = %q
    reg = "ghcr.io"
    repo = "kusionstack/service"
    oci_tag = "0.1.0"
`, sum("kam"), sum("network"), serviceSum)
}

func TestResolveQuickstartFetchesOnce(t *testing.T) {
	ociProxy, gitProxy, allow, mirrors := sources(t)
	checkout, dir := stack(t, testenv.KCLQuickstartMod, lockFor(t, ""))
	cache := t.TempDir()
	ctx := context.Background()
	r, err := deps.New(deps.Options{CacheDir: cache, Allow: allow, Mirrors: mirrors})
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := r.Resolve(ctx, dir, checkout)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"kam":     "v1/app_configuration/app_configuration.k",
		"network": "network.k",
		"service": "container/probe/probe.k",
	}
	if len(pkgs) != len(want) {
		t.Fatalf("packages: %+v", pkgs)
	}
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(p.Dir, want[p.Name])); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
		if !strings.HasPrefix(p.Dir, filepath.Join(cache, "pkg", "sha256-")) {
			t.Errorf("%s is in %s, not in the cache's content-addressed folders", p.Name, p.Dir)
		}
		if p.Resolved == "" {
			t.Errorf("%s: no commit or digest recorded", p.Name)
		}
	}
	oci, git := ociProxy.Requests(), gitProxy.Requests()
	if oci == 0 || git == 0 {
		t.Fatalf("requests: registry %d, git %d; the fetch did not go through the servers", oci, git)
	}

	again, err := r.Resolve(ctx, dir, checkout)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := deps.New(deps.Options{CacheDir: cache, Allow: allow, Mirrors: mirrors})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := r2.Resolve(ctx, dir, checkout)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(again) != fmt.Sprint(pkgs) || fmt.Sprint(fresh) != fmt.Sprint(pkgs) {
		t.Errorf("resolved differently:\n%+v\n%+v\n%+v", pkgs, again, fresh)
	}
	if o, g := ociProxy.Requests(), gitProxy.Requests(); o != oci || g != git {
		t.Errorf("the second and third resolve made requests: registry %d -> %d, git %d -> %d", oci, o, git, g)
	}
}

func TestResolveRefusesLockMismatch(t *testing.T) {
	_, _, allow, mirrors := sources(t)
	checkout, dir := stack(t, testenv.KCLQuickstartMod, lockFor(t, "bm90IHRoZSBzdW0gb2YgdGhlIHNlcnZpY2UgcGFja2FnZQ=="))
	r, err := deps.New(deps.Options{CacheDir: t.TempDir(), Allow: allow, Mirrors: mirrors})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Resolve(context.Background(), dir, checkout)
	if err == nil || !strings.Contains(err.Error(), `dependency "service"`) || !strings.Contains(err.Error(), "kcl.mod.lock") {
		t.Fatalf("error %v, want the service's checksum refused", err)
	}
}

func TestResolveLimits(t *testing.T) {
	_, _, allow, mirrors := sources(t)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(hang.Close)
	hangHost := strings.TrimPrefix(hang.URL, "http://")
	tests := []struct {
		name  string
		mod   string
		lim   deps.Limits
		limit string
	}{
		{"files", `service = { oci = "oci://ghcr.io/kusionstack/service", tag = "0.1.0" }`, deps.Limits{MaxFiles: 3}, deps.LimitFiles},
		{"file size", `service = { oci = "oci://ghcr.io/kusionstack/service", tag = "0.1.0" }`, deps.Limits{MaxFileBytes: 100}, deps.LimitFileBytes},
		{"total (git)", `kam = { git = "https://github.com/KusionStack/kam.git", tag = "0.2.0" }`, deps.Limits{MaxBytes: 300}, deps.LimitBytes},
		{"total (oci layer)", `mysql = { oci = "oci://ghcr.io/kusionstack/mysql", tag = "0.2.0" }`, deps.Limits{MaxBytes: 300}, deps.LimitBytes},
		{"time", `slow = { oci = "oci://ghcr.io/kusionstack/slow", tag = "1.0.0" }`, deps.Limits{FetchTimeout: 500 * time.Millisecond}, deps.LimitTime},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkout, dir := stack(t, "[dependencies]\n"+tt.mod+"\n", "")
			r, err := deps.New(deps.Options{CacheDir: t.TempDir(), Allow: allow + "," + hangHost, Mirrors: "ghcr.io/kusionstack/slow=" + hangHost + "/kusionstack/slow," + mirrors, Limits: tt.lim})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Resolve(context.Background(), dir, checkout)
			var le *deps.LimitError
			if !errors.As(err, &le) || le.Limit != tt.limit {
				t.Fatalf("error %v, want the %s limit", err, tt.limit)
			}
			name, _, _ := strings.Cut(tt.mod, " ")
			if !strings.Contains(err.Error(), `dependency "`+name+`"`) || !strings.Contains(err.Error(), tt.limit) {
				t.Errorf("error %q names neither the dependency nor the limit", err)
			}
		})
	}
}

// listener is a port that counts the connections made to it.
func listener(t *testing.T) (port int, accepted *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	accepted = &atomic.Int64{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port, accepted
}

// The refusals happen before any connection: the listener sees none.
func TestResolveRefusesBeforeConnecting(t *testing.T) {
	port, accepted := listener(t)
	toLoopback := func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	tests := []struct {
		name, mod, allow, mirrors string
		want                      []string
	}{
		{"oci host outside the allowlist", fmt.Sprintf(`x = { oci = "oci://127.0.0.1:%d/kusionstack/x", tag = "1.0.0" }`, port), "", "",
			[]string{`dependency "x"`, fmt.Sprintf("oci://127.0.0.1:%d/kusionstack/x:1.0.0", port), deps.AllowSetting}},
		{"git host outside the allowlist", fmt.Sprintf(`x = { git = "http://127.0.0.1:%d/KusionStack/x.git", tag = "1.0.0" }`, port), "", "",
			[]string{`dependency "x"`, "KusionStack/x.git", deps.AllowSetting}},
		{"ssh git", `x = { git = "ssh://git@github.com/KusionStack/kam.git", tag = "0.2.0" }`, "", "",
			[]string{`dependency "x"`, "only https://"}},
		{"mirror target outside the allowlist", `service = { oci = "oci://ghcr.io/kusionstack/service", tag = "0.1.0" }`, "",
			fmt.Sprintf("ghcr.io/kusionstack=127.0.0.1:%d/kusionstack", port),
			[]string{`dependency "service"`, fmt.Sprintf("127.0.0.1:%d/kusionstack/service", port), deps.AllowSetting}},
		{"allowed name resolving to loopback (oci)", `x = { oci = "oci://pkgs.example.test:` + fmt.Sprint(port) + `/a/x", tag = "1.0.0" }`,
			"pkgs.example.test:" + fmt.Sprint(port), "", []string{`dependency "x"`, "127.0.0.1", "loopback"}},
		{"allowed name resolving to loopback (git)", `x = { git = "https://pkgs.example.test:` + fmt.Sprint(port) + `/a/x.git", tag = "1.0.0" }`,
			"pkgs.example.test:" + fmt.Sprint(port), "", []string{`dependency "x"`, "127.0.0.1", "loopback"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkout, dir := stack(t, "[dependencies]\n"+tt.mod+"\n", "")
			r, err := deps.New(deps.Options{CacheDir: t.TempDir(), Allow: tt.allow, Mirrors: tt.mirrors, Lookup: toLoopback})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Resolve(context.Background(), dir, checkout)
			if err == nil {
				t.Fatal("resolved")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			time.Sleep(50 * time.Millisecond)
			if n := accepted.Load(); n != 0 {
				t.Errorf("%d connections were made", n)
			}
		})
	}
}

func TestResolvePathDependencies(t *testing.T) {
	checkout := t.TempDir()
	outside := t.TempDir()
	for _, d := range []string{"stack", "lib/shared", "lib/shared/nested"} {
		if err := os.MkdirAll(filepath.Join(checkout, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(checkout, "lib/shared/kcl.mod"), []byte("[package]\nname = \"shared\"\n[dependencies]\nnested = { path = \"nested\" }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(checkout, "lib", "out")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dep string
		want      string // "" for success
	}{
		{"inside, with its own path dependency", `shared = { path = "../lib/shared" }`, ""},
		{"dot-dot out of the checkout", `x = { path = "../../../.." }`, "inside"},
		{"absolute", `x = { path = "` + outside + `" }`, "absolute"},
		{"link out of the checkout", `x = { path = "../lib/out" }`, "inside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(checkout, "stack")
			if err := os.WriteFile(filepath.Join(dir, "kcl.mod"), []byte("[dependencies]\n"+tt.dep+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := deps.New(deps.Options{CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			pkgs, err := r.Resolve(context.Background(), dir, checkout)
			if tt.want == "" {
				if err != nil || len(pkgs) != 2 || pkgs[0].Name != "nested" || pkgs[1].Name != "shared" {
					t.Fatalf("%+v, %v", pkgs, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `dependency "x"`) {
				t.Errorf("error %v, want one naming the dependency and %q", err, tt.want)
			}
		})
	}
}

// TestResolveGitReferences: a git dependency by tag, by commit id, by
// branch and by none (the default branch) is fetched over smart HTTP from
// the local git server and gives the same commit and files; a commit the
// repository does not hold is refused, naming it.
func TestResolveGitReferences(t *testing.T) {
	_, _, allow, mirrors := sources(t)
	const commit = "6554762a1064c7a4e3e1613ef9f799af0e53635e"
	for _, tc := range []struct{ name, dep, wantErr string }{
		{"tag", `tag = "0.2.0"`, ""},
		{"commit", `commit = "` + commit + `"`, ""},
		{"branch", `branch = "main"`, ""},
		{"default branch", ``, ""},
		{"missing commit", `commit = "1111111111111111111111111111111111111111"`, "1111111111111111111111111111111111111111"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := ""
			if tc.dep != "" {
				ref = ", " + tc.dep
			}
			checkout, dir := stack(t, "[package]\nname = \"s\"\n\n[dependencies]\nkam = { git = \"https://github.com/KusionStack/kam.git\""+ref+" }\n", "")
			r, err := deps.New(deps.Options{CacheDir: t.TempDir(), Allow: allow, Mirrors: mirrors})
			if err != nil {
				t.Fatal(err)
			}
			pkgs, err := r.Resolve(context.Background(), dir, checkout)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `dependency "kam"`) {
					t.Fatalf("error = %v, want it to name kam and %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(pkgs) != 1 || pkgs[0].Resolved != commit {
				t.Fatalf("packages %+v, want kam at %s", pkgs, commit)
			}
			if _, err := os.Stat(filepath.Join(pkgs[0].Dir, "v1/app_configuration/app_configuration.k")); err != nil {
				t.Error(err)
			}
		})
	}
}
