package kcl_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine/kcl"
	"github.com/kusionpr/kusionpr/engine/kcl/deps"
	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// attackStack writes a checkout holding the stack "attack" whose main.k is
// src, and loads it.
func attackStack(t *testing.T, src string) (root string, st *project.Stack) {
	t.Helper()
	root = t.TempDir()
	for name, data := range map[string]string{
		"project.yaml": "name: p\n", "attack/stack.yaml": "name: attack\n", "attack/main.k": src,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := project.LoadStack(root, filepath.Join(root, "attack"))
	if err != nil {
		t.Fatal(err)
	}
	return root, st
}

// TestConfinementAgainstMainK: what a pull request's main.k can do to the
// process compiling it, run once by a runtime started as a program
// usually is (this process's environment, no sandbox) and once as Stacks
// starts it. Without the confinement, the job's secret variable is read
// and a file is planted in the checkout; with it, the variable is not
// there and the write is refused. (KCL itself refuses file.read outside
// the stack's folder, confined or not; internal/sandbox's TestAttacks
// shows the sandbox refusing those reads to the process as well.)
func TestConfinementAgainstMainK(t *testing.T) {
	rt := testenv.KCLRuntime(t)
	const secret = "job-s3cret-for-kcl"
	t.Setenv("KUSIONPR_TEST_JOB_SECRET", secret)
	for _, tc := range []struct {
		name, src string
		// opened says the attack worked, from the output or the checkout.
		opened func(out []byte, root string) bool
	}{
		{name: "the job's environment", src: "import file\nleak = file.read_env(\"KUSIONPR_TEST_JOB_SECRET\")\n",
			opened: func(out []byte, _ string) bool { return strings.Contains(string(out), secret) }},
		{name: "a write into the checkout", src: "import file\n_w = file.write(\"planted.txt\", \"x\")\ndone = 1\n",
			opened: func(_ []byte, root string) bool {
				_, err := os.Stat(filepath.Join(root, "attack", "planted.txt"))
				return err == nil
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Unconfined: the runtime as a program runs by default, with
			// our environment.
			root, st := attackStack(t, tc.src)
			plain := kcl.Compiler{Runtime: rt, Command: func(ctx context.Context, name string, args, _ []string) (*exec.Cmd, error) {
				return exec.CommandContext(ctx, name, args...), nil
			}}
			sess, err := plain.Start(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			out, err := sess.Compile(context.Background(), kcl.Program{WorkDir: st.Path, Files: []string{"main.k"}})
			sess.Close()
			if err != nil || !tc.opened(out, root) {
				t.Fatalf("unconfined, the attack did not work (%v): the test proves nothing\n%s", err, out)
			}

			root, st = attackStack(t, tc.src)
			res, err := deps.New(deps.Options{CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			stacks := &kcl.Stacks{Compiler: kcl.Compiler{Runtime: rt}, Resolver: res, Root: root}
			defer stacks.Close()
			out, err = stacks.Compile(context.Background(), st)
			if tc.opened(out, root) {
				t.Fatalf("confined, the attack worked (err %v)\n%s", err, out)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Fatalf("the error holds the secret: %v", err)
			}
		})
	}
}

// TestProfileEntriesOutsideTheCheckout: kcl.mod's entries name files of
// the checkout; one leading out of it is refused before KCL runs.
func TestProfileEntriesOutsideTheCheckout(t *testing.T) {
	root, st := attackStack(t, "a = 1\n")
	outside := filepath.Join(t.TempDir(), "outside.k")
	if err := os.WriteFile(outside, []byte("b = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(st.Path, "kcl.mod"), []byte("[package]\nname = \"a\"\n\n[profile]\nentries = [\"../../"+filepath.Base(filepath.Dir(outside))+"/outside.k\", \"main.k\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := deps.New(deps.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// No runtime is needed: the entry is refused before one starts.
	stacks := &kcl.Stacks{Compiler: kcl.Compiler{Runtime: "/nonexistent"}, Resolver: res, Root: root}
	_, err = stacks.Compile(context.Background(), st)
	if err == nil || !strings.Contains(err.Error(), "[profile] entries") || !strings.Contains(err.Error(), "lies outside the checkout") {
		t.Fatalf("error = %v, want the entry refused as outside the checkout", err)
	}
}

// TestKCLModLinkedOutOfTheCheckout: a pull request's kcl.mod (or
// kcl.mod.lock) that is a link to a file of the machine's is refused
// unread, naming the file: its content never reaches a parser whose
// messages go to a comment.
func TestKCLModLinkedOutOfTheCheckout(t *testing.T) {
	const secret = "linked-s3cret-token"
	outside := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(outside, []byte("TOKEN="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kcl.mod", "kcl.mod.lock"} {
		t.Run(name, func(t *testing.T) {
			root, st := attackStack(t, "a = 1\n")
			if name == "kcl.mod.lock" {
				if err := os.WriteFile(filepath.Join(st.Path, "kcl.mod"), []byte("[package]\nname = \"a\"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(outside, filepath.Join(st.Path, name)); err != nil {
				t.Fatal(err)
			}
			res, err := deps.New(deps.Options{CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			// No runtime is needed: the file is refused before one starts.
			stacks := &kcl.Stacks{Compiler: kcl.Compiler{Runtime: "/nonexistent"}, Resolver: res, Root: root}
			_, err = stacks.Compile(context.Background(), st)
			if err == nil || !strings.Contains(err.Error(), name+": it is a link to a file outside") || strings.Contains(err.Error(), "TOKEN") {
				t.Fatalf("error = %v, want %s refused as a link out of the checkout, its content unread", err, name)
			}
		})
	}
}
