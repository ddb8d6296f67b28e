// Package kcl compiles Kusion stacks written in KCL (main.k with kcl.mod)
// with KCL's own runtime: the PyPI package kcl-lib, whose native runtime
// lives in a CPython extension, installed by hack/kcl.sh into a folder of
// its own (the setting KUSIONPR_KCL_RUNTIME). A Session keeps one Python
// process that serves every compile of a run (serve.py, JSON lines on its
// stdin and stdout), so a run of many stacks pays for Python's and
// kcl-lib's start once. The options are those Kusion compiles a stack
// with, and what KCL refuses comes back as an *Error naming file, line and
// column without the source lines KCL prints under its message, nor the
// values a message quotes: a line of main.k may hold a secret.
package kcl

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// RuntimeSetting names the setting that holds the runtime's folder.
const RuntimeSetting = "KUSIONPR_KCL_RUNTIME"

const (
	// DefaultMaxOutput bounds a program's YAML when Compiler.MaxOutput is
	// zero: far above any stack's Spec, far below what hurts the runner.
	DefaultMaxOutput = 64 << 20
	// DefaultTimeout bounds a compile (and the runtime's start) when
	// Compiler.Timeout is zero. A stack compiles in milliseconds; a
	// program looping for this long will not end.
	DefaultTimeout = 2 * time.Minute
)

// serveSource is the runtime's side of the protocol, given to Python with
// -c: nothing is written to disk for it, so a sandbox need not let the
// process read any folder of ours.
//
//go:embed serve.py
var serveSource string

// Compiler says how to run KCL. Its zero value (with Runtime set) runs the
// runtime's Python directly with an empty environment.
type Compiler struct {
	// Runtime is the folder hack/kcl.sh installed: a Python environment
	// whose bin/python3 imports kcl_lib (the setting KUSIONPR_KCL_RUNTIME).
	Runtime string
	// Command makes the runtime's process: name and args are Python's,
	// env the whole environment it gets. The Session sets the returned
	// command's stdin, stdout and stderr. Nil means exec.CommandContext with
	// exactly env; point it at a sandbox to confine the process. ctx is the
	// Session's (Start's): the process may live as long as it.
	Command func(ctx context.Context, name string, args []string, env []string) (*exec.Cmd, error)
	// Logger receives the process's starts and ends; never a program's
	// output nor KCL's messages. Nil logs nothing.
	Logger *slog.Logger
	// MaxOutput bounds a program's YAML in bytes; DefaultMaxOutput if zero.
	MaxOutput int64
	// Timeout bounds each compile and the runtime's start; DefaultTimeout
	// if zero. A compile over it stops the process (the next starts
	// another).
	Timeout time.Duration
}

// Program is what one compile runs: a stack's folder and its profile's
// entries, as kcl.mod's [profile] entries name them.
type Program struct {
	// WorkDir is the stack's folder (holding kcl.mod), absolute. Files and
	// diagnostics' paths are relative to it.
	WorkDir string
	// Files are the entries, in order (a later file's `=` overrides and
	// `:` unions an earlier one's), relative to WorkDir or absolute.
	Files []string
	// Packages are the external packages a program imports, each a folder
	// on disk under the name it is imported by (kcl.mod's dependencies,
	// fetched).
	Packages []Package
	// Args are KCL's top-level arguments (kcl -D name=value), read with
	// option("name").
	Args map[string]string
}

// Package is an external KCL package: `import Name` finds it in Path.
type Package struct {
	Name string
	Path string
}

// Session is one runtime process serving compiles one at a time; Compile
// may be called from many goroutines. It is started by Compiler.Start and
// ended by Close.
type Session struct {
	c      Compiler
	ctx    context.Context
	logger *slog.Logger
	// turn is held by the compile that uses the process (a channel, so a
	// caller waiting for its turn can give up with its context).
	turn chan struct{}
	// Under turn:
	proc   *process
	closed bool
	starts int
}

// process is one run of the runtime.
type process struct {
	cmd   *exec.Cmd
	pid   int
	stdin io.WriteCloser
	// lines carries the process's response lines; it is closed when its
	// stdout ends or a line is over the limit, after which exited is
	// closed once the process was waited for.
	lines   chan []byte
	readErr error
	exited  chan struct{}
	state   *os.ProcessState
	waitErr error
	stderr  *tailBuffer
}

