package policy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing/fstest"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"
)

// A repository's rules are its code. OPA keeps them from the network,
// files and the environment, but not from the memory and time of the
// process evaluating them: a rule nesting replace or concat calls builds
// strings of gigabytes in one builtin call, which no cancellation
// interrupts (seen running seconds past its timeout with most of a
// gigabyte). A Sandbox evaluates in a child process, started anew for each
// evaluation with an empty environment, its data segment bounded by the
// kernel (RLIMIT_DATA, which counts what the Go runtime maps for its
// heap) and killed at the timeout: a rule can exhaust nothing but its own
// process, which holds none of its parent's secrets.

// SandboxArg, as a program's first argument, makes it a sandbox: its main
// calls ServeSandbox (IsSandbox tells).
const SandboxArg = "__kusionpr-policy-sandbox"

// DefaultMaxMemory bounds a sandbox's data when Sandbox gives no bound:
// a stack's input of thousands of resources and its rules fit with room.
const DefaultMaxMemory = 512 << 20

// sandboxStart bounds a sandbox's start and its compilation of the rules,
// before its evaluation's timeout runs; sandboxGrace is how long past the
// timeout the parent waits for the answer before it kills the child.
const (
	sandboxStart = 10 * time.Second
	sandboxGrace = time.Second
)

// maxAnswer bounds what a sandbox may answer: findings, not a dump.
const maxAnswer = 16 << 20

// Sandbox runs evaluations in child processes of a program that serves
// them (ServeSandbox).
type Sandbox struct {
	// Path and Args start the child; Self gives the running program's.
	Path string
	Args []string
	// MaxMemory bounds the child's data segment in bytes (default
	// DefaultMaxMemory).
	MaxMemory int64
}

// Self is the sandbox of the running program, whose main must serve
// SandboxArg.
func Self(maxMemory int64) (*Sandbox, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("the policy sandbox: %w", err)
	}
	return &Sandbox{Path: exe, Args: []string{SandboxArg}, MaxMemory: maxMemory}, nil
}

// IsSandbox reports whether args (os.Args) start a sandbox.
func IsSandbox(args []string) bool { return len(args) > 1 && args[1] == SandboxArg }

// ServeIfSandbox, when this program was started as a sandbox, serves its
// evaluation and exits; otherwise it returns. A program that evaluates
// with Self calls it first thing in main, and so does a test binary
// (TestMain) whose code under test does.
func ServeIfSandbox() {
	if IsSandbox(os.Args) {
		os.Exit(ServeSandbox(context.Background(), os.Stdin, os.Stdout))
	}
}

func (sb *Sandbox) maxMemory() int64 {
	if sb.MaxMemory > 0 {
		return sb.MaxMemory
	}
	return DefaultMaxMemory
}

// sandboxRequest is one evaluation, as the child reads it.
type sandboxRequest struct {
	Files    map[string]string `json:"files"`
	Packages []string          `json:"packages,omitempty"`
	Timeout  time.Duration     `json:"timeout"`
	Input    json.RawMessage   `json:"input"`
}

