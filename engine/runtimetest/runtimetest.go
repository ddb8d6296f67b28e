// Package runtimetest is the conformance suite of engine.Runtime, in the
// manner of gocloud's drivertest: every runtime runs RunConformance from a
// test of its own package, with a Harness that makes resources of its kind.
// The suite checks what engine.Runtime documents, each capability the
// runtime's engine.Driver declares (Batches, SpecFieldsOnly), each
// optional call the built runtime answers (engine.Prefetcher,
// engine.SensitivePather), and that a dry run waiting for a dependency says
// so (engine.Unplannable); the test's log says which it does not claim, and
// which checks the harness cannot feed.
//
// It lives beside the interfaces it checks, not under runtime/: the
// runtimes match engine.Runtime without importing the engine, and only
// their tests import this package.
package runtimetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
)

// Harness gives the suite the runtime under test and resources of its kind.
// Its makers are called with the subtest that uses what they make, so the
// cleanups they register run with it.
type Harness struct {
	// Driver is the runtime under test as the engine is given it: its
	// capabilities, and how it is built. It is built once, and the runtime
	// shared by every check.
	Driver engine.Driver
	// Object returns a resource that does not exist yet and that no other
	// call returned: its own id, and attributes of its own, so that answers
	// mixed up between concurrent calls show. The objects of one harness
	// are of one kind in one place (a runtime that reads many objects of a
	// kind at once sees them together).
	Object func(t *testing.T) model.Resource
	// Update returns r with attributes an apply of it changes, in place or
	// by replacing the object.
	Update func(r model.Resource) model.Resource
	// Invalid, if set, returns a resource that does not exist and whose
	// apply the system refuses.
	Invalid func(t *testing.T) model.Resource
	// Exists, if set, tells whether r's object exists, asking the system
	// itself rather than the runtime.
	Exists func(t *testing.T, r model.Resource) bool
	// Dependent, if set, returns two resources that do not exist yet, the
	// second of which can be created only once the first exists (an
	// object and its namespace).
	Dependent func(t *testing.T) (dependency, dependent model.Resource)
	// NotReady, if set, returns a resource that an apply creates but that
	// never becomes ready, and a channel closed once a Watch of it has
	// found it not ready.
	NotReady func(t *testing.T) (r model.Resource, waiting <-chan struct{})
	// Secret, if set, returns a resource holding secret, a value no result
	// may show. A runtime that claims engine.SensitivePather must declare
	// the path that holds it sensitive.
	Secret func(t *testing.T) (r model.Resource, secret string)
	// Touch, if set, changes r's object as someone other than the runtime
	// would, in a field r does not set. Required when the driver claims
	// SpecFieldsOnly.
	Touch func(t *testing.T, r model.Resource)
	// PreviewOnly says the runtime changes nothing and sees nothing live:
	// Read answers with the record it is given (nil without one), a dry
	// run answers what an apply would make of the record, and Apply for
	// real and Delete refuse, naming the resource.
	PreviewOnly bool
}

