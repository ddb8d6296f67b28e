package backend

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kusionpr/kusionpr/internal/storeserver"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

type backendKind struct {
	name string
	url  func(t *testing.T) string
	// reopen says whether opening the URL again reaches the same objects
	// (a folder or a bucket does; every mem:// is a new bucket).
	reopen bool
}

// localBackends need no server of the test environment.
var localBackends = []backendKind{
	{"mem", func(t *testing.T) string { return "mem://" }, false},
	{"http", httpStore, true},
	{"file", func(t *testing.T) string { return fileURL(t.TempDir()) }, true},
	{"file+prefix", func(t *testing.T) string { return fileURL(t.TempDir()) + "?prefix=/kusion/state/" }, true},
	{"mem+prefix", func(t *testing.T) string { return "mem://?prefix=kusion" }, false},
}

// allBackends is the conformance matrix: the local kinds and every object
// store of the test environment (S3 on MinIO, GCS on fake-gcs-server, Azure
// on azurite), each test on a fresh bucket.
func allBackends(t *testing.T) []backendKind {
	out := append([]backendKind(nil), localBackends...)
	for _, os := range testenv.ObjectStores(t) {
		os := os
		out = append(out, backendKind{os.Name, func(t *testing.T) string { return os.NewBucket(t) }, true})
		out = append(out, backendKind{os.Name + "+prefix", func(t *testing.T) string {
			u := os.NewBucket(t)
			if strings.Contains(u, "?") {
				return u + "&prefix=kusion/state"
			}
			return u + "?prefix=kusion/state"
		}, true})
	}
	return out
}

func fileURL(dir string) string { return "file://" + filepath.ToSlash(dir) }

// removeObject deletes key from the store behind s, as a lost index would
// be; a store without deletes (the HTTP protocol has none) skips.
func removeObject(t *testing.T, s *Store, key string) {
	t.Helper()
	var err error
	switch o := s.obj.(type) {
	case pgObjects:
		_, err = o.pool.Exec(context.Background(), `DELETE FROM kusionpr_objects WHERE key = $1`, key)
	case httpObjects:
		// The protocol deletes nothing: the index is lost at the service.
		httpServersMu.Lock()
		defer httpServersMu.Unlock()
		httpServers[o.base.Scheme+"://"+o.base.Host].Delete(strings.TrimPrefix(o.url(key), o.base.Scheme+"://"+o.base.Host+"/"))
	default:
		err = s.bucket.Delete(context.Background(), key)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// httpStore starts a server of the HTTP store protocol for the test and
// returns its URL, under a path as a team's service would be.
func httpStore(t *testing.T) string {
	store := &storeserver.Server{}
	srv := httptest.NewServer(store)
	t.Cleanup(srv.Close)
	httpServersMu.Lock()
	httpServers[srv.URL] = store
	httpServersMu.Unlock()
	return srv.URL + "/stores/kusion"
}

// httpServers are the test servers by URL, for a snapshot of all they hold.
var (
	httpServersMu sync.Mutex
	httpServers   = map[string]*storeserver.Server{}
)

func openURL(t *testing.T, u string) *Store {
	t.Helper()
	s, err := Open(context.Background(), u)
	if err != nil {
		t.Fatalf("Open(%q): %v", u, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func release(project, workspace string, phase model.Phase, user string) *model.Release {
	return &model.Release{
		Project:   project,
		Workspace: workspace,
		Stack:     "dev",
		Spec: &model.Spec{Resources: model.Resources{{
			ID:         "v1:Namespace:demo",
			Type:       model.Kubernetes,
			Attributes: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "demo"}},
		}}},
		State:  &model.State{Resources: model.Resources{}},
		Phase:  phase,
		Origin: &model.Origin{User: user, Host: "host1", Command: "apply"},
	}
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, b := range allBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := openURL(t, b.url(t))
			if r, err := s.Latest(ctx, "p", "w"); r != nil || err != nil {
				t.Fatalf("Latest on empty = %v, %v; want nil, nil", r, err)
			}
			if revs, err := s.Revisions(ctx, "p", "w"); len(revs) != 0 || err != nil {
				t.Fatalf("Revisions on empty = %v, %v", revs, err)
			}
			if _, err := s.Get(ctx, "p", "w", 1); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "read release p/w/1") {
				t.Fatalf("Get missing: %v", err)
			}

			for rev := uint64(1); rev <= 3; rev++ {
				r := release("p", "w", model.PhaseApplying, "alice")
				r.Revision = rev
				if err := s.Create(ctx, r); err != nil {
					t.Fatalf("Create %d: %v", rev, err)
				}
				r.Phase = model.PhaseSucceeded
				r.State.Resources = r.Spec.Resources.DeepCopy()
				if err := s.Update(ctx, r); err != nil {
					t.Fatalf("Update %d: %v", rev, err)
				}
				got, err := s.Get(ctx, "p", "w", rev)
				if err != nil {
					t.Fatalf("Get %d: %v", rev, err)
				}
				if !reflect.DeepEqual(got, r) {
					t.Fatalf("Get %d:\n got %+v\nwant %+v", rev, got, r)
				}
			}
			latest, err := s.Latest(ctx, "p", "w")
			if err != nil || latest == nil || latest.Revision != 3 || latest.Phase != model.PhaseSucceeded {
				t.Fatalf("Latest = %+v, %v", latest, err)
			}
			if len(latest.State.Resources) != 1 || latest.Origin.User != "alice" {
				t.Fatalf("Latest lost fields: %+v", latest)
			}
			revs, err := s.Revisions(ctx, "p", "w")
			if err != nil || !reflect.DeepEqual(revs, []uint64{1, 2, 3}) {
				t.Fatalf("Revisions = %v, %v", revs, err)
			}
			ix, found, err := s.readIndex(ctx, "p", "w")
			if err != nil || !found || ix.LatestRevision != 3 || len(ix.Releases) != 3 || ix.Releases[2].Phase != model.PhaseSucceeded {
				t.Fatalf("index = %+v (found %v), %v", ix, found, err)
			}

			// Create refuses a taken slot and leaves it untouched.
			dup := release("p", "w", model.PhaseApplying, "mallory")
			dup.Revision = 2
			if err := s.Create(ctx, dup); !errors.Is(err, ErrRevisionTaken) {
				t.Fatalf("Create on taken slot: %v", err)
			}
			if got, _ := s.Get(ctx, "p", "w", 2); got.Origin.User != "alice" {
				t.Fatalf("taken slot was overwritten by %q", got.Origin.User)
			}
			// Update refuses a revision that does not exist.
			ghost := release("p", "w", model.PhaseSucceeded, "bob")
			ghost.Revision = 9
			if err := s.Update(ctx, ghost); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Update of missing revision: %v", err)
			}
			if ok, _ := s.obj.exists(ctx, s.releaseKey("p", "w", 9)); ok {
				t.Fatal("Update created a slot")
			}
			// Other workspaces are separate.
			if r, err := s.Latest(ctx, "p", "other"); r != nil || err != nil {
				t.Fatalf("Latest of other workspace = %v, %v", r, err)
			}
		})
	}
}

