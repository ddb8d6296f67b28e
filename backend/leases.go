package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// leaseDir holds, beside the releases, leases: which of the processes
// sharing the store does a chore now (a repository's drift scan), and when
// it last did it. Kusion reads only releases/, so it never sees them.
//
// A lease is a series of generations, each a create-only object: taking
// the lease is creating the next generation, so of two processes taking it
// at once one wins, as with a release's revision slot. A generation is held
// until it is released or its holder stops renewing it (Until).
const leaseDir = "kusionpr-leases"

// Lease is one generation of a lease.
type Lease struct {
	Name       string    `json:"name"`
	Generation uint64    `json:"generation"`
	Holder     string    `json:"holder"`
	Taken      time.Time `json:"taken"`
	// Until is when the lease lapses unless renewed: a holder that died
	// holds it no longer.
	Until time.Time `json:"until"`
	// Released is when the holder gave it up, done.
	Released time.Time `json:"released,omitzero"`
}

// Held reports whether the lease is held at now: taken, not released and
// not lapsed.
func (l *Lease) Held(now time.Time) bool {
	return l != nil && l.Released.IsZero() && now.Before(l.Until)
}

// LeaseHeldError is the error of taking a lease another holds.
type LeaseHeldError struct {
	Name, Holder string
	Until        time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("lease %s is held by %s until %s", e.Name, e.Holder, e.Until.UTC().Format(time.RFC3339))
}

// ErrLeaseLost is the error of renewing or releasing a generation after
// another process took the next one: the lease lapsed.
var ErrLeaseLost = errors.New("the lease lapsed and was taken by another")

func (s *Store) leasePrefix(name string) (string, error) {
	if !workName.MatchString(name) {
		return "", fmt.Errorf("lease %q: names are lower-case letters, digits, dots and dashes", name)
	}
	return s.prefix + leaseDir + "/" + name + "/", nil
}

// TakeLease takes the lease name for holder, for ttl unless renewed. It
// fails with a *LeaseHeldError when another holds it, and with cond's
// error, taking nothing, when cond refuses the last generation (nil for
// none): cond sees what the holder before did, as BeginIf's condition sees
// the latest release.
func (s *Store) TakeLease(ctx context.Context, name, holder string, ttl time.Duration, cond func(last *Lease) error) (*Lease, error) {
	prefix, err := s.leasePrefix(name)
	if err != nil {
		return nil, err
	}
	for {
		last, err := s.lastLease(ctx, name, prefix)
		if err != nil {
			return nil, err
		}
		now := s.now()
		if last.Held(now) {
			return nil, &LeaseHeldError{Name: name, Holder: last.Holder, Until: last.Until}
		}
		if cond != nil {
			if err := cond(last); err != nil {
				return nil, err
			}
		}
		l := &Lease{Name: name, Generation: 1, Holder: holder, Taken: now, Until: now.Add(ttl)}
		if last != nil {
			l.Generation = last.Generation + 1
		}
		err = s.writeLease(ctx, prefix, l, true)
		if errors.Is(err, errObjectExists) {
			// Another took this generation first: read what it holds.
			continue
		}
		if err != nil {
			return nil, err
		}
		return l, nil
	}
}

// RenewLease keeps l held for ttl more.
func (s *Store) RenewLease(ctx context.Context, l *Lease, ttl time.Duration) error {
	return s.rewriteLease(ctx, l, func(l *Lease) { l.Until = s.now().Add(ttl) })
}

// ReleaseLease gives l up: the next taker finds it released, and when.
func (s *Store) ReleaseLease(ctx context.Context, l *Lease) error {
	return s.rewriteLease(ctx, l, func(l *Lease) { l.Released = s.now() })
}

// rewriteLease changes the holder's own generation, unless another took
// the next one; only the holder writes its generation after creating it.
func (s *Store) rewriteLease(ctx context.Context, l *Lease, change func(*Lease)) error {
	prefix, err := s.leasePrefix(l.Name)
	if err != nil {
		return err
	}
	next, err := s.obj.exists(ctx, prefix+strconv.FormatUint(l.Generation+1, 10))
	if err != nil {
		return fmt.Errorf("lease %s: %w", l.Name, err)
	}
	if next {
		return fmt.Errorf("lease %s generation %d: %w", l.Name, l.Generation, ErrLeaseLost)
	}
	change(l)
	return s.writeLease(ctx, prefix, l, false)
}

func (s *Store) writeLease(ctx context.Context, prefix string, l *Lease, createOnly bool) error {
	data, err := json.Marshal(l)
	if err != nil {
		return err
	}
	key := prefix + strconv.FormatUint(l.Generation, 10)
	if err := s.obj.write(ctx, key, data, createOnly); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}

// lastLease is the lease's newest generation, nil for none.
func (s *Store) lastLease(ctx context.Context, name, prefix string) (*Lease, error) {
	names, err := s.obj.list(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("list lease %s: %w", name, err)
	}
	var newest uint64
	for _, n := range names {
		if g, err := strconv.ParseUint(n, 10, 64); err == nil && g > newest {
			newest = g
		}
	}
	if newest == 0 {
		return nil, nil
	}
	key := prefix + strconv.FormatUint(newest, 10)
	data, err := s.readObject(ctx, key, 64<<10, "lease")
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	l := &Lease{}
	if err := json.Unmarshal(data, l); err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	l.Name, l.Generation = name, newest
	return l, nil
}