// RunConformance runs the suite against the runtime h.Driver builds. A check that does not
// apply (a capability the runtime does not claim, a resource the harness
// cannot make) is logged with the reason, not skipped: under `make test`
// a skip means a missing test environment, and fails the run.
func RunConformance(t *testing.T, h Harness) {
	t.Helper()
	if h.Driver.Open == nil || h.Object == nil || h.Update == nil {
		t.Fatal("runtimetest: the harness needs a Driver that opens, Object and Update")
	}
	rt, err := h.Driver.Open(t.Context())
	if err != nil || rt == nil {
		t.Fatalf("runtimetest: the driver builds no runtime: %v", err)
	}
	s := suite{h: h, rt: rt}
	const previewOnly = `preview only: the runtime never applies or deletes (see "preview only")`
	pf, isPrefetcher := rt.(engine.Prefetcher)
	sp, isSensitivePather := rt.(engine.SensitivePather)
	for _, c := range []struct {
		name string
		// applies says whether the check applies; why says why not.
		applies bool
		why     string
		run     func(*testing.T)
	}{
		{"read of a missing object", true, "", s.readMissing},
		{"dry run creates nothing", true, "", s.dryRunCreatesNothing},
		{"lifecycle", !h.PreviewOnly, previewOnly, s.lifecycle},
		{"delete of a missing object", !h.PreviewOnly, previewOnly, s.deleteMissing},
		{"preview only", h.PreviewOnly, `applies and deletes (see "lifecycle")`, s.previewOnly},
		{"invalid resource", h.Invalid != nil, "the harness gives no resource the system refuses", s.invalid},
		{"cancelled context", true, "", s.cancelledContext},
		{"watch honours its context", h.NotReady != nil && !h.PreviewOnly,
			"the harness has no resource that never becomes ready: Watch is checked after each apply, and with a context cancelled before the call", s.watchCancelled},
		{"concurrent calls", true, "", func(t *testing.T) { s.concurrently(t, 3, true) }},
		{"dependent pair", h.Dependent != nil && !h.PreviewOnly, "the harness gives no pair of resources one of which needs the other", s.dependent},
		{"secret never shows", h.Secret != nil, "the harness gives no resource holding a secret", s.secret},
		{"Prefetcher", isPrefetcher, "not claimed: a preview reads its objects one at a time",
			func(t *testing.T) { s.prefetcher(t, pf) }},
		// The engine lets every ready resource of a batching runtime call
		// at once, well past its parallelism.
		{"Batches", h.Driver.Batches, "not claimed: the engine bounds its calls by its parallelism",
			func(t *testing.T) { s.concurrently(t, 8, false) }},
		{"SpecFieldsOnly", h.Driver.SpecFieldsOnly, "not claimed: an apply makes the whole object as the spec says", s.specFieldsOnly},
		{"SensitivePather", isSensitivePather, "not claimed: only what a result itself marks sensitive is masked",
			func(t *testing.T) { s.sensitivePather(t, sp) }},
	} {
		if !c.applies {
			t.Logf("%s: %s", c.name, c.why)
			continue
		}
		t.Run(c.name, c.run)
	}
}

type suite struct {
	h  Harness
	rt engine.Runtime
}

func (s suite) readMissing(t *testing.T) {
	r := s.h.Object(t)
	got, err := s.rt.Read(t.Context(), nil, r)
	if err != nil || got != nil {
		t.Fatalf("Read of %s, which does not exist, = %v, %v; want nil, nil", r.ID, got, err)
	}
}

func (s suite) dryRunCreatesNothing(t *testing.T) {
	ctx := t.Context()
	r := s.h.Object(t)
	planned, err := s.rt.Apply(ctx, nil, r, true)
	if err != nil {
		t.Fatalf("dry run of %s: %v", r.ID, err)
	}
	s.result(t, "dry run", planned, r)
	if got, err := s.rt.Read(ctx, nil, r); err != nil || got != nil {
		t.Errorf("Read after a dry run of %s = %v, %v; want nil, nil: the dry run created it", r.ID, got, err)
	}
	s.exists(t, r, false, "after a dry run")
}

// lifecycle creates, updates, applies again and deletes one object, each
// step read back with the record of the one before, as the engine does.
func (s suite) lifecycle(t *testing.T) {
	ctx := t.Context()
	r, u := s.h.Object(t), model.Resource{}
	var rec *model.Resource
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"create", func(t *testing.T) {
			rec = s.apply(t, nil, r)
			s.exists(t, r, true, "after its apply")
			s.result(t, "Read after the apply", s.read(t, rec, r), r)
			// A destroy's preview reads a resource the spec no longer has
			// by its record alone.
			s.result(t, "Read of the record alone", s.read(t, rec, *rec), r)
		}},
		{"update", func(t *testing.T) {
			u = s.h.Update(r)
			before := s.read(t, rec, r)
			planned, err := s.rt.Apply(ctx, rec, u, true)
			if err != nil {
				t.Fatalf("dry run of the update of %s: %v", r.ID, err)
			}
			s.result(t, "dry run of the update", planned, u)
			sameAttributes(t, "a dry run of the update changes", before, s.read(t, rec, r))
			rec = s.apply(t, rec, u)
			s.result(t, "Read after the update", s.read(t, rec, u), u)
		}},
		{"apply again changes nothing", func(t *testing.T) {
			before := s.read(t, rec, u)
			planned, err := s.rt.Apply(ctx, rec, u, true)
			if err != nil {
				t.Fatalf("dry run of %s as it is: %v", r.ID, err)
			}
			sameAttributes(t, "a dry run of the spec it was applied with changes", before, planned)
			rec = s.apply(t, rec, u)
			sameAttributes(t, "applying the same spec again changes", before, s.read(t, rec, u))
		}},
		{"delete", func(t *testing.T) {
			if err := s.rt.Delete(ctx, *rec); err != nil {
				t.Fatalf("Delete of %s: %v", r.ID, err)
			}
			if got, err := s.rt.Read(ctx, rec, u); err != nil || got != nil {
				t.Errorf("Read of deleted %s = %v, %v; want nil, nil", r.ID, got, err)
			}
			s.exists(t, r, false, "after its Delete")
			if err := s.rt.Delete(ctx, *rec); err != nil {
				t.Errorf("second Delete of %s: %v; deleting what is gone must succeed", r.ID, err)
			}
		}},
	}
	for _, step := range steps {
		if !t.Run(step.name, step.run) {
			return
		}
	}
}