// Start starts the runtime and waits until it is ready to compile. The
// process lives until Close, or until ctx is done.
func (c *Compiler) Start(ctx context.Context) (*Session, error) {
	s := &Session{c: *c, ctx: ctx, turn: make(chan struct{}, 1)}
	s.logger = c.Logger
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.c.MaxOutput <= 0 {
		s.c.MaxOutput = DefaultMaxOutput
	}
	if s.c.Timeout <= 0 {
		s.c.Timeout = DefaultTimeout
	}
	if s.c.Command == nil {
		s.c.Command = execCommand
	}
	p, err := s.start()
	if err != nil {
		return nil, err
	}
	s.proc = p
	return s, nil
}

// execCommand runs name with exactly env: a nil Env would inherit ours.
func execCommand(ctx context.Context, name string, args []string, env []string) (*exec.Cmd, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append([]string{}, env...)
	return cmd, nil
}

// python is the runtime's interpreter.
func (c *Compiler) python() string { return filepath.Join(c.Runtime, "bin", "python3") }

// runtimeHelp ends every error about a missing or broken runtime.
const runtimeHelp = "install it with hack/kcl.sh install and set " + RuntimeSetting + " to the folder `hack/kcl.sh env` prints"

// start runs the runtime and waits for its ready line.
func (s *Session) start() (*process, error) {
	if s.c.Runtime == "" {
		return nil, fmt.Errorf("the KCL runtime is not set (%s): %s", RuntimeSetting, runtimeHelp)
	}
	py := s.c.python()
	if fi, err := os.Stat(py); err != nil || fi.IsDir() {
		return nil, fmt.Errorf("the KCL runtime %s (%s) has no bin/python3: %s", s.c.Runtime, RuntimeSetting, runtimeHelp)
	}
	if err := s.ctx.Err(); err != nil {
		return nil, fmt.Errorf("starting the KCL runtime: the session's context ended: %w", err)
	}
	// -I: none of the environment's PYTHON* variables, no user site, not
	// the current folder on the path (the environment's own site-packages
	// is still found, from pyvenv.cfg beside bin/). -B: nothing written
	// beside the runtime's files, which may be read-only. -X utf8: file
	// names and programs are UTF-8 whatever the (empty) locale.
	args := []string{"-I", "-B", "-X", "utf8", "-c", serveSource}
	cmd, err := s.c.Command(s.ctx, py, args, []string{})
	if err != nil {
		return nil, fmt.Errorf("starting the KCL runtime %s: %w", s.c.Runtime, err)
	}
	p := &process{cmd: cmd, lines: make(chan []byte, 1), exited: make(chan struct{}), stderr: &tailBuffer{max: 4 << 10}}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("starting the KCL runtime: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("starting the KCL runtime: %w", err)
	}
	cmd.Stderr = p.stderr
	if cmd.WaitDelay == 0 {
		// A process killed mid-write may leave a pipe open in a child of
		// its own: Wait gives up on it rather than hang.
		cmd.WaitDelay = 2 * time.Second
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the KCL runtime %s (%s): %w; %s", s.c.Runtime, RuntimeSetting, err, runtimeHelp)
	}
	p.pid = cmd.Process.Pid
	s.starts++
	// A response line holds the YAML escaped as a JSON string: up to six
	// bytes a byte (\u00XX), and the runtime refuses YAML over MaxOutput
	// before it sends it, so a longer line is a runtime gone wrong.
	go p.read(stdout, int(min(6*s.c.MaxOutput+1<<20, 1<<31-1)))

	timer := time.NewTimer(s.c.Timeout)
	defer timer.Stop()
	select {
	case line, ok := <-p.lines:
		var r response
		if ok && json.Unmarshal(line, &r) == nil && r.Ready != nil {
			s.logger.Info("KCL runtime started", "pid", p.pid, "python", r.Ready.Python, "base_prefix", r.Ready.BasePrefix,
				"took", time.Since(t0).Round(time.Millisecond))
			return p, nil
		}
		p.kill()
		// Before any program is compiled the process's errors say nothing
		// of a user's: its last line (an ImportError, say) is shown.
		return nil, fmt.Errorf("the KCL runtime %s (%s) did not start: %s%s; %s", s.c.Runtime, RuntimeSetting, p.exitStatus(), p.stderr.lastLine(), runtimeHelp)
	case <-timer.C:
		p.kill()
		return nil, fmt.Errorf("the KCL runtime %s (%s) was not ready after %s (Compiler.Timeout); it was stopped", s.c.Runtime, RuntimeSetting, s.c.Timeout)
	case <-s.ctx.Done():
		p.kill()
		return nil, fmt.Errorf("starting the KCL runtime: %w", s.ctx.Err())
	}
}

