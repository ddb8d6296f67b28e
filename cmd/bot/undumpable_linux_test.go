package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// TestStartEnvironmentHiddenFromSameUser: the bot unsets its secrets, but
// the kernel keeps the environment it started with in /proc/<pid>/environ,
// where any process of the same user (Terraform, a provider, a module
// binary) could read the webhook secret and the App key. The bot makes
// itself undumpable, so those entries are not its user's. The bot and the
// reader run as the deployment's user (65532, non-root, as
// deploy/kubernetes/bot.yaml sets); a plain process of that user beside it
// shows the read would otherwise succeed.
func TestStartEnvironmentHiddenFromSameUser(t *testing.T) {
	const uid = 65532
	var cred *syscall.Credential
	if os.Getuid() == 0 {
		cred = &syscall.Credential{Uid: uid, Gid: uid}
	}
	bin := botBinary(t)
	// The build folder is the test's; the other user must reach the binary.
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	const hookSecret = "start-environment-secret-7f3a"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=/", "TMPDIR=" + os.TempDir(),
		"KUSIONPR_WEBHOOK_SECRET=" + hookSecret, "KUSIONPR_APP_ID=1", "KUSIONPR_APP_PRIVATE_KEY=" + pemKey,
		"KUSIONPR_LISTEN=" + addr, "KUSIONPR_RECOVER_WINDOW=0", "KUSIONPR_BACKEND=mem://",
		"KUSIONPR_GITHUB_API_URL=http://127.0.0.1:1/"}

	start := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		logs := &testenv.LogBuffer{}
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
			if t.Failed() {
				t.Logf("%s:\n%s", name, logs.String())
			}
		})
		return cmd
	}
	// read is what a process of the bot's user reads of pid's environment.
	read := func(pid int) (string, error) {
		cmd := exec.Command("cat", fmt.Sprintf("/proc/%d/environ", pid))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	bot := start(bin)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bot did not come up as uid %d", uid)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Undumpable, the bot still serves what it serves as any user.
	for _, path := range []string{"/readyz", "/metrics"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s as uid %d: %s", path, uid, resp.Status)
		}
	}

	plain := start("sleep", "60")
	if out, err := read(plain.Process.Pid); err != nil || !strings.Contains(out, hookSecret) {
		t.Fatalf("a plain process of the same user should show its start environment (the attack this guards against); got %v: %q", err, out)
	}
	out, err := read(bot.Process.Pid)
	if strings.Contains(out, hookSecret) || strings.Contains(out, "PRIVATE KEY") {
		t.Fatalf("a process of the bot's user read the bot's start environment: the webhook secret or App key is in it")
	}
	if err == nil {
		t.Fatalf("reading the bot's /proc environ as its user succeeded: %q", out)
	}
}
