package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// runBot runs the built bot with args and env (nothing else of ours) and
// returns its stdout, stderr and exit code. It must end by itself.
func runBot(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(botBinary(t), args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// TestBotHelp: --help says what the bot is and where its settings are,
// exits 0 and does not start (no settings are given, so starting would
// fail with exit 2).
func TestBotHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help"} {
		t.Run(arg, func(t *testing.T) {
			stdout, stderr, code := runBot(t, nil, arg)
			if code != 0 {
				t.Errorf("exit %d, want 0; stderr:\n%s", code, stderr)
			}
			for _, w := range []string{"GitHub App", "KUSIONPR_WEBHOOK_SECRET", "KUSIONPR_APP_ID", "KUSIONPR_APP_PRIVATE_KEY", "KUSIONPR_CONFIG", "README"} {
				if !strings.Contains(stdout, w) {
					t.Errorf("help does not say %q:\n%s", w, stdout)
				}
			}
		})
	}
	// An argument the bot has no use for is not taken for a start.
	if _, stderr, code := runBot(t, nil, "--listen=:9"); code != 2 || !strings.Contains(stderr, `unknown argument "--listen=:9"`) {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}
