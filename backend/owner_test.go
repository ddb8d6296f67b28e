package backend

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/kusionpr/kusionpr/model"
)

var (
	repoA        = &model.Repository{ID: 1296269, FullName: "octo-org/infra"}
	repoB        = &model.Repository{ID: 7777777, FullName: "octo-org/other"}
	repoARenamed = &model.Repository{ID: 1296269, FullName: "octo-org/platform"}
)

// snapshot reads every object of the store: key to content.
func snapshot(t *testing.T, s *Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	switch o := s.obj.(type) {
	case pgObjects:
		rows, err := o.pool.Query(ctx, `SELECT key, data FROM kusionpr_objects`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			var d []byte
			if err := rows.Scan(&k, &d); err != nil {
				t.Fatal(err)
			}
			out[k] = string(d)
		}
		return out
	case httpObjects:
		httpServersMu.Lock()
		defer httpServersMu.Unlock()
		return httpServers[o.base.Scheme+"://"+o.base.Host].Snapshot()
	}
	b := s.bucket
	it := b.List(nil)
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := b.ReadAll(ctx, obj.Key)
		if err != nil {
			t.Fatal(err)
		}
		out[obj.Key] = string(data)
	}
}

// applyAs runs a whole release (begin, then succeed) as repository run.
func applyAs(s *Store, run *model.Repository, project string) (*model.Release, error) {
	r := release(project, "w", model.PhaseApplying, "someone")
	if _, err := (Owned{Store: s, Run: run}).Begin(context.Background(), r); err != nil {
		return nil, err
	}
	r.Phase = model.PhaseSucceeded
	return r, s.Update(context.Background(), r)
}