func (s suite) deleteMissing(t *testing.T) {
	r := s.h.Object(t)
	if err := s.rt.Delete(t.Context(), r); err != nil {
		t.Errorf("Delete of %s, which never existed: %v; want success", r.ID, err)
	}
}

// previewOnly checks what a runtime that never changes anything does
// instead.
func (s suite) previewOnly(t *testing.T) {
	ctx := t.Context()
	r := s.h.Object(t)
	if _, err := s.rt.Apply(ctx, nil, r, false); err == nil {
		t.Errorf("Apply of %s succeeded; a preview-only runtime must refuse it", r.ID)
	} else {
		names(t, "Apply", err, r.ID)
	}
	if err := s.rt.Delete(ctx, r); err == nil {
		t.Errorf("Delete of %s succeeded; a preview-only runtime must refuse it", r.ID)
	} else {
		names(t, "Delete", err, r.ID)
	}
	// What an earlier release recorded is all it sees.
	rec := s.create(t, r)
	got := s.read(t, rec, r)
	sameAttributes(t, "Read with a record answers other than the record for", rec, got)
	u := s.h.Update(r)
	planned, err := s.rt.Apply(ctx, rec, u, true)
	if err != nil {
		t.Fatalf("dry run of the update of %s: %v", r.ID, err)
	}
	s.result(t, "dry run of the update", planned, u)
}

func (s suite) invalid(t *testing.T) {
	ctx := t.Context()
	r := s.h.Invalid(t)
	if _, err := s.rt.Apply(ctx, nil, r, true); err != nil {
		names(t, "dry run", err, r.ID)
	}
	if _, err := s.rt.Apply(ctx, nil, r, false); err == nil {
		t.Errorf("Apply of invalid %s succeeded", r.ID)
	} else {
		names(t, "Apply", err, r.ID)
	}
	if !s.h.PreviewOnly {
		if got, err := s.rt.Read(ctx, nil, r); err != nil || got != nil {
			t.Errorf("Read of %s after its apply failed = %v, %v; want nil, nil", r.ID, got, err)
		}
	}
	s.exists(t, r, false, "after its apply failed")
}

// cancelledContext: whatever a call does when its context is over, an
// error it returns names the resource like any other.
func (s suite) cancelledContext(t *testing.T) {
	r := s.h.Object(t)
	rec := s.create(t, r)
	cctx, cancel := context.WithCancel(t.Context())
	cancel()
	u := s.h.Update(r)
	if _, err := s.rt.Read(cctx, rec, r); err != nil {
		names(t, "Read", err, r.ID)
	}
	if _, err := s.rt.Apply(cctx, rec, u, true); err != nil {
		names(t, "dry run", err, r.ID)
	}
	if _, err := s.rt.Apply(cctx, rec, u, false); err != nil {
		names(t, "Apply", err, r.ID)
	}
	if err := s.rt.Watch(cctx, *rec); err != nil {
		names(t, "Watch", err, r.ID)
	}
	if err := s.rt.Delete(cctx, *rec); err != nil {
		names(t, "Delete", err, r.ID)
	}
	s.remove(t, rec)
}

