package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/kusionpr/kusionpr/model"
)

// offline stands in for every runtime when no cluster or cloud credentials
// are available (a pull request from a fork): the prior release is taken as
// what is live, and the spec laid over it as what an apply would make. The
// preview then shows what the pull request changes against the last release,
// but no drift and nothing the servers would add.
type offline struct{}

var errOffline = errors.New("no credentials: only a preview against the prior release is possible")

func (offline) Read(_ context.Context, prior *model.Resource, _ model.Resource) (*model.Resource, error) {
	if prior == nil {
		return nil, nil
	}
	r := prior.DeepCopy()
	return &r, nil
}

func (offline) Apply(_ context.Context, prior *model.Resource, desired model.Resource, dryRun bool) (*model.Resource, error) {
	if !dryRun {
		return nil, fmt.Errorf("apply %s: %w", desired.ID, errOffline)
	}
	out := model.Redact(desired)
	if prior != nil {
		base := prior.DeepCopy()
		base.Attributes = model.Overlay(base.Attributes, out.Attributes)
		out = base
	}
	return &out, nil
}

func (offline) Delete(_ context.Context, r model.Resource) error {
	return fmt.Errorf("delete %s: %w", r.ID, errOffline)
}

func (offline) Watch(context.Context, model.Resource) error { return nil }
