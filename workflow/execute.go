package workflow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/githubapi"
)

// WorkStore keeps the files of requests run away from the process that
// asked for them, beside the releases; *backend.Store is the
// implementation.
type WorkStore interface {
	PutWork(ctx context.Context, id, name string, data []byte) error
	Work(ctx context.Context, id, name string, limit int64) ([]byte, error)
	HasWork(ctx context.Context, id, name string) (bool, error)
}

// CheckoutFile is the work file holding the checkout a request runs
// (githubapi.Pack's tarball): the commit the asker checked out and
// vetted, so that the worker needs no access to the repository.
const CheckoutFile = "checkout.tar.gz"

// Execute runs req as a worker away from the asker does: it unpacks the
// checkout the asker left in work, runs the stack with the runner's
// settings and the request's own, and leaves the result in work for the
// asker to report. It returns the run; an error is one that left no result.
func (r *Runner) Execute(ctx context.Context, req Request, work WorkStore, lim githubapi.ArchiveLimits) (*StackResult, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	id := req.ID()
	data, err := work.Work(ctx, req.CheckoutID(), CheckoutFile, 0)
	if err != nil {
		return nil, fmt.Errorf("request %s: checkout: %w", id, err)
	}
	root, err := os.MkdirTemp("", "kusionpr-request")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	if err := githubapi.Unpack(bytes.NewReader(data), root, lim); err != nil {
		return nil, fmt.Errorf("request %s: checkout: %w", id, err)
	}
	req.Root = root
	run := r.Run(ctx, req)
	res, err := NewRequestResult(req, root, run).Encode()
	if err != nil {
		return run, fmt.Errorf("request %s: result: %w", id, err)
	}
	if err := work.PutWork(ctx, id, ResultFile, res); err != nil {
		if errors.Is(err, backend.ErrWorkExists) {
			// An earlier run of this very request (a Job made again after
			// the first was cleaned up) reported: its result stands.
			r.log(req).Warn("the request's result was written before; this run's is not kept", "request", id)
			return run, nil
		}
		return run, fmt.Errorf("request %s: result: %w", id, err)
	}
	return run, nil
}

// PutCheckout leaves the checkout in dir for the workers of req's
// repository and commit, unless an earlier asker left it: every stack of a
// commit runs the same checkout.
func PutCheckout(ctx context.Context, work WorkStore, req Request, dir string) error {
	id := req.CheckoutID()
	if there, err := work.HasWork(ctx, id, CheckoutFile); err != nil || there {
		return err
	}
	var buf bytes.Buffer
	if err := githubapi.Pack(dir, &buf); err != nil {
		return err
	}
	if err := work.PutWork(ctx, id, CheckoutFile, buf.Bytes()); err != nil && !errors.Is(err, backend.ErrWorkExists) {
		return fmt.Errorf("checkout %s: %w", id, err)
	}
	return nil
}