// watchCancelled: a Watch of what never becomes ready ends when its
// context does, not at the runtime's own timeout.
func (s suite) watchCancelled(t *testing.T) {
	r, waiting := s.h.NotReady(t)
	rec := s.applyOnly(t, nil, r)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		select {
		case <-waiting:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := s.rt.Watch(ctx, *rec)
	switch {
	case err == nil:
		t.Errorf("Watch of %s, which never becomes ready, returned nil", r.ID)
	case !errors.Is(err, context.Canceled):
		t.Errorf("Watch of %s did not end with its context: %v", r.ID, err)
	default:
		names(t, "Watch", err, r.ID)
	}
	s.remove(t, rec)
}

// concurrently runs n objects through every call at once, with an invalid
// one beside them when the harness has one and invalid is set: each call
// gets its own answer, and a failure is its resource's alone.
func (s suite) concurrently(t *testing.T, n int, invalid bool) {
	ctx := t.Context()
	specs, updates := make([]model.Resource, n), make([]model.Resource, n)
	for i := range specs {
		specs[i] = s.h.Object(t)
		updates[i] = s.h.Update(specs[i])
	}
	recs := make([]*model.Resource, n)
	type call func(prior *model.Resource, r model.Resource) (*model.Resource, error)
	// round makes call for each object at once, with its record and spec;
	// beside them, if asked, for an invalid resource, which must then fail
	// or, for a dry run, may.
	round := func(what string, spec []model.Resource, beside string, fn call) []*model.Resource {
		t.Helper()
		out, errs := make([]*model.Resource, n), make([]error, n)
		var bad *model.Resource
		var badErr error
		if beside != "" && invalid && s.h.Invalid != nil {
			b := s.h.Invalid(t)
			bad = &b
		}
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { out[i], errs[i] = fn(recs[i], spec[i]) })
		}
		if bad != nil {
			wg.Go(func() { _, badErr = fn(nil, *bad) })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("%s of %s beside %d others: %v", what, spec[i].ID, n-1, errs[i])
			}
			s.result(t, what+" beside others", out[i], spec[i])
		}
		switch {
		case bad == nil:
		case badErr != nil:
			names(t, what, badErr, bad.ID)
		case beside == "must fail":
			t.Errorf("%s of invalid %s beside %d others succeeded", what, bad.ID, n)
		}
		return out
	}
	round("dry run", specs, "may fail", func(_ *model.Resource, r model.Resource) (*model.Resource, error) {
		return s.rt.Apply(ctx, nil, r, true)
	})
	if s.h.PreviewOnly {
		return
	}
	recs = round("Apply", specs, "must fail", func(_ *model.Resource, r model.Resource) (*model.Resource, error) {
		return s.rt.Apply(ctx, nil, r, false)
	})
	round("Read", specs, "", func(prior *model.Resource, r model.Resource) (*model.Resource, error) {
		return s.rt.Read(ctx, prior, r)
	})
	recs = round("Apply of an update", updates, "must fail", func(prior *model.Resource, r model.Resource) (*model.Resource, error) {
		return s.rt.Apply(ctx, prior, r, false)
	})
	round("Read after the update", updates, "", func(prior *model.Resource, r model.Resource) (*model.Resource, error) {
		return s.rt.Read(ctx, prior, r)
	})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = s.rt.Delete(ctx, *recs[i]) })
	}
	wg.Wait()
	for i, r := range specs {
		if errs[i] != nil {
			t.Errorf("Delete of %s beside %d others: %v", r.ID, n-1, errs[i])
		}
		s.exists(t, r, false, "after its Delete beside others")
	}
}

func (s suite) dependent(t *testing.T) {
	ctx := t.Context()
	dependency, dependent := s.h.Dependent(t)
	// Before its dependency exists a dry run of the dependent may fail,
	// naming it, with an error that awaits the dependency
	// (engine.Unplannable): the engine then shows the spec as planned. Any
	// other error would fail the preview of a stack that creates both.
	if _, err := s.rt.Apply(ctx, nil, dependent, true); err != nil {
		names(t, "dry run before the dependency exists", err, dependent.ID)
		var u engine.Unplannable
		if !errors.As(err, &u) || !u.Awaits(dependency) {
			t.Errorf("dry run before the dependency exists: error %q does not await %s (engine.Unplannable)", err, dependency.ID)
		} else if u.NotChecked() == "" {
			t.Errorf("dry run before the dependency exists: error %q does not say what was not checked", err)
		}
	}
	first := s.apply(t, nil, dependency)
	planned, err := s.rt.Apply(ctx, nil, dependent, true)
	if err != nil {
		t.Fatalf("dry run of %s once %s exists: %v", dependent.ID, dependency.ID, err)
	}
	s.result(t, "dry run once the dependency exists", planned, dependent)
	second := s.apply(t, nil, dependent)
	s.result(t, "Read of the dependent", s.read(t, second, dependent), dependent)
	// Deletions go dependents first.
	for _, rec := range []*model.Resource{second, first} {
		if err := s.rt.Delete(ctx, *rec); err != nil {
			t.Fatalf("Delete of %s: %v", rec.ID, err)
		}
	}
	for _, rec := range []*model.Resource{second, first} {
		if got, err := s.rt.Read(ctx, rec, *rec); err != nil || got != nil {
			t.Errorf("Read of deleted %s = %v, %v; want nil, nil", rec.ID, got, err)
		}
	}
}

