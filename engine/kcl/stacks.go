package kcl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/kusionpr/kusionpr/engine/kcl/deps"
	"github.com/kusionpr/kusionpr/engine/kcl/kclmod"
	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/internal/confine"
	"github.com/kusionpr/kusionpr/internal/sandbox"
)

// Stacks compiles the main.k of the stacks of one checkout as Kusion does:
// the stack's kcl.mod dependencies fetched by the Resolver, its profile's
// entries in order (main.k alone, or every .k file of the folder, without
// one), one runtime process for every stack of the run, started at the
// first main.k, confined to the checkout and the dependency cache (see
// Confinement). Close ends the process. Safe for concurrent use.
type Stacks struct {
	// Compiler runs the runtime; its Command is set here.
	Compiler Compiler
	// Resolver fetches dependencies; shared by every run of a process, so
	// a dependency is fetched once.
	Resolver *deps.Resolver
	// Root is the checkout: entries, path dependencies and every file the
	// program reads lie in it.
	Root string
	// Confinement says how the runtime's process is held in; the zero
	// value confines it.
	Confinement Confinement
	// Args are KCL's top-level arguments (kusion generate -D name=value).
	Args map[string]string

	mu      sync.Mutex
	session *Session
	scratch string
}

// Confinement is how the runtime process is held in.
type Confinement struct {
	// Unconfined runs KCL without the sandbox: only where the operator
	// said so (a kernel without Landlock). The process still gets an
	// empty environment.
	Unconfined bool
	// Limits bound the process (CPU time, memory, file size, open files);
	// zero fields take DefaultLimits'.
	Limits sandbox.Limits
}

// DefaultLimits bound the runtime's process: a stack's program compiles in
// milliseconds and tens of megabytes.
func DefaultLimits() sandbox.Limits {
	return sandbox.Limits{CPU: DefaultTimeout, Memory: 2 << 30, FileSize: 64 << 20, OpenFiles: 256}
}

// UnconfinedSetting is what an operator sets to run KCL where the kernel
// cannot confine it (the bot's variable; the action's input is
// kcl-unconfined).
const UnconfinedSetting = "KUSIONPR_KCL_UNCONFINED"

// refusal is why KCL from a repository does not run where the kernel
// cannot confine it (err, from sandbox.Check), naming setting, the
// operator's way to allow it.
func refusal(err error, setting string) string {
	return fmt.Sprintf("KCL from a repository runs only confined, and this machine cannot confine it (%v): set %s to run it unconfined, as code of the repository's next to this process's credentials", err, setting)
}

// Compile compiles st's main.k to its AppConfigurations in YAML.
func (s *Stacks) Compile(ctx context.Context, st *project.Stack) ([]byte, error) {
	root := s.Root
	if root == "" {
		root = st.Path
	}
	mod, err := kclmod.Load(root, st.Path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("stack %s: %w", st.Name, err)
	}
	files, err := entries(root, st, mod)
	if err != nil {
		return nil, err
	}
	pkgs, err := s.Resolver.Resolve(ctx, st.Path, s.Root)
	if err != nil {
		return nil, fmt.Errorf("stack %s: fetching the dependencies of its kcl.mod: %w", st.Name, err)
	}
	prog := Program{WorkDir: st.Path, Files: files, Args: s.Args}
	for _, p := range pkgs {
		prog.Packages = append(prog.Packages, Package{Name: p.Name, Path: p.Dir})
	}
	sess, err := s.sessionFor(ctx)
	if err != nil {
		return nil, fmt.Errorf("stack %s: %w", st.Name, err)
	}
	out, err := sess.Compile(ctx, prog)
	if err != nil {
		return nil, fmt.Errorf("stack %s: %w", st.Name, err)
	}
	return out, nil
}

