package backend

import (
	"context"
	"errors"
	"fmt"

	"github.com/kusionpr/kusionpr/model"
)

// A project and workspace belong to one GitHub repository: the one its
// releases name (model.Origin.Repository). Releases are keyed by the names a
// repository writes in its own project.yaml, so without this any repository
// on the same installation could name another's project, read its release
// values in a preview and apply over its state.

// ErrNotOwner matches every *OwnerError with errors.Is.
var ErrNotOwner = errors.New("the project belongs to another repository")

// OwnerError refuses a run from one repository on a project and workspace
// whose releases belong to another.
type OwnerError struct {
	Project, Workspace string
	Owner, Run         *model.Repository
}

func (e *OwnerError) Error() string {
	return fmt.Sprintf("project %q workspace %q belongs to repository %s, not to %s, which this run comes from: "+
		"a repository may run only on the projects whose releases it made; name this project differently in its project.yaml",
		e.Project, e.Workspace, e.Owner, e.Run)
}

// Is makes errors.Is(err, ErrNotOwner) true for an *OwnerError.
func (e *OwnerError) Is(target error) bool { return target == ErrNotOwner }

// ownerLookback bounds how many releases written by the Kusion CLI (which
// records no origin) Owner reads past to find the repository that owned the
// project before them. Each is a read, so a preview of a project the CLI
// alone ever wrote costs this many at most.
const ownerLookback = 10

// Owner returns the repository the project and workspace of latest (its
// latest release; nil when it has none) belong to, nil when none does.
// latest decides when it records an origin: a release of ours names its
// repository, or names none when no repository has ever run on the project.
// A release the Kusion CLI wrote has no origin and keeps its project's
// owner, so Owner reads back through such releases, up to ownerLookback of
// them, to the newest that has one; past that the project is taken as the
// operator's, to be adopted.
func (s *Store) Owner(ctx context.Context, latest *model.Release) (*model.Repository, error) {
	if latest == nil {
		return nil, nil
	}
	if latest.Origin != nil {
		return latest.Origin.Repository, nil
	}
	rev := latest.Revision
	for i := 0; i < ownerLookback && rev > 1; i++ {
		rev--
		r, err := s.Get(ctx, latest.Project, latest.Workspace, rev)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("find the repository owning %s/%s: %w", latest.Project, latest.Workspace, err)
		}
		if r.Origin != nil {
			return r.Origin.Repository, nil
		}
	}
	return nil, nil
}

// CheckOwner refuses, with an *OwnerError, a run from repository run on the
// project and workspace of latest when another repository owns them, and
// returns the owner. A run without a repository (nil: the Kusion CLI or
// the action on an operator's machine) is the operator and may run on any.
func (s *Store) CheckOwner(ctx context.Context, run *model.Repository, latest *model.Release) (*model.Repository, error) {
	owner, err := s.Owner(ctx, latest)
	if err != nil {
		return nil, err
	}
	if run != nil && owner != nil && !owner.Same(run) {
		return owner, &OwnerError{Project: latest.Project, Workspace: latest.Workspace, Owner: owner, Run: run}
	}
	return owner, nil
}

// Owned is the release store as seen by a run from one repository: reading
// the latest release and taking a revision slot are refused (an
// *OwnerError) on a project and workspace another repository owns, before
// anything of theirs is returned or written. The releases it begins name
// the repository: Run, or for a run without one the owner it follows.
type Owned struct {
	*Store
	// Run is the repository the run comes from; nil for the operator.
	Run *model.Repository
}

// Latest is Store.Latest, refused on a project another repository owns.
func (o Owned) Latest(ctx context.Context, project, workspace string) (*model.Release, error) {
	latest, err := o.Store.Latest(ctx, project, workspace)
	if err != nil {
		return nil, err
	}
	if _, err := o.CheckOwner(ctx, o.Run, latest); err != nil {
		return nil, err
	}
	return latest, nil
}

// Begin is BeginIf without a condition of the caller's.
func (o Owned) Begin(ctx context.Context, r *model.Release) (*model.Release, error) {
	return o.BeginIf(ctx, r, nil)
}

// BeginIf is Store.BeginIf with ownership checked in the condition, so
// atomically with taking the slot: of two repositories adopting a project
// at once, the second finds the first's release there and is refused. r's
// origin is given the owning repository and, when it takes over releases
// naming none, Adopted.
func (o Owned) BeginIf(ctx context.Context, r *model.Release, cond func(latest *model.Release) error) (*model.Release, error) {
	if r == nil {
		return o.Store.BeginIf(ctx, r, cond)
	}
	prior, err := o.Store.BeginIf(ctx, r, func(latest *model.Release) error {
		owner, err := o.CheckOwner(ctx, o.Run, latest)
		if err != nil {
			return err
		}
		// A copy: the caller may share its origin between runs.
		origin := model.Origin{}
		if r.Origin != nil {
			origin = *r.Origin
		}
		origin.Repository, origin.Adopted = nil, false
		if owner != nil {
			kept := *owner
			origin.Repository = &kept
		}
		if o.Run != nil {
			run := *o.Run // a renamed repository records its new name
			origin.Repository = &run
			origin.Adopted = owner == nil && latest != nil
		}
		r.Origin = &origin
		if cond != nil {
			return cond(latest)
		}
		return nil
	})
	// A running release is reported before the condition is asked: one of
	// another repository is refused as such, not described.
	var held *HeldError
	if errors.As(err, &held) && o.Run != nil && held.Origin != nil && held.Origin.Repository != nil && !held.Origin.Repository.Same(o.Run) {
		err = &OwnerError{Project: held.Project, Workspace: held.Workspace, Owner: held.Origin.Repository, Run: o.Run}
	}
	return prior, err
}

// Unlock is Store.Unlock, refused on a project another repository owns.
func (o Owned) Unlock(ctx context.Context, project, workspace, who, why string) (*model.Release, error) {
	return o.UnlockIf(ctx, project, workspace, who, why, o.owns(ctx))
}

// RequestCancel is Store.RequestCancel, refused on a project another
// repository owns.
func (o Owned) RequestCancel(ctx context.Context, project, workspace, who, why string) (*model.Release, *model.Cancel, error) {
	return o.RequestCancelIf(ctx, project, workspace, who, why, o.owns(ctx))
}

// owns is the condition that the run's repository owns the project whose
// latest release is latest.
func (o Owned) owns(ctx context.Context) func(latest *model.Release) error {
	return func(latest *model.Release) error {
		_, err := o.CheckOwner(ctx, o.Run, latest)
		return err
	}
}
