package backend

import (
	"context"
	"errors"
	"fmt"
	"regexp"
)

// workDir holds, beside the releases, the files of work run away from the
// process that asked for it (a Kubernetes Job, a workflow run): the
// checkout it runs and the result it leaves. Kusion reads only releases/,
// so it never sees them. Nothing here is deleted by the store: an object
// store's lifecycle rule on the folder bounds how long they stay.
const workDir = "kusionpr-work"

// DefaultMaxWorkBytes bounds one read of a work file: a checkout is
// bounded by what the bot checks out, compressed.
const DefaultMaxWorkBytes = 1 << 30

// ErrNoWork is the error of a work file that does not exist (yet).
var ErrNoWork = errors.New("no such work file")

// ErrWorkExists is the error of a work file written a second time: work
// files are written once, so that two writers cannot mix.
var ErrWorkExists = errors.New("work file already written")

var workName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,127}$`)

func (s *Store) workKey(id, name string) (string, error) {
	if !workName.MatchString(id) || !workName.MatchString(name) {
		return "", fmt.Errorf("work file %q of %q: names are lower-case letters, digits, dots and dashes", name, id)
	}
	return s.prefix + workDir + "/" + id + "/" + name, nil
}

// PutWork writes the file name of the work id, once.
func (s *Store) PutWork(ctx context.Context, id, name string, data []byte) error {
	key, err := s.workKey(id, name)
	if err != nil {
		return err
	}
	if err := s.obj.write(ctx, key, data, true); err != nil {
		if errors.Is(err, errObjectExists) {
			return fmt.Errorf("write %s: %w", key, ErrWorkExists)
		}
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}

// HasWork says whether the file name of the work id was written.
func (s *Store) HasWork(ctx context.Context, id, name string) (bool, error) {
	key, err := s.workKey(id, name)
	if err != nil {
		return false, err
	}
	ok, err := s.obj.exists(ctx, key)
	if err != nil {
		return false, fmt.Errorf("look for %s: %w", key, err)
	}
	return ok, nil
}

// Work reads the file name of the work id, refusing one past limit bytes
// (default DefaultMaxWorkBytes); one not written is ErrNoWork.
func (s *Store) Work(ctx context.Context, id, name string, limit int64) ([]byte, error) {
	key, err := s.workKey(id, name)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = DefaultMaxWorkBytes
	}
	data, err := s.readObject(ctx, key, limit, "work file")
	if errors.Is(err, errObjectMissing) {
		return nil, fmt.Errorf("read %s: %w", key, ErrNoWork)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	return data, nil
}
