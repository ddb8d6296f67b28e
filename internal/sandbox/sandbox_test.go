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

func findPython(t testing.TB) python {
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

// run starts name under p with the layers l, or plainly (inheriting this
// process's environment) when p is nil, and returns its combined output
// and error.
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

// fixture is what the attacks aim at: secrets outside the policy, a
// checkout that may only be read, scratch that may be written.
type fixture struct {
	py       python
	key      string // a fake GitHub App key, outside Read
	token    string // a fake ServiceAccount token, at its usual path under a temporary root
	outside  string // a folder neither readable nor writable
	checkout string // Read
	mainK    string // a file in the checkout
	scratch  string // Write
	policy   Policy
}

const (
	keyText    = "FAKE-APP-KEY-7f3a"
	tokenText  = "FAKE-SA-TOKEN-9c1e"
	secretVar  = "KUSIONPR_APP_PRIVATE_KEY"
	secretText = "planted-secret-4b2d"
	mainKText  = "a = 1\n"
)

func newFixture(t *testing.T) fixture {
	t.Helper()
	f := fixture{py: findPython(t), outside: t.TempDir(), checkout: t.TempDir(), scratch: t.TempDir()}
	f.key = filepath.Join(f.outside, "app-key.pem")
	f.token = filepath.Join(f.outside, "var/run/secrets/kubernetes.io/serviceaccount/token")
	f.mainK = filepath.Join(f.checkout, "main.k")
	for path, text := range map[string]string{f.key: keyText, f.token: tokenText, f.mainK: mainKText} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The secret is in this process's environment, as the bot's are
	// before it removes them: an inheriting child sees it.
	t.Setenv(secretVar, secretText)
	f.policy = Policy{
		Read:  append(append([]string{}, f.py.read...), f.checkout),
		Write: []string{f.scratch},
		Env:   []string{"HOME=" + f.scratch, "PYTHONDONTWRITEBYTECODE=1"},
	}
	return f
}

// attack is a Python program that prints "ATTACK-OK" (or the secret it
// reads) when it gets what it wants; each runs unconfined first, where it
// must work, then confined under each of the layer sets, where it must
// not.
type attack struct {
	name   string
	script func(f fixture) string
	limits Limits
	// worked says whether the attack succeeded, from its output and
	// from what it left behind.
	worked func(t *testing.T, f fixture, out string) bool
	// layers are the confinements tried; nil means all controls on.
	layers []layers
}

func printed(want string) func(*testing.T, fixture, string) bool {
	return func(_ *testing.T, _ fixture, out string) bool { return strings.Contains(out, want) }
}

// Each network control alone, and all of them.
var (
	allLayers      = layers{}
	landlockNetTCP = layers{NoNamespaces: true, NoSeccomp: true}
	seccompOnly    = layers{NoNamespaces: true, NoLandlockNet: true}
	netnsOnly      = layers{NoSeccomp: true, NoLandlockNet: true}
	// Landlock as the first kernels with it have it (ABI 1, Linux 5.13),
	// alone, and with the seccomp filter that covers what it lacks.
	landlockABI1 = layers{NoNamespaces: true, NoSeccomp: true, MaxABI: 1}
	oldKernel    = layers{NoNamespaces: true, MaxABI: 2}
	landlockOnly = layers{NoNamespaces: true, NoSeccomp: true}
)

func TestAttacks(t *testing.T) {
	f := newFixture(t)
	tcp, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	tcpPort := tcp.Addr().(*net.TCPAddr).Port
	udpPort := udp.LocalAddr().(*net.UDPAddr).Port

	// tcpSaw and udpSaw say whether anything reached the listeners since
	// they were last asked.
	tcpSaw := func() bool {
		tcp.(*net.TCPListener).SetDeadline(time.Now().Add(300 * time.Millisecond))
		c, err := tcp.Accept()
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	udpSaw := func() bool {
		udp.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		buf := make([]byte, 64)
		_, _, err := udp.ReadFrom(buf)
		return err == nil
	}

	readFile := func(path func(fixture) string) func(fixture) string {
		return func(f fixture) string { return fmt.Sprintf("print(open(%q).read())", path(f)) }
	}
	for _, a := range []attack{
		{
			name:   "environment variable inherited",
			script: func(fixture) string { return fmt.Sprintf("import os; print(os.environ[%q])", secretVar) },
			worked: printed(secretText),
		},
		{
			name:   "read /proc/self/environ",
			script: readFile(func(fixture) string { return "/proc/self/environ" }),
			worked: printed(secretText),
		},
		{
			name: "read the parent's /proc environ",
			script: func(fixture) string {
				return fmt.Sprintf("s = open('/proc/%d/environ').read(); print('ATTACK-OK' if s else '')", os.Getpid())
			},
			worked: printed("ATTACK-OK"),
		},
		{
			name:   "read a key file outside Read",
			script: readFile(func(f fixture) string { return f.key }),
			worked: printed(keyText),
			layers: []layers{allLayers, landlockABI1},
		},
		{
			name:   "read the ServiceAccount token",
			script: readFile(func(f fixture) string { return f.token }),
			worked: printed(tokenText),
		},
		{
			name: "list a folder outside Read",
			script: func(f fixture) string {
				return fmt.Sprintf("import os; print(os.listdir(%q))", f.outside)
			},
			worked: printed("app-key.pem"),
		},
		{
			name: "write outside Write",
			script: func(f fixture) string {
				return fmt.Sprintf("open(%q, 'w').write('x'); print('ATTACK-OK')", filepath.Join(f.outside, "dropped"))
			},
			worked: func(t *testing.T, f fixture, out string) bool {
				_, err := os.Stat(filepath.Join(f.outside, "dropped"))
				os.Remove(filepath.Join(f.outside, "dropped"))
				return err == nil
			},
			layers: []layers{allLayers, landlockABI1},
		},
		{
			name: "overwrite a file in the read-only checkout",
			script: func(f fixture) string {
				return fmt.Sprintf("open(%q, 'a').write('b = 2\\n'); print('ATTACK-OK')", f.mainK)
			},
			worked: func(t *testing.T, f fixture, out string) bool {
				b, _ := os.ReadFile(f.mainK)
				os.WriteFile(f.mainK, []byte(mainKText), 0o644)
				return string(b) != mainKText
			},
		},
		{
			name: "truncate a file in the read-only checkout",
			script: func(f fixture) string {
				return fmt.Sprintf("import os; os.truncate(%q, 0); print('ATTACK-OK')", f.mainK)
			},
			worked: func(t *testing.T, f fixture, out string) bool {
				b, _ := os.ReadFile(f.mainK)
				os.WriteFile(f.mainK, []byte(mainKText), 0o644)
				return string(b) != mainKText
			},
			// Landlock restricts truncate(2) from ABI 3; before, on a
			// kernel such as Linux 6.1, the seccomp filter refuses it.
			layers: []layers{allLayers, landlockOnly, oldKernel},
		},
		{
			name:   "run a shell",
			script: func(fixture) string { return "import os; os.execv('/bin/sh', ['sh', '-c', 'echo ATTACK-OK'])" },
			worked: printed("ATTACK-OK"),
		},
		{
			name: "connect to a loopback TCP listener",
			script: func(fixture) string {
				return fmt.Sprintf("import socket; socket.create_connection(('127.0.0.1', %d), timeout=5).close(); print('ATTACK-OK')", tcpPort)
			},
			worked: func(t *testing.T, f fixture, out string) bool {
				saw := tcpSaw()
				return saw || strings.Contains(out, "ATTACK-OK")
			},
			layers: []layers{allLayers, landlockNetTCP, seccompOnly, netnsOnly},
		},
		{
			name: "send to a loopback UDP listener",
			script: func(fixture) string {
				return fmt.Sprintf("import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('127.0.0.1', %d)); print('ATTACK-OK')", udpPort)
			},
			worked: func(t *testing.T, f fixture, out string) bool {
				saw := udpSaw()
				return saw || strings.Contains(out, "ATTACK-OK")
			},
			// Landlock before ABI 10 does not cover UDP: the seccomp
			// filter and the network namespace each do.
			layers: []layers{allLayers, seccompOnly, netnsOnly},
		},
		{
			name: "signal a process outside the sandbox",
			script: func(fixture) string {
				return fmt.Sprintf("import os; os.kill(%d, 0); print('ATTACK-OK')", os.Getpid())
			},
			worked: printed("ATTACK-OK"),
			// Landlock's signal scope alone, and with the PID namespace.
			layers: []layers{allLayers, {NoNamespaces: true}},
		},
		{
			name:   "exceed the CPU time limit",
			script: func(fixture) string { return "import time\nwhile time.process_time() < 3: pass\nprint('ATTACK-OK')" },
			limits: Limits{CPU: time.Second},
			worked: printed("ATTACK-OK"),
		},
		{
			name:   "exceed the memory limit",
			script: func(fixture) string { return "b = bytearray(1 << 30); print('ATTACK-OK')" },
			limits: Limits{Memory: 256 << 20},
			worked: printed("ATTACK-OK"),
		},
		{
			name: "exceed the file size limit",
			script: func(f fixture) string {
				return fmt.Sprintf("open(%q, 'wb').write(b'x' * (2 << 20)); print('ATTACK-OK')", filepath.Join(f.scratch, "big"))
			},
			limits: Limits{FileSize: 1 << 20},
			worked: func(t *testing.T, f fixture, out string) bool {
				st, err := os.Stat(filepath.Join(f.scratch, "big"))
				os.Remove(filepath.Join(f.scratch, "big"))
				return err == nil && st.Size() > 1<<20
			},
		},
		{
			name: "exceed the open files limit",
			script: func(f fixture) string {
				return fmt.Sprintf("fs = [open(%q) for _ in range(64)]; print('ATTACK-OK')", f.mainK)
			},
			limits: Limits{OpenFiles: 16},
			worked: printed("ATTACK-OK"),
		},
	} {
		t.Run(a.name, func(t *testing.T) {
			script := a.script(f)
			out, err := run(t, nil, layers{}, f.py.exe, "-c", script)
			if !a.worked(t, f, out) {
				t.Fatalf("unconfined, the attack does not work, so it proves nothing (err %v): %s", err, out)
			}
			ls := a.layers
			if ls == nil {
				ls = []layers{allLayers}
			}
			for _, l := range ls {
				p := f.policy
				p.Limits = a.limits
				out, err := run(t, &p, l, f.py.exe, "-c", script)
				if a.worked(t, f, out) {
					t.Errorf("confined (%+v), the attack worked (err %v): %s", l, err, out)
				} else if err == nil {
					t.Errorf("confined (%+v), the attack failed but the target exited 0: %s", l, out)
				} else {
					t.Logf("confined (%+v): %v: %s", l, err, lastLine(out))
				}
			}
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestEnvironmentIsExactlyPolicyEnv: the target's environment is Env, in
// order, and nothing of this process's (the planted secret) nor of the
// confining step's (its policy variable).
func TestEnvironmentIsExactlyPolicyEnv(t *testing.T) {
	f := newFixture(t)
	envBin := "/usr/bin/env"
	p := f.policy
	p.Read = append(p.Read, envBin)
	p.Env = []string{"B=2", "A=1", "HOME=" + f.scratch}

	out, err := run(t, nil, layers{}, envBin)
	if err != nil || !strings.Contains(out, secretVar+"="+secretText) {
		t.Fatalf("unconfined env does not show the planted secret (%v): %s", err, out)
	}
	out, err = run(t, &p, layers{}, envBin)
	if err != nil {
		t.Fatalf("confined env: %v: %s", err, out)
	}
	if got, want := out, strings.Join(p.Env, "\n")+"\n"; got != want {
		t.Errorf("confined environment:\n%s\nwant exactly:\n%s", got, want)
	}
}

// TestAllowed: what the policy grants works confined, so the attacks
// above fail for the control, not because Python cannot run.
func TestAllowed(t *testing.T) {
	f := newFixture(t)
	script := fmt.Sprintf(`
import os, json
src = open(%q).read()
os.makedirs(%q, exist_ok=True)
open(%q, 'w').write(src)
print(json.dumps({"read": src, "listed": sorted(os.listdir(%q))}))
`, f.mainK, filepath.Join(f.scratch, "out"), filepath.Join(f.scratch, "out", "copy.k"), f.checkout)
	p := f.policy
	p.Limits = Limits{CPU: 10 * time.Second, Memory: 512 << 20, FileSize: 1 << 20, OpenFiles: 64}
	out, err := run(t, &p, layers{}, f.py.exe, "-c", script)
	if err != nil {
		t.Fatalf("confined python: %v: %s", err, out)
	}
	if want := `{"read": "a = 1\n", "listed": ["main.k"]}` + "\n"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
	if b, err := os.ReadFile(filepath.Join(f.scratch, "out", "copy.k")); err != nil || string(b) != mainKText {
		t.Errorf("scratch copy: %v %q", err, b)
	}
}

// TestCommandRefuses: a policy that cannot be applied fails before
// anything runs, and a target outside Read fails with the confining
// step's own exit code and reason.
func TestCommandRefuses(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, p := range []Policy{
		{Read: []string{"relative/path"}},
		{Read: []string{filepath.Join(f.outside, "missing")}},
	} {
		if _, err := Command(ctx, p, f.py.exe); err == nil {
			t.Errorf("Command(%v) = nil error", p.Read)
		}
	}
	out, err := run(t, &Policy{Read: []string{f.checkout}}, layers{}, f.py.exe, "-c", "pass")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitSetup || !strings.Contains(out, "kusionpr sandbox: executing") {
		t.Errorf("target outside Read: %v: %s", err, out)
	}
}

// TestCancelKillsWhatTheTargetStarted: a target that starts a process in
// a new session, which leaves its process group, and then is cancelled:
// confined, the PID namespace dies with the target and takes it along;
// plainly, it outlives the cancel and writes its file.
func TestCancelKillsWhatTheTargetStarted(t *testing.T) {
	f := newFixture(t)
	alive := filepath.Join(f.scratch, "alive")
	script := fmt.Sprintf(`
import os, sys, time
if os.fork() == 0:
    os.setsid()
    time.sleep(1.5)
    open(%q, 'w').write('x')
    os._exit(0)
print('started', flush=True)
time.sleep(60)
`, alive)
	for _, confined := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		cmd := exec.CommandContext(ctx, f.py.exe, "-c", script)
		if confined {
			var err error
			if cmd, err = Command(ctx, f.policy, f.py.exe, "-c", script); err != nil {
				t.Fatal(err)
			}
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 8)
		if _, err := stdout.Read(buf); err != nil {
			t.Fatalf("confined %v: reading the target's start: %v", confined, err)
		}
		cancel()
		cmd.Wait()
		time.Sleep(2500 * time.Millisecond)
		_, err = os.Stat(alive)
		if survived := err == nil; survived == confined {
			t.Errorf("confined %v: the process started in a new session survived the cancel: %v, want %v", confined, survived, !confined)
		}
		os.Remove(alive)
	}
}