func TestNamesAreValidated(t *testing.T) {
	ctx := context.Background()
	s := openURL(t, "mem://")
	for _, tc := range []struct{ project, workspace string }{
		{"", "w"}, {"p", ""}, {"..", "w"}, {"p", "."}, {"a/b", "w"}, {`a\b`, "w"}, {"p", "w.."}, {"p\n", "w"},
	} {
		if _, err := s.Latest(ctx, tc.project, tc.workspace); err == nil {
			t.Errorf("Latest(%q, %q) accepted", tc.project, tc.workspace)
		}
		r := release(tc.project, tc.workspace, model.PhaseApplying, "a")
		r.Revision = 1
		if err := s.Create(ctx, r); err == nil {
			t.Errorf("Create(%q, %q) accepted", tc.project, tc.workspace)
		}
	}
	r := release("p", "w", model.PhaseApplying, "a")
	if err := s.Create(ctx, r); err == nil {
		t.Error("Create with revision 0 accepted")
	}
}

// copyTree copies a fixture folder so tests may let the store repair it.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestReadKusionFolder(t *testing.T) {
	ctx := context.Background()
	dir := copyTree(t, "testdata/kusion")
	s := openURL(t, fileURL(dir))

	latest, err := s.Latest(ctx, "demo", "dev")
	if err != nil || latest == nil {
		t.Fatalf("Latest = %v, %v", latest, err)
	}
	want := time.Date(2024, 5, 10, 16, 43, 0, 0, time.FixedZone("", 8*3600))
	if latest.Revision != 3 || latest.Project != "demo" || latest.Workspace != "dev" || latest.Stack != "dev" ||
		latest.Phase != model.PhaseSucceeded || !latest.CreateTime.Equal(want) ||
		!latest.ModifiedTime.Equal(want.Add(30*time.Second)) {
		t.Fatalf("Latest = %+v", latest)
	}
	if len(latest.Spec.Resources) != 2 || latest.Spec.Resources[0].ID != "apps/v1:Deployment:demo:demo-dev-web" ||
		!reflect.DeepEqual(latest.Spec.Resources[0].DependsOn, []string{"v1:Namespace:demo"}) ||
		latest.Spec.Resources[0].Extensions["GVK"] != "apps/v1, Kind=Deployment" {
		t.Fatalf("spec = %+v", latest.Spec)
	}
	spec, _ := latest.Spec.Resources[0].Attributes["spec"].(map[string]any)
	if n, ok := spec["replicas"].(float64); !ok || n != 3 {
		t.Fatalf("attributes.spec = %#v", spec)
	}
	if len(latest.State.Resources) != 1 || latest.State.Resources[0].Type != model.Kubernetes {
		t.Fatalf("state = %+v", latest.State)
	}
	second, err := s.Get(ctx, "demo", "dev", 2)
	if err != nil || second.Phase != model.PhaseFailed {
		t.Fatalf("Get 2 = %+v, %v", second, err)
	}
	revs, err := s.Revisions(ctx, "demo", "dev")
	if err != nil || !reflect.DeepEqual(revs, []uint64{1, 2, 3}) {
		t.Fatalf("Revisions = %v, %v", revs, err)
	}

	// A Begin on Kusion's folder continues its numbering and leaves an index
	// Kusion reads: same keys, entries in order.
	r := release("demo", "dev", model.PhaseApplying, "alice")
	prior, err := s.Begin(ctx, r)
	if err != nil || prior.Revision != 3 || r.Revision != 4 {
		t.Fatalf("Begin = %v, %v (revision %d)", prior, err, r.Revision)
	}
	data, err := os.ReadFile(filepath.Join(dir, "releases/demo/dev/.metadata.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var kix kusionIndex
	if err := yaml.Unmarshal(data, &kix); err != nil {
		t.Fatal(err)
	}
	if kix.LatestRevision != 4 || len(kix.ReleaseMetaDatas) != 4 || kix.ReleaseMetaDatas[3].Revision != 4 ||
		kix.ReleaseMetaDatas[3].Stack != "dev" || kix.ReleaseMetaDatas[3].Phase != "applying" {
		t.Fatalf("index after Begin:\n%s", data)
	}
	if kix.ReleaseMetaDatas[0].Stack != "dev" || kix.ReleaseMetaDatas[0].Revision != 1 {
		t.Fatalf("index lost Kusion's entries:\n%s", data)
	}
}

// kusionIndex and kusionRelease mirror Kusion v0.15's types as its storage
// decodes them (gopkg.in/yaml.v3; entry fields without tags).
type kusionIndex struct {
	LatestRevision   uint64 `yaml:"latestRevision,omitempty"`
	ReleaseMetaDatas []*struct {
		Revision uint64
		Stack    string
		Phase    string
	} `yaml:"releaseMetaDatas,omitempty"`
}

type kusionRelease struct {
	Project      string                                `yaml:"project"`
	Workspace    string                                `yaml:"workspace"`
	Revision     uint64                                `yaml:"revision"`
	Stack        string                                `yaml:"stack"`
	Spec         *struct{ Resources []map[string]any } `yaml:"spec"`
	State        *struct{ Resources []map[string]any } `yaml:"state"`
	Phase        string                                `yaml:"phase"`
	CreateTime   time.Time                             `yaml:"createTime"`
	ModifiedTime time.Time                             `yaml:"modifiedTime"`
}

func TestKusionReadsOurFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openURL(t, fileURL(dir))
	r := release("p", "w", model.PhaseApplying, "alice")
	r.CreateTime = time.Date(2026, 11, 22, 3, 4, 5, 600, time.UTC)
	if _, err := s.Begin(ctx, r); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "releases/p/w/1.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kr kusionRelease
	if err := yaml.Unmarshal(data, &kr); err != nil {
		t.Fatalf("yaml.v3 cannot read our release: %v\n%s", err, data)
	}
	if kr.Project != "p" || kr.Revision != 1 || kr.Phase != "applying" || !kr.CreateTime.Equal(r.CreateTime) ||
		len(kr.Spec.Resources) != 1 || kr.Spec.Resources[0]["id"] != "v1:Namespace:demo" || kr.State == nil {
		t.Fatalf("Kusion's view of our release: %+v\n%s", kr, data)
	}
	data, err = os.ReadFile(filepath.Join(dir, "releases/p/w/.metadata.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var kix kusionIndex
	if err := yaml.Unmarshal(data, &kix); err != nil || kix.LatestRevision != 1 || len(kix.ReleaseMetaDatas) != 1 ||
		kix.ReleaseMetaDatas[0].Phase != "applying" {
		t.Fatalf("Kusion's view of our index: %+v, %v\n%s", kix, err, data)
	}
}

func TestFileLayoutStaysClean(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "not", "yet", "there")
	s := openURL(t, fileURL(dir))
	for i := 0; i < 2; i++ {
		r := release("p", "w", model.PhaseApplying, "alice")
		if _, err := s.Begin(ctx, r); err != nil {
			t.Fatal(err)
		}
		r.Phase = model.PhaseSucceeded
		if err := s.Update(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	var files []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(files)
	want := []string{"releases/p/w/.metadata.yml", "releases/p/w/1.yaml", "releases/p/w/2.yaml"}
	if !reflect.DeepEqual(files, want) {
		t.Fatalf("files = %v, want %v (no .attrs or temporary files)", files, want)
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		url, prefix string
		ok          bool
	}{
		{"mem://", "", true},
		{"mem://?prefix=a/b", "a/b/", true},
		{"mem://?prefix=/a/", "a/", true},
		{"mem://?prefix=a/../b", "", false},
		{fileURL(t.TempDir()) + "/new?prefix=x", "x/", true},
		{fileURL(t.TempDir()) + "?metadata=bogus", "", false},
		{"nosuch://bucket", "", false},
	} {
		s, err := Open(ctx, tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("Open(%q) error = %v, want ok %v", tc.url, err, tc.ok)
			continue
		}
		if err == nil {
			if s.prefix != tc.prefix {
				t.Errorf("Open(%q) prefix = %q, want %q", tc.url, s.prefix, tc.prefix)
			}
			s.Close()
		}
	}

	home := t.TempDir()
	t.Setenv("KUSION_HOME", home)
	if got, want := DefaultURL(), fileURL(home); got != want {
		t.Errorf("DefaultURL() = %q, want %q", got, want)
	}
	s := openURL(t, DefaultURL())
	r := release("p", "w", model.PhaseApplying, "a")
	if _, err := s.Begin(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "releases/p/w/1.yaml")); err != nil {
		t.Fatal(err)
	}
	// Without KUSION_HOME, Kusion's folder is in the user's home as the
	// password database gives it, as the Kusion CLI finds it, whatever
	// $HOME says: both read the same config.yaml and default folder.
	t.Setenv("KUSION_HOME", "")
	t.Setenv("HOME", "/home/someone")
	want := "/home/someone/.kusion"
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		want = filepath.Join(u.HomeDir, ".kusion")
	}
	if got := DefaultURL(); got != fileURL(want) {
		t.Errorf("DefaultURL() without KUSION_HOME = %q, want %q", got, fileURL(want))
	}
	if got := KusionConfigFile(); got != filepath.Join(want, "config.yaml") {
		t.Errorf("KusionConfigFile() without KUSION_HOME = %q, want %q", got, filepath.Join(want, "config.yaml"))
	}
}

func TestDecodeErrorNamesKey(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ name, body string }{
		{"not yaml", "project: [unclosed\n"},
		{"wrong type", "revision: many\n"},
		{"empty", "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openURL(t, "mem://?prefix=pre")
			key := s.releaseKey("p", "w", 1)
			if err := s.obj.write(ctx, key, []byte(tc.body), true); err != nil {
				t.Fatal(err)
			}
			_, err := s.Get(ctx, "p", "w", 1)
			if err == nil || !strings.Contains(err.Error(), "decode release pre/releases/p/w/1.yaml") {
				t.Fatalf("Get = %v; want an error naming the key", err)
			}
			if _, err := s.Latest(ctx, "p", "w"); err == nil || !strings.Contains(err.Error(), key) {
				t.Fatalf("Latest = %v; want an error naming the key", err)
			}
		})
	}
}

