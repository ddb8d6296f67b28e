package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
)

type callerKey struct{}

// TestRuntimesBuiltOnFirstUse: the engine builds a runtime only for a type
// the stack has, once for all its resources and operations, with the
// context of the call that needed it; one it cannot build fails the
// resources that needed it, with the reason, and the recorded state stays.
func TestRuntimesBuiltOnFirstUse(t *testing.T) {
	ctx := context.WithValue(context.Background(), callerKey{}, "the caller's")
	var opens atomic.Int64
	var openCtx atomic.Value
	fake := newFakeRuntime()
	terraform := engine.Driver{Capabilities: engine.Capabilities{Batches: true}, Open: func(ctx context.Context) (engine.Runtime, error) {
		opens.Add(1)
		openCtx.Store(fmt.Sprint(ctx.Value(callerKey{})))
		return fake, nil
	}}
	kubernetes := engine.Driver{Open: func(context.Context) (engine.Runtime, error) {
		t.Error("the Kubernetes runtime was built for a stack without Kubernetes resources")
		return nil, errors.New("no cluster")
	}}
	_, _, store := setup(t)
	e := &engine.Engine{Runtimes: map[model.ResourceType]engine.Driver{model.Terraform: terraform, model.Kubernetes: kubernetes}, Store: store, Parallelism: 4}
	var rs []model.Resource
	for i := range 12 {
		rs = append(rs, res(fmt.Sprintf("r%02d", i), map[string]any{"n": i}))
	}
	if _, err := e.Preview(ctx, stack(rs...)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(ctx, stack(rs...), engine.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := opens.Load(); n != 1 {
		t.Errorf("the Terraform runtime was built %d times for a preview and an apply of 12 resources, want once", n)
	}
	if got := openCtx.Load(); got != "the caller's" {
		t.Errorf("the runtime was built with a context holding %v, want the caller's", got)
	}

	t.Run("a runtime that cannot be built", func(t *testing.T) {
		const why = "load kubeconfig: no cluster found"
		broken := &engine.Engine{Runtimes: map[model.ResourceType]engine.Driver{model.Terraform: {Open: func(context.Context) (engine.Runtime, error) {
			return nil, errors.New(why)
		}}}, Store: store, Parallelism: 4}
		changed := append([]model.Resource{res("new", map[string]any{"n": 99})}, rs...)
		p, err := broken.Preview(ctx, stack(changed...))
		if err != nil {
			t.Fatal(err)
		}
		if s := p.Summary(); s.Errors != len(changed) {
			t.Errorf("summary %+v: want every resource failed", s)
		}
		if step := p.ChangeSteps[id("new")]; step == nil || !strings.Contains(step.Error, why) {
			t.Errorf("step of the new resource: %+v, want its error to say %q", step, why)
		}
		before, err := store.Latest(ctx, "p", "w")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := broken.Apply(ctx, stack(changed...), engine.ApplyOptions{}); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("apply with a runtime that cannot be built: %v, want an error saying %q", err, why)
		}
		if _, ok := fake.objects[id("new")]; ok {
			t.Error("the new resource was created through another runtime")
		}
		after, err := store.Latest(ctx, "p", "w")
		if err != nil {
			t.Fatal(err)
		}
		if after.State == nil || len(after.State.Resources) != len(before.State.Resources) {
			t.Errorf("the failed apply changed the recorded state: %v, was %d resources", after.State, len(before.State.Resources))
		}
	})
}
