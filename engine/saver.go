package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/kusionpr/kusionpr/model"
)

// stateSaver persists a running release's state as resources finish. Saves
// are coalesced: at most one write is in flight, and a write always carries
// every result recorded before it started, so a crash loses at most what was
// finishing at that moment while a 1,000-resource apply does not rewrite the
// release 1,000 times over a slow store. Saves are also paced: after one,
// the next waits a few times as long as it took, so that saving never takes
// more than a small share of the time (and the CPU) the apply has.
type stateSaver struct {
	store ReleaseStore
	log   *slog.Logger
	// lost is called once if the store says the release was ended by
	// someone else: the run must stop.
	lost     func(error)
	lostOnce sync.Once

	mu  sync.Mutex
	rel *model.Release

	kick chan struct{}
	// finishing cuts a pause short: the final write follows at once.
	finishing chan struct{}
	done      chan struct{}
}

// Pacing of saves: the pause after a save is savePace times what it took,
// within these bounds. A crash loses at most what finished during the
// pause; the next run finds those objects live and applies them again,
// which changes nothing.
const (
	savePace     = 4
	minSavePause = time.Second
	maxSavePause = 10 * time.Second
)

func newStateSaver(store ReleaseStore, rel *model.Release, log *slog.Logger, lost func(error)) *stateSaver {
	s := &stateSaver{store: store, log: log, rel: rel, lost: lost, kick: make(chan struct{}, 1), finishing: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *stateSaver) loop() {
	defer close(s.done)
	for range s.kick {
		start := time.Now()
		snap := s.snapshot()
		err := s.store.Update(context.Background(), snap)
		switch {
		case errors.Is(err, model.ErrSuperseded):
			s.log.Error("the release was ended by someone else; stopping", "error", err)
			s.lostOnce.Do(func() { s.lost(err) })
		case err != nil:
			s.log.Warn("saving release state failed; retried on the next change", "error", err)
		}
		pause := min(max(savePace*time.Since(start), minSavePause), maxSavePause)
		select {
		case <-time.After(pause):
		case <-s.finishing:
			// finish writes everything there is; a save now would be
			// overwritten at once.
			return
		}
	}
}

// beat records a sign of life: holders write at least this often, or the
// store takes the release as abandoned once its lease passes.
func (s *stateSaver) beat(now time.Time) {
	s.mu.Lock()
	if s.rel.Origin == nil {
		s.rel.Origin = &model.Origin{}
	}
	s.rel.Origin.Heartbeat = now.UTC()
	s.mu.Unlock()
	s.changed()
}

func (s *stateSaver) snapshot() *model.Release {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := *s.rel
	if s.rel.Origin != nil {
		o := *s.rel.Origin
		snap.Origin = &o
	}
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

func (s *stateSaver) replaceSpec(sp *model.Spec) {
	s.mu.Lock()
	s.rel.Spec = sp
	s.mu.Unlock()
	s.changed()
}

// finish stops the background saves and writes the final phase.
func (s *stateSaver) finish(ctx context.Context, ok bool, msg string, now time.Time) error {
	close(s.finishing)
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