func TestIndexLag(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		index string // "" deletes it
	}{
		{"missing index", ""},
		{"stale index", "latestRevision: 1\nreleaseMetaDatas:\n    - revision: 1\n      stack: dev\n"},
		{"index ahead", "latestRevision: 5\nreleaseMetaDatas:\n    - revision: 1\n      stack: dev\n    - revision: 5\n      stack: dev\n"},
		{"entry lost", "latestRevision: 3\nreleaseMetaDatas:\n    - revision: 1\n      stack: dev\n    - revision: 3\n      stack: dev\n"},
	} {
		for _, b := range allBackends(t) {
			t.Run(tc.name+"/"+b.name, func(t *testing.T) {
				s := openURL(t, b.url(t))
				for i := 1; i <= 3; i++ {
					r := release("p", "w", model.PhaseSucceeded, "a")
					r.Revision = uint64(i)
					if err := s.Create(ctx, r); err != nil {
						t.Fatal(err)
					}
				}
				key := s.indexKey("p", "w")
				if tc.index == "" {
					removeObject(t, s, key)
				} else if err := s.obj.write(ctx, key, []byte(tc.index), false); err != nil {
					t.Fatal(err)
				}
				latest, err := s.Latest(ctx, "p", "w")
				if err != nil || latest == nil || latest.Revision != 3 {
					t.Fatalf("Latest = %+v, %v; want revision 3", latest, err)
				}
				revs, err := s.Revisions(ctx, "p", "w")
				if err != nil || !reflect.DeepEqual(revs, []uint64{1, 2, 3}) {
					t.Fatalf("Revisions = %v, %v", revs, err)
				}
				// Reads leave the index as it was (TestReadsNeverWrite).
				if got, err := s.obj.read(ctx, key, 1<<20); tc.index == "" && !errors.Is(err, errObjectMissing) || tc.index != "" && string(got) != tc.index {
					t.Fatalf("index after reads: %q, %v; want it untouched", got, err)
				}
				// The next Begin takes 4, not a slot the index suggested, and
				// repairs the index.
				r := release("p", "w", model.PhaseApplying, "a")
				if _, err := s.Begin(ctx, r); err != nil || r.Revision != 4 {
					t.Fatalf("Begin = %v, revision %d", err, r.Revision)
				}
				ix, found, err := s.readIndex(ctx, "p", "w")
				if err != nil || !found || ix.LatestRevision != 4 || len(ix.Releases) != 4 || ix.Releases[1].Revision != 2 || ix.Releases[1].Phase != model.PhaseSucceeded {
					t.Fatalf("index after Begin: %+v, %v; want revisions 1 to 4", ix, err)
				}
			})
		}
	}
}

