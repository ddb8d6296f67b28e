package engine

import (
	"fmt"

	"github.com/kusionpr/kusionpr/engine/graph"
	"github.com/kusionpr/kusionpr/model"
)

// planIndex is what a preview looks resources up in, and what the apply or
// destroy that follows the preview walks: the desired resources, their
// dependency graph and references, and the prior release's state and spec.
// It is built once, with the preview, and only read after that, so the walks
// share it without a lock.
type planIndex struct {
	desired    model.Resources
	desiredIdx map[string]int
	graph      *graph.Graph
	refs       *model.ReferenceIndex

	priorState, priorSpec       model.Resources
	priorStateIdx, priorSpecIdx map[string]int

	// gone holds the prior state's resources the spec no longer has, in
	// state order; deletions is their graph, nil when there are none.
	gone      model.Resources
	goneIdx   map[string]int
	deletions *graph.Graph

	// batched says which resources belong to a runtime that batches.
	batched func(id string) bool
}

// newPlanIndex indexes spec against the release prior (nil for none).
func (e *Engine) newPlanIndex(spec *model.Spec, prior *model.Release) (*planIndex, error) {
	g, err := graph.New(spec.Resources)
	if err != nil {
		return nil, err
	}
	ix := &planIndex{
		desired:    spec.Resources,
		desiredIdx: spec.Resources.Index(),
		graph:      g,
		refs:       model.NewReferenceIndex(idsOf(spec.Resources)),
	}
	if prior != nil {
		if prior.State != nil {
			ix.priorState = prior.State.Resources
		}
		if prior.Spec != nil {
			ix.priorSpec = prior.Spec.Resources
		}
	}
	ix.priorStateIdx, ix.priorSpecIdx = ix.priorState.Index(), ix.priorSpec.Index()
	for _, r := range ix.priorState {
		if _, ok := ix.desiredIdx[r.ID]; !ok {
			ix.gone = append(ix.gone, r)
		}
	}
	ix.goneIdx = ix.gone.Index()
	if len(ix.gone) > 0 {
		if ix.deletions, err = graph.New(withinDependencies(ix.gone)); err != nil {
			return nil, fmt.Errorf("order deletions: %w", err)
		}
	}
	ix.batched = e.batched(append(append(model.Resources(nil), ix.desired...), ix.gone...))
	return ix, nil
}

// priorResource is id as the prior release's state records it, nil if it
// does not.
func (ix *planIndex) priorResource(id string) *model.Resource {
	if i, ok := ix.priorStateIdx[id]; ok {
		return &ix.priorState[i]
	}
	return nil
}

// priorSpecResource is id as the prior release's spec has it, nil if it
// does not.
func (ix *planIndex) priorSpecResource(id string) *model.Resource {
	if i, ok := ix.priorSpecIdx[id]; ok {
		return &ix.priorSpec[i]
	}
	return nil
}
