package engine_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/engine/runtimetest"
	"github.com/kusionpr/kusionpr/model"
)

// TestFakeRuntimesConform: the fakes the engine's tests stand in for real
// runtimes with keep the contract the real ones keep, capabilities
// included, so what those tests show of the engine holds with the real
// ones.
func TestFakeRuntimesConform(t *testing.T) {
	for _, tc := range []struct {
		name   string
		driver func(*fakeRuntime) engine.Driver
		// schema says the runtime knows "token" is sensitive; without it
		// the spec says so.
		schema bool
	}{
		{name: "fakeRuntime", driver: func(f *fakeRuntime) engine.Driver { return engine.Built(f) }},
		{name: "schemaRuntime", schema: true, driver: func(f *fakeRuntime) engine.Driver {
			return engine.Built(&schemaRuntime{fakeRuntime: f, sensitive: []string{"token"}})
		}},
		{name: "scopedRuntime", driver: scoped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeRuntime()
			var n atomic.Int64
			object := func(*testing.T) model.Resource {
				i := n.Add(1)
				r := res(fmt.Sprintf("conform%d", i), map[string]any{"size": i, "labels": map[string]any{"n": fmt.Sprint(i)}}, id("base"))
				r.Extensions = map[string]any{"provider": "registry.terraform.io/hashicorp/fake/1.0.0"}
				return r
			}
			runtimetest.RunConformance(t, runtimetest.Harness{
				Driver: tc.driver(f),
				Object: object,
				Update: func(r model.Resource) model.Resource {
					u := r.DeepCopy()
					u.Attributes["size"] = u.Attributes["size"].(int64) + 100
					return u
				},
				Invalid: func(t *testing.T) model.Resource {
					r := object(t)
					f.mu.Lock()
					f.failOn[r.ID] = true
					f.mu.Unlock()
					return r
				},
				Exists: func(_ *testing.T, r model.Resource) bool {
					f.mu.Lock()
					defer f.mu.Unlock()
					_, ok := f.objects[r.ID]
					return ok
				},
				Secret: func(t *testing.T) (model.Resource, string) {
					const secret = "fake-secret-value"
					r := object(t)
					r.Attributes["token"] = secret
					if !tc.schema {
						r.Extensions[model.SensitivePathsExtension] = []any{"token"}
					}
					return r, secret
				},
				Touch: func(_ *testing.T, r model.Resource) { f.set(r.ID, "touched", "by someone else") },
			})
		})
	}
}