// countingObjects counts the requests a Store makes.
type countingObjects struct {
	objects
	exists, reads, writes, lists atomic.Int64
}

func (c *countingObjects) reset() {
	c.exists.Store(0)
	c.reads.Store(0)
	c.writes.Store(0)
	c.lists.Store(0)
}
func (c *countingObjects) total() int64 {
	return c.exists.Load() + c.reads.Load() + c.writes.Load() + c.lists.Load()
}

func TestLatestUsesConstantRequests(t *testing.T) {
	ctx := context.Background()
	counts := map[int]int64{}
	for _, n := range []int{10, 200} {
		base := openURL(t, "mem://")
		c := &countingObjects{objects: base.obj}
		s := newStore(countingWrap{c}, "")
		// Seed the releases and the index directly: n Creates would re-encode
		// a growing index n times, which is slow under -race.
		ix := &index{}
		for i := 1; i <= n; i++ {
			r := release("p", "w", model.PhaseSucceeded, "a")
			r.Revision = uint64(i)
			data, err := encodeRelease(r)
			if err != nil {
				t.Fatal(err)
			}
			if err := base.obj.write(ctx, s.releaseKey("p", "w", r.Revision), data, true); err != nil {
				t.Fatal(err)
			}
			ix.set(r)
		}
		if err := s.writeIndex(ctx, "p", "w", ix); err != nil {
			t.Fatal(err)
		}
		c.reset()
		latest, err := s.Latest(ctx, "p", "w")
		if err != nil || latest.Revision != uint64(n) {
			t.Fatalf("Latest = %+v, %v", latest, err)
		}
		counts[n] = c.total()
		t.Logf("%d releases: Latest made %d exists, %d reads, %d writes", n, c.exists.Load(), c.reads.Load(), c.writes.Load())
		if c.writes.Load() != 0 {
			t.Errorf("Latest wrote with an up-to-date index")
		}
		c.reset()
		r := release("p", "w", model.PhaseApplying, "a")
		if _, err := s.Begin(ctx, r); err != nil {
			t.Fatal(err)
		}
		t.Logf("%d releases: Begin made %d requests", n, c.total())
		if c.total() > 7 {
			t.Errorf("Begin made %d requests", c.total())
		}
	}
	if counts[10] != counts[200] || counts[10] > 3 {
		t.Fatalf("Latest requests: %v; want the same small number", counts)
	}
}

