//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// python is an interpreter the tests run confined, and what it needs to
// read: its executable, its standard library and the shared libraries.
type python struct {
	exe  string
	read []string
}

func findPython(t *testing.T) python {
	t.Helper()
	exe := "/usr/bin/python3"
	if _, err := os.Stat(exe); err != nil {
		if exe, err = exec.LookPath("python3"); err != nil {
			t.Fatalf("the sandbox tests need python3: %v", err)
		}
	}
	// Asked unconfined: a pyenv shim or a venv resolves to the real
	// interpreter and its prefix.
	out, err := exec.Command(exe, "-c", "import sys; print(sys.executable); print(sys.base_prefix)").Output()
	if err != nil {
		t.Fatalf("asking %s where it lives: %v", exe, err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != 2 {
		t.Fatalf("unexpected answer from %s: %q", exe, out)
	}
	real, err := filepath.EvalSymlinks(lines[0])
	if err != nil {
		t.Fatal(err)
	}
	read := []string{real, filepath.Join(lines[1], "lib")}
	for _, p := range []string{"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache"} {
		if _, err := os.Stat(p); err == nil {
			read = append(read, p)
		}
	}
	return python{exe: real, read: read}
}

// run starts name under p, or plainly when p is nil, with env as the
// unconfined environment's addition, and returns its combined output and
// error.
func run(t *testing.T, p *Policy, l layers, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var cmd *exec.Cmd
	if p == nil {
		cmd = exec.CommandContext(ctx, name, args...)
	} else {
		var err error
		if cmd, err = command(ctx, *p, l, name, args...); err != nil {
			t.Fatalf("Command: %v", err)
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func TestCheck(t *testing.T) {
	s, err := Check()
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	t.Logf("this kernel: %s", s)
	// The machines this project runs its tests on (Linux 6.18) have all
	// of it; a change there should be seen, not skipped.
	if s.LandlockABI < 6 || !s.Namespaces {
		t.Errorf("expected Landlock ABI 6+ and namespaces here, got %s", s)
	}
}

func TestSmoke(t *testing.T) {
	py := findPython(t)
	p := Policy{Read: py.read, Env: []string{"A=b"}}
	out, err := run(t, &p, layers{}, py.exe, "-c", "print('hello')")
	if err != nil || out != "hello\n" {
		t.Fatalf("confined python: %v, %q", err, out)
	}
	_ = fmt.Sprint
	_ = errors.New
	_ = net.Dial
}