// read passes the process's stdout on, a line at a time, then waits for
// the process (after the last read, as exec.Cmd asks).
func (p *process) read(stdout io.Reader, limit int) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, err := readLine(br, limit)
		if err != nil {
			p.readErr = err
			break
		}
		p.lines <- line
	}
	close(p.lines)
	if !errors.Is(p.readErr, io.EOF) {
		// Out of step with the runtime: it must not go on.
		_ = p.cmd.Process.Kill()
	}
	p.waitErr = p.cmd.Wait()
	p.state = p.cmd.ProcessState
	close(p.exited)
}

var errLineTooLong = errors.New("line over the limit")

// readLine reads one line of at most limit bytes, without its newline.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > limit+1 {
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// kill stops the process and waits (a few seconds at most) until it was
// waited for.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
	}
}

// exitStatus says how the process ended, once it has ("exit status 1",
// "signal: killed").
func (p *process) exitStatus() string {
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		return "it did not end"
	}
	if p.state != nil {
		return p.state.String()
	}
	if p.waitErr != nil {
		return p.waitErr.Error()
	}
	return "it ended"
}

// response is one line of the runtime's (see serve.py).
type response struct {
	Ready *struct {
		Python     string `json:"python"`
		Pid        int    `json:"pid"`
		BasePrefix string `json:"base_prefix"`
	} `json:"ready"`
	YAML     *string `json:"yaml"`
	Error    *string `json:"error"`
	TooLarge *int64  `json:"too_large"`
	Fault    *string `json:"fault"`
}

type request struct {
	WorkDir   string       `json:"work_dir"`
	Files     []string     `json:"files"`
	Packages  []packageArg `json:"packages"`
	Args      []argument   `json:"args"`
	MaxOutput int64        `json:"max_output"`
}

type packageArg struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

type argument struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// request checks prog and puts it as the runtime reads it: paths absolute
// (KCL resolves relative ones against its own current folder in places),
// arguments in a fixed order.
func (s *Session) request(prog Program) (request, error) {
	if prog.WorkDir == "" || !filepath.IsAbs(prog.WorkDir) {
		return request{}, fmt.Errorf("the program's folder %q is not an absolute path", prog.WorkDir)
	}
	if len(prog.Files) == 0 {
		return request{}, fmt.Errorf("the program in %s names no files", prog.WorkDir)
	}
	r := request{WorkDir: filepath.Clean(prog.WorkDir), MaxOutput: s.c.MaxOutput, Packages: []packageArg{}, Args: []argument{}}
	for _, f := range prog.Files {
		if !filepath.IsAbs(f) {
			f = filepath.Join(r.WorkDir, f)
		}
		r.Files = append(r.Files, filepath.Clean(f))
	}
	for _, p := range prog.Packages {
		if p.Name == "" || !filepath.IsAbs(p.Path) {
			return request{}, fmt.Errorf("the program in %s: external package %q at %q: a package needs a name and an absolute path", prog.WorkDir, p.Name, p.Path)
		}
		r.Packages = append(r.Packages, packageArg{Name: p.Name, Path: filepath.Clean(p.Path)})
	}
	for name, value := range prog.Args {
		r.Args = append(r.Args, argument{Name: name, Value: value})
	}
	sort.Slice(r.Args, func(i, j int) bool { return r.Args[i].Name < r.Args[j].Name })
	return r, nil
}