// countingWrap routes the objects methods through the counters.
type countingWrap struct{ c *countingObjects }

func (w countingWrap) exists(ctx context.Context, key string) (bool, error) {
	w.c.exists.Add(1)
	return w.c.objects.exists(ctx, key)
}
func (w countingWrap) read(ctx context.Context, key string, limit int64) ([]byte, error) {
	w.c.reads.Add(1)
	return w.c.objects.read(ctx, key, limit)
}
func (w countingWrap) list(ctx context.Context, prefix string) ([]string, error) {
	w.c.lists.Add(1)
	return w.c.objects.list(ctx, prefix)
}
func (w countingWrap) write(ctx context.Context, key string, data []byte, createOnly bool) error {
	w.c.writes.Add(1)
	return w.c.objects.write(ctx, key, data, createOnly)
}
func (w countingWrap) close() error { return w.c.objects.close() }

func TestBeginHeld(t *testing.T) {
	ctx := context.Background()
	s := openURL(t, "mem://")
	holder := release("p", "w", model.PhaseSucceeded, "alice")
	for i := 1; i <= 6; i++ {
		holder.Revision = uint64(i)
		if err := s.Create(ctx, holder); err != nil {
			t.Fatal(err)
		}
	}
	holder = release("p", "w", model.PhaseApplying, "alice")
	holder.CreateTime = time.Date(2026, 11, 22, 3, 4, 5, 0, time.UTC)
	s.Now = func() time.Time { return holder.CreateTime.Add(time.Minute) } // within the lease
	prior, err := s.Begin(ctx, holder)
	if err != nil || holder.Revision != 7 || prior == nil || prior.Revision != 6 {
		t.Fatalf("Begin = %+v, %v; revision %d", prior, err, holder.Revision)
	}

	r := release("p", "w", model.PhaseApplying, "bob")
	r.Revision = 42
	_, err = s.Begin(ctx, r)
	const want = `project "p" workspace "w" is held by revision 7 (applying), started 2026-11-22T03:04:05Z by alice@host1 (apply); wait for it to end or unlock it`
	var held *HeldError
	if !errors.As(err, &held) || err.Error() != want {
		t.Fatalf("Begin error = %v\nwant %s", err, want)
	}
	if held.Revision != 7 || held.Phase != model.PhaseApplying || held.Origin.User != "alice" || !errors.Is(err, ErrHeld) {
		t.Fatalf("HeldError = %+v", held)
	}
	if r.Revision != 42 {
		t.Fatalf("failed Begin changed r.Revision to %d", r.Revision)
	}

	// Once the holder ends, the next Begin gets 8 and the holder as prior.
	holder.Phase = model.PhaseFailed
	if err := s.Update(ctx, holder); err != nil {
		t.Fatal(err)
	}
	prior, err = s.Begin(ctx, r)
	if err != nil || r.Revision != 8 || prior.Revision != 7 || prior.Phase != model.PhaseFailed {
		t.Fatalf("Begin after end = %+v, %v; revision %d", prior, err, r.Revision)
	}

	// Begin refuses to take the stack with a phase that does not hold it.
	if _, err := s.Begin(ctx, release("p", "x", model.PhaseSucceeded, "a")); err == nil {
		t.Fatal("Begin with an ended phase succeeded")
	}
	first := release("p", "x", model.PhaseGenerating, "a")
	if prior, err := s.Begin(ctx, first); err != nil || prior != nil || first.Revision != 1 {
		t.Fatalf("first Begin = %v, %v; revision %d", prior, err, first.Revision)
	}
}

