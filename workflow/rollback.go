package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/model"
)

// recall takes the spec the rollback's release recorded in place of a
// generated one. Only a release that succeeded is a state to go back to
// (a failed one's spec may never have applied whole), and a destroy's
// recorded spec is what it deleted, not what it left. Sensitive values
// the release recorded only as fingerprints are taken from the checkout's
// spec where it still holds the very value (releaseSpecWithValues), as a
// drift revert does; a value changed since is refused, naming the field:
// it cannot be written back from a fingerprint. The release the rollback
// writes says which revision it went back to, and who asked.
func (s *stackRun) recall(ctx context.Context) error {
	n, st := s.req.RollbackTo, s.out.Stack
	// Latest checks that the project is the run's repository's, whose
	// releases only it may read.
	if _, err := s.owned.Latest(ctx, s.target.Project, s.target.Workspace); err != nil {
		return fmt.Errorf("rollback of %s: %w", st.Name, err)
	}
	rel, err := s.owned.Get(ctx, s.target.Project, s.target.Workspace, n)
	if errors.Is(err, backend.ErrNotFound) {
		return fmt.Errorf("rollback of %s: %s/%s has no release %d in %s", st.Name, s.target.Project, s.target.Workspace, n, s.out.Store)
	}
	if err != nil {
		return fmt.Errorf("rollback of %s: %w", st.Name, err)
	}
	switch {
	case rel.Phase != model.PhaseSucceeded:
		return fmt.Errorf("rollback of %s to release %d: it is %s; only a release that succeeded is a state to go back to", st.Name, n, rel.Phase)
	case rel.Spec == nil || destroyed(rel):
		return fmt.Errorf("rollback of %s to release %d: it destroyed the stack; run destroy to do that again", st.Name, n)
	}
	// With no checkout, every value the release kept in the clear is
	// taken as it is; only a fingerprint needs the checkout's spec, whose
	// generation is then the one thing a rollback asks of the checkout.
	spec, err := releaseSpecWithValues(rel.Spec, &model.Spec{})
	if err != nil {
		checkout, _, gerr := s.r.StackSpec(ctx, s.req, st, s.store, s.out.Store)
		if gerr != nil {
			return fmt.Errorf("rollback of %s to release %d: the checkout's spec, which the release's sensitive values are taken from: %w", st.Name, n, gerr)
		}
		if spec, err = releaseSpecWithValues(rel.Spec, checkout); err != nil {
			return fmt.Errorf("rollback of %s to release %d: %w", st.Name, n, err)
		}
	}
	o := model.Origin{}
	if s.target.Origin != nil {
		o = *s.target.Origin
	}
	o.Command, o.RollbackTo = "rollback", n
	o.Reason = fmt.Sprintf("rollback to %d", n)
	if who := o.Who(); who != "" {
		o.Reason += ", asked by " + who
	}
	s.target.Spec, s.target.Origin = spec, &o
	return nil
}

// destroyed says whether rel recorded a destroy: its spec lists what it
// deleted, its state is empty.
func destroyed(rel *model.Release) bool {
	if rel.Origin != nil && rel.Origin.Command == string(Destroy) {
		return true
	}
	return len(rel.Spec.Resources) > 0 && (rel.State == nil || len(rel.State.Resources) == 0)
}
