package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/model"
)

// runBinary runs the built action binary outside GitHub Actions and
// returns its stdout, stderr and exit code.
func runBinary(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runIn(t, actionBinary(t), "", args...)
}

// TestHelp asks the binary for help as a newcomer would: every spelling
// answers on stdout with exit 0, and names what each command or flag does.
func TestHelp(t *testing.T) {
	commands := []string{"preview", "apply", "destroy", "generate", "unlock", "rollback", "releases", "cancel"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, commands},
		{[]string{"-h"}, commands},
		{[]string{"help"}, commands},
		{[]string{"preview", "--help"}, []string{"usage: action preview", "-stack", "stack folder", "-backend", "release store URL", "-o string", "output format", "-dry-run"}},
		{[]string{"apply", "-h"}, []string{"usage: action apply", "-yes", "apply, destroy or roll back without asking", "-no-watch"}},
		{[]string{"destroy", "--help"}, []string{"usage: action destroy", "-yes"}},
		{[]string{"help", "apply"}, []string{"usage: action apply", "-yes"}},
		{[]string{"generate", "--help"}, []string{"usage: action generate", "-stack", "-workspace", "-o string", "write the Spec to this file", "-format"}},
		{[]string{"unlock", "--help"}, []string{"usage: action unlock", "-reason", "why the running release is ended", "-backend"}},
		{[]string{"rollback", "--help"}, []string{"usage: action rollback", "-to int", "the revision of the release whose recorded spec", "-yes", "-kubeconfigs"}},
		{[]string{"releases", "--help"}, []string{"usage: action releases", "-o string", "text or json", "-limit int", "(default 20)", "-backend"}},
		{[]string{"cancel", "--help"}, []string{"usage: action cancel", "-reason", "-backend", "next heartbeat"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout, stderr, code := runBinary(t, tc.args...)
			if code != 0 {
				t.Errorf("exit %d, want 0; stderr:\n%s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("help does not say %q:\n%s", w, stdout)
				}
			}
		})
	}
}

// TestUnknownCommand: a typo, or no command, is an error (exit 2) that
// lists every command there is.
func TestUnknownCommand(t *testing.T) {
	for _, args := range [][]string{{"previw"}, {}, {"--stack", "."}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, stderr, code := runBinary(t, args...)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			for _, c := range []string{"preview", "apply", "destroy", "generate", "unlock", "rollback", "releases", "cancel"} {
				if !strings.Contains(stderr, "  "+c+" ") {
					t.Errorf("the error does not list %s:\n%s", c, stderr)
				}
			}
		})
	}
}

// TestBadFlag: a flag that does not exist is named, with the command's
// flags, on stderr, exit 2; nothing runs.
func TestBadFlag(t *testing.T) {
	stdout, stderr, code := runBinary(t, "preview", "--stak", ".")
	if code != 2 || stdout != "" {
		t.Errorf("exit %d, stdout %q; want 2 and nothing", code, stdout)
	}
	if !strings.Contains(stderr, "-stak") || !strings.Contains(stderr, "usage: action preview") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

// TestApplyFailureErrorsOnce: an apply that fails (here: no cluster to
// read, KUBECONFIG names a missing file) writes each error line once,
// says it changed nothing and wrote no release, and exits 1.
func TestApplyFailureErrorsOnce(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "../../examples/quickstart", filepath.Join(dir, "quickstart"))
	store := "file://" + filepath.ToSlash(filepath.Join(dir, "releases"))
	cmd := exec.Command(actionBinary(t), "apply", "--yes", "--stack", filepath.Join(dir, "quickstart", "dev"), "--backend", store)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "KUBECONFIG=" + filepath.Join(dir, "nonexistent")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v; want 1\n%s", err, stderr.String())
	}
	seen := map[string]int{}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(line, "time=") || strings.TrimSpace(line) == "" {
			continue // log lines, with their own times
		}
		seen[line]++
	}
	for line, n := range seen {
		if n > 1 {
			t.Errorf("printed %d times: %s", n, line)
		}
	}
	// The preview on stdout lists the resources with their errors; stderr
	// counts them (TestFailedPreviewErrorsOnce checks each shows once).
	for _, w := range []string{"error: apply dev: preview failed, nothing changed: 5 of 5 resources could not be previewed (listed above)", "Nothing was changed; no release written.", "Release store: " + store} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr does not say %q:\n%s", w, stderr.String())
		}
	}
	if !strings.Contains(stdout.String(), "nonexistent, which does not exist") {
		t.Errorf("stdout does not say where the kubeconfig was looked for:\n%s", stdout.String())
	}
	if written, _ := filepath.Glob(filepath.Join(dir, "releases", "releases", "*", "*", "*.yaml")); len(written) != 0 {
		t.Errorf("the failed apply wrote releases %v", written)
	}
}

// TestUnlockNamesTheStore: unlock ends the running release of the stack's
// project and workspace, naming the store it is in, as every command
// names the store it used.
func TestUnlockNamesTheStore(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "../../examples/quickstart", filepath.Join(dir, "quickstart"))
	store := "file://" + filepath.ToSlash(filepath.Join(dir, "releases"))
	s, err := backend.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Begin(context.Background(), &model.Release{Project: "quickstart", Workspace: "default", Stack: "dev", Phase: model.PhaseApplying}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	stdout, stderr, code := runIn(t, actionBinary(t), dir, "unlock", "--stack", filepath.Join(dir, "quickstart", "dev"), "--backend", store, "--reason", "its runner died")
	if code != 0 || !strings.Contains(stdout, "Release 1 of quickstart/default in "+store+" is now failed") {
		t.Errorf("unlock exited %d:\n%s%s", code, stdout, stderr)
	}
}