func TestHeldErrorMessage(t *testing.T) {
	at := time.Date(2026, 11, 22, 11, 4, 5, 0, time.FixedZone("", 8*3600))
	for _, tc := range []struct {
		name string
		err  HeldError
		want string
	}{
		{"full", HeldError{"p", "w", 7, model.PhaseApplying, at, &model.Origin{User: "alice", Host: "host1", Command: "apply"}},
			`project "p" workspace "w" is held by revision 7 (applying), started 2026-11-22T03:04:05Z by alice@host1 (apply); wait for it to end or unlock it`},
		{"github", HeldError{"p", "w", 2, model.PhaseDestroying, at, &model.Origin{Actor: "octocat", Command: "destroy", PullRequest: 12}},
			`project "p" workspace "w" is held by revision 2 (destroying), started 2026-11-22T03:04:05Z by octocat (destroy, PR #12); wait for it to end or unlock it`},
		{"bare", HeldError{Project: "p", Workspace: "w", Revision: 1, Phase: model.PhasePreviewing},
			`project "p" workspace "w" is held by revision 1 (previewing); wait for it to end or unlock it`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

func TestBeginContention(t *testing.T) {
	ctx := context.Background()
	for _, b := range allBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			u := b.url(t)
			s := openURL(t, u)
			// A finished history to start from.
			for i := 1; i <= 2; i++ {
				r := release("p", "w", model.PhaseSucceeded, "setup")
				r.Revision = uint64(i)
				if err := s.Create(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			for round := 0; round < 5; round++ {
				latest, err := s.Latest(ctx, "p", "w")
				if err != nil {
					t.Fatal(err)
				}
				const n = 20
				var (
					wg      sync.WaitGroup
					start   = make(chan struct{})
					mu      sync.Mutex
					winners []*model.Release
					helds   []*HeldError
					others  []error
				)
				for i := 0; i < n; i++ {
					// On a folder each contender has its own Store, as
					// separate runners would.
					cs := s
					if b.reopen {
						cs = openURL(t, u)
					}
					wg.Add(1)
					go func(i int) {
						defer wg.Done()
						r := release("p", "w", model.PhaseApplying, fmt.Sprintf("user%d", i))
						<-start
						prior, err := cs.Begin(ctx, r)
						mu.Lock()
						defer mu.Unlock()
						var held *HeldError
						switch {
						case err == nil:
							if prior == nil || prior.Revision != latest.Revision {
								others = append(others, fmt.Errorf("winner's prior = %+v", prior))
							}
							winners = append(winners, r)
						case errors.As(err, &held):
							helds = append(helds, held)
						default:
							others = append(others, err)
						}
					}(i)
				}
				close(start)
				wg.Wait()
				if len(others) > 0 {
					t.Fatalf("round %d: unexpected errors: %v", round, others)
				}
				if len(winners) != 1 || len(helds) != n-1 {
					t.Fatalf("round %d: %d winners, %d held; want 1 and %d", round, len(winners), len(helds), n-1)
				}
				w := winners[0]
				if w.Revision != latest.Revision+1 {
					t.Fatalf("round %d: winner took %d, want %d", round, w.Revision, latest.Revision+1)
				}
				for _, h := range helds {
					if h.Revision != w.Revision || h.Origin == nil || h.Origin.User != w.Origin.User {
						t.Fatalf("round %d: HeldError names %d by %+v; winner is %d by %s", round, h.Revision, h.Origin, w.Revision, w.Origin.User)
					}
				}
				// The slot holds the winner's release, not a loser's.
				stored, err := s.Get(ctx, "p", "w", w.Revision)
				if err != nil || stored.Origin.User != w.Origin.User || stored.Phase != model.PhaseApplying {
					t.Fatalf("round %d: slot holds %+v, %v; want the winner %s", round, stored, err, w.Origin.User)
				}
				// Nothing past the winner's slot.
				if ok, _ := s.obj.exists(ctx, s.releaseKey("p", "w", w.Revision+1)); ok {
					t.Fatalf("round %d: a loser created revision %d", round, w.Revision+1)
				}
				w.Phase = model.PhaseSucceeded
				if err := s.Update(ctx, w); err != nil {
					t.Fatal(err)
				}
			}
			revs, err := s.Revisions(ctx, "p", "w")
			if err != nil || !reflect.DeepEqual(revs, []uint64{1, 2, 3, 4, 5, 6, 7}) {
				t.Fatalf("Revisions = %v, %v; want 1..7 contiguous", revs, err)
			}
			next := release("p", "w", model.PhaseApplying, "late")
			if prior, err := s.Begin(ctx, next); err != nil || next.Revision != 8 || prior.Revision != 7 {
				t.Fatalf("Begin after contention = %+v, %v; revision %d", prior, err, next.Revision)
			}
		})
	}
}

// TestBeginRetriesPastEndedWinner covers a Begin whose slot was taken by a
// release that had already ended when it looked: it moves on to the next slot.
func TestBeginRetriesPastEndedWinner(t *testing.T) {
	ctx := context.Background()
	base := openURL(t, "mem://")
	rw := &racingObjects{objects: base.obj, s: base}
	s := newStore(rw, "")
	r := release("p", "w", model.PhaseApplying, "me")
	prior, err := s.Begin(ctx, r)
	if err != nil || r.Revision != 2 || prior == nil || prior.Origin.User != "sneaky" {
		t.Fatalf("Begin = %+v, %v; revision %d", prior, err, r.Revision)
	}
}

// racingObjects slips an already-ended release into slot 1 just before the
// first create-only write, as a fast concurrent runner would.
type racingObjects struct {
	objects
	s    *Store
	done bool
}

func (o *racingObjects) write(ctx context.Context, key string, data []byte, createOnly bool) error {
	if createOnly && !o.done {
		o.done = true
		other := release("p", "w", model.PhaseSucceeded, "sneaky")
		other.Revision = 1
		if err := o.s.Create(ctx, other); err != nil {
			return err
		}
	}
	return o.objects.write(ctx, key, data, createOnly)
}

func TestCancelledWriteLeavesNothing(t *testing.T) {
	for _, b := range allBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := openURL(t, b.url(t))
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			r := release("p", "w", model.PhaseApplying, "a")
			r.Revision = 1
			if err := s.Create(ctx, r); err == nil {
				t.Fatal("Create with a cancelled context succeeded")
			}
			if err := s.obj.write(ctx, s.releaseKey("p", "w", 2), []byte("x: 1\n"), false); err == nil {
				t.Fatal("write with a cancelled context succeeded")
			}
			for _, key := range []string{s.releaseKey("p", "w", 1), s.releaseKey("p", "w", 2), s.indexKey("p", "w")} {
				if ok, err := s.obj.exists(context.Background(), key); ok || err != nil {
					t.Fatalf("%s exists = %v, %v after a cancelled write", key, ok, err)
				}
			}
		})
	}
}

