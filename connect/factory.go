// Package connect builds the runtimes a stack runs with from the
// operator's configuration: the one place the Kubernetes and Terraform
// runtimes are wired into the workflow. The action and the bot each build
// one Factory from their flags, inputs or configuration, and hand it to
// their workflow.Runner.
package connect

import (
	"context"
	"log/slog"
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
// refuse) and returns the drivers of its runtimes, which the engine builds
// on first use: a stack without Kubernetes resources needs no kubeconfig,
// one without Terraform resources no terraform binary. An offline run gets
// none: nothing live may be reached.
func (f Factory) Runtimes(ctx context.Context, t workflow.RuntimeTarget) (map[model.ResourceType]engine.Driver, error) {
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
	kubeConfig.ForceConflicts = f.ForceConflicts
	kubeConfig.Logger = t.Logger
	kubeConfig.ReadyTimeout, kubeConfig.Progress = f.ReadyTimeout, f.Progress
	if kubeConfig.Progress == nil {
		kubeConfig.Progress = logProgress{log}
	}
	return map[model.ResourceType]engine.Driver{
		model.Kubernetes: Kubernetes(kubeConfig),
		model.Terraform:  Terraform(tf),
	}, nil
}

// Kubernetes is the engine's driver of the Kubernetes runtime c configures.
// Server-side apply sets the fields a spec gives and no others, so fields a
// controller or a person added elsewhere do not make an object differ from
// what applying its spec again would give (SpecFieldsOnly). Building it
// asks the API server what kinds it serves.
func Kubernetes(c kubernetes.Config) engine.Driver {
	return engine.Driver{
		Capabilities: engine.Capabilities{SpecFieldsOnly: true},
		Open: func(ctx context.Context) (engine.Runtime, error) {
			rt, err := kubernetes.New(ctx, c)
			if err != nil {
				return nil, err
			}
			return rt, nil
		},
	}
}

// Terraform is the engine's driver of the Terraform runtime c configures.
// Plans and applies asked at about the same time run as one Terraform run
// (runtime/terraform/batch.go), so the engine lets them all ask at once
// (Batches).
func Terraform(c terraform.Config) engine.Driver {
	return engine.Driver{
		Capabilities: engine.Capabilities{Batches: true},
		Open: func(context.Context) (engine.Runtime, error) {
			rt, err := terraform.New(c)
			if err != nil {
				return nil, err
			}
			return rt, nil
		},
	}
}
