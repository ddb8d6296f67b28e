package backend

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/model"
)

// files reads every file under dir, by path relative to it.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestKusionReleasesRead: releases Kusion v0.15 wrote (testdata/kusion-v0.15:
// an apply, one whose generate failed and has no spec, one unlocked, a
// destroy, an apply, and one still running) read as Kusion meant them,
// times in their zone to the nanosecond; reading changes no file; the
// running one is taken over once its lease is past, its file ended with a
// reason.
func TestKusionReleasesRead(t *testing.T) {
	ctx := context.Background()
	dir := copyTree(t, filepath.Join("testdata", "kusion-v0.15"))
	before := files(t, dir)
	s := openURL(t, "file://"+dir)
	revs, err := s.Revisions(ctx, "shop", "default")
	if err != nil || len(revs) != 5 {
		t.Fatalf("Revisions = %v, %v; want 1 to 5", revs, err)
	}
	zone := time.FixedZone("", 8*3600)
	want := []struct {
		phase     model.Phase
		spec      int // resources in the spec; -1 for none
		state     int
		created   time.Time
		secretKey string
	}{
		{model.PhaseSucceeded, 2, 2, time.Date(2024, 5, 10, 16, 41, 0, 123456789, zone), ""},
		{model.PhaseFailed, -1, 2, time.Date(2024, 5, 11, 9, 0, 0, 500000000, zone), ""},
		{model.PhaseFailed, 2, 2, time.Date(2024, 5, 12, 10, 15, 0, 1, zone), ""},
		{model.PhaseSucceeded, 2, 0, time.Date(2024, 5, 13, 8, 0, 0, 750000000, zone), "provider"},
		{model.PhaseSucceeded, 2, 2, time.Date(2024, 5, 14, 11, 30, 0, 333333333, zone), ""},
	}
	for i, w := range want {
		r, err := s.Get(ctx, "shop", "default", uint64(i+1))
		if err != nil {
			t.Fatalf("release %d: %v", i+1, err)
		}
		specN := -1
		if r.Spec != nil {
			specN = len(r.Spec.Resources)
		}
		if r.Phase != w.phase || specN != w.spec || len(r.State.Resources) != w.state || !r.CreateTime.Equal(w.created) || r.ModifiedTime.Before(r.CreateTime) {
			t.Errorf("release %d: %s, spec %d, state %d, created %s, modified %s; want %s, %d, %d, %s",
				i+1, r.Phase, specN, len(r.State.Resources), r.CreateTime.Format(time.RFC3339Nano), r.ModifiedTime.Format(time.RFC3339Nano),
				w.phase, w.spec, w.state, w.created.Format(time.RFC3339Nano))
		}
		if _, offset := r.CreateTime.Zone(); offset != 8*3600 {
			t.Errorf("release %d: createTime read in another zone: %s", i+1, r.CreateTime)
		}
		if w.secretKey != "" {
			if _, ok := r.Spec.SecretStore[w.secretKey]; !ok {
				t.Errorf("release %d: secret store %v, want its %q", i+1, r.Spec.SecretStore, w.secretKey)
			}
		}
	}
	latest, err := s.Latest(ctx, "shop", "default")
	if err != nil || latest == nil || latest.Revision != 5 || latest.State.Resources[1].Attributes["data"].(map[string]any)["version"] != "v1" {
		t.Fatalf("Latest = %+v, %v; want release 5", latest, err)
	}
	running, err := s.Latest(ctx, "shop", "running")
	if err != nil || running == nil || running.Phase != model.PhaseApplying {
		t.Fatalf("Latest of the running workspace = %+v, %v; want release 1 applying", running, err)
	}
	if after := files(t, dir); !maps.Equal(before, after) {
		t.Fatalf("reading Kusion's releases changed the folder")
	}

	// Kusion's running release is years past any lease: the next apply
	// takes over, and the release it ended says why; the others stay.
	next := release("shop", "running", model.PhaseApplying, "alice")
	prior, err := s.Begin(ctx, next)
	if err != nil || next.Revision != 2 || prior == nil || prior.Revision != 1 {
		t.Fatalf("Begin after Kusion's running release: %v, revision %d, prior %+v", err, next.Revision, prior)
	}
	ended, err := s.Get(ctx, "shop", "running", 1)
	if err != nil || ended.Phase != model.PhaseFailed || !strings.HasPrefix(ended.Message, supersededPrefix) || ended.ModifiedTime.Before(ended.CreateTime) {
		t.Errorf("Kusion's running release after the takeover: %+v, %v; want failed, saying it was superseded", ended, err)
	}
	after := files(t, dir)
	for name, data := range before {
		if !strings.Contains(name, "running") && after[name] != data {
			t.Errorf("%s changed", name)
		}
	}
	if _, err := s.Get(ctx, "shop", "default", 6); !errors.Is(err, ErrNotFound) {
		t.Errorf("release 6 of default: %v, want none", err)
	}
}
