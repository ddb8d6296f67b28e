package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// TestNothingToChangeWritesNoRelease runs the binary as a scheduled job
// would: apply --yes again and again on a stack nobody changed. Only the
// first writes a release; the others say nothing changed and none was
// written, and how to have one. --record-unchanged writes one. A destroy
// of a destroyed stack writes none either.
func TestNothingToChangeWritesNoRelease(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	dir := t.TempDir()
	ns := fmt.Sprintf("noop-%06x", rand.IntN(1<<24))
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", ns, "--ignore-not-found", "--wait=false").Run()
	})
	write(t, filepath.Join(dir, "project.yaml"), "name: noop\n")
	write(t, filepath.Join(dir, "dev", "stack.yaml"), "name: dev\n")
	write(t, filepath.Join(dir, "dev", "spec.yaml"), fmt.Sprintf(`resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}
- id: v1:ConfigMap:%[1]s:settings
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: %[1]s}, data: {mode: one}}
`, ns))
	releases := filepath.Join(dir, "releases")
	folder := filepath.Join(releases, "releases", "noop", "default")
	action := func(args ...string) (stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(actionBinary(t), append(args, "--stack", filepath.Join(dir, "dev"), "--backend", "file://"+releases)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "KUBECONFIG=" + kc}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				t.Fatalf("%s exited %d:\n%s%s", strings.Join(args, " "), exit.ExitCode(), out.String(), errOut.String())
			}
			t.Fatal(err)
		}
		return out.String(), errOut.String()
	}
	// The release files, by name.
	files := func() []string {
		t.Helper()
		entries, err := os.ReadDir(folder)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".yaml") && !strings.HasPrefix(e.Name(), ".") {
				names = append(names, e.Name())
			}
		}
		return names
	}
	const none = "no release written (--record-unchanged writes one)"

	steps := []struct {
		name      string
		args      []string
		wantFiles []string
		// say is a line stderr holds, unsay one it must not.
		say, unsay string
	}{
		{"the first apply", []string{"apply", "--yes"}, []string{"1.yaml"}, "Release 1 of noop/default (stack dev): succeeded", none},
		{"apply again", []string{"apply", "--yes"}, []string{"1.yaml"}, "Nothing to apply in stack dev (noop/default), as release 1 left it: " + none, "Release 2"},
		{"and again", []string{"apply", "--yes"}, []string{"1.yaml"}, "Nothing to apply in stack dev (noop/default), as release 1 left it: " + none, "Release 2"},
		{"apply asked to record", []string{"apply", "--yes", "--record-unchanged"}, []string{"1.yaml", "2.yaml"}, "Release 2 of noop/default (stack dev): succeeded", none},
		{"destroy", []string{"destroy", "--yes"}, []string{"1.yaml", "2.yaml", "3.yaml"}, "Release 3 of noop/default (stack dev): succeeded", none},
		{"destroy the destroyed stack", []string{"destroy", "--yes"}, []string{"1.yaml", "2.yaml", "3.yaml"}, "Nothing to destroy in stack dev (noop/default), as release 3 left it: " + none, "Release 4"},
		{"destroy it, asked to record", []string{"destroy", "--yes", "--record-unchanged"}, []string{"1.yaml", "2.yaml", "3.yaml", "4.yaml"}, "Release 4 of noop/default (stack dev): succeeded", none},
	}
	for _, s := range steps {
		_, stderr := action(s.args...)
		if got := files(); strings.Join(got, " ") != strings.Join(s.wantFiles, " ") {
			t.Errorf("%s: the store holds %v, want %v", s.name, got, s.wantFiles)
		}
		if !strings.Contains(stderr, s.say) || strings.Contains(stderr, s.unsay) {
			t.Errorf("%s: stderr does not say %q, or says %q:\n%s", s.name, s.say, s.unsay, stderr)
		}
	}
}
