// Package graph orders a Spec's resources by their dependencies and walks
// them in parallel, the way apply (dependencies first) and destroy
// (dependents first) need.
package graph

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"

	"github.com/kusionpr/kusionpr/model"
)

// Graph is the dependency DAG of a set of resources. Nodes keep the spec's
// order, and every listing the Graph gives follows it, so that the same spec
// always gives the same order, preview after preview.
type Graph struct {
	ids   []string
	index map[string]int
	// deps[i] are the nodes i depends on; dependents[i] the nodes that depend
	// on i. Both are sorted by spec position and hold no duplicates.
	deps       [][]int
	dependents [][]int
	order      []int
}

// CycleError reports a dependency cycle. Path starts and ends with the same
// id; each id depends on the next one.
type CycleError struct {
	Path []string
}

func (e *CycleError) Error() string {
	return "dependency cycle: " + strings.Join(e.Path, " -> ")
}

// New builds the graph of resources. Edges come from
//   - dependsOn,
//   - $kusion_path references (the referring resource depends on the
//     referred one; a reference matching no resource adds no edge, spec
//     validation reports it),
//   - implicit Kubernetes edges, because kubectl and Kusion users expect them
//     and the API server rejects the other order: a namespaced object depends
//     on its Namespace, and a custom resource on the CustomResourceDefinition
//     that defines its group and kind, when those are in the spec.
//
// New fails on a duplicate id, on a dependsOn naming no resource, and with a
// *CycleError on a cycle.
func New(resources model.Resources) (*Graph, error) {
	g := &Graph{
		ids:        make([]string, len(resources)),
		index:      make(map[string]int, len(resources)),
		deps:       make([][]int, len(resources)),
		dependents: make([][]int, len(resources)),
	}
	for i, r := range resources {
		if j, dup := g.index[r.ID]; dup {
			return nil, fmt.Errorf("building dependency graph: duplicate resource id %q (resources %d and %d)", r.ID, j+1, i+1)
		}
		g.ids[i] = r.ID
		g.index[r.ID] = i
	}

	namespaces, crds := kubernetesProviders(resources)
	refs := model.NewReferenceIndex(g.ids)
	for i, r := range resources {
		edges := map[int]bool{}
		for _, d := range r.DependsOn {
			j, ok := g.index[d]
			if !ok {
				return nil, fmt.Errorf("building dependency graph: resource %q depends on %q, which is not in the spec", r.ID, d)
			}
			edges[j] = true
		}
		for _, ref := range refs.References(r.Attributes) {
			if ref.ResourceID != "" {
				edges[g.index[ref.ResourceID]] = true
			}
		}
		if r.Type == model.Kubernetes {
			group, kind, ns := kubernetesCoordinates(r)
			// Implicit edges never point at the resource itself: a Namespace
			// is not inside itself, and a CRD does not define its own kind.
			if j, ok := namespaces[ns]; ok && ns != "" && j != i {
				edges[j] = true
			}
			if j, ok := crds[group+"/"+kind]; ok && j != i {
				edges[j] = true
			}
		}
		for j := range edges {
			g.deps[i] = append(g.deps[i], j)
			g.dependents[j] = append(g.dependents[j], i)
		}
		slices.Sort(g.deps[i])
	}
	// dependents[j] was filled in increasing i, so it is already sorted.

	order, err := g.topoSort()
	if err != nil {
		return nil, err
	}
	g.order = order
	return g, nil
}

// kubernetesProviders finds the resources others implicitly depend on: the
// Namespaces by name, and the CRDs by "group/kind" of what they define.
func kubernetesProviders(resources model.Resources) (namespaces, crds map[string]int) {
	namespaces, crds = map[string]int{}, map[string]int{}
	for i, r := range resources {
		if r.Type != model.Kubernetes {
			continue
		}
		apiVersion, _ := r.Attributes["apiVersion"].(string)
		kind, _ := r.Attributes["kind"].(string)
		name, _ := lookupString(r.Attributes, "metadata.name")
		if id, err := model.ParseKubernetesID(r.ID); err == nil {
			apiVersion, kind, name = id.APIVersion, id.Kind, id.Name
		}
		switch {
		case apiVersion == "v1" && kind == "Namespace":
			if _, seen := namespaces[name]; !seen && name != "" {
				namespaces[name] = i
			}
		case strings.HasPrefix(apiVersion, "apiextensions.k8s.io/") && kind == "CustomResourceDefinition":
			group, _ := lookupString(r.Attributes, "spec.group")
			defined, _ := lookupString(r.Attributes, "spec.names.kind")
			key := group + "/" + defined
			if _, seen := crds[key]; !seen && group != "" && defined != "" {
				crds[key] = i
			}
		}
	}
	return namespaces, crds
}