func (s suite) secret(t *testing.T) {
	ctx := t.Context()
	r, secret := s.h.Secret(t)
	planned, err := s.rt.Apply(ctx, nil, r, true)
	noSecret(t, "dry run", planned, err, secret)
	if s.h.PreviewOnly {
		return
	}
	rec, err := s.rt.Apply(ctx, nil, r, false)
	noSecret(t, "Apply", rec, err, secret)
	if rec == nil {
		t.FailNow()
	}
	got, err := s.rt.Read(ctx, rec, r)
	noSecret(t, "Read", got, err, secret)
	s.remove(t, rec)
}

func (s suite) prefetcher(t *testing.T, pf engine.Prefetcher) {
	ctx := t.Context()
	// Enough existing objects of one kind in one place for a runtime to
	// read them at once, and some that do not exist.
	var rs []model.Resource
	var recs []*model.Resource
	for i := range 7 {
		r := s.h.Object(t)
		var rec *model.Resource
		if i < 5 {
			rec = s.create(t, r)
		}
		rs, recs = append(rs, r), append(recs, rec)
	}
	readAll := func() []*model.Resource {
		out := make([]*model.Resource, len(rs))
		for i, r := range rs {
			out[i] = s.readMaybe(t, recs[i], r)
		}
		return out
	}
	alone := readAll()
	pf.Prefetch(ctx, rs)
	after := readAll()
	again := readAll()
	for i, r := range rs {
		for _, c := range []struct {
			what string
			got  *model.Resource
		}{{"Read after Prefetch", after[i]}, {"a second Read after Prefetch", again[i]}} {
			switch {
			case (c.got == nil) != (alone[i] == nil):
				t.Errorf("%s of %s = %v, Read without it = %v", c.what, r.ID, c.got, alone[i])
			case c.got != nil:
				sameAttributes(t, c.what+" answers other than Read without it for", alone[i], c.got)
			}
		}
	}
	for _, rec := range recs {
		if rec != nil {
			s.remove(t, rec)
		}
	}
}

func (s suite) specFieldsOnly(t *testing.T) {
	if s.h.Touch == nil {
		t.Fatal("the driver claims SpecFieldsOnly: the harness must give Touch to check it")
	}
	if s.h.PreviewOnly {
		t.Fatal("the driver claims SpecFieldsOnly, which only an apply shows, but the runtime never applies")
	}
	ctx := t.Context()
	r := s.h.Object(t)
	rec := s.apply(t, nil, r)
	before := s.read(t, rec, r)
	s.h.Touch(t, r)
	touched := s.read(t, rec, r)
	if reflect.DeepEqual(plain(model.Public(*before).Attributes), plain(model.Public(*touched).Attributes)) {
		t.Fatalf("Touch changed nothing a Read of %s sees", r.ID)
	}
	planned, err := s.rt.Apply(ctx, rec, r, true)
	if err != nil {
		t.Fatalf("dry run of %s after someone else changed it: %v", r.ID, err)
	}
	sameAttributes(t, "a dry run of the same spec, after someone else set a field outside it, reverts", touched, planned)
	rec = s.apply(t, rec, r)
	sameAttributes(t, "applying the same spec again, after someone else set a field outside it, reverts", touched, s.read(t, rec, r))
	s.remove(t, rec)
}

