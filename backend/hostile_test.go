package backend

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/model"
)

// An index is a hint anyone with the bucket can write. One claiming a
// revision far past the real ones must not make a reader walk back slot by
// slot (10^11 probes), nor overflow the next revision to 0.
func TestLatestOverAHostileIndex(t *testing.T) {
	const deadline = 10 * time.Second
	for _, claim := range []uint64{100_000_000_000, math.MaxUint64} {
		for _, releases := range []int{0, 3} {
			for _, b := range allBackends(t) {
				t.Run(fmt.Sprintf("%d/%d releases/%s", claim, releases, b.name), func(t *testing.T) {
					s := openURL(t, b.url(t))
					seed := context.Background()
					for i := 1; i <= releases; i++ {
						r := release("p", "w", model.PhaseSucceeded, "a")
						r.Revision = uint64(i)
						if err := s.Create(seed, r); err != nil {
							t.Fatal(err)
						}
					}
					hostile := fmt.Sprintf("latestRevision: %d\nreleaseMetaDatas:\n    - revision: %d\n      stack: dev\n", claim, claim)
					if err := s.obj.write(seed, s.indexKey("p", "w"), []byte(hostile), false); err != nil {
						t.Fatal(err)
					}

					ctx, cancel := context.WithTimeout(seed, deadline)
					defer cancel()
					// The old reader walked back from the claim, one slot at
					// a time, whatever the context said: wait for it only
					// until the deadline and a little more.
					watchdog, stop := context.WithTimeout(seed, deadline+2*time.Second)
					defer stop()
					var latest *model.Release
					var err error
					done := make(chan struct{})
					go func() {
						defer close(done)
						latest, err = s.Latest(ctx, "p", "w")
					}()
					select {
					case <-done:
					case <-watchdog.Done():
						t.Fatalf("Latest did not return within its %s deadline", deadline)
					}
					// Returned, and before the deadline: the context has not expired.
					if ctx.Err() != nil {
						t.Fatalf("Latest returned past its %s deadline (%v, %v)", deadline, latest, err)
					}
					if err != nil {
						t.Fatalf("Latest: %v", err)
					}
					switch {
					case releases == 0 && latest != nil:
						t.Fatalf("Latest = revision %d, want none", latest.Revision)
					case releases > 0 && (latest == nil || latest.Revision != uint64(releases)):
						t.Fatalf("Latest = %+v, want revision %d", latest, releases)
					}
					revs, err := s.Revisions(ctx, "p", "w")
					want := []uint64{}
					for i := 1; i <= releases; i++ {
						want = append(want, uint64(i))
					}
					if err != nil || !reflect.DeepEqual(append([]uint64{}, revs...), want) {
						t.Fatalf("Revisions = %v, %v; want %v", revs, err, want)
					}
					r := release("p", "w", model.PhaseApplying, "a")
					if _, err := s.Begin(ctx, r); err != nil || r.Revision != uint64(releases+1) {
						t.Fatalf("Begin = %v, revision %d; want %d", err, r.Revision, releases+1)
					}
					if ix, _, err := s.readIndex(ctx, "p", "w"); err != nil || ix.LatestRevision != uint64(releases+1) {
						t.Errorf("index after Begin: %+v, %v", ix, err)
					}
				})
			}
		}
	}
}

// A release really in the last slot there is: Begin refuses to go past it
// instead of wrapping around to revision 0.
func TestBeginAtTheLastRevision(t *testing.T) {
	ctx := context.Background()
	s := openURL(t, "mem://")
	last := release("p", "w", model.PhaseSucceeded, "a")
	last.Revision = math.MaxUint64
	if err := s.Create(ctx, last); err != nil {
		t.Fatal(err)
	}
	latest, err := s.Latest(ctx, "p", "w")
	if err != nil || latest.Revision != math.MaxUint64 {
		t.Fatalf("Latest = %+v, %v", latest, err)
	}
	_, err = s.Begin(ctx, release("p", "w", model.PhaseApplying, "a"))
	if err == nil || !strings.Contains(err.Error(), "the last there is") {
		t.Fatalf("Begin after revision 2^64-1: %v", err)
	}
	if ok, _ := s.obj.exists(ctx, s.releaseKey("p", "w", 0)); ok {
		t.Error("Begin wrapped around to revision 0")
	}
}

// Every read stops when its context ends.
func TestReadsHonourTheContext(t *testing.T) {
	for _, b := range allBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := openURL(t, b.url(t))
			r := release("p", "w", model.PhaseSucceeded, "a")
			r.Revision = 1
			if err := s.Create(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := s.Latest(ctx, "p", "w"); !errors.Is(err, context.Canceled) {
				t.Errorf("Latest with an ended context: %v", err)
			}
			if _, err := s.Get(ctx, "p", "w", 1); !errors.Is(err, context.Canceled) {
				t.Errorf("Get with an ended context: %v", err)
			}
		})
	}
}

// A release or index far larger than any real one (corrupt, or put there to
// exhaust the runner's memory) is refused by its stated size, naming its key.
func TestHugeObjectsAreRefusedUnread(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openURL(t, fileURL(dir))
	r := release("p", "w", model.PhaseSucceeded, "a")
	r.Revision = 1
	if err := s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	// Sparse files: 8 GiB each on paper, nothing on disk.
	for _, name := range []string{"2.yaml", ".metadata.yml"} {
		f, err := os.OpenFile(filepath.Join(dir, "releases/p/w", name), os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(8 << 30); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	_, err := s.Get(ctx, "p", "w", 2)
	if err == nil || !strings.Contains(err.Error(), "releases/p/w/2.yaml") || !strings.Contains(err.Error(), "over the size limit") {
		t.Errorf("Get of an 8 GiB release: %v", err)
	}
	_, err = s.Latest(ctx, "p", "w")
	if err == nil || !strings.Contains(err.Error(), "releases/p/w/.metadata.yml") || !strings.Contains(err.Error(), "over the size limit") {
		t.Errorf("Latest over an 8 GiB index: %v", err)
	}
}

// The limit holds on every store, whatever the object.
func TestObjectsOverTheLimitAreRefused(t *testing.T) {
	ctx := context.Background()
	for _, b := range allBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := openURL(t, b.url(t))
			s.MaxReleaseBytes, s.MaxIndexBytes = 64<<10, 16<<10
			r := release("p", "w", model.PhaseSucceeded, "a")
			r.Revision = 1
			r.Message = strings.Repeat("x", 100<<10)
			if err := s.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
			_, err := s.Get(ctx, "p", "w", 1)
			if !errors.Is(err, errObjectTooLarge) || !strings.Contains(err.Error(), s.releaseKey("p", "w", 1)) {
				t.Errorf("Get of a 100 KiB release over a 64 KiB limit: %v", err)
			}
			index := "latestRevision: 1\nreleaseMetaDatas:\n" + strings.Repeat("    - revision: 1\n      stack: dev\n", 1000)
			if err := s.obj.write(ctx, s.indexKey("p", "w"), []byte(index), false); err != nil {
				t.Fatal(err)
			}
			_, err = s.Latest(ctx, "p", "w")
			refused := s.indexKey("p", "w")
			if s.Queries() {
				// Its rows are the index: the object is never read, and
				// the release past the limit is what Latest refuses.
				refused = s.releaseKey("p", "w", 1)
			}
			if !errors.Is(err, errObjectTooLarge) || !strings.Contains(err.Error(), refused) {
				t.Errorf("Latest over a 33 KiB index with a 16 KiB limit: %v", err)
			}
		})
	}
}
