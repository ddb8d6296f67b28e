package backend

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/kusionpr/kusionpr/model"
)

// ReleaseQuery picks releases across a store's projects and workspaces:
// the questions a team asks of its history (every release of a workspace,
// what is running now) that the object stores could answer only by listing
// and reading every release.
type ReleaseQuery struct {
	// Project and Workspace narrow the answer; "" is any.
	Project, Workspace string
	// Running keeps the releases that have not ended (a holder applying,
	// or one that died and waits to be superseded).
	Running bool
	// Limit is how many releases, newest first; 0 is all.
	Limit int
}

// ErrNoQueries is the answer of a store that keeps releases only as
// objects: S3, GCS, OSS, Azure, a folder and the HTTP store.
var ErrNoQueries = errors.New("this release store keeps releases only as objects, so it answers no question across projects; a PostgreSQL store does (docs/stores.md)")

// releaseIndex is what a store with a database keeps beside its objects: a
// row per release, written in the transaction that writes its object, so
// the rows can never say what the objects do not.
type releaseIndex interface {
	// writeRelease is objects.write of a release's object, with r, the
	// release it holds, recorded as its row.
	writeRelease(ctx context.Context, key string, data []byte, createOnly bool, prefix string, r *model.Release) error
	// queryReleases answers q among the releases under prefix, newest
	// first, each without its spec and state, and says how many more
	// matched past q.Limit.
	queryReleases(ctx context.Context, prefix string, q ReleaseQuery) ([]*model.Release, int, error)
	// readIndex is the project's workspace's index made from its rows:
	// where releases have rows, they are the index, and no .metadata.yml
	// is kept (no Kusion CLI reads a database).
	readIndex(ctx context.Context, prefix, project, workspace string) (*index, error)
}

// Queries reports whether the store answers Query.
func (s *Store) Queries() bool {
	_, ok := s.obj.(releaseIndex)
	return ok
}

// Query returns the releases q picks, newest first (by creation), without
// their spec and state, and how many more matched past q.Limit. A store
// that keeps releases only as objects answers ErrNoQueries.
func (s *Store) Query(ctx context.Context, q ReleaseQuery) ([]*model.Release, int, error) {
	ix, ok := s.obj.(releaseIndex)
	if !ok {
		return nil, 0, ErrNoQueries
	}
	if q.Project != "" {
		if err := validName("project", q.Project); err != nil {
			return nil, 0, fmt.Errorf("query releases: %w", err)
		}
	}
	if q.Workspace != "" {
		if err := validName("workspace", q.Workspace); err != nil {
			return nil, 0, fmt.Errorf("query releases: %w", err)
		}
	}
	rels, more, err := ix.queryReleases(ctx, s.prefix, q)
	if err != nil {
		return nil, 0, fmt.Errorf("query releases: %w", err)
	}
	return rels, more, nil
}

// writeRelease writes a release's object, and its row where the store
// keeps rows.
func (s *Store) writeRelease(ctx context.Context, r *model.Release, data []byte, createOnly bool) error {
	key := s.releaseKey(r.Project, r.Workspace, r.Revision)
	if ix, ok := s.obj.(releaseIndex); ok {
		return ix.writeRelease(ctx, key, data, createOnly, s.prefix, r)
	}
	return s.obj.write(ctx, key, data, createOnly)
}

// AnswersQueries reports whether the store at rawURL answers Query, from
// its scheme, without opening it.
func AnswersQueries(rawURL string) bool {
	u, err := url.Parse(rawURL) // lowercases the scheme
	return err == nil && isPostgres(u.Scheme)
}

func isPostgres(scheme string) bool { return scheme == "postgres" || scheme == "postgresql" }