// TestBeginAcrossProcesses runs Begin from separate processes on one folder,
// as several runners sharing a volume would: exactly one takes the slot.
func TestBeginAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	if u := os.Getenv("KUSIONPR_BACKEND_HELPER_URL"); u != "" {
		s, err := Open(ctx, u)
		if err != nil {
			fmt.Println("ERROR", err)
			return
		}
		<-time.After(time.Until(time.Unix(0, mustAtoi(os.Getenv("KUSIONPR_BACKEND_HELPER_AT")))))
		r := release("p", "w", model.PhaseApplying, os.Getenv("KUSIONPR_BACKEND_HELPER_USER"))
		_, err = s.Begin(ctx, r)
		var held *HeldError
		switch {
		case err == nil:
			fmt.Println("WON", r.Revision)
		case errors.As(err, &held):
			fmt.Println("HELD", held.Revision, held.Origin.User)
		default:
			fmt.Println("ERROR", err)
		}
		return
	}
	// Not about the test environment: -short asks for quick tests only, and
	// make test never passes it (a skip there fails the run).
	if testing.Short() {
		t.Skip("spawns processes")
	}
	u := fileURL(t.TempDir())
	s := openURL(t, u)
	r := release("p", "w", model.PhaseSucceeded, "setup")
	r.Revision = 1
	if err := s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	const n = 8
	at := time.Now().Add(time.Second).UnixNano()
	outs := make([]string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestBeginAcrossProcesses$")
			cmd.Env = append(os.Environ(),
				"KUSIONPR_BACKEND_HELPER_URL="+u,
				fmt.Sprintf("KUSIONPR_BACKEND_HELPER_AT=%d", at),
				fmt.Sprintf("KUSIONPR_BACKEND_HELPER_USER=proc%d", i))
			out, err := cmd.CombinedOutput()
			if err != nil {
				outs[i] = "ERROR " + err.Error() + ": " + string(out)
				return
			}
			outs[i] = strings.SplitN(string(out), "\n", 2)[0]
		}(i)
	}
	wg.Wait()
	stored, err := s.Get(ctx, "p", "w", 2)
	if err != nil {
		t.Fatal(err)
	}
	won := 0
	for _, o := range outs {
		switch {
		case o == "WON 2":
			won++
		case o == "HELD 2 "+stored.Origin.User:
		default:
			t.Errorf("process said %q (slot 2 holds %s's release)", o, stored.Origin.User)
		}
	}
	if won != 1 {
		t.Fatalf("%d processes won slot 2: %v", won, outs)
	}
}

