// Package workflow is the layer the action and the bot share: it turns a
// stack folder and a command into an engine run, and the run into output. The
// same inputs give the same output whichever binary calls it.
package workflow

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
)

// Command is what to do with a stack.
type Command string

const (
	Preview Command = "preview"
	Apply   Command = "apply"
	Destroy Command = "destroy"
)

// ParseCommand checks a command name.
func ParseCommand(s string) (Command, error) {
	switch c := Command(s); c {
	case Preview, Apply, Destroy:
		return c, nil
	}
	return "", fmt.Errorf("unknown command %q: want preview, apply or destroy", s)
}

// Options configure a Runner; the zero value of each field is a sensible default.
type Options struct {
	// Workspace defaults to "default", as in Kusion.
	Workspace string
	// Backend is a release store URL; default backend.DefaultURL().
	Backend string
	// Parallelism bounds resources worked on at once (default 10).
	Parallelism int
	// ForceConflicts takes over fields other managers own on apply. The spec
	// is the source of truth, so callers default it to true.
	ForceConflicts bool
	DryRun         bool
	NoWatch        bool
	Origin         *model.Origin
	Logger         *slog.Logger
}

// Run is the outcome of one command on one stack.
type Run struct {
	Stack   *project.Stack
	Preview *engine.Preview
	Release *model.Release
	// Store is where the release was written.
	Store string
	Err   error
}

// RunStack loads the stack in dir and runs cmd on it.
func RunStack(ctx context.Context, cmd Command, dir string, opts Options) *Run {
	run := &Run{}
	st, err := project.LoadStack(dir)
	if err != nil {
		run.Err = err
		return run
	}
	run.Stack = st
	ws := opts.Workspace
	if ws == "" {
		ws = "default"
	}
	target := engine.Stack{Project: st.Project.Name, Workspace: ws, Stack: st.Name, Origin: opts.Origin}
	if cmd != Destroy {
		if target.Spec, err = st.Spec(); err != nil {
			run.Err = err
			return run
		}
	}

	url := opts.Backend
	if url == "" {
		url = backend.DefaultURL()
	}
	store, err := backend.Open(ctx, url)
	if err != nil {
		run.Err = fmt.Errorf("open backend %s: %w", url, err)
		return run
	}
	defer store.Close()
	run.Store = url

	var specCtx map[string]any
	if target.Spec != nil {
		specCtx = target.Spec.Context
	}
	eng := &engine.Engine{
		Runtimes: map[model.ResourceType]engine.Runtime{
			model.Kubernetes: &lazyKubernetes{cfg: func() kubernetes.Config {
				c := kubernetes.ConfigFromContext(specCtx)
				c.ForceConflicts = opts.ForceConflicts
				c.Logger = opts.Logger
				return c
			}},
		},
		Store:       store,
		Parallelism: opts.Parallelism,
		Logger:      opts.Logger,
	}
	applyOpts := engine.ApplyOptions{DryRun: opts.DryRun, NoWatch: opts.NoWatch}
	switch cmd {
	case Preview:
		run.Preview, run.Err = eng.Preview(ctx, target)
		if run.Err == nil && run.Preview != nil {
			run.Err = run.Preview.Err()
		}
	case Apply, Destroy:
		var res *engine.Result
		if cmd == Apply {
			res, run.Err = eng.Apply(ctx, target, applyOpts)
		} else {
			res, run.Err = eng.Destroy(ctx, target, applyOpts)
		}
		if res != nil {
			run.Preview, run.Release = res.Preview, res.Release
		}
	}
	return run
}

// lazyKubernetes connects on first use, so a stack without Kubernetes
// resources needs no kubeconfig.
type lazyKubernetes struct {
	cfg  func() kubernetes.Config
	once sync.Once
	rt   *kubernetes.Runtime
	err  error
}

func (l *lazyKubernetes) get(ctx context.Context) (*kubernetes.Runtime, error) {
	l.once.Do(func() { l.rt, l.err = kubernetes.New(ctx, l.cfg()) })
	return l.rt, l.err
}

func (l *lazyKubernetes) Read(ctx context.Context, prior *model.Resource, r model.Resource) (*model.Resource, error) {
	rt, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return rt.Read(ctx, prior, r)
}

func (l *lazyKubernetes) Apply(ctx context.Context, prior *model.Resource, r model.Resource, dryRun bool) (*model.Resource, error) {
	rt, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return rt.Apply(ctx, prior, r, dryRun)
}

func (l *lazyKubernetes) Delete(ctx context.Context, r model.Resource) error {
	rt, err := l.get(ctx)
	if err != nil {
		return err
	}
	return rt.Delete(ctx, r)
}

func (l *lazyKubernetes) Watch(ctx context.Context, r model.Resource) error {
	rt, err := l.get(ctx)
	if err != nil {
		return err
	}
	return rt.Watch(ctx, r)
}
