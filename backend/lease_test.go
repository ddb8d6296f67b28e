package backend

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/model"
)

func TestLeaseSupersedesAbandonedRelease(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	s := openURL(t, "mem://")
	s.Lease = time.Minute
	s.Now = func() time.Time { return now }

	holder := release("p", "w", model.PhaseApplying, "alice")
	holder.State.Resources = model.Resources{{ID: "v1:Namespace:kept", Type: model.Kubernetes}}
	if _, err := s.Begin(ctx, holder); err != nil {
		t.Fatal(err)
	}
	now = now.Add(50 * time.Second)
	if _, err := s.Begin(ctx, release("p", "w", model.PhaseApplying, "bob")); !errors.Is(err, ErrHeld) {
		t.Fatalf("Begin within the lease: %v, want held", err)
	}
	now = now.Add(20 * time.Second) // 70 s without a sign of life
	next := release("p", "w", model.PhaseApplying, "bob")
	prior, err := s.Begin(ctx, next)
	if err != nil {
		t.Fatalf("Begin past the lease: %v", err)
	}
	if next.Revision != 2 || prior == nil || prior.Revision != 1 || len(prior.State.Resources) != 1 {
		t.Fatalf("superseding Begin took revision %d after %+v; want 2, after release 1 with its state", next.Revision, prior)
	}
	old, err := s.Get(ctx, "p", "w", 1)
	if err != nil {
		t.Fatal(err)
	}
	const want = "abandoned: superseded by revision 2: no sign of life since 2026-11-22T10:00:00Z, past the 1m0s lease"
	if old.Phase != model.PhaseFailed || old.Message != want {
		t.Errorf("abandoned release: %s %q\nwant failed %q", old.Phase, old.Message, want)
	}
	if len(old.State.Resources) != 1 {
		t.Errorf("the abandoned release lost its state")
	}
	// The old holder wakes up: its writes are refused, the release stays ended.
	holder.Phase = model.PhaseSucceeded
	if err := s.Update(ctx, holder); !errors.Is(err, ErrSuperseded) {
		t.Errorf("update by the superseded holder: %v, want ErrSuperseded", err)
	}
	if old, _ := s.Get(ctx, "p", "w", 1); old.Phase != model.PhaseFailed {
		t.Errorf("the superseded holder brought release 1 back to %s", old.Phase)
	}
}

func TestHeartbeatKeepsTheLease(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	s := openURL(t, "mem://")
	s.Lease = time.Minute
	s.Now = func() time.Time { return now }
	holder := release("p", "w", model.PhaseApplying, "alice")
	if _, err := s.Begin(ctx, holder); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		now = now.Add(s.HeartbeatInterval())
		if err := s.Update(ctx, holder); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(s.HeartbeatInterval())
	if _, err := s.Begin(ctx, release("p", "w", model.PhaseApplying, "bob")); !errors.Is(err, ErrHeld) {
		t.Fatalf("Begin while the holder beats: %v, want held", err)
	}
}

func TestUnlock(t *testing.T) {
	ctx := context.Background()
	s := openURL(t, "mem://")
	if _, err := s.Unlock(ctx, "p", "w", "carol", "stuck"); err == nil || err.Error() != "unlock p/w: there is no release" {
		t.Errorf("unlock with no release: %v", err)
	}
	holder := release("p", "w", model.PhaseApplying, "alice")
	if _, err := s.Begin(ctx, holder); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unlock(ctx, "p", "w", "carol", ""); err == nil || !strings.Contains(err.Error(), "say who unlocks and why") {
		t.Errorf("unlock without a reason: %v", err)
	}
	rel, err := s.Unlock(ctx, "p", "w", "carol", "runner died with its VM")
	if err != nil {
		t.Fatal(err)
	}
	if rel.Phase != model.PhaseFailed || !strings.HasPrefix(rel.Message, "unlocked by carol at ") || !strings.HasSuffix(rel.Message, ": runner died with its VM") {
		t.Errorf("unlocked release: %s %q", rel.Phase, rel.Message)
	}
	if _, err := s.Unlock(ctx, "p", "w", "carol", "again"); err == nil || err.Error() != "unlock p/w: nothing holds it: the latest release, 1, is failed" {
		t.Errorf("second unlock: %v", err)
	}
	if err := s.Update(ctx, holder); !errors.Is(err, ErrSuperseded) {
		t.Errorf("update after unlock: %v, want ErrSuperseded", err)
	}
	next := release("p", "w", model.PhaseApplying, "bob")
	if _, err := s.Begin(ctx, next); err != nil || next.Revision != 2 {
		t.Errorf("Begin after unlock: revision %d, %v", next.Revision, err)
	}
}

func TestTransientErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"missing file", &fs.PathError{Op: "open", Path: "x", Err: syscall.ENOENT}, false},
		{"connection refused", &url.Error{Op: "Put", URL: "http://127.0.0.1:1", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, true},
		{"refused create", errors.New("precondition"), false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("%s: transient = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRetry: a transient error is tried 4 times with pauses growing from
// 100 ms, anything else once; the store's last error comes back, not the
// wait's, and an ended context stops the pauses.
func TestRetry(t *testing.T) {
	throttled := &url.Error{Op: "Get", URL: "http://127.0.0.1:1", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}
	permanent := errors.New("access denied")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		fails     []error // what each try returns, then success
		wantTries int
		wantErr   error
		minTime   time.Duration
	}{
		{name: "success at once", ctx: context.Background(), wantTries: 1},
		{name: "a transient error is tried again", ctx: context.Background(), fails: []error{throttled, throttled}, wantTries: 3, minTime: 300 * time.Millisecond},
		{name: "4 tries at most", ctx: context.Background(), fails: []error{throttled, throttled, throttled, throttled, throttled}, wantTries: 4, wantErr: throttled, minTime: 700 * time.Millisecond},
		{name: "another error is not", ctx: context.Background(), fails: []error{permanent}, wantTries: 1, wantErr: permanent},
		{name: "an ended context tries nothing", ctx: ended, wantTries: 0, wantErr: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tries, start := 0, time.Now()
			err := retry(tc.ctx, func() error {
				tries++
				if tries <= len(tc.fails) {
					return tc.fails[tries-1]
				}
				return nil
			})
			if tries != tc.wantTries || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("%d tries, %v; want %d, %v", tries, err, tc.wantTries, tc.wantErr)
			}
			if took := time.Since(start); took < tc.minTime || took > 3*time.Second {
				t.Errorf("took %s, want at least %s and well under 3 s", took, tc.minTime)
			}
		})
	}

	// A context ending during a pause returns the store's error at once.
	ctx, stop := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer stop()
	start := time.Now()
	if err := retry(ctx, func() error { return throttled }); err != throttled || time.Since(start) > time.Second {
		t.Errorf("ended in a pause: %v after %s, want the store's error at once", err, time.Since(start))
	}
}
