package kcl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/internal/sandbox"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// TestRefusedWhereTheKernelCannotConfine: on a kernel without Landlock
// (sandbox.Check failing, as it does there), a stack in KCL is refused,
// naming the setting that allows it; the operator's
// KUSIONPR_KCL_UNCONFINED=true compiles it, and the runtime still gets an
// empty environment.
func TestRefusedWhereTheKernelCannotConfine(t *testing.T) {
	rt := testenv.KCLRuntime(t)
	root := t.TempDir()
	for name, data := range map[string]string{
		"project.yaml": "name: p\n", "s/stack.yaml": "name: s\n",
		"s/main.k": "import file\nseen = file.read_env(\"KUSIONPR_TEST_REFUSAL\") or \"nothing\"\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755)
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := project.LoadStack(root, filepath.Join(root, "s"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUSIONPR_TEST_REFUSAL", "the-process-env")
	noLandlock := func() (sandbox.Support, error) {
		return sandbox.Support{}, fmt.Errorf("%w: Landlock is not available in this kernel", sandbox.ErrUnavailable)
	}
	for _, unconfined := range []bool{false, true} {
		setup, err := NewSetup(Settings{Runtime: rt, CacheDir: t.TempDir(), Unconfined: unconfined}, nil)
		if err != nil {
			t.Fatal(err)
		}
		setup.check = noLandlock
		out, err := setup.Compile(context.Background(), st)
		setup.Close()
		if !unconfined {
			want := "Landlock is not available in this kernel): set KUSIONPR_KCL_UNCONFINED=true to run it unconfined"
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "s/main.k") {
				t.Fatalf("without the setting: err = %v, want the refusal naming main.k and %q", err, want)
			}
			continue
		}
		if err != nil || !strings.Contains(string(out), "seen: nothing") {
			t.Fatalf("with KUSIONPR_KCL_UNCONFINED=true: %v\n%s", err, out)
		}
	}
}
