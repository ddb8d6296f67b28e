package kcl

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// testdata is the absolute folder of the fixtures: a program's paths are.
func testdata(t testing.TB, elem ...string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(append([]string{"testdata"}, elem...)...))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// program is a fixture stack compiled with the fixture package service.
func program(t testing.TB, stack string, files ...string) Program {
	t.Helper()
	if len(files) == 0 {
		files = []string{"main.k"}
	}
	return Program{WorkDir: testdata(t, stack), Files: files, Packages: []Package{{Name: "service", Path: testdata(t, "service")}}}
}

func session(t testing.TB, c Compiler) *Session {
	t.Helper()
	c.Runtime = testenv.KCLRuntime(t)
	s, err := c.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// field is the value at a dotted path of a YAML document.
func field(t *testing.T, doc map[string]any, path string) any {
	t.Helper()
	var v any = doc
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: %v is not a map", path, v)
		}
		if v, ok = m[k]; !ok {
			return nil
		}
	}
	return v
}

func TestCompile(t *testing.T) {
	s := session(t, Compiler{})
	withArgs := program(t, "args")
	withArgs.Args = map[string]string{"env": "prod", "replicas": "3"}
	for _, tc := range []struct {
		name string
		prog Program
		want map[string]any
		// absent are paths the output must not have.
		absent []string
	}{{
		// A schema instance carries its full type path, as Kusion asks:
		// the package's and a subpackage's.
		name: "type paths and the profile's entries merged",
		prog: program(t, "merge", "base/base.k", "main.k"),
		want: map[string]any{
			"app._type":         "service.Service",
			"sidecar._type":     "service.container.Container",
			"app.name":          "web",
			"app.description":   "the base's",
			"app.labels.team":   "payments", // ':' unions the base's labels ...
			"app.labels.env":    "prod",     // ... with main.k's
			"app.replicas":      float64(3), // '=' overrides the base's 2
			"app.ports":         []any{float64(8080), float64(8443)},
			"sidecar.image":     "envoy:1.30",
			"sidecar.env.LOG":   "info",
			"sidecar.env.LEVEL": "2",
		},
	}, {
		name: "None values dropped",
		prog: program(t, "nones"),
		want: map[string]any{
			"app.name":     "api",
			"app.replicas": float64(1), // the schema's default
			"app.ports":    []any{float64(80)},
			"app._type":    "service.Service",
			"kept.a":       float64(1),
		},
		absent: []string{"unset", "kept.b", "app.description"},
	}, {
		name: "top-level arguments",
		prog: withArgs,
		want: map[string]any{"env": "prod", "replicas": float64(3)},
		// option() of an argument not given is None, dropped.
		absent: []string{"missing"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := s.Compile(context.Background(), tc.prog)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := yaml.Unmarshal(out, &doc); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for path, want := range tc.want {
				if got := field(t, doc, path); !equal(got, want) {
					t.Errorf("%s = %#v, want %#v\n%s", path, got, want, out)
				}
			}
			for _, path := range tc.absent {
				if got := field(t, doc, path); got != nil {
					t.Errorf("%s = %#v, want it absent\n%s", path, got, out)
				}
			}
		})
	}
}

func equal(a, b any) bool {
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok {
		return slices.Equal(as, bs)
	}
	return a == b
}

// What KCL refuses names file, line and column and KCL's message, never
// the line itself nor a value from it: each fixture's failing line holds a
// secret.
func TestCompileErrors(t *testing.T) {
	s := session(t, Compiler{})
	for _, tc := range []struct {
		stack  string
		want   string // a regular expression the error matches
		kind   string
		secret string
		line   string // the failing line's text, never shown
	}{
		{stack: "syntax", want: `^compiling .*/syntax: main\.k:2:\d+: InvalidSyntax: expected one of`, kind: "InvalidSyntax",
			secret: "hunter2-SYNTAX-secret", line: "password ="},
		{stack: "typeerr", want: `^compiling .*/typeerr: main\.k:3:\d+: TypeError: expected int, got str\(…\); at service\.k:\d+:\d+ \(package service\)`, kind: "TypeError",
			secret: "hunter2-TYPE-secret", line: "replicas ="},
		{stack: "check", want: `^compiling .*/check: main\.k:3:\d+: EvaluationError: Instance check failed; at service\.k:9:\d+ \(package service\): Check failed on the condition: name must be a DNS label$`, kind: "EvaluationError",
			secret: "secret", line: "service.Service {"},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			_, err := s.Compile(context.Background(), program(t, tc.stack))
			if err == nil {
				t.Fatal("compiled")
			}
			msg := err.Error()
			if !regexp.MustCompile(tc.want).MatchString(msg) {
				t.Errorf("error:\n%s\nwant it to match %s", msg, tc.want)
			}
			for _, never := range []string{tc.secret, tc.line, "\x1b["} {
				if strings.Contains(msg, never) {
					t.Errorf("the error shows %q:\n%s", never, msg)
				}
			}
			var kerr *Error
			if !errors.As(err, &kerr) || len(kerr.Diagnostics) == 0 || kerr.Diagnostics[0].Kind != tc.kind || kerr.Diagnostics[0].File != "main.k" {
				t.Errorf("not an *Error with a %s in main.k: %#v", tc.kind, kerr)
			}
		})
	}
}

