package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kusionpr/kusionpr/model"
)

// ReleaseStore keeps releases; backend.Store is the implementation.
type ReleaseStore interface {
	// Latest returns the newest release of a project's workspace, nil if none.
	Latest(ctx context.Context, project, workspace string) (*model.Release, error)
	// Begin takes the next revision slot for r (create-only, so one runner
	// wins) and returns the release before it, nil if none.
	Begin(ctx context.Context, r *model.Release) (*model.Release, error)
	// Update rewrites a release this runner holds.
	Update(ctx context.Context, r *model.Release) error
}

// Engine runs operations on stacks. Its zero value is not usable: set
// Runtimes and Store.
type Engine struct {
	// Runtimes is how each resource type is reached. Each runtime is built
	// on first use and kept for the Engine's life, so a change to Runtimes
	// after the first operation has no effect: build another Engine.
	Runtimes map[model.ResourceType]Driver
	Store    ReleaseStore
	// Parallelism bounds how many resources are worked on at once (default 10).
	Parallelism int
	Logger      *slog.Logger
	// Now is the clock for release times (default time.Now).
	Now func() time.Time
	// IgnoreFields are dotted attribute paths left out of every comparison
	// (fields a controller or webhook owns). A key holding dots, such as
	// an annotation name, is written as is: metadata.annotations.example.com/x.
	IgnoreFields []string
	// Heartbeat is how often a running release shows its holder alive
	// (default one minute: a fifth of the store's default lease).
	Heartbeat time.Duration

	mu    sync.Mutex
	built map[model.ResourceType]*built
}

// built is a runtime built from its Driver, or why it could not be.
type built struct {
	once sync.Once
	rt   Runtime
	err  error
}

// Stack identifies what an operation works on and what it wants.
type Stack struct {
	Project   string
	Workspace string
	Stack     string
	// Spec is the desired state; nil for destroy.
	Spec *model.Spec
	// Origin is recorded in the release (who, where, which command).
	Origin *model.Origin
}

func (e *Engine) logger() *slog.Logger {
	if e.Logger != nil {
		return e.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now().UTC()
	}
	return time.Now().UTC()
}

func (e *Engine) heartbeat() time.Duration {
	if e.Heartbeat > 0 {
		return e.Heartbeat
	}
	return time.Minute
}

func (e *Engine) parallelism() int {
	if e.Parallelism > 0 {
		return e.Parallelism
	}
	return 10
}

func (e *Engine) runtime(ctx context.Context, r model.Resource) (Runtime, error) {
	d, ok := e.Runtimes[r.Type]
	if !ok || d.Open == nil {
		return nil, fmt.Errorf("%s: no runtime for type %q", r.ID, r.Type)
	}
	e.mu.Lock()
	if e.built == nil {
		e.built = map[model.ResourceType]*built{}
	}
	b := e.built[r.Type]
	if b == nil {
		b = &built{}
		e.built[r.Type] = b
	}
	e.mu.Unlock()
	b.once.Do(func() {
		b.rt, b.err = d.Open(ctx)
		if b.rt == nil && b.err == nil {
			b.err = fmt.Errorf("%s: no runtime for type %q", r.ID, r.Type)
		}
	})
	return b.rt, b.err
}

// batched says, for the walk, which resources of rs belong to a runtime
// that batches.
func (e *Engine) batched(rs model.Resources) func(id string) bool {
	types := make(map[string]model.ResourceType, len(rs))
	for _, r := range rs {
		types[r.ID] = r.Type
	}
	return func(id string) bool { return e.Runtimes[types[id]].Batches }
}
