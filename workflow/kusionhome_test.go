package workflow

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine/generate/module"
)

// TestKusionHomeAsValue: given Kusion's folder as a value (the action's
// $HOME/.kusion), the store is the current backend of its config.yaml, else
// the folder itself, and module binaries are looked for in it, whatever
// the process's own home or KUSION_HOME.
func TestKusionHomeAsValue(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	t.Setenv("KUSION_HOME", t.TempDir())
	t.Setenv("KUSION_MODULE_PATH", "")
	store, where, err := StoreConfig{KusionHome: home}.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	if !strings.HasPrefix(where, "file://") || !strings.HasSuffix(where, filepath.ToSlash(home)) {
		t.Errorf("store %s, want the folder %s", where, home)
	}
	folder := t.TempDir()
	config := "backends:\n  current: team\n  team:\n    type: local\n    configs:\n      path: " + folder + "\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	store, where, err = StoreConfig{KusionHome: home}.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	if !strings.Contains(where, "local backend") {
		t.Errorf("store %s, want the current backend of %s/config.yaml", where, home)
	}
	if got := module.HomeIn(home); got != filepath.Join(home, "modules") {
		t.Errorf("module home %s, want %s/modules", got, home)
	}
}
