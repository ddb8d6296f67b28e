package workflow

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/engine/runtimetest"
	"github.com/kusionpr/kusionpr/model"
)

// TestOfflineConforms: the runtime a fork's preview runs with keeps
// engine.Runtime's contract as one that never applies, for resources of
// both types: it sees only the prior release, lays the spec over it, and
// refuses to apply or delete, naming the resource.
func TestOfflineConforms(t *testing.T) {
	var n atomic.Int64
	for _, tc := range []struct {
		typ    model.ResourceType
		object func(i int64) model.Resource
		// secret is where a resource of the type holds a secret.
		secret func(r *model.Resource, value string)
	}{
		{typ: model.Kubernetes,
			object: func(i int64) model.Resource {
				name := fmt.Sprintf("cfg%d", i)
				return model.Resource{ID: "v1:ConfigMap:ns:" + name, Type: model.Kubernetes, DependsOn: []string{"v1:Namespace:ns"},
					Attributes: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
						"metadata": map[string]any{"name": name, "namespace": "ns"}, "data": map[string]any{"n": fmt.Sprint(i)}}}
			},
			secret: func(r *model.Resource, value string) {
				r.Attributes["kind"] = "Secret"
				r.Attributes["stringData"] = map[string]any{"token": value}
			}},
		{typ: model.Terraform,
			object: func(i int64) model.Resource {
				return model.Resource{ID: fmt.Sprintf("hashicorp:local:local_file:f%d", i), Type: model.Terraform,
					Attributes: map[string]any{"filename": fmt.Sprintf("/tmp/f%d", i), "content": fmt.Sprint(i)},
					Extensions: map[string]any{"provider": "registry.terraform.io/hashicorp/local/1.4.0"}}
			},
			secret: func(r *model.Resource, value string) {
				r.Attributes["sensitive_content"] = value
				r.Extensions[model.SensitivePathsExtension] = []any{"sensitive_content"}
			}},
	} {
		t.Run(string(tc.typ), func(t *testing.T) {
			object := func(*testing.T) model.Resource { return tc.object(n.Add(1)) }
			runtimetest.RunConformance(t, runtimetest.Harness{
				Driver: engine.Built(offline{}),
				Object: object,
				Update: func(r model.Resource) model.Resource {
					u := r.DeepCopy()
					u.Attributes["updated"] = true
					return u
				},
				Secret: func(t *testing.T) (model.Resource, string) {
					r := object(t)
					tc.secret(&r, "offline-secret-value")
					return r, "offline-secret-value"
				},
				PreviewOnly: true,
			})
		})
	}
}
