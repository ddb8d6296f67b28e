package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/kusionpr/kusionpr/model"
)

// stateSaver persists a running release's state as resources finish. Saves
// are coalesced: at most one write is in flight, and a write always carries
// every result recorded before it started, so a crash loses at most what was
// finishing at that moment while a 1,000-resource apply does not rewrite the
// release 1,000 times over a slow store.
type stateSaver struct {
	store ReleaseStore
	log   *slog.Logger

	mu  sync.Mutex
	rel *model.Release

	kick chan struct{}
	done chan struct{}
}

func newStateSaver(store ReleaseStore, rel *model.Release, log *slog.Logger) *stateSaver {
	s := &stateSaver{store: store, log: log, rel: rel, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *stateSaver) loop() {
	defer close(s.done)
	for range s.kick {
		snap := s.snapshot()
		if err := s.store.Update(context.Background(), snap); err != nil {
			s.log.Warn("saving release state failed; retried on the next change", "error", err)
		}
	}
}

func (s *stateSaver) snapshot() *model.Release {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := *s.rel
	snap.State = &model.State{Resources: append(model.Resources(nil), s.rel.State.Resources...)}
	return &snap
}

func (s *stateSaver) changed() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// put records r's state, replacing an earlier entry of the same id.
func (s *stateSaver) put(r model.Resource) {
	s.mu.Lock()
	rs := s.rel.State.Resources
	replaced := false
	for i := range rs {
		if rs[i].ID == r.ID {
			rs[i] = r
			replaced = true
			break
		}
	}
	if !replaced {
		s.rel.State.Resources = append(rs, r)
	}
	s.mu.Unlock()
	s.changed()
}

// remove drops id from the state.
func (s *stateSaver) remove(id string) {
	s.mu.Lock()
	rs := s.rel.State.Resources
	for i := range rs {
		if rs[i].ID == id {
			s.rel.State.Resources = append(rs[:i:i], rs[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	s.changed()
}

func (s *stateSaver) replaceState(st *model.State) {
	s.mu.Lock()
	s.rel.State = st
	s.mu.Unlock()
	s.changed()
}

// finish stops the background saves and writes the final phase.
func (s *stateSaver) finish(ctx context.Context, ok bool, msg string, now time.Time) error {
	close(s.kick)
	<-s.done
	s.mu.Lock()
	if ok {
		s.rel.Phase = model.PhaseSucceeded
	} else {
		s.rel.Phase = model.PhaseFailed
	}
	s.rel.Message = msg
	s.rel.ModifiedTime = now.UTC()
	if s.rel.Origin != nil {
		s.rel.Origin.Heartbeat = s.rel.ModifiedTime
	}
	s.mu.Unlock()
	return s.store.Update(ctx, s.rel)
}
