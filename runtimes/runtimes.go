// Package runtimes builds the runtimes a stack runs with from the
// operator's configuration: the one place the Kubernetes and Terraform
// runtimes are wired into the workflow. The action and the bot each build
// one Factory from their flags, inputs or configuration, and hand it to
// their workflow.Runner.
package runtimes

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
	"github.com/kusionpr/kusionpr/runtime/terraform"
	"github.com/kusionpr/kusionpr/workflow"
)

// Factory is the operator's configuration of the runtimes; the zero value
// of each field is a sensible default. It is a workflow.RuntimeFactory.
type Factory struct {
	// Clusters is how stacks reach their Kubernetes cluster: the
	// operator's decision, not the repository's.
	Clusters Clusters
	// ForceConflicts takes over fields other managers own on apply. The spec
	// is the source of truth, so callers default it to true.
	ForceConflicts bool
	// ReadyTimeout bounds the wait for each applied Kubernetes object to be
	// ready, and for each deleted one to be gone (default
	// kubernetes.DefaultReadyTimeout, 5m); past it the object's apply fails.
	ReadyTimeout time.Duration
	// Progress hears about every object those waits are not done with;
	// default: an info line of the run's logger.
	Progress kubernetes.Progress
	// Terraform is the Terraform runtime's configuration: binary, cache,
	// allowed providers and settings, the variables passed on, the CLI
	// configuration file. Its Logger is the run's.
	Terraform terraform.Config
}

// Runtimes checks what the stack would bring before anything runs (a
// kubeconfig its spec may not bring, a Terraform resource the runtime would
// refuse) and returns its runtimes, each built on first use: a stack
// without Kubernetes resources needs no kubeconfig, one without Terraform
// resources no terraform binary. An offline run gets none: nothing live
// may be reached.
func (f Factory) Runtimes(ctx context.Context, t workflow.RuntimeTarget) (map[model.ResourceType]engine.Runtime, error) {
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var kubeConfig kubernetes.Config
	if !t.Offline {
		// Before anything is read or written: a kubeconfig the spec may
		// not bring stops the stack here.
		var err error
		if kubeConfig, err = f.Clusters.kubernetesConfig(t.Stack, t.Workspace, t.Spec, t.CheckoutRoot, log); err != nil {
			return nil, err
		}
	}
	tf := f.Terraform
	tf.Logger = t.Logger
	if t.Spec != nil {
		// A Terraform resource the runtime would refuse (a provisioner, a
		// provider from anywhere) refuses the stack before anything runs.
		if err := terraform.Validate(tf, t.Spec.Resources); err != nil {
			return nil, err
		}
	}
	if t.Offline {
		return nil, nil
	}
	return map[model.ResourceType]engine.Runtime{
		model.Kubernetes: &lazy{build: func(ctx context.Context) (engine.Runtime, error) {
			c := kubeConfig
			c.ForceConflicts = f.ForceConflicts
			c.Logger = t.Logger
			c.ReadyTimeout, c.Progress = f.ReadyTimeout, f.Progress
			if c.Progress == nil {
				c.Progress = logProgress{log}
			}
			return kubernetes.New(ctx, c)
		}},
		model.Terraform: &lazy{build: func(context.Context) (engine.Runtime, error) {
			return terraform.New(tf)
		}},
	}, nil
}

// lazy builds its runtime on first use, so a stack without Kubernetes
// resources needs no kubeconfig and one without Terraform resources no
// terraform binary.
type lazy struct {
	build func(ctx context.Context) (engine.Runtime, error)
	once  sync.Once
	rt    engine.Runtime
	err   error
}

func (l *lazy) get(ctx context.Context) (engine.Runtime, error) {
	l.once.Do(func() { l.rt, l.err = l.build(ctx) })
	return l.rt, l.err
}

func (l *lazy) Read(ctx context.Context, prior *model.Resource, r model.Resource) (*model.Resource, error) {
	rt, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return rt.Read(ctx, prior, r)
}

func (l *lazy) Apply(ctx context.Context, prior *model.Resource, r model.Resource, dryRun bool) (*model.Resource, error) {
	rt, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return rt.Apply(ctx, prior, r, dryRun)
}

func (l *lazy) Delete(ctx context.Context, r model.Resource) error {
	rt, err := l.get(ctx)
	if err != nil {
		return err
	}
	return rt.Delete(ctx, r)
}

func (l *lazy) Watch(ctx context.Context, r model.Resource) error {
	rt, err := l.get(ctx)
	if err != nil {
		return err
	}
	return rt.Watch(ctx, r)
}

// Prefetch is passed on: a preview that prefetches is about to read, so
// building the runtime now costs nothing extra.
func (l *lazy) Prefetch(ctx context.Context, rs []model.Resource) {
	rt, err := l.get(ctx)
	if err != nil {
		return // Read reports it
	}
	if pf, ok := rt.(engine.Prefetcher); ok {
		pf.Prefetch(ctx, rs)
	}
}

func (l *lazy) Batches() bool {
	rt, err := l.get(context.Background())
	if err != nil {
		return false
	}
	b, ok := rt.(engine.Batcher)
	return ok && b.Batches()
}

func (l *lazy) SpecFieldsOnly() bool {
	rt, err := l.get(context.Background())
	if err != nil {
		return false
	}
	fs, ok := rt.(engine.FieldScoped)
	return ok && fs.SpecFieldsOnly()
}

func (l *lazy) SensitivePaths(ctx context.Context, r model.Resource) ([]string, error) {
	rt, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	if sp, ok := rt.(engine.SensitivePather); ok {
		return sp.SensitivePaths(ctx, r)
	}
	return nil, nil
}
