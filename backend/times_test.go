package backend

import (
	"context"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/model"
)

// TestTimesAsKusionWritesThem: createTime and modifiedTime keep their
// nanoseconds, as Kusion's writes do, and modifiedTime is never before
// createTime: neither within one second (a release created at .8 s and
// updated at .9 s of the same second) nor after a release created on a
// machine whose clock is ahead, in another time zone.
func TestTimesAsKusionWritesThem(t *testing.T) {
	ctx := context.Background()
	s := openURL(t, "mem://")
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	now := base.Add(800 * time.Millisecond)
	s.Now = func() time.Time { return now }

	r := release("p", "w", model.PhaseApplying, "alice")
	r.CreateTime = now.Add(123)
	if _, err := s.Begin(ctx, r); err != nil {
		t.Fatal(err)
	}
	now = base.Add(900 * time.Millisecond)
	r.Phase = model.PhaseSucceeded
	if err := s.Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "p", "w", r.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreateTime.Equal(base.Add(800*time.Millisecond+123)) || !got.ModifiedTime.Equal(now) {
		t.Errorf("createTime %s, modifiedTime %s; want %s and %s, to the nanosecond",
			got.CreateTime.Format(time.RFC3339Nano), got.ModifiedTime.Format(time.RFC3339Nano),
			base.Add(800*time.Millisecond+123).Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))
	}

	// Kusion's release, written in +08:00 by a clock two seconds ahead,
	// left running and unlocked here.
	ahead := time.FixedZone("", 8*3600)
	k := release("p", "w", model.PhaseApplying, "")
	k.Origin = nil
	k.Revision = r.Revision + 1
	k.CreateTime = now.Add(2*time.Second + 456).In(ahead)
	k.ModifiedTime = k.CreateTime
	if err := s.Create(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unlock(ctx, "p", "w", "bob", "stuck"); err != nil {
		t.Fatal(err)
	}
	got, err = s.Get(ctx, "p", "w", k.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if got.ModifiedTime.Before(got.CreateTime) {
		t.Errorf("unlocked release: modifiedTime %s before createTime %s", got.ModifiedTime.Format(time.RFC3339Nano), got.CreateTime.Format(time.RFC3339Nano))
	}
}
