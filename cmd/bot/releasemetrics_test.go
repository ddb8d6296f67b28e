package main

import (
	"context"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// TestRunningReleaseMetrics: a bot whose store is PostgreSQL reports the
// releases that have not ended, from its database, at each scrape: how
// many, how long each ran and how long its holder has been silent; once it
// ends, none.
func TestRunningReleaseMetrics(t *testing.T) {
	w := newWorld(t, withBackend(testenv.Postgres(t).NewBucket(t)))
	if v, ok := gauge(w.metrics(), "kusionpr_releases_running"); !ok || v != 0 {
		t.Fatalf("kusionpr_releases_running before any release: %v (%v)", v, ok)
	}

	// A runner began applying a minute ago and was last heard of 40 s ago.
	s := w.store()
	began := time.Now().Add(-time.Minute)
	held := &model.Release{Project: "web", Workspace: "default", Stack: "dev", Phase: model.PhaseApplying,
		CreateTime: began, Origin: &model.Origin{User: "runner", Command: "apply", Heartbeat: time.Now().Add(-40 * time.Second)}}
	s.Now = func() time.Time { return began }
	if _, err := s.Begin(context.Background(), held); err != nil {
		t.Fatal(err)
	}
	text := w.metrics()
	labels := `{project="web",stack="dev",workspace="default"}`
	if v, ok := gauge(text, "kusionpr_releases_running"); !ok || v != 1 {
		t.Errorf("kusionpr_releases_running with one held: %v (%v)\n%s", v, ok, text)
	}
	if v, ok := gauge(text, "kusionpr_release_running_seconds"+labels); !ok || v < 60 || v > 120 {
		t.Errorf("kusionpr_release_running_seconds%s = %v (%v), want about 60", labels, v, ok)
	}
	if v, ok := gauge(text, "kusionpr_release_silent_seconds"+labels); !ok || v < 40 || v > 100 {
		t.Errorf("kusionpr_release_silent_seconds%s = %v (%v), want about 40", labels, v, ok)
	}

	s.Now = nil
	if _, err := s.Unlock(context.Background(), "web", "default", "operator", "test"); err != nil {
		t.Fatal(err)
	}
	text = w.metrics()
	if v, ok := gauge(text, "kusionpr_releases_running"); !ok || v != 0 {
		t.Errorf("kusionpr_releases_running once ended: %v (%v)", v, ok)
	}
	if _, ok := gauge(text, "kusionpr_release_running_seconds"+labels); ok {
		t.Errorf("an ended release is still reported as running:\n%s", text)
	}
}
