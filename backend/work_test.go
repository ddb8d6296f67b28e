package backend

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestWorkFiles: on every backend a work file is written once (a second
// writer is refused and the first's bytes stay), read back whole, missing
// until written, refused past the limit, and named only as the store
// allows (no path out of its folder); Kusion's release listing never sees it.
func TestWorkFiles(t *testing.T) {
	ctx := context.Background()
	for _, b := range allBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := openURL(t, b.url(t))
			if _, err := s.Work(ctx, "req1", "result.json", 0); !errors.Is(err, ErrNoWork) {
				t.Fatalf("read before write: %v, want ErrNoWork", err)
			}
			if ok, err := s.HasWork(ctx, "req1", "result.json"); ok || err != nil {
				t.Fatalf("HasWork before write = %v, %v", ok, err)
			}
			first := []byte(`{"ok":true}`)
			if err := s.PutWork(ctx, "req1", "result.json", first); err != nil {
				t.Fatal(err)
			}
			if err := s.PutWork(ctx, "req1", "result.json", []byte(`{"ok":false}`)); !errors.Is(err, ErrWorkExists) {
				t.Fatalf("second write: %v, want ErrWorkExists", err)
			}
			if ok, err := s.HasWork(ctx, "req1", "result.json"); !ok || err != nil {
				t.Fatalf("HasWork after write = %v, %v", ok, err)
			}
			got, err := s.Work(ctx, "req1", "result.json", 0)
			if err != nil || !bytes.Equal(got, first) {
				t.Fatalf("read = %q, %v; want the first write", got, err)
			}
			if _, err := s.Work(ctx, "req1", "result.json", 4); err == nil || !strings.Contains(err.Error(), "refused") {
				t.Fatalf("read over the limit: %v, want it refused", err)
			}
			for _, bad := range [][2]string{{"../releases", "x"}, {"req1", "../../releases/p/w/1.yaml"}, {"Req", "x"}, {"", "x"}, {"req1", "a/b"}} {
				if err := s.PutWork(ctx, bad[0], bad[1], first); err == nil {
					t.Errorf("PutWork(%q, %q) was taken", bad[0], bad[1])
				}
			}
			r := release("p", "w", "Succeeded", "u")
			r.Revision = 1
			if err := s.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
			if revs, err := s.Revisions(ctx, "p", "w"); err != nil || len(revs) != 1 {
				t.Fatalf("revisions beside work files = %v, %v", revs, err)
			}
		})
	}
}