// A check's message that interpolates the value it checks: the value is
// taken out, the message kept.
func TestCheckMessageValueRedacted(t *testing.T) {
	s := session(t, Compiler{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "kcl.mod"), "[package]\nname = \"x\"\nversion = \"0.1.0\"\n")
	write(t, filepath.Join(dir, "main.k"), `schema Secret:
    value: str
    check:
        len(value) < 8, "value ${value} is too long"

db = Secret {value = "correct-horse-battery"}
`)
	_, err := s.Compile(context.Background(), Program{WorkDir: dir, Files: []string{"main.k"}})
	if err == nil {
		t.Fatal("compiled")
	}
	if msg := err.Error(); strings.Contains(msg, "correct-horse") || !strings.Contains(msg, "main.k:6:") || !strings.Contains(msg, "value … is too long") {
		t.Errorf("error:\n%s", msg)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// One process serves every compile of a session, callers concurrent.
func TestOneProcessServesManyCompiles(t *testing.T) {
	s := session(t, Compiler{})
	const callers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, callers*each)
	start := time.Now()
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				out, err := s.Compile(context.Background(), program(t, "merge", "base/base.k", "main.k"))
				if err == nil && !strings.Contains(string(out), "_type: service.Service") {
					err = errors.New("unexpected output:\n" + string(out))
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d compiles in %s, %s each", callers*each, time.Since(start).Round(time.Millisecond), (time.Since(start) / (callers * each)).Round(time.Microsecond))
	if s.starts != 1 {
		t.Errorf("the runtime was started %d times, want once", s.starts)
	}
}

// A runtime that ends (a crash, a memory limit's kill) fails the compile
// under way, saying so, and the next compile starts another.
func TestRuntimeEnds(t *testing.T) {
	s := session(t, Compiler{Timeout: time.Minute})
	ctx := context.Background()

	// Between compiles.
	first := s.proc.pid
	if err := s.proc.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s.proc.exited
	_, err := s.Compile(ctx, program(t, "nones"))
	if err == nil || !regexp.MustCompile(`the KCL runtime \(pid \d+\) ended during the compile \(signal: killed\); the next compile starts another`).MatchString(err.Error()) {
		t.Fatalf("compile after the runtime was killed: %v", err)
	}
	if _, err := s.Compile(ctx, program(t, "nones")); err != nil {
		t.Fatalf("the next compile: %v", err)
	}
	if s.starts != 2 || s.proc.pid == first {
		t.Errorf("started %d times (pid %d, first %d), want a second process", s.starts, s.proc.pid, first)
	}

	// During one.
	p := s.proc
	go func() {
		time.Sleep(300 * time.Millisecond)
		p.cmd.Process.Kill()
	}()
	_, err = s.Compile(ctx, program(t, "loop"))
	if err == nil || !strings.Contains(err.Error(), "ended during the compile (signal: killed)") {
		t.Fatalf("compile whose runtime was killed: %v", err)
	}
	if _, err := s.Compile(ctx, program(t, "nones")); err != nil {
		t.Fatalf("the next compile: %v", err)
	}
	if s.starts != 3 {
		t.Errorf("started %d times, want 3", s.starts)
	}
}

func TestLimits(t *testing.T) {
	s := session(t, Compiler{MaxOutput: 10 << 10, Timeout: time.Second})
	ctx := context.Background()
	for _, tc := range []struct {
		stack, want string
	}{
		{"big", `compiling .*/big: its YAML is \d+ bytes, over the 10240-byte limit \(Compiler\.MaxOutput\)`},
		{"loop", `compiling .*/loop: KCL took longer than 1s \(Compiler\.Timeout\); its process was stopped`},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			start := time.Now()
			_, err := s.Compile(ctx, program(t, tc.stack))
			if err == nil || !regexp.MustCompile(tc.want).MatchString(err.Error()) {
				t.Fatalf("error %v, want %s", err, tc.want)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("took %s", took)
			}
			// The session goes on.
			if _, err := s.Compile(ctx, program(t, "nones")); err != nil {
				t.Fatalf("the next compile: %v", err)
			}
		})
	}
	// The output limit cost no process; the time limit one.
	if s.starts != 2 {
		t.Errorf("started %d times, want 2", s.starts)
	}
}