func TestAnotherRepositoryIsRefused(t *testing.T) {
	ctx := context.Background()
	for _, b := range allBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := openURL(t, b.url(t))
			first, err := applyAs(s, repoA, "p")
			if err != nil {
				t.Fatal(err)
			}
			if o := first.Origin; o.Repository == nil || *o.Repository != *repoA || o.Adopted {
				t.Fatalf("the first release records %+v, adopted %v; want %v, not adopted", o.Repository, o.Adopted, repoA)
			}
			stored, _ := s.Get(ctx, "p", "w", 1)
			if !reflect.DeepEqual(stored.Origin.Repository, repoA) {
				t.Fatalf("stored release names %v, want %v", stored.Origin.Repository, repoA)
			}
			before := snapshot(t, s)

			b := Owned{Store: s, Run: repoB}
			checks := map[string]error{}
			latest, err := b.Latest(ctx, "p", "w")
			if latest != nil {
				t.Errorf("Latest gave repository B repository A's release %d", latest.Revision)
			}
			checks["Latest"] = err
			_, checks["Begin"] = b.Begin(ctx, release("p", "w", model.PhaseApplying, "mallory"))
			_, checks["BeginIf"] = b.BeginIf(ctx, release("p", "w", model.PhaseDestroying, "mallory"), func(*model.Release) error {
				t.Error("the caller's condition was asked about repository A's release")
				return nil
			})
			_, checks["Unlock"] = b.Unlock(ctx, "p", "w", "mallory", "mine now")
			_, _, checks["RequestCancel"] = b.RequestCancel(ctx, "p", "w", "mallory", "stop theirs")
			for op, err := range checks {
				var oe *OwnerError
				if !errors.As(err, &oe) || !errors.Is(err, ErrNotOwner) {
					t.Errorf("%s by repository B: %v, want an OwnerError", op, err)
					continue
				}
				for _, want := range []string{`project "p" workspace "w"`, `"octo-org/infra" (id 1296269)`, `"octo-org/other" (id 7777777)`} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%s: %q does not name %s", op, err, want)
					}
				}
			}
			if after := snapshot(t, s); !reflect.DeepEqual(before, after) {
				t.Errorf("repository B's refused runs changed the store:\nbefore %v\nafter  %v", keys(before), keys(after))
			}

			// Renamed, repository A keeps its project and records its new name.
			second, err := applyAs(s, repoARenamed, "p")
			if err != nil {
				t.Fatalf("repository A, renamed: %v", err)
			}
			if second.Revision != 2 || !reflect.DeepEqual(second.Origin.Repository, repoARenamed) {
				t.Errorf("release %d of the renamed repository records %v", second.Revision, second.Origin.Repository)
			}
			// The operator (no repository) may run on it, and keeps it A's.
			third, err := applyAs(s, nil, "p")
			if err != nil {
				t.Fatalf("the operator: %v", err)
			}
			if !reflect.DeepEqual(third.Origin.Repository, repoARenamed) || third.Origin.Adopted {
				t.Errorf("the operator's release records %v (adopted %v), want the owner kept", third.Origin.Repository, third.Origin.Adopted)
			}
			if _, err := b.Latest(ctx, "p", "w"); !errors.Is(err, ErrNotOwner) {
				t.Errorf("after the operator's release repository B reads: %v", err)
			}
			// Another project is B's to take.
			if _, err := applyAs(s, repoB, "q"); err != nil {
				t.Errorf("repository B on a project of its own: %v", err)
			}
		})
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestKusionReleasesAreAdoptedOnce(t *testing.T) {
	ctx := context.Background()
	dir := copyTree(t, "testdata/kusion")
	s := openURL(t, fileURL(dir))

	// Nobody owns releases the Kusion CLI wrote: each repository may
	// read them (a preview), and reading adopts nothing.
	for _, run := range []*model.Repository{repoB, repoA} {
		latest, err := (Owned{Store: s, Run: run}).Latest(ctx, "demo", "dev")
		if err != nil || latest == nil || latest.Revision != 3 {
			t.Fatalf("%v reads Kusion's latest release: %+v, %v", run, latest, err)
		}
	}
	r := release("demo", "dev", model.PhaseApplying, "alice")
	if _, err := (Owned{Store: s, Run: repoA}).Begin(ctx, r); err != nil {
		t.Fatal(err)
	}
	stored, err := s.Get(ctx, "demo", "dev", 4)
	if err != nil || stored.Origin == nil || !reflect.DeepEqual(stored.Origin.Repository, repoA) || !stored.Origin.Adopted {
		t.Fatalf("the adopting release: %+v, %v; want repository A, adopted", stored.Origin, err)
	}
	r.Phase = model.PhaseSucceeded
	if err := s.Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := (Owned{Store: s, Run: repoB}).Latest(ctx, "demo", "dev"); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("repository B after A adopted: %v", err)
	}
	_, err = (Owned{Store: s, Run: repoB}).Begin(ctx, release("demo", "dev", model.PhaseApplying, "mallory"))
	if !errors.Is(err, ErrNotOwner) {
		t.Fatalf("repository B begins on A's adopted project: %v", err)
	}

	// The Kusion CLI applies again (its release has no origin): the
	// project stays A's.
	cli := release("demo", "dev", model.PhaseSucceeded, "")
	cli.Origin, cli.Revision = nil, 5
	if err := s.Create(ctx, cli); err != nil {
		t.Fatal(err)
	}
	if _, err := (Owned{Store: s, Run: repoB}).Latest(ctx, "demo", "dev"); !errors.Is(err, ErrNotOwner) {
		t.Errorf("repository B after a Kusion CLI release over A's: %v", err)
	}
	next := release("demo", "dev", model.PhaseApplying, "alice")
	if _, err := (Owned{Store: s, Run: repoA}).Begin(ctx, next); err != nil {
		t.Fatalf("repository A after a Kusion CLI release: %v", err)
	}
	if next.Origin.Adopted {
		t.Errorf("repository A's own project recorded as adopted again")
	}
}

// slippingObjects creates another repository's ended release in the slot a
// create-only write is about to take, once: a second repository that
// adopted the project between this runner's read and its write.
type slippingObjects struct {
	objects
	s    *Store
	mu   sync.Mutex
	done bool
}

func (o *slippingObjects) write(ctx context.Context, key string, data []byte, createOnly bool) error {
	o.mu.Lock()
	slip := createOnly && !o.done
	o.done = o.done || createOnly
	o.mu.Unlock()
	if slip {
		if _, err := applyAs(o.s, repoA, "p"); err != nil {
			return err
		}
	}
	return o.objects.write(ctx, key, data, createOnly)
}