// sandboxAnswer is its outcome.
type sandboxAnswer struct {
	Result *Result `json:"result,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// compiledLine is what the child writes once the rules compile: from
// then on, the evaluation's timeout runs.
const compiledLine = "compiled\n"

// ServeSandbox is a sandbox's main: it reads one evaluation from r,
// compiles and evaluates it, and writes the answer to w. It returns the
// process's exit code.
func ServeSandbox(ctx context.Context, r io.Reader, w io.Writer) int {
	var req sandboxRequest
	if err := json.NewDecoder(r).Decode(&req); err != nil {
		fmt.Fprintf(os.Stderr, "policy sandbox: read the request: %v\n", err)
		return 2
	}
	answer := func(a sandboxAnswer) int {
		if err := json.NewEncoder(w).Encode(a); err != nil {
			return 2
		}
		return 0
	}
	fsys := memFS(req.Files)
	set, err := Load(ctx, fsys, Options{Packages: req.Packages, Timeout: req.Timeout})
	if err != nil {
		return answer(sandboxAnswer{Error: err.Error()})
	}
	if _, err := io.WriteString(w, compiledLine); err != nil {
		return 2
	}
	var doc any
	if err := util.UnmarshalJSON(req.Input, &doc); err != nil {
		return answer(sandboxAnswer{Error: fmt.Sprintf("policy input: %v", err)})
	}
	value, err := ast.InterfaceToValue(doc)
	if err != nil {
		return answer(sandboxAnswer{Error: fmt.Sprintf("policy input: %v", err)})
	}
	res, err := set.eval(ctx, value)
	if err != nil {
		return answer(sandboxAnswer{Error: err.Error()})
	}
	return answer(sandboxAnswer{Result: &res})
}

// evalIn evaluates the set's rules on input in a child of sb.
func (s *Set) evalIn(ctx context.Context, sb *Sandbox, input Input) (Result, error) {
	doc, err := input.JSON()
	if err != nil {
		return Result{}, err
	}
	req, err := json.Marshal(sandboxRequest{Files: s.sources, Packages: s.packages, Timeout: s.timeout, Input: doc})
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.Command(sb.Path, sb.Args...)
	// Nothing of the parent's environment: the Go runtime's soft limit
	// below the hard one makes it collect before the kernel refuses.
	cmd.Env = []string{fmt.Sprintf("GOMEMLIMIT=%d", sb.maxMemory()*3/4), "GOMAXPROCS=1"}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Result{}, fmt.Errorf("the policy sandbox: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, fmt.Errorf("the policy sandbox: %w", err)
	}
	var stderr head
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("the policy sandbox: start %s: %w", sb.Path, err)
	}
	// The child waits for the request on its standard input: bounded
	// before it reads a byte of it.
	limitErr := limit(cmd.Process.Pid, sb.maxMemory(), s.timeout+sandboxStart)
	var once sync.Once
	kill := func() { once.Do(func() { cmd.Process.Kill() }) }
	if limitErr != nil {
		kill()
		cmd.Wait()
		return Result{}, fmt.Errorf("the policy sandbox: bound the child: %w", limitErr)
	}
	go func() {
		stdin.Write(req)
		stdin.Close()
	}()

	// The answer arrives in two steps: the rules compiled, then the
	// evaluation's outcome, each within its time.
	type step struct {
		line []byte
		err  error
	}
	steps := make(chan step, 2)
	go func() {
		br := bufio.NewReaderSize(io.LimitReader(stdout, maxAnswer), 64<<10)
		first, err := br.ReadBytes('\n')
		steps <- step{first, err}
		if err != nil || string(first) != compiledLine {
			return
		}
		rest, err := io.ReadAll(br)
		steps <- step{rest, err}
	}()
	wait := func(d time.Duration) (step, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case st := <-steps:
			return st, nil
		case <-t.C:
			return step{}, context.DeadlineExceeded
		case <-ctx.Done():
			return step{}, ctx.Err()
		}
	}
	fail := func(err error) (Result, error) {
		kill()
		cmd.Wait()
		return Result{}, err
	}
	st, err := wait(sandboxStart)
	switch {
	case err != nil:
		return fail(fmt.Errorf("the policy sandbox did not compile the rules within %s: %w", sandboxStart, err))
	case string(st.line) != compiledLine:
		// The rules did not compile: the line is the answer.
		cmd.Wait()
		return decodeAnswer(st.line, &stderr, sb, cmd.ProcessState)
	}
	if st, err = wait(s.timeout + sandboxGrace); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fail(fmt.Errorf("policy evaluation exceeded the timeout of %s", s.timeout))
		}
		return fail(fmt.Errorf("policy evaluation: %w", err))
	}
	cmd.Wait()
	return decodeAnswer(st.line, &stderr, sb, cmd.ProcessState)
}

// decodeAnswer reads the child's answer, or says why it gave none.
func decodeAnswer(raw []byte, stderr *head, sb *Sandbox, ps *os.ProcessState) (Result, error) {
	var a sandboxAnswer
	if err := json.Unmarshal(bytes.TrimSpace(raw), &a); err != nil || (a.Result == nil && a.Error == "") {
		msg := stderr.String()
		if strings.Contains(msg, "out of memory") || strings.Contains(msg, "cannot allocate memory") {
			return Result{}, fmt.Errorf("policy evaluation exceeded the memory bound of %d MiB", sb.maxMemory()>>20)
		}
		if ps != nil && !ps.Success() {
			return Result{}, fmt.Errorf("policy evaluation failed: the sandbox ended with %s: %s", ps, firstLine(msg))
		}
		return Result{}, errors.New("policy evaluation failed: the sandbox gave no answer")
	}
	if a.Error != "" {
		return Result{}, errors.New(a.Error)
	}
	return *a.Result, nil
}

// head keeps the first bytes written to it: where a dying Go program
// says why, before the stacks of its goroutines.
type head struct {
	mu  sync.Mutex
	buf []byte
}

func (t *head) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := 8<<10 - len(t.buf); room > 0 {
		t.buf = append(t.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (t *head) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// memFS is files as a folder.
func memFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, body := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(body), Mode: 0o644}
	}
	return fsys
}

// firstLine is the first line of a child's last words.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