// A compile given up by its caller stops the process too: its work is of
// no use, and the next caller must not wait for it.
func TestCompileCanceled(t *testing.T) {
	s := session(t, Compiler{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := s.Compile(ctx, program(t, "loop"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the context's", err)
	}
	if _, err := s.Compile(context.Background(), program(t, "nones")); err != nil {
		t.Fatal(err)
	}
}

func TestRuntimeMissingOrBroken(t *testing.T) {
	broken := t.TempDir()
	if err := os.MkdirAll(filepath.Join(broken, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(broken, "bin", "python3"), "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'kcl_lib'\" >&2\nexit 1\n")
	if err := os.Chmod(filepath.Join(broken, "bin", "python3"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ runtime, want string }{
		{"", `^the KCL runtime is not set \(KUSIONPR_KCL_RUNTIME\): install it with hack/kcl.sh install`},
		{filepath.Join(broken, "none"), `^the KCL runtime .*/none \(KUSIONPR_KCL_RUNTIME\) has no bin/python3: install it with hack/kcl.sh install`},
		{broken, `^the KCL runtime .* \(KUSIONPR_KCL_RUNTIME\) did not start: exit status 1: ModuleNotFoundError: No module named 'kcl_lib'; install it with hack/kcl.sh install`},
	} {
		_, err := (&Compiler{Runtime: tc.runtime}).Start(context.Background())
		if err == nil || !regexp.MustCompile(tc.want).MatchString(err.Error()) {
			t.Errorf("runtime %q: %v, want %s", tc.runtime, err, tc.want)
		}
	}
}

// The process gets exactly the environment given to Command, which may
// wrap it (a sandbox).
func TestCommandHook(t *testing.T) {
	t.Setenv("KUSIONPR_TEST_LEAK", "leaked")
	var gotEnv []string
	var gotArgs []string
	s := session(t, Compiler{Command: func(ctx context.Context, name string, args, env []string) (*exec.Cmd, error) {
		gotArgs, gotEnv = args, env
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = env
		return cmd, nil
	}})
	if len(gotEnv) != 0 || gotEnv == nil {
		t.Errorf("env %q, want empty", gotEnv)
	}
	if !slices.Equal(gotArgs[:5], []string{"-I", "-B", "-X", "utf8", "-c"}) {
		t.Errorf("args %q", gotArgs[:5])
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "main.k"), "leak = option(\"x\") or \"none\"\n")
	if _, err := s.Compile(context.Background(), Program{WorkDir: dir, Files: []string{"main.k"}}); err != nil {
		t.Fatal(err)
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(s.proc.pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), "KUSIONPR_TEST_LEAK") {
		t.Errorf("the runtime's environment holds ours: %q", env)
	}
}

func TestClosedSession(t *testing.T) {
	s := session(t, Compiler{})
	p := s.proc
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the runtime still runs after Close")
	}
	if _, err := s.Compile(context.Background(), program(t, "nones")); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("compile after Close: %v", err)
	}
}

// What a run pays once (the runtime's start) and per stack.
func BenchmarkStart(b *testing.B) {
	c := Compiler{Runtime: testenv.KCLRuntime(b)}
	for b.Loop() {
		s, err := c.Start(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

func BenchmarkCompile(b *testing.B) {
	s := session(b, Compiler{})
	prog := program(b, "merge", "base/base.k", "main.k")
	for b.Loop() {
		if _, err := s.Compile(context.Background(), prog); err != nil {
			b.Fatal(err)
		}
	}
}
