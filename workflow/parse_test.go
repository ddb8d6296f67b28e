package workflow

import (
	"context"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/model"
)

func TestParseCommand(t *testing.T) {
	for _, s := range []string{"preview", "apply", "destroy"} {
		if c, err := ParseCommand(s); err != nil || string(c) != s {
			t.Errorf("ParseCommand(%q) = %q, %v", s, c, err)
		}
	}
	if _, err := ParseCommand("deploy"); err == nil || !strings.Contains(err.Error(), `unknown command "deploy": want preview, apply or destroy`) {
		t.Errorf("ParseCommand(deploy) = %v", err)
	}
}

// TestUnlock: /kusion unlock ends the stack's running release, saying who
// and why, and refuses a stack with none running.
func TestUnlock(t *testing.T) {
	ctx := context.Background()
	root, _ := emptyStacks(t, 1)
	url := "file://" + t.TempDir()
	runner := &Runner{Store: StoreConfig{Backend: url}}
	req := Request{Workspace: "default", Root: root, Stack: "apps/sa"}
	store, err := backend.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	held := &model.Release{Project: "apps", Workspace: "default", Stack: "sa", Spec: &model.Spec{}, State: &model.State{}, Phase: model.PhaseApplying}
	if _, err := store.Begin(ctx, held); err != nil {
		t.Fatal(err)
	}
	rel, err := runner.Unlock(ctx, req, "alice", "/kusion unlock on #3")
	if err != nil || rel.Phase != model.PhaseFailed || !strings.Contains(rel.Message, "alice") || !strings.Contains(rel.Message, "/kusion unlock on #3") {
		t.Fatalf("Unlock = %+v, %v; want the release failed, saying who and why", rel, err)
	}
	if _, err := runner.Unlock(ctx, req, "alice", "again"); err == nil {
		t.Errorf("a second unlock, with nothing running, succeeded")
	}
}