// Compile runs prog and returns its YAML, as Kusion's compile gives it. A
// program KCL refuses gives an *Error (errors.As) naming where and why. A
// compile over the time limit, or a runtime that ends during it, stops the
// process and fails; the next Compile starts another.
func (s *Session) Compile(ctx context.Context, prog Program) ([]byte, error) {
	req, err := s.request(prog)
	if err != nil {
		return nil, err
	}
	line, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %w", prog.WorkDir, err)
	}
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("compiling %s: waiting for the KCL runtime: %w", prog.WorkDir, ctx.Err())
	}
	defer func() { <-s.turn }()
	if s.closed {
		return nil, fmt.Errorf("compiling %s: the KCL session is closed", prog.WorkDir)
	}
	if s.proc == nil {
		s.logger.Info("starting the KCL runtime again")
		if s.proc, err = s.start(); err != nil {
			return nil, fmt.Errorf("compiling %s: %w", prog.WorkDir, err)
		}
	}
	p := s.proc
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		return nil, s.ended(p, prog)
	}
	timer := time.NewTimer(s.c.Timeout)
	defer timer.Stop()
	var out []byte
	select {
	case l, ok := <-p.lines:
		if !ok {
			return nil, s.ended(p, prog)
		}
		out = l
	case <-timer.C:
		s.stop(p, "over the time limit")
		return nil, fmt.Errorf("compiling %s: KCL took longer than %s (Compiler.Timeout); its process was stopped", prog.WorkDir, s.c.Timeout)
	case <-ctx.Done():
		s.stop(p, "the compile's context ended")
		return nil, fmt.Errorf("compiling %s: %w", prog.WorkDir, ctx.Err())
	}
	var r response
	if err := json.Unmarshal(out, &r); err != nil {
		s.stop(p, "unreadable response")
		return nil, fmt.Errorf("compiling %s: the KCL runtime's answer is not JSON: %w", prog.WorkDir, err)
	}
	switch {
	case r.YAML != nil:
		return []byte(*r.YAML), nil
	case r.Error != nil:
		return nil, fmt.Errorf("compiling %s: %w", prog.WorkDir, newError(*r.Error, prog))
	case r.TooLarge != nil:
		return nil, fmt.Errorf("compiling %s: its YAML is %d bytes, over the %d-byte limit (Compiler.MaxOutput)", prog.WorkDir, *r.TooLarge, s.c.MaxOutput)
	case r.Fault != nil:
		return nil, fmt.Errorf("compiling %s: the KCL runtime could not serve the request: %s", prog.WorkDir, *r.Fault)
	}
	s.stop(p, "unknown response")
	return nil, fmt.Errorf("compiling %s: the KCL runtime's answer says nothing known", prog.WorkDir)
}

// ended is the error of a compile during which the process ended (a
// crash, a memory limit's kill). Its stderr is not shown: it may quote the
// program.
func (s *Session) ended(p *process, prog Program) error {
	s.proc = nil
	status := p.exitStatus()
	s.logger.Warn("the KCL runtime ended during a compile", "pid", p.pid, "status", status)
	if errors.Is(p.readErr, errLineTooLong) {
		return fmt.Errorf("compiling %s: the KCL runtime (pid %d) sent an answer over the limit and was stopped; the next compile starts another", prog.WorkDir, p.pid)
	}
	return fmt.Errorf("compiling %s: the KCL runtime (pid %d) ended during the compile (%s); the next compile starts another", prog.WorkDir, p.pid, status)
}

// stop kills the process in use; the next compile starts another.
func (s *Session) stop(p *process, why string) {
	s.proc = nil
	p.kill()
	s.logger.Warn("stopped the KCL runtime", "pid", p.pid, "why", why)
}

// Close ends the process: its stdin closed, it leaves; killed if it has
// not after a few seconds. It waits for a compile under way.
func (s *Session) Close() error {
	s.turn <- struct{}{}
	defer func() { <-s.turn }()
	if s.closed {
		return nil
	}
	s.closed = true
	p := s.proc
	s.proc = nil
	if p == nil {
		return nil
	}
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		p.kill()
	}
	s.logger.Info("KCL runtime ended", "pid", p.pid, "starts", s.starts)
	return nil
}

// tailBuffer keeps the last max bytes written to it: the process's stderr,
// drained so that it never blocks on a full pipe.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// lastLine is ": " and the last line written, or "".
func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := bytes.TrimSpace(t.b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	if len(b) == 0 {
		return ""
	}
	return ": " + string(b)
}
