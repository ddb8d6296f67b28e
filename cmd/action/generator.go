package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kusionpr/kusionpr/engine/generate/module"
	"github.com/kusionpr/kusionpr/engine/project"
)

// maxGenerateOutput bounds what the generate-command writes, stdout and
// stderr together: it is read into memory and into the job log.
const maxGenerateOutput = 1 << 20

// withheld are the variables of the action's environment a
// generate-command never gets: the credentials the action holds (its
// inputs, the GitHub token, the runner's tokens for its own services and
// for OIDC, the kubeconfig it falls back on) and the files through which
// a step talks to the runner (GITHUB_ENV would set variables for the
// job's later steps).
var withheld = []string{
	"GITHUB_TOKEN", "KUBECONFIG",
	"ACTIONS_RUNTIME_TOKEN", "ACTIONS_RUNTIME_URL", "ACTIONS_RESULTS_URL", "ACTIONS_CACHE_URL",
	"ACTIONS_ID_TOKEN_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL",
	"GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STATE", "GITHUB_STEP_SUMMARY",
}

// generatorEnv is the environment the generate-command runs with: this
// process's, less every INPUT_* variable (the action's inputs) and the
// withheld ones. A pull request from a fork previewed without credentials
// (allow-fork-credentials not set) gets only what a program needs to run
// (PATH, HOME, locale, proxies, CA certificates), as module binaries do:
// whatever credentials the workflow put in the job's environment stay
// away from the fork's code the command may run.
func generatorEnv(environ []string, fork bool) []string {
	if fork {
		return module.Environ(nil)
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(strings.ToUpper(name), "INPUT_") || slices.Contains(withheld, name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// generator runs the input generate-command (a shell command of the
// workflow's, `kusion generate -o spec.yaml`) in each touched stack's
// folder before the stack is loaded (workflow.Change.Prepare).
type generator struct {
	command string
	timeout time.Duration
	// maxOutput bounds stdout and stderr together; past it the command is
	// stopped and the stack fails.
	maxOutput int
	env       []string
	// log is the job log (redacted); each stack's output goes to it whole,
	// in a group of its own, after the command ended.
	log io.Writer
	mu  sync.Mutex
}

// run runs the command in dir, the stack folder the repository calls
// stack. Its error names the stack and why: the exit status, the timeout,
// the output past its bound.
func (g *generator) run(ctx context.Context, dir, stack string) error {
	// The pull request may have made spec.yaml a link: a generator
	// writing it would write wherever the link points, out of the
	// checkout. Such a stack is refused before anything runs.
	if fi, err := os.Lstat(filepath.Join(dir, project.SpecFile)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("generate-command in stack %s: %s is a link, which a generator writing it would follow: not run", stack, project.SpecFile)
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", g.command)
	cmd.Dir, cmd.Env = dir, g.env
	// Its own process group, killed whole: a generator's children (KCL, a
	// module) must not outlive its timeout or its bound.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A child that kept the output pipes open does not hold the run.
	cmd.WaitDelay = 5 * time.Second
	out := &boundedBuffer{max: g.maxOutput, over: cancel}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	g.print(stack, out)
	switch {
	case out.passed():
		return fmt.Errorf("generate-command in stack %s: stopped: its output passed %d bytes; the first %d are in the job log", stack, g.maxOutput, g.maxOutput)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("generate-command in stack %s: stopped after %s (input generate-timeout); its output is in the job log", stack, g.timeout)
	case ctx.Err() != nil:
		return fmt.Errorf("generate-command in stack %s: %w", stack, ctx.Err())
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return fmt.Errorf("generate-command in stack %s: %s; its output is in the job log", stack, exit.ProcessState.String())
	case err != nil:
		return fmt.Errorf("generate-command in stack %s: %w", stack, err)
	}
	return nil
}

// print writes a stack's output to the job log in a group, with workflow
// commands off: the output is the command's, and through it maybe the
// pull request's code's, which must not annotate, mask or group the log
// as the action would.
func (g *generator) print(stack string, out *boundedBuffer) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var b strings.Builder
	// A folder's name may hold a line break, which would end the group's
	// line and start a command of the repository's: escaped as the
	// runner reads a command's data.
	fmt.Fprintf(&b, "::group::generate-command in stack %s\n", commandData.Replace(stack))
	if out.Len() > 0 {
		token := stopToken()
		fmt.Fprintf(&b, "::stop-commands::%s\n", token)
		b.Write(out.Bytes())
		if !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "::%s::\n", token)
	}
	b.WriteString("::endgroup::\n")
	io.WriteString(g.log, b.String())
}

// commandData escapes a workflow command's data, as the runner unescapes it.
var commandData = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")

// stopToken is the random token ::stop-commands:: ends with: output that
// cannot guess it cannot turn commands back on.
func stopToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// boundedBuffer keeps the first max bytes written to it; a write past
// them calls over once (stopping the command) and is refused.
type boundedBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	max  int
	over func()
	past bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.past {
		return 0, errOutputBound
	}
	if room := b.max - b.buf.Len(); len(p) > room {
		b.buf.Write(p[:room])
		b.past = true
		b.over()
		return room, errOutputBound
	}
	return b.buf.Write(p)
}

var errOutputBound = errors.New("output past its bound")

func (b *boundedBuffer) passed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.past
}

func (b *boundedBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

func (b *boundedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}