// kubernetesCoordinates returns the API group, kind and namespace of a
// Kubernetes resource, from its id when the id parses (the id is what Kusion
// keys on) and from its attributes otherwise.
func kubernetesCoordinates(r model.Resource) (group, kind, namespace string) {
	apiVersion, _ := r.Attributes["apiVersion"].(string)
	kind, _ = r.Attributes["kind"].(string)
	namespace, _ = lookupString(r.Attributes, "metadata.namespace")
	if id, err := model.ParseKubernetesID(r.ID); err == nil {
		apiVersion, kind, namespace = id.APIVersion, id.Kind, id.Namespace
	}
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		group = g
	}
	return group, kind, namespace
}

func lookupString(attrs map[string]any, path string) (string, bool) {
	v, ok := model.Lookup(attrs, path)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

// topoSort is Kahn's algorithm taking, among the ready nodes, the one first
// in the spec, so the order is stable under unrelated edits.
func (g *Graph) topoSort() ([]int, error) {
	pending := make([]int, len(g.ids))
	ready := &intHeap{}
	for i := range g.ids {
		pending[i] = len(g.deps[i])
		if pending[i] == 0 {
			heap.Push(ready, i)
		}
	}
	order := make([]int, 0, len(g.ids))
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		order = append(order, i)
		for _, d := range g.dependents[i] {
			pending[d]--
			if pending[d] == 0 {
				heap.Push(ready, d)
			}
		}
	}
	if len(order) == len(g.ids) {
		return order, nil
	}
	return nil, g.findCycle(pending)
}

// findCycle returns one cycle among the nodes Kahn's algorithm left over.
// Every leftover node still waits on a leftover dependency, so following the
// first such dependency from any leftover node must come back to a node
// already seen. The cycle is rotated to start at its first node in spec order.
func (g *Graph) findCycle(pending []int) *CycleError {
	start := -1
	for i, p := range pending {
		if p > 0 {
			start = i
			break
		}
	}
	seenAt := map[int]int{}
	var path []int
	for n := start; ; {
		if at, seen := seenAt[n]; seen {
			path = path[at:]
			break
		}
		seenAt[n] = len(path)
		path = append(path, n)
		next := -1
		for _, d := range g.deps[n] {
			if pending[d] > 0 {
				next = d
				break
			}
		}
		n = next
	}
	first := 0
	for k, n := range path {
		if n < path[first] {
			first = k
		}
	}
	out := make([]string, 0, len(path)+1)
	for k := range path {
		out = append(out, g.ids[path[(first+k)%len(path)]])
	}
	out = append(out, out[0])
	return &CycleError{Path: out}
}

// IDs returns the node ids in spec order.
func (g *Graph) IDs() []string { return append([]string(nil), g.ids...) }

// Dependencies returns the ids id directly depends on, in spec order; nil for
// an unknown id.
func (g *Graph) Dependencies(id string) []string {
	i, ok := g.index[id]
	if !ok {
		return nil
	}
	return g.names(g.deps[i])
}

// Dependents returns the ids that directly depend on id, in spec order; nil
// for an unknown id.
func (g *Graph) Dependents(id string) []string {
	i, ok := g.index[id]
	if !ok {
		return nil
	}
	return g.names(g.dependents[i])
}

// Order returns a topological order, dependencies first. Among nodes whose
// dependencies are all placed, the one first in the spec comes first.
func (g *Graph) Order() []string { return g.names(g.order) }

func (g *Graph) names(idx []int) []string {
	if len(idx) == 0 {
		return nil
	}
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = g.ids[i]
	}
	return out
}

// intHeap is a min-heap of spec positions.
type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
