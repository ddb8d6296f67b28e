package engine

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/kusionpr/kusionpr/model"
)

// stopKey carries a process's request that its operations stop.
type stopKey struct{}

type stopSignal struct {
	c   <-chan struct{}
	why func() *model.Cancel
	// heeding counts the operations under way that halt at the stop.
	heeding *atomic.Int32
}

// WithStop returns ctx carrying a stop: once c is closed, an apply or
// destroy under way stops as it does for a cancel request (what is in
// flight finishes, nothing more starts, the release ends failed saying
// why) and none begins. With none under way the context is cancelled, so
// a preview, a generate or a scan stop at once: they change nothing that
// a halfway end would leave unrecorded. why says who or what stopped it,
// asked once c is closed. A process gives its first SIGTERM or interrupt
// this way, keeping the parent context's cancellation for a second one: a
// deleted Job's pod and a cancelled workflow run are told to stop with a
// signal, then killed.
func WithStop(ctx context.Context, c <-chan struct{}, why func() *model.Cancel) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	s := stopSignal{c: c, why: why, heeding: new(atomic.Int32)}
	go func() {
		select {
		case <-c:
			// An operation that begins after this finds the stop
			// (stoppedBefore) and does not begin.
			if s.heeding.Load() == 0 {
				cancel()
			}
		case <-ctx.Done():
		}
	}()
	return context.WithValue(ctx, stopKey{}, s)
}

// heed counts an operation that halts at ctx's stop, until the returned
// func is called.
func heed(ctx context.Context) (done func()) {
	s := stopOf(ctx)
	if s.heeding == nil {
		return func() {}
	}
	s.heeding.Add(1)
	return func() { s.heeding.Add(-1) }
}

// stopOf is ctx's stop; its channel is nil (never closed) without one.
func stopOf(ctx context.Context) stopSignal {
	s, _ := ctx.Value(stopKey{}).(stopSignal)
	return s
}

// ErrStopped is the error of an operation that did not begin because its
// process was told to stop.
var ErrStopped = errors.New("the process was told to stop before the operation began; nothing was changed")

// stoppedBefore says whether ctx's stop has come.
func stoppedBefore(ctx context.Context) bool {
	s := stopOf(ctx)
	if s.c == nil {
		return false
	}
	select {
	case <-s.c:
		return true
	default:
		return false
	}
}

// watchStop stops the operation when its process's stop comes.
func (op *operation) watchStop(ctx context.Context) {
	s := stopOf(ctx)
	if s.c == nil {
		return
	}
	go func() {
		select {
		case <-s.c:
			op.halt(s.why())
		case <-op.stopBeat:
		}
	}()
}
