package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/settings"
)

// runBot runs the built bot with args and env (nothing else of ours) and
// returns its stdout, stderr and exit code. It must end by itself: one
// that started serving is killed after a minute (exit -1).
func runBot(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	// Built first: the minute is the bot's own, not a busy machine's build.
	bin := botBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
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
			for _, w := range []string{"GitHub App", "KUSIONPR_WEBHOOK_SECRET", "KUSIONPR_APP_ID", "KUSIONPR_APP_PRIVATE_KEY", "KUSIONPR_CONFIG", "docs/bot.md", "docs/settings.md"} {
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

// TestBotRefusesBadConfiguration: a key the bot cannot sign with, or an
// App ID that is a word, stops it at start, naming the variable once and
// never the key; it does not listen (KUSIONPR_LISTEN is a port we then
// find free) and look healthy while every delivery would fail.
func TestBotRefusesBadConfiguration(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base := []string{"KUSIONPR_WEBHOOK_SECRET=s3cr3t-hook", "KUSIONPR_LISTEN=" + addr}
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"a key that is not PEM", []string{"KUSIONPR_APP_ID=12", "KUSIONPR_APP_PRIVATE_KEY=notapem"}, "KUSIONPR_APP_PRIVATE_KEY: not a PEM private key"},
		{"an App ID that is a word", []string{"KUSIONPR_APP_ID=abc", "KUSIONPR_APP_PRIVATE_KEY=" + appKeyPEM(t)}, `KUSIONPR_APP_ID: "abc" is not a number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runBot(t, append(append([]string{}, base...), tc.env...))
			if code == 0 {
				t.Errorf("exit 0: the bot started")
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr does not say %q:\n%s", tc.want, stderr)
			}
			if n := strings.Count(stderr, "\n"); n != 1 {
				t.Errorf("%d lines, want the one error:\n%s", n, stderr)
			}
			if strings.Contains(stderr+stdout, "notapem") || strings.Contains(stderr+stdout, "listening") {
				t.Errorf("the key was echoed or the bot listened:\n%s%s", stdout, stderr)
			}
			// Nothing answers where it would have listened.
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				t.Errorf("something listens on %s", addr)
			}
		})
	}
}

// appKeyPEM is a valid App key, so only the other setting is at fault.
func appKeyPEM(t *testing.T) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
}

// TestHelpListsTheDeclaredSettings: --help lists every setting the bot
// reads, under its variable (or the file's key) with its type and help,
// as package settings declares it, and nothing else: a setting added or
// dropped there shows here without another edit.
func TestHelpListsTheDeclaredSettings(t *testing.T) {
	help := usage()
	listed := map[string]bool{}
	for _, l := range strings.Split(help, "\n") {
		if f := strings.Fields(l); strings.HasPrefix(l, "  KUSIONPR_") && len(f) > 0 {
			listed[f[0]] = true
		}
	}
	for _, s := range settings.All() {
		if s.Var == nil || !s.Var.Bot {
			continue
		}
		name := s.Var.Name
		if name == "" {
			name = "(file only) " + s.Type.String() + " (" + s.Var.YAML + ")"
		} else {
			name += " " + s.Type.String()
		}
		if !strings.Contains(help, "\n  "+name) || !strings.Contains(help, s.Help) {
			t.Errorf("--help does not list %s with its help %q", name, s.Help)
		}
		delete(listed, s.Var.Name)
	}
	for name := range listed {
		t.Errorf("--help lists %s, which the bot does not read", name)
	}
}
