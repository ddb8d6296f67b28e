// Package model holds the data the engine, runtimes and backends exchange, in
// Kusion v0.15's formats: the Spec (what should exist) and the Release (what
// one operation did). It imports nothing of the project, so every layer can.
package model

import (
	"fmt"
	"strings"
)

// ResourceType names the runtime that handles a resource.
type ResourceType string

const (
	Kubernetes ResourceType = "Kubernetes"
	Terraform  ResourceType = "Terraform"
)

// Spec is the complete desired state of one stack, as `kusion generate` writes it.
type Spec struct {
	Resources   Resources      `json:"resources" yaml:"resources"`
	SecretStore map[string]any `json:"secretStore,omitempty" yaml:"secretStore,omitempty"`
	Context     map[string]any `json:"context,omitempty" yaml:"context,omitempty"`
}

// Resource is one object a runtime manages.
type Resource struct {
	ID         string         `json:"id" yaml:"id"`
	Type       ResourceType   `json:"type" yaml:"type"`
	Attributes map[string]any `json:"attributes" yaml:"attributes"`
	DependsOn  []string       `json:"dependsOn,omitempty" yaml:"dependsOn,omitempty"`
	Extensions map[string]any `json:"extensions,omitempty" yaml:"extensions,omitempty"`
}

// Resources keeps the order the spec gives; lookups go through Index.
type Resources []Resource

// Index maps ids to positions; the first of duplicate ids wins (validation reports the rest).
func (rs Resources) Index() map[string]int {
	m := make(map[string]int, len(rs))
	for i, r := range rs {
		if _, ok := m[r.ID]; !ok {
			m[r.ID] = i
		}
	}
	return m
}

// ByID returns the resource with the given id.
func (rs Resources) ByID(id string) (Resource, bool) {
	for _, r := range rs {
		if r.ID == id {
			return r, true
		}
	}
	return Resource{}, false
}

// DeepCopy copies the attribute and extension trees too, so callers may mutate the copy.
func (r Resource) DeepCopy() Resource {
	out := r
	out.Attributes, _ = DeepCopyValue(r.Attributes).(map[string]any)
	out.Extensions, _ = DeepCopyValue(r.Extensions).(map[string]any)
	if r.DependsOn != nil {
		out.DependsOn = append([]string(nil), r.DependsOn...)
	}
	return out
}

// DeepCopy copies every resource.
func (rs Resources) DeepCopy() Resources {
	if rs == nil {
		return nil
	}
	out := make(Resources, len(rs))
	for i, r := range rs {
		out[i] = r.DeepCopy()
	}
	return out
}

// DeepCopyValue copies a tree of maps, slices and scalars as decoded from YAML or JSON.
func DeepCopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		if t == nil {
			return t
		}
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = DeepCopyValue(x)
		}
		return m
	case []any:
		if t == nil {
			return t
		}
		s := make([]any, len(t))
		for i, x := range t {
			s[i] = DeepCopyValue(x)
		}
		return s
	default:
		return v
	}
}

// KubernetesID is the parsed form of "apiVersion:kind:namespace:name" (or
// "apiVersion:kind:name" for cluster-scoped objects). The apiVersion may hold a
// group ("apps/v1"), never a colon.
type KubernetesID struct {
	APIVersion, Kind, Namespace, Name string
}

// ParseKubernetesID splits a Kubernetes resource id.
func ParseKubernetesID(id string) (KubernetesID, error) {
	p := strings.Split(id, ":")
	var k KubernetesID
	switch len(p) {
	case 3:
		k = KubernetesID{APIVersion: p[0], Kind: p[1], Name: p[2]}
	case 4:
		k = KubernetesID{APIVersion: p[0], Kind: p[1], Namespace: p[2], Name: p[3]}
	default:
		return k, fmt.Errorf("malformed Kubernetes id %q: want apiVersion:kind:namespace:name or apiVersion:kind:name", id)
	}
	for i, s := range p {
		if s == "" {
			return k, fmt.Errorf("malformed Kubernetes id %q: part %d is empty", id, i+1)
		}
	}
	return k, nil
}

func (k KubernetesID) String() string {
	if k.Namespace == "" {
		return k.APIVersion + ":" + k.Kind + ":" + k.Name
	}
	return k.APIVersion + ":" + k.Kind + ":" + k.Namespace + ":" + k.Name
}

// KubernetesIDOf builds the id Kusion gives a Kubernetes object.
func KubernetesIDOf(apiVersion, kind, namespace, name string) string {
	return KubernetesID{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name}.String()
}

// TerraformID is the parsed form of "providerNamespace:providerName:resourceType:name".
type TerraformID struct {
	ProviderNamespace, ProviderName, ResourceType, Name string
}

// ParseTerraformID splits a Terraform resource id.
func ParseTerraformID(id string) (TerraformID, error) {
	p := strings.Split(id, ":")
	if len(p) != 4 {
		return TerraformID{}, fmt.Errorf("malformed Terraform id %q: want providerNamespace:providerName:resourceType:name", id)
	}
	for i, s := range p {
		if s == "" {
			return TerraformID{}, fmt.Errorf("malformed Terraform id %q: part %d is empty", id, i+1)
		}
	}
	return TerraformID{p[0], p[1], p[2], p[3]}, nil
}

// ImportIDExtension asks the runtime to adopt an existing object instead of creating it.
const ImportIDExtension = "kusionstack.io/import-id"