func TestAdoptionIsAtomicWithTheSlot(t *testing.T) {
	ctx := context.Background()
	base := openURL(t, "mem://")
	s := newStore(&slippingObjects{objects: base.obj, s: base}, "")
	// Repository B finds the project empty; as it creates revision 1,
	// repository A takes it and finishes. B must not take revision 2.
	r := release("p", "w", model.PhaseApplying, "mallory")
	_, err := (Owned{Store: s, Run: repoB}).Begin(ctx, r)
	if !errors.Is(err, ErrNotOwner) {
		t.Fatalf("Begin by repository B after A adopted the project under it: %v", err)
	}
	revs, _ := base.Revisions(ctx, "p", "w")
	if !reflect.DeepEqual(revs, []uint64{1}) {
		t.Errorf("revisions %v, want only A's [1]", revs)
	}
}

func TestConcurrentAdoptersOneWins(t *testing.T) {
	ctx := context.Background()
	s := openURL(t, "mem://")
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := map[int64]int{}
	for i := range 16 {
		run := repoA
		if i%2 == 1 {
			run = repoB
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r := release("p", "w", model.PhaseApplying, "x")
				_, err := (Owned{Store: s, Run: run}).Begin(ctx, r)
				if errors.Is(err, ErrHeld) {
					continue
				}
				if errors.Is(err, ErrNotOwner) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				r.Phase = model.PhaseSucceeded
				if err := s.Update(ctx, r); err != nil {
					t.Error(err)
				}
				mu.Lock()
				won[run.ID]++
				mu.Unlock()
				return
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("releases by repository id: %v; want one repository only", won)
	}
	revs, _ := s.Revisions(ctx, "p", "w")
	for _, rev := range revs {
		r, _ := s.Get(ctx, "p", "w", rev)
		for id := range won {
			if r.Origin.Repository.ID != id {
				t.Errorf("release %d names %v", rev, r.Origin.Repository)
			}
		}
	}
}

func TestRepositorySame(t *testing.T) {
	for _, tc := range []struct {
		a, b *model.Repository
		want bool
	}{
		{repoA, repoARenamed, true},
		{repoA, repoB, false},
		{&model.Repository{ID: 1, FullName: "o/a"}, &model.Repository{ID: 2, FullName: "o/a"}, false}, // deleted and made again
		{&model.Repository{FullName: "Octo-Org/Infra"}, &model.Repository{ID: 5, FullName: "octo-org/infra"}, true},
		{&model.Repository{FullName: "o/a"}, &model.Repository{FullName: "o/b"}, false},
		{&model.Repository{}, &model.Repository{}, false},
		{nil, repoA, false},
	} {
		if got := tc.a.Same(tc.b); got != tc.want {
			t.Errorf("%v.Same(%v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// Kusion's storage decodes a release with gopkg.in/yaml.v3 into its own
// Release type, which has no origin: the repository and the adoption
// travel in a field it skips, and it still reads everything else.
func TestKusionReadsOwnedReleases(t *testing.T) {
	ctx := context.Background()
	dir := copyTree(t, "testdata/kusion")
	s := openURL(t, fileURL(dir))
	r := release("demo", "dev", model.PhaseApplying, "alice")
	if _, err := (Owned{Store: s, Run: repoA}).Begin(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.Phase = model.PhaseSucceeded // written as YAML, as Kusion writes
	if err := s.Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "releases/demo/dev/4.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "fullName: octo-org/infra") || !strings.Contains(string(data), "adopted: true") {
		t.Fatalf("the release does not record its repository:\n%s", data)
	}
	var kr kusionRelease
	if err := yaml.Unmarshal(data, &kr); err != nil {
		t.Fatalf("yaml.v3 cannot read an owned release: %v\n%s", err, data)
	}
	if kr.Project != "demo" || kr.Revision != 4 || kr.Phase != "succeeded" || len(kr.Spec.Resources) != 1 {
		t.Fatalf("Kusion's view of an owned release: %+v", kr)
	}
}
