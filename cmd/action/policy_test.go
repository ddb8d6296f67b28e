package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/policy"
)

// TestPolicyTestCommand runs `action policy test` as a team's CI would: on
// the example policies, on a folder with a failing test, on one that does
// not parse, and with bad flags.
func TestPolicyTestCommand(t *testing.T) {
	bin := testenv.Binary(t, "../action")
	failing := t.TempDir()
	writeFiles(t, failing, map[string]string{
		"rules/lb.rego":      "package main\n\ndeny contains \"lb\" if input.workspace == \"dev\"\n",
		"rules/lb_test.rego": "package main\n\ntest_dev if deny[\"lb\"] with input as {\"workspace\": \"dev\"}\n\ntest_prod if deny[\"lb\"] with input as {\"workspace\": \"prod\"}\n",
	})
	broken := t.TempDir()
	writeFiles(t, broken, map[string]string{"p.rego": "package main\n\ndeny contains msg if {\n\tmsg := http.send({\"url\": \"http://127.0.0.1:1\", \"method\": \"GET\"})\n}\n"})
	// Run from a checkout's root: --dir defaults to policy/.
	defaulted := t.TempDir()
	writeFiles(t, defaulted, map[string]string{"policy/p.rego": "package main\n\nwarn contains \"w\"\n", "policy/p_test.rego": "package main\n\ntest_w if warn[\"w\"]\n"})

	for _, tc := range []struct {
		name        string
		dir         string
		args        []string
		code        int
		stdout      []string
		stderr      []string
		notInStdout []string
	}{
		{name: "examples pass", args: []string{"policy", "test", "--dir", "../../examples/policy"}, code: 0,
			stdout:      []string{"PASS  main.test_loadbalancer_denied_in_dev (loadbalancer_test.rego:", "PASS  main.test_pvc_deletion_without_annotation_denied", "0 failed, 0 errored"},
			notInStdout: []string{"FAIL"}},
		{name: "default folder", dir: defaulted, args: []string{"policy", "test"}, code: 0, stdout: []string{"PASS  main.test_w (p_test.rego:3)", "1 passed, 0 failed"}},
		{name: "a failing test", args: []string{"policy", "test", "--dir", failing}, code: 1,
			stdout: []string{"FAIL  main.test_prod (rules/lb_test.rego:5)", "PASS  main.test_dev", "1 passed, 1 failed, 0 errored"}},
		{name: "a policy that does not compile", args: []string{"policy", "test", "--dir", broken}, code: 1,
			stderr: []string{"p.rego:4", "undefined function http.send"}},
		{name: "no such folder", args: []string{"policy", "test", "--dir", filepath.Join(broken, "absent")}, code: 1, stderr: []string{"not a folder"}},
		{name: "bad flag", args: []string{"policy", "test", "--nope"}, code: 2, stderr: []string{"flag provided but not defined: -nope", "usage: action policy test"}},
		{name: "bad format", args: []string{"policy", "test", "-o", "yaml"}, code: 2, stderr: []string{"neither text nor json"}},
		{name: "no subcommand", args: []string{"policy"}, code: 2, stderr: []string{"needs a subcommand"}},
		{name: "help", args: []string{"policy", "test", "--help"}, code: 0, stdout: []string{"usage: action policy test", "-dir", "-o string"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runIn(t, bin, tc.dir, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout does not say %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.notInStdout {
				if strings.Contains(stdout, w) {
					t.Errorf("stdout says %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		stdout, stderr, code := runIn(t, bin, "", "policy", "test", "--dir", failing, "-o", "json")
		if code != 1 {
			t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
		}
		var rep policy.TestReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("%v:\n%s", err, stdout)
		}
		if rep.Passed != 1 || rep.Failed != 1 || len(rep.Results) != 2 {
			t.Fatalf("report %+v", rep)
		}
		for _, r := range rep.Results {
			if r.Name == "test_prod" && (r.Status != policy.StatusFail || r.Location != "rules/lb_test.rego:5" || r.Package != "main") {
				t.Errorf("test_prod: %+v", r)
			}
		}
	})
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runIn runs bin in dir (the test's folder if empty) with no environment
// of ours.
func runIn(t *testing.T, bin, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
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
