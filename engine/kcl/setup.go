package kcl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/kusionpr/kusionpr/engine/kcl/deps"
	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/internal/sandbox"
)

// The settings every door (the action, its commands, the bot and the Jobs
// it starts) reads from its environment, one name each; package settings
// declares them and reads them into Settings.
const (
	// CacheSetting is the folder fetched dependencies are kept in.
	CacheSetting = "KUSIONPR_KCL_CACHE"
)

// Settings are the operator's KCL settings.
type Settings struct {
	// Runtime is the runtime's folder (RuntimeSetting); the image sets it.
	Runtime string
	// Allow and Mirrors are deps.AllowSetting's and deps.MirrorsSetting's
	// values.
	Allow, Mirrors string
	// CacheDir holds fetched dependencies (CacheSetting); default the
	// user cache folder's kusionpr/kcl.
	CacheDir string
	// Unconfined runs KCL where the kernel cannot confine it
	// (UnconfinedSetting).
	Unconfined bool
}

// Setup is a process's KCL: the resolver its runs share (a dependency is
// fetched once per process) and one runtime process per checkout being
// worked on, started at its first main.k and ended once no stack of it has
// compiled for a while (Idle), so a run of many stacks starts one and a
// long-lived bot keeps none. It implements workflow.KCLCompiler.
type Setup struct {
	settings Settings
	resolver *deps.Resolver
	// refusal, when set, is why no main.k is compiled here (refused).
	refusal string
	checked sync.Once
	// check asks the kernel what it confines (sandbox.Check).
	check  func() (sandbox.Support, error)
	logger *slog.Logger
	// Idle is how long a checkout's runtime outlives its last compile.
	Idle time.Duration

	mu   sync.Mutex
	runs map[string]*checkoutRun
}

// checkoutRun is the runtime of one checkout, and who is using it.
type checkoutRun struct {
	stacks *Stacks
	active int
	timer  *time.Timer
}

// DefaultIdle: stacks of one run compile within moments of each other.
const DefaultIdle = 30 * time.Second

// NewSetup checks the settings. A setting written wrong is an error; a
// machine that cannot confine KCL (without Unconfined) is not: its stacks
// in KCL are refused, naming the setting.
func NewSetup(s Settings, logger *slog.Logger) (*Setup, error) {
	if s.CacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		s.CacheDir = filepath.Join(base, "kusionpr", "kcl")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	res, err := deps.New(deps.Options{CacheDir: s.CacheDir, Allow: s.Allow, Mirrors: s.Mirrors, Logger: logger})
	if err != nil {
		return nil, err
	}
	return &Setup{settings: s, resolver: res, logger: logger, Idle: DefaultIdle, runs: map[string]*checkoutRun{}, check: sandbox.Check}, nil
}

// refused says why KCL does not run here, asking the kernel once, at the
// first main.k: a run with none pays nothing for it.
func (s *Setup) refused() string {
	s.checked.Do(func() {
		if s.settings.Unconfined {
			return
		}
		if _, err := s.check(); err != nil {
			s.refusal = refusal(err, UnconfinedSetting+"=true")
		}
	})
	return s.refusal
}

// Compile compiles st's main.k with the runtime of its checkout (its
// project's folder, for a stack outside any checkout).
func (s *Setup) Compile(ctx context.Context, st *project.Stack) ([]byte, error) {
	if s == nil {
		return nil, fmt.Errorf("stack %s: %s: KCL is not enabled here", st.Name, filepath.Join(st.Path, project.KCLFile))
	}
	if why := s.refused(); why != "" {
		return nil, fmt.Errorf("stack %s: %s: %s", st.Name, filepath.Join(st.Path, project.KCLFile), why)
	}
	root := st.Root
	if root == "" && st.Project != nil {
		root = st.Project.Path
	}
	r := s.acquire(root)
	defer s.release(root, r)
	return r.stacks.Compile(ctx, st)
}

func (s *Setup) acquire(root string) *checkoutRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[root]
	if r == nil {
		r = &checkoutRun{stacks: &Stacks{
			Compiler:    Compiler{Runtime: s.settings.Runtime, Logger: s.logger},
			Resolver:    s.resolver,
			Root:        root,
			Confinement: Confinement{Unconfined: s.settings.Unconfined},
		}}
		s.runs[root] = r
	}
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.active++
	return r
}

// release ends the checkout's runtime once it has been idle for Idle.
func (s *Setup) release(root string, r *checkoutRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.active--
	if r.active > 0 {
		return
	}
	r.timer = time.AfterFunc(s.Idle, func() {
		s.mu.Lock()
		if r.active > 0 || s.runs[root] != r {
			s.mu.Unlock()
			return
		}
		delete(s.runs, root)
		s.mu.Unlock()
		if err := r.stacks.Close(); err != nil {
			s.logger.Warn("ending the KCL runtime", "checkout", root, "err", err)
		}
	})
}

// Close ends every runtime; at the process's end.
func (s *Setup) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	runs := s.runs
	s.runs = map[string]*checkoutRun{}
	s.mu.Unlock()
	var errs []error
	for _, r := range runs {
		if r.timer != nil {
			r.timer.Stop()
		}
		errs = append(errs, r.stacks.Close())
	}
	return errors.Join(errs...)
}
