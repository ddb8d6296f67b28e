package graph

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/model"
)

// kube builds a Kubernetes resource whose attributes agree with its id.
func kube(id string, extra map[string]any, dependsOn ...string) model.Resource {
	k, err := model.ParseKubernetesID(id)
	if err != nil {
		panic(err)
	}
	meta := map[string]any{"name": k.Name}
	if k.Namespace != "" {
		meta["namespace"] = k.Namespace
	}
	attrs := map[string]any{"apiVersion": k.APIVersion, "kind": k.Kind, "metadata": meta}
	for key, v := range extra {
		attrs[key] = v
	}
	return model.Resource{ID: id, Type: model.Kubernetes, Attributes: attrs, DependsOn: dependsOn}
}

// plain builds a resource with only explicit dependencies.
func plain(id string, dependsOn ...string) model.Resource {
	return model.Resource{ID: id, Type: model.Terraform, DependsOn: dependsOn}
}

func crd(group, kind string) model.Resource {
	return kube("apiextensions.k8s.io/v1:CustomResourceDefinition:"+strings.ToLower(kind)+"s."+group, map[string]any{
		"spec": map[string]any{"group": group, "names": map[string]any{"kind": kind, "plural": strings.ToLower(kind) + "s"}},
	})
}

func TestNewEdges(t *testing.T) {
	tests := []struct {
		name      string
		resources model.Resources
		// want maps an id to its expected dependencies (nil: none).
		want map[string][]string
	}{
		{
			name: "dependsOn",
			resources: model.Resources{
				plain("a"), plain("b", "a"), plain("c", "b", "a", "a"),
			},
			want: map[string][]string{"a": nil, "b": {"a"}, "c": {"a", "b"}},
		},
		{
			name: "namespaced resources depend on their Namespace in the spec",
			resources: model.Resources{
				kube("v1:ConfigMap:app:cfg", nil),
				kube("v1:Namespace:app", nil),
				kube("v1:ConfigMap:other:cfg", nil), // Namespace not in the spec
				kube("rbac.authorization.k8s.io/v1:ClusterRole:reader", nil),
			},
			want: map[string][]string{
				"v1:ConfigMap:app:cfg":                            {"v1:Namespace:app"},
				"v1:Namespace:app":                                nil,
				"v1:ConfigMap:other:cfg":                          nil,
				"rbac.authorization.k8s.io/v1:ClusterRole:reader": nil,
			},
		},
		{
			name: "custom resources depend on the CRD defining their group and kind",
			resources: model.Resources{
				kube("example.com/v1:Widget:app:w", nil),
				crd("example.com", "Widget"),
				kube("other.io/v1:Widget:app:w", nil), // same kind, other group
				kube("v1:Namespace:app", nil),
			},
			want: map[string][]string{
				"example.com/v1:Widget:app:w": {
					"apiextensions.k8s.io/v1:CustomResourceDefinition:widgets.example.com",
					"v1:Namespace:app",
				},
				"apiextensions.k8s.io/v1:CustomResourceDefinition:widgets.example.com": nil,
				"other.io/v1:Widget:app:w": {"v1:Namespace:app"},
				"v1:Namespace:app":         nil,
			},
		},
		{
			name: "$kusion_path references, ids with dots and colons",
			resources: model.Resources{
				kube("apps/v1:Deployment:default:web", map[string]any{
					"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
						"containers": []any{map[string]any{"env": []any{
							map[string]any{"name": "SVC", "value": "$kusion_path.v1:Service:default:web.spec.clusterIP"},
							map[string]any{"name": "DB", "value": "$kusion_path.hashicorp:aws:aws_db_instance:db.v1.address"},
							map[string]any{"name": "X", "value": "$kusion_path.v1:Service:default:missing.spec.clusterIP"},
						}}},
					}}},
				}),
				kube("v1:Service:default:web", nil),
				plain("hashicorp:aws:aws_db_instance:db.v1"),
				plain("hashicorp:aws:aws_db_instance:db"),
			},
			want: map[string][]string{
				"apps/v1:Deployment:default:web":      {"v1:Service:default:web", "hashicorp:aws:aws_db_instance:db.v1"},
				"v1:Service:default:web":              nil,
				"hashicorp:aws:aws_db_instance:db.v1": nil,
				"hashicorp:aws:aws_db_instance:db":    nil,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := New(tt.resources)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			for id, want := range tt.want {
				if got := g.Dependencies(id); !reflect.DeepEqual(got, want) {
					t.Errorf("Dependencies(%q) = %q, want %q", id, got, want)
				}
				for _, dep := range want {
					if !contains(g.Dependents(dep), id) {
						t.Errorf("Dependents(%q) = %q, want it to hold %q", dep, g.Dependents(dep), id)
					}
				}
			}
		})
	}
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name      string
		resources model.Resources
		want      string
		wantCycle []string
	}{
		{
			name:      "self cycle",
			resources: model.Resources{plain("a", "a")},
			want:      "dependency cycle: a -> a",
			wantCycle: []string{"a", "a"},
		},
		{
			name:      "three-node cycle starts at its first node in spec order",
			resources: model.Resources{plain("x"), plain("b", "c"), plain("a", "b"), plain("c", "a")},
			want:      "dependency cycle: b -> c -> a -> b",
			wantCycle: []string{"b", "c", "a", "b"},
		},
		{
			name: "cycle through an implicit Namespace edge",
			resources: model.Resources{
				kube("v1:Namespace:app", nil, "v1:ConfigMap:app:cfg"),
				kube("v1:ConfigMap:app:cfg", nil),
			},
			want: "dependency cycle: v1:Namespace:app -> v1:ConfigMap:app:cfg -> v1:Namespace:app",
		},
		{
			name: "cycle through a $kusion_path reference",
			resources: model.Resources{
				kube("v1:ConfigMap:default:a", map[string]any{"data": map[string]any{"k": "$kusion_path.v1:ConfigMap:default:b.data.k"}}),
				kube("v1:ConfigMap:default:b", nil, "v1:ConfigMap:default:a"),
			},
			want: "dependency cycle: v1:ConfigMap:default:a -> v1:ConfigMap:default:b -> v1:ConfigMap:default:a",
		},
		{
			name:      "missing dependency",
			resources: model.Resources{plain("a", "nope")},
			want:      `building dependency graph: resource "a" depends on "nope", which is not in the spec`,
		},
		{
			name:      "duplicate id",
			resources: model.Resources{plain("a"), plain("b"), plain("a")},
			want:      `building dependency graph: duplicate resource id "a" (resources 1 and 3)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.resources)
			if err == nil {
				t.Fatalf("New succeeded, want %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q, want %q", err, tt.want)
			}
			if tt.wantCycle != nil {
				var ce *CycleError
				if !errors.As(err, &ce) {
					t.Fatalf("error %T is no *CycleError", err)
				}
				if !reflect.DeepEqual(ce.Path, tt.wantCycle) {
					t.Errorf("cycle = %q, want %q", ce.Path, tt.wantCycle)
				}
			}
		})
	}
}

func TestOrder(t *testing.T) {
	tests := []struct {
		name      string
		resources model.Resources
		want      []string
	}{
		{name: "empty", resources: nil, want: nil},
		{
			name:      "independent nodes keep spec order",
			resources: model.Resources{plain("c"), plain("a"), plain("b")},
			want:      []string{"c", "a", "b"},
		},
		{
			name:      "dependencies first, then spec order among ready nodes",
			resources: model.Resources{plain("d", "b"), plain("c"), plain("b"), plain("a", "c")},
			want:      []string{"c", "b", "d", "a"},
		},
		{
			name: "namespace and CRD before what they hold",
			resources: model.Resources{
				kube("example.com/v1:Widget:app:w", nil),
				kube("v1:ConfigMap:app:cfg", nil),
				crd("example.com", "Widget"),
				kube("v1:Namespace:app", nil),
			},
			want: []string{
				"apiextensions.k8s.io/v1:CustomResourceDefinition:widgets.example.com",
				"v1:Namespace:app",
				"example.com/v1:Widget:app:w",
				"v1:ConfigMap:app:cfg",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 5 { // the order must not depend on map iteration
				g, err := New(tt.resources)
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if got := g.Order(); !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("Order() = %q, want %q", got, tt.want)
				}
			}
		})
	}
}
