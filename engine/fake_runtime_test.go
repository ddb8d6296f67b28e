package engine_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/kusionpr/kusionpr/model"
)

// fakeRuntime keeps objects in memory. Apply adds a server-side default
// ("status": "ready"), as an API server would, and returns the spec's
// dependsOn, as the real runtimes do, so a state records what each object
// needs; failOn makes chosen ids fail; block makes chosen ids wait for their
// context.
type fakeRuntime struct {
	mu      sync.Mutex
	objects map[string]map[string]any
	failOn  map[string]bool
	block   map[string]bool
	applied []string
	// deleted lists the ids deleted, in order.
	deleted []string
	// dryRuns counts the dry runs asked of each id.
	dryRuns map[string]int
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{objects: map[string]map[string]any{}, failOn: map[string]bool{}, block: map[string]bool{}, dryRuns: map[string]int{}}
}

func (f *fakeRuntime) Read(_ context.Context, _ *model.Resource, r model.Resource) (*model.Resource, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	obj, ok := f.objects[r.ID]
	if !ok {
		return nil, nil
	}
	out := model.Redact(model.Resource{ID: r.ID, Type: r.Type, Attributes: model.DeepCopyValue(obj).(map[string]any), Extensions: r.Extensions, DependsOn: r.DependsOn})
	return &out, nil
}

func (f *fakeRuntime) Apply(ctx context.Context, _ *model.Resource, r model.Resource, dryRun bool) (*model.Resource, error) {
	f.mu.Lock()
	fail, block := f.failOn[r.ID], f.block[r.ID]
	if dryRun {
		f.dryRuns[r.ID]++
	}
	f.mu.Unlock()
	if !dryRun && block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if !dryRun && fail {
		return nil, fmt.Errorf("server says no to %s", r.ID)
	}
	obj := model.DeepCopyValue(r.Attributes).(map[string]any)
	obj["status"] = "ready"
	if !dryRun {
		f.mu.Lock()
		f.objects[r.ID] = obj
		f.applied = append(f.applied, r.ID)
		f.mu.Unlock()
	}
	out := model.Redact(model.Resource{ID: r.ID, Type: r.Type, Attributes: model.DeepCopyValue(obj).(map[string]any), Extensions: r.Extensions, DependsOn: r.DependsOn})
	return &out, nil
}

func (f *fakeRuntime) Delete(_ context.Context, r model.Resource) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failOn[r.ID] {
		return fmt.Errorf("cannot delete %s", r.ID)
	}
	delete(f.objects, r.ID)
	f.deleted = append(f.deleted, r.ID)
	return nil
}

func (f *fakeRuntime) Watch(context.Context, model.Resource) error { return nil }

func (f *fakeRuntime) set(id, key string, v any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[id][key] = v
}