func (s suite) sensitivePather(t *testing.T, sp engine.SensitivePather) {
	if s.h.Secret == nil {
		t.Fatal("the runtime claims engine.SensitivePather: the harness must give Secret to check it")
	}
	ctx := t.Context()
	r, secret := s.h.Secret(t)
	paths, err := sp.SensitivePaths(ctx, r)
	if err != nil {
		t.Fatalf("SensitivePaths of %s: %v", r.ID, err)
	}
	covered := false
	for _, p := range paths {
		for _, v := range at(r.Attributes, p) {
			covered = covered || strings.Contains(fmt.Sprint(v), secret)
		}
	}
	if !covered {
		t.Fatalf("SensitivePaths of %s = %q: none holds the secret", r.ID, paths)
	}
	masked := func(what string, got *model.Resource) {
		t.Helper()
		if got == nil {
			return
		}
		for _, p := range paths {
			for _, v := range at(got.Attributes, p) {
				if str, ok := v.(string); v != nil && (!ok || !model.IsFingerprint(str)) {
					t.Errorf("%s of %s: %s, declared sensitive, is %v", what, r.ID, p, v)
				}
			}
		}
	}
	planned, err := s.rt.Apply(ctx, nil, r, true)
	if err != nil {
		t.Fatalf("dry run of %s: %v", r.ID, err)
	}
	masked("dry run", planned)
	if s.h.PreviewOnly {
		return
	}
	rec := s.apply(t, nil, r)
	masked("Apply", rec)
	masked("Read", s.read(t, rec, r))
	s.remove(t, rec)
}

// create makes r exist and returns its record: applied, or for a runtime
// that never applies, what its dry run answers (as a release would have
// recorded it).
func (s suite) create(t *testing.T, r model.Resource) *model.Resource {
	t.Helper()
	if !s.h.PreviewOnly {
		return s.apply(t, nil, r)
	}
	rec, err := s.rt.Apply(t.Context(), nil, r, true)
	if err != nil {
		t.Fatalf("dry run of %s: %v", r.ID, err)
	}
	s.result(t, "dry run", rec, r)
	return rec
}

// apply applies r for real, checks the result and waits until it is
// ready, as the engine does.
func (s suite) apply(t *testing.T, prior *model.Resource, r model.Resource) *model.Resource {
	t.Helper()
	out := s.applyOnly(t, prior, r)
	if err := s.rt.Watch(t.Context(), *out); err != nil {
		t.Fatalf("Watch of %s after its apply: %v", r.ID, err)
	}
	return out
}

func (s suite) applyOnly(t *testing.T, prior *model.Resource, r model.Resource) *model.Resource {
	t.Helper()
	out, err := s.rt.Apply(t.Context(), prior, r, false)
	if err != nil {
		t.Fatalf("Apply of %s: %v", r.ID, err)
	}
	s.result(t, "Apply", out, r)
	return out
}

// remove deletes what a check made, unless the runtime never made it.
func (s suite) remove(t *testing.T, rec *model.Resource) {
	t.Helper()
	if s.h.PreviewOnly {
		return
	}
	if err := s.rt.Delete(t.Context(), *rec); err != nil {
		t.Errorf("Delete of %s: %v", rec.ID, err)
	}
}

// read reads r, which must exist.
func (s suite) read(t *testing.T, prior *model.Resource, r model.Resource) *model.Resource {
	t.Helper()
	got := s.readMaybe(t, prior, r)
	if got == nil {
		t.Fatalf("Read of %s found nothing", r.ID)
	}
	return got
}

func (s suite) readMaybe(t *testing.T, prior *model.Resource, r model.Resource) *model.Resource {
	t.Helper()
	got, err := s.rt.Read(t.Context(), prior, r)
	if err != nil {
		t.Fatalf("Read of %s: %v", r.ID, err)
	}
	return got
}

// exists checks, through the harness's own view of the system, whether r's
// object is there.
func (s suite) exists(t *testing.T, r model.Resource, want bool, when string) {
	t.Helper()
	if s.h.Exists == nil {
		return
	}
	if got := s.h.Exists(t, r); got != want {
		t.Errorf("%s exists %s: %v, want %v", r.ID, when, got, want)
	}
}

// runtimeExtensions are the extensions a runtime owns in what it returns.
var runtimeExtensions = map[string]bool{
	model.StateExtension:          true,
	model.ReplacePathsExtension:   true,
	model.AppliedExtension:        true,
	model.SensitivePathsExtension: true,
}