// entries are the files compiled, in order: the profile's, each in the
// checkout root; without a kcl.mod or entries, every .k file of the stack's
// folder, as kpm compiles a folder.
func entries(root string, st *project.Stack, mod *kclmod.Mod) ([]string, error) {
	var names []string
	if mod != nil {
		names = mod.Entries
	}
	if len(names) == 0 {
		all, err := filepath.Glob(filepath.Join(st.Path, "*.k"))
		if err != nil {
			return nil, fmt.Errorf("stack %s: %w", st.Name, err)
		}
		sort.Strings(all)
		for _, f := range all {
			names = append(names, filepath.Base(f))
		}
	}
	files := make([]string, 0, len(names))
	for _, n := range names {
		// kpm's ${KCL_MOD} is the folder holding kcl.mod: the stack's.
		n = strings.ReplaceAll(n, "${KCL_MOD}", st.Path)
		path := n
		if !filepath.IsAbs(path) {
			path = filepath.Join(st.Path, n)
		}
		_, err := confine.Resolve(root, "", path)
		switch {
		case errors.Is(err, confine.ErrOutside):
			return nil, fmt.Errorf("stack %s: %s: [profile] entries: %s lies outside the checkout %s: refused", st.Name, filepath.Join(st.Path, kclmod.ModFile), n, root)
		case err != nil:
			return nil, fmt.Errorf("stack %s: %s: [profile] entries: %s: %w", st.Name, filepath.Join(st.Path, kclmod.ModFile), n, err)
		}
		files = append(files, path)
	}
	return files, nil
}

// sessionFor starts the runtime at the first compile of the run.
func (s *Stacks) sessionFor(ctx context.Context) (*Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil {
		return s.session, nil
	}
	scratch, err := os.MkdirTemp("", "kusionpr-kcl-")
	if err != nil {
		return nil, fmt.Errorf("starting the KCL runtime: a scratch folder: %w", err)
	}
	c := s.Compiler
	c.Command = s.command(scratch)
	// The process serves the run, not this compile: it ends at Close.
	sess, err := c.Start(context.WithoutCancel(ctx))
	if err != nil {
		os.RemoveAll(scratch)
		return nil, err
	}
	s.session, s.scratch = sess, scratch
	return sess, nil
}

// command makes the runtime's process: confined, unless the operator said
// otherwise, to reading the runtime, the interpreter, the system's
// libraries, the checkout and the dependency cache, and to writing its
// scratch folder, with no network and an environment of HOME and TMPDIR
// alone.
func (s *Stacks) command(scratch string) func(ctx context.Context, name string, args []string, env []string) (*exec.Cmd, error) {
	return func(ctx context.Context, name string, args []string, env []string) (*exec.Cmd, error) {
		env = append(append([]string{}, env...), "HOME="+scratch, "TMPDIR="+scratch)
		if s.Confinement.Unconfined {
			cmd := exec.CommandContext(ctx, name, args...)
			cmd.Env = env
			return cmd, nil
		}
		read, err := s.readable(name)
		if err != nil {
			return nil, err
		}
		lim := s.Confinement.Limits
		def := DefaultLimits()
		if lim.CPU == 0 {
			lim.CPU = def.CPU
		}
		if lim.Memory == 0 {
			lim.Memory = def.Memory
		}
		if lim.FileSize == 0 {
			lim.FileSize = def.FileSize
		}
		if lim.OpenFiles == 0 {
			lim.OpenFiles = def.OpenFiles
		}
		return sandbox.Command(ctx, sandbox.Policy{Read: read, Write: []string{scratch}, Env: env, Limits: lim}, name, args...)
	}
}

// readable is what the confined runtime may read: the runtime's folder,
// the interpreter it links to and that interpreter's installation (its
// standard library), the system's shared libraries, the checkout and the
// dependency cache. Nothing of /etc but the loader's cache, nothing of
// /proc, /home or /var.
func (s *Stacks) readable(python string) ([]string, error) {
	interp, err := filepath.EvalSymlinks(python)
	if err != nil {
		return nil, fmt.Errorf("starting the KCL runtime: %s: %w", python, err)
	}
	prefix := filepath.Dir(filepath.Dir(interp))
	read := []string{s.Compiler.Runtime, interp, filepath.Join(prefix, "lib")}
	for _, p := range []string{"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache"} {
		if _, err := os.Stat(p); err == nil {
			read = append(read, p)
		}
	}
	if s.Root != "" {
		read = append(read, s.Root)
	}
	if s.Resolver != nil {
		if dir := s.Resolver.CacheDir(); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("starting the KCL runtime: the dependency cache %s: %w", dir, err)
			}
			read = append(read, dir)
		}
	}
	return read, nil
}

// Close ends the runtime's process, if one started, and removes its
// scratch folder.
func (s *Stacks) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == nil {
		return nil
	}
	err := s.session.Close()
	os.RemoveAll(s.scratch)
	s.session, s.scratch = nil, ""
	return err
}
