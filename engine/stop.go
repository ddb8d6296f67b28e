package engine

import (
	"context"
	"errors"

	"github.com/kusionpr/kusionpr/model"
)

// stopKey carries a process's request that its operations stop.
type stopKey struct{}

type stopSignal struct {
	c   <-chan struct{}
	why func() *model.Cancel
}

// WithStop returns ctx carrying a stop: once c is closed, an operation
// under way stops as it does for a cancel request (what is in flight
// finishes, nothing more starts, the release ends failed saying why) and
// none begins. why says who or what stopped it, asked once c is closed.
// A process gives its first SIGTERM or interrupt this way, keeping the
// context's own cancellation for a second one: a deleted Job's pod and a
// cancelled workflow run are told to stop with a signal, then killed.
func WithStop(ctx context.Context, c <-chan struct{}, why func() *model.Cancel) context.Context {
	return context.WithValue(ctx, stopKey{}, stopSignal{c: c, why: why})
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