// result checks a resource a runtime returned for want: its id, type,
// dependencies and extensions, and every attribute want sets, as want sets
// it (sensitive values compared as fingerprints). The engine records it as
// it is, so a later Delete has only this to go by.
func (s suite) result(t *testing.T, what string, got *model.Resource, want model.Resource) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s of %s returned no object", what, want.ID)
	}
	if got.ID != want.ID || got.Type != want.Type {
		t.Errorf("%s of %s returned %s of type %s", what, want.ID, got.ID, got.Type)
	}
	if !slices.Equal(got.DependsOn, want.DependsOn) {
		t.Errorf("%s of %s: dependsOn %q, want the spec's %q", what, want.ID, got.DependsOn, want.DependsOn)
	}
	for k, v := range want.Extensions {
		if !runtimeExtensions[k] && !reflect.DeepEqual(plain(got.Extensions[k]), plain(v)) {
			t.Errorf("%s of %s: extension %s is %v, want the spec's %v", what, want.ID, k, got.Extensions[k], v)
		}
	}
	if gotPaths := model.SensitivePaths(*got); !all(model.SensitivePaths(want), func(p string) bool { return slices.Contains(gotPaths, p) }) {
		t.Errorf("%s of %s: sensitive paths %q, want the spec's %q among them", what, want.ID, model.SensitivePaths(*got), model.SensitivePaths(want))
	}
	wantAttrs := model.Redact(model.WithSensitivePaths(want, model.SensitivePaths(*got))).Attributes
	if path, why := subset(plain(wantAttrs), plain(got.Attributes), ""); why != "" {
		t.Errorf("%s of %s: %s %s\ngot  %s\nwant %s among them", what, want.ID, orRoot(path), why, js(got.Attributes), js(wantAttrs))
	}
}

func all[T any](s []T, ok func(T) bool) bool {
	for _, x := range s {
		if !ok(x) {
			return false
		}
	}
	return true
}

// subset reports the first path where got does not hold want: maps hold
// what want's keys hold, lists are as long as want's and hold its items
// (a server adds defaults inside them), scalars are equal.
func subset(want, got any, path string) (string, string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path, fmt.Sprintf("is %s, want an object", js(got))
		}
		for k, v := range w {
			if v == nil {
				continue
			}
			if p, why := subset(v, g[k], join(path, k)); why != "" {
				return p, why
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path, fmt.Sprintf("is %s, want %s", js(got), js(want))
		}
		for i := range w {
			if p, why := subset(w[i], g[i], join(path, strconv.Itoa(i))); why != "" {
				return p, why
			}
		}
	default:
		if !reflect.DeepEqual(want, got) {
			return path, fmt.Sprintf("is %s, want %s", js(got), js(want))
		}
	}
	return "", ""
}

// sameAttributes checks that two results show the same object; what
// says what it means if they do not.
func sameAttributes(t *testing.T, what string, want, got *model.Resource) {
	t.Helper()
	if want == nil || got == nil {
		t.Fatalf("%s: %v against %v", what, got, want)
	}
	w, g := plain(model.Public(*want).Attributes), plain(model.Public(*got).Attributes)
	if !reflect.DeepEqual(w, g) {
		t.Errorf("%s %s:\ngot  %s\nwant %s", what, want.ID, js(g), js(w))
	}
}

// names checks that err names the resource: the engine passes it on as it
// is ("2 resource(s) failed; <error>; <error>"), so only the error says
// which resource failed.
func names(t *testing.T, what string, err error, id string) {
	t.Helper()
	if !strings.Contains(err.Error(), id) {
		t.Errorf("%s error %q does not name %s", what, err, id)
	}
}

// noSecret checks that neither a result (its state aside: it is recorded,
// never shown) nor an error shows secret, as given or base64-encoded.
func noSecret(t *testing.T, what string, got *model.Resource, err error, secret string) {
	t.Helper()
	var shown []string
	if got != nil {
		shown = append(shown, js(model.Public(*got)))
	}
	if err != nil {
		shown = append(shown, err.Error())
		t.Errorf("%s: %v", what, err)
	}
	for _, s := range shown {
		for _, v := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
			if strings.Contains(s, v) {
				t.Errorf("%s shows the secret: %s", what, s)
			}
		}
	}
}

// at returns the values at a dotted path, "*" standing for every item.
func at(v any, path string) []any {
	vals := []any{v}
	for _, seg := range strings.Split(path, ".") {
		var next []any
		for _, x := range vals {
			switch t := x.(type) {
			case map[string]any:
				if seg == "*" {
					for _, y := range t {
						next = append(next, y)
					}
				} else if y, ok := t[seg]; ok {
					next = append(next, y)
				}
			case []any:
				if seg == "*" {
					next = append(next, t...)
				} else if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(t) {
					next = append(next, t[i])
				}
			}
		}
		vals = next
	}
	return vals
}

// plain is v as JSON would give it back, so that 1 and 1.0 compare equal.
func plain(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func orRoot(path string) string {
	if path == "" {
		return "the attributes"
	}
	return path
}