func mustAtoi(s string) int64 {
	var n int64
	fmt.Sscan(s, &n)
	return n
}

func TestBeginIf(t *testing.T) {
	ctx := context.Background()
	s := openURL(t, "mem://")
	first := release("p", "w", model.PhaseSucceeded, "alice")
	first.Revision = 1
	if err := s.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	// Many runners, each refusing to follow a release newer than the one it
	// read first: exactly one of them may begin, whatever the interleaving.
	errOutdated := errors.New("outdated")
	var wg sync.WaitGroup
	var mu sync.Mutex
	began := 0
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := release("p", "w", model.PhaseApplying, "bob")
			_, err := s.BeginIf(ctx, r, func(latest *model.Release) error {
				if latest.Revision != 1 {
					return errOutdated
				}
				return nil
			})
			switch {
			case err == nil:
				mu.Lock()
				began++
				mu.Unlock()
			case errors.Is(err, errOutdated), errors.Is(err, ErrHeld):
			default:
				t.Errorf("BeginIf: %v", err)
			}
		}()
	}
	wg.Wait()
	revs, err := s.Revisions(ctx, "p", "w")
	if err != nil {
		t.Fatal(err)
	}
	if began != 1 || len(revs) != 2 {
		t.Errorf("%d runners began, revisions %v; want one, [1 2]", began, revs)
	}
}
