package backend

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"gopkg.in/yaml.v3"

	"github.com/kusionpr/kusionpr/model"
)

// index is Kusion's .metadata.yml, byte-compatible: Kusion decodes and encodes
// it with gopkg.in/yaml.v3, its entry fields carry no tags (so the keys are
// the lowercased field names), and older releases' entries have no phase.
//
// The index is a hint. The release files are the truth: readers probe past
// latestRevision with Exists and repair the index when it lags.
type index struct {
	LatestRevision uint64        `yaml:"latestRevision,omitempty"`
	Releases       []*indexEntry `yaml:"releaseMetaDatas,omitempty"`
}

type indexEntry struct {
	Revision uint64      `yaml:"revision"`
	Stack    string      `yaml:"stack"`
	Phase    model.Phase `yaml:"phase,omitempty"`
}

// entry returns the entry for revision, or nil.
func (ix *index) entry(revision uint64) *indexEntry {
	for _, e := range ix.Releases {
		if e != nil && e.Revision == revision {
			return e
		}
	}
	return nil
}

// set records r in the index: adds or replaces its entry, keeps entries sorted
// and raises latestRevision. It reports whether anything changed.
func (ix *index) set(r *model.Release) bool {
	changed := false
	if e := ix.entry(r.Revision); e != nil {
		if e.Stack != r.Stack || e.Phase != r.Phase {
			e.Stack, e.Phase = r.Stack, r.Phase
			changed = true
		}
	} else {
		ix.Releases = append(ix.Releases, &indexEntry{Revision: r.Revision, Stack: r.Stack, Phase: r.Phase})
		changed = true
	}
	if r.Revision > ix.LatestRevision {
		ix.LatestRevision = r.Revision
		changed = true
	}
	if changed {
		ix.sort()
	}
	return changed
}

func (ix *index) sort() {
	out := ix.Releases[:0]
	for _, e := range ix.Releases {
		if e != nil {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	ix.Releases = out
}

// readIndex reads the index of project/workspace. A missing index is an empty
// one (found is false).
func (s *Store) readIndex(ctx context.Context, project, workspace string) (ix *index, found bool, err error) {
	if rows, ok := s.obj.(releaseIndex); ok {
		if ix, err = rows.readIndex(ctx, s.prefix, project, workspace); err != nil {
			return nil, false, fmt.Errorf("read the release rows of %s/%s: %w", project, workspace, err)
		}
		return ix, len(ix.Releases) > 0, nil
	}
	key := s.indexKey(project, workspace)
	data, err := s.readObject(ctx, key, s.maxIndex(), "release index")
	if errors.Is(err, errObjectMissing) {
		return &index{}, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read release index %s: %w", key, err)
	}
	ix = &index{}
	if err := yaml.Unmarshal(data, ix); err != nil {
		return nil, false, fmt.Errorf("decode release index %s: %w", key, err)
	}
	ix.sort()
	return ix, true, nil
}

func (s *Store) writeIndex(ctx context.Context, project, workspace string, ix *index) error {
	if _, ok := s.obj.(releaseIndex); ok {
		return nil // the rows are the index, written with each release
	}
	key := s.indexKey(project, workspace)
	data, err := yaml.Marshal(ix)
	if err != nil {
		return fmt.Errorf("encode release index %s: %w", key, err)
	}
	if err := s.obj.write(ctx, key, data, false); err != nil {
		return fmt.Errorf("write release index %s: %w", key, err)
	}
	return nil
}

// recordInIndex is the read-modify-write after a release file changed. Two
// writers can interleave and one entry can be lost; readers repair that by
// probing, so the index never decides anything on its own.
func (s *Store) recordInIndex(ctx context.Context, r *model.Release) error {
	if _, ok := s.obj.(releaseIndex); ok {
		return nil // the release's row, written with it
	}
	ix, _, err := s.readIndex(ctx, r.Project, r.Workspace)
	if err != nil {
		return err
	}
	if !ix.set(r) {
		return nil
	}
	return s.writeIndex(ctx, r.Project, r.Workspace, ix)
}
