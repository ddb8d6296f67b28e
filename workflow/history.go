package workflow

import (
	"context"
	"fmt"
	"slices"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/model"
)

// History is a stack's releases, newest first, and where they are kept.
type History struct {
	Project, Workspace string
	// Store names the release store for people.
	Store string
	// Releases say who, when, how and from what; their spec and state are
	// not read.
	Releases []*model.Release
	// More counts the older releases left out by the limit.
	More int
}

// Releases reads the request's stack's releases, newest first: q.Limit
// of them at most (0: all), only those not ended with q.Running; q's
// project and workspace are the stack's.
func (r *Runner) Releases(ctx context.Context, req Request, q backend.ReleaseQuery) (*History, error) {
	st, store, where, err := r.stackStore(ctx, req)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	h := &History{Project: st.Project.Name, Workspace: st.WorkspaceName(req.Workspace), Store: where}
	owned := backend.Owned{Store: store, Run: req.repository()}
	latest, err := owned.Latest(ctx, h.Project, h.Workspace)
	if err != nil {
		return nil, err
	}
	q.Project, q.Workspace = h.Project, h.Workspace
	if store.Queries() {
		// One query in place of a read per release.
		if h.Releases, h.More, err = store.Query(ctx, q); err != nil {
			return nil, err
		}
		return h, nil
	}
	revs, err := store.Revisions(ctx, h.Project, h.Workspace)
	if err != nil {
		return nil, err
	}
	slices.Sort(revs)
	slices.Reverse(revs)
	if !q.Running && q.Limit > 0 && len(revs) > q.Limit {
		h.More, revs = len(revs)-q.Limit, revs[:q.Limit]
	}
	for _, n := range revs {
		// The newest was read by the owner's check.
		rel := latest
		if latest == nil || n != latest.Revision {
			if rel, err = store.Get(ctx, h.Project, h.Workspace, n); err != nil {
				return nil, fmt.Errorf("releases of %s/%s: %w", h.Project, h.Workspace, err)
			}
		}
		switch {
		case q.Running && rel.Phase.Ended():
		case q.Running && q.Limit > 0 && len(h.Releases) == q.Limit:
			h.More++
		default:
			h.Releases = append(h.Releases, rel)
		}
	}
	return h, nil
}

// Across answers q across the store's projects, newest first: a store
// with a database does (PostgreSQL); the others answer
// backend.ErrNoQueries. where names the store for people.
func (r *Runner) Across(ctx context.Context, q backend.ReleaseQuery) (rels []*model.Release, more int, where string, err error) {
	store, where, err := r.Open(ctx)
	if err != nil {
		return nil, 0, "", err
	}
	defer store.Close()
	rels, more, err = store.Query(ctx, q)
	return rels, more, where, err
}

// Cancel asks the running release of the request's stack to stop: its
// runner sees it at its next heartbeat, lets what is in flight finish and
// ends the release failed, saying who cancelled. It returns the release
// asked, the request that stands (an earlier one if another asked first)
// and how often the runner looks; a stack nothing runs on is a
// *backend.NothingRunningError.
func (r *Runner) Cancel(ctx context.Context, req Request, who, why string) (*model.Release, *model.Cancel, error) {
	st, store, _, err := r.stackStore(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	defer store.Close()
	return backend.Owned{Store: store, Run: req.repository()}.RequestCancel(ctx, st.Project.Name, st.WorkspaceName(req.Workspace), who, why)
}

// stackStore loads the request's stack and opens the store, for the
// commands that touch only releases (unlock, cancel, releases); the
// caller closes the store.
func (r *Runner) stackStore(ctx context.Context, req Request) (*project.Stack, *backend.Store, string, error) {
	st, err := project.LoadStack(req.Root, req.Dir())
	if err != nil {
		return nil, nil, "", err
	}
	store, where, err := r.Open(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	return st, store, where, nil
}
