package engine_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

const crashLease = 3 * time.Second

func crashStack() engine.Stack {
	return engine.Stack{Project: "crash", Workspace: "w", Stack: "s", Origin: &model.Origin{User: "runner"},
		Spec: &model.Spec{Resources: model.Resources{
			res("first", map[string]any{"v": 1}),
			res("second", map[string]any{"v": 2}, id("first")),
		}}}
}

func openCrashStore(t testing.TB, u string) *backend.Store {
	s, err := backend.Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	s.Lease = crashLease
	return s
}

// TestCrashedHolderIsSuperseded kills a process mid-apply with SIGKILL, on
// S3, PostgreSQL and the HTTP store: its release stays "applying" with the
// state of what did apply. Within the lease the stack stays held; after it
// the next apply supersedes the abandoned release, which becomes failed with
// the reason, and carries on from its state.
func TestCrashedHolderIsSuperseded(t *testing.T) {
	if u := os.Getenv("KUSIONPR_CRASH_HELPER_URL"); u != "" {
		// The doomed holder: "first" applies, "second" never returns.
		s := openCrashStore(t, u)
		rt := newFakeRuntime()
		rt.block[id("second")] = true
		e := &engine.Engine{Runtimes: map[model.ResourceType]engine.Driver{model.Terraform: engine.Built(rt)}, Store: s, Heartbeat: s.HeartbeatInterval()}
		_, err := e.Apply(context.Background(), crashStack(), engine.ApplyOptions{})
		t.Fatalf("the holder's apply returned: %v", err)
	}
	for _, store := range testenv.ReleaseStores(t) {
		t.Run(store.Name, func(t *testing.T) { crashAndSupersede(t, store.NewBucket(t)) })
	}
}

func crashAndSupersede(t *testing.T, u string) {
	s := openCrashStore(t, u)
	ctx := context.Background()

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashedHolderIsSuperseded$")
	cmd.Env = append(os.Environ(), "KUSIONPR_CRASH_HELPER_URL="+u)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Wait until the holder has recorded "first", then kill it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		rel, err := s.Latest(ctx, "crash", "w")
		if err == nil && rel != nil && len(rel.State.Resources) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder never recorded its first resource: %+v, %v", rel, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Its heartbeat keeps the stack past the lease while it lives.
	time.Sleep(crashLease + time.Second)
	e, _, _ := setup(t)
	e.Store = s
	if _, err := e.Apply(ctx, crashStack(), engine.ApplyOptions{}); !errors.Is(err, backend.ErrHeld) {
		t.Fatalf("apply while the holder lives: %v, want held", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := time.Now()

	// Within the lease the stack is still held.
	if _, err := e.Apply(ctx, crashStack(), engine.ApplyOptions{}); !errors.Is(err, backend.ErrHeld) {
		t.Fatalf("apply right after the kill: %v, want held", err)
	}
	// After it, the next apply takes over.
	var res *engine.Result
	var err error
	for time.Since(killed) < 3*crashLease {
		if res, err = e.Apply(ctx, crashStack(), engine.ApplyOptions{}); !errors.Is(err, backend.ErrHeld) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("apply after the lease: %v", err)
	}
	if res.Release.Revision != 2 || res.Release.Phase != model.PhaseSucceeded {
		t.Fatalf("takeover release %d is %s, want 2 succeeded", res.Release.Revision, res.Release.Phase)
	}
	old, err := s.Get(ctx, "crash", "w", 1)
	if err != nil {
		t.Fatal(err)
	}
	if old.Phase != model.PhaseFailed || !strings.HasPrefix(old.Message, "abandoned: superseded by revision 2: no sign of life since ") || !strings.HasSuffix(old.Message, "past the 3s lease") {
		t.Errorf("abandoned release: %s %q", old.Phase, old.Message)
	}
	if len(old.State.Resources) != 1 || old.State.Resources[0].ID != id("first") {
		t.Errorf("the abandoned release lost its state: %v", old.State.Resources)
	}
	if revs, _ := s.Revisions(ctx, "crash", "w"); len(revs) != 2 {
		t.Errorf("releases %v, want exactly 1 and 2", revs)
	}
}
