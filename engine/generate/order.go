package generate

import (
	"sort"
	"strings"

	"github.com/kusionpr/kusionpr/model"
)

// kindOrder is the order Kusion creates Kubernetes kinds in (its
// DefaultOrderedKinds): a resource depends on every resource of an earlier
// kind, so a Deployment waits for its ConfigMaps, Secrets and Services. A
// kind not listed (Job, CollaSet, custom resources) comes after them all.
var kindOrder = []string{
	"Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition",
	"ServiceAccount", "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding",
	"ClusterRoleBinding", "ConfigMap", "Secret", "Endpoints", "Service",
	"LimitRange", "PriorityClass", "PersistentVolume", "PersistentVolumeClaim",
	"Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget",
	"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
}

func kindRank(kind string) int {
	for i, k := range kindOrder {
		if k == kind {
			return i
		}
	}
	return len(kindOrder)
}

// orderByKind adds to each Kubernetes resource's dependsOn the resources of
// the kinds listed before its own, as Kusion does, with two differences: an
// id is never listed twice, and a dependency that would close a cycle
// (because a module or the developer made the other resource depend on this
// one, directly or through a $kusion_path) is left out.
func orderByKind(rs model.Resources) {
	ids := make([]string, len(rs))
	pos := make(map[string]int, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
		pos[r.ID] = i
	}
	// deps holds every edge, explicit and implied, so the cycle check sees
	// what the engine will.
	deps := make([][]int, len(rs))
	refs := model.NewReferenceIndex(ids)
	for i, r := range rs {
		for _, d := range r.DependsOn {
			if j, ok := pos[d]; ok {
				deps[i] = append(deps[i], j)
			}
		}
		for _, ref := range refs.References(r.Attributes) {
			if j, ok := pos[ref.ResourceID]; ok && j != i {
				deps[i] = append(deps[i], j)
			}
		}
	}
	kinds := make([]string, len(rs))
	for i, r := range rs {
		if r.Type == model.Kubernetes {
			kinds[i], _ = r.Attributes["kind"].(string)
		}
	}
	for i := range rs {
		if kinds[i] == "" {
			continue
		}
		rank := kindRank(kinds[i])
		listed := map[string]bool{}
		for _, d := range rs[i].DependsOn {
			listed[d] = true
		}
		for _, k := range kindOrder[:min(rank, len(kindOrder))] {
			for j := range rs {
				if kinds[j] != k || listed[rs[j].ID] || reaches(deps, j, i) {
					continue
				}
				rs[i].DependsOn = append(rs[i].DependsOn, rs[j].ID)
				deps[i] = append(deps[i], j)
				listed[rs[j].ID] = true
			}
		}
	}
}

// reaches says whether from depends on to, directly or not.
func reaches(deps [][]int, from, to int) bool {
	seen := make([]bool, len(deps))
	stack := []int{from}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == to {
			return true
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		stack = append(stack, deps[n]...)
	}
	return false
}

// moveNamespace puts the Kubernetes objects modules made in namespace from
// (the project's, where Kusion's modules put everything) into to, the one a
// kubernetesNamespace extension names, with their ids and every dependsOn
// and $kusion_path that names them.
func moveNamespace(rs model.Resources, from, to string) model.Resources {
	renamed := map[string]string{}
	for i := range rs {
		r := &rs[i]
		if r.Type != model.Kubernetes {
			continue
		}
		k, err := model.ParseKubernetesID(r.ID)
		if err != nil || k.Namespace != from {
			continue
		}
		if meta, ok := r.Attributes["metadata"].(map[string]any); ok {
			meta["namespace"] = to
		}
		k.Namespace = to
		renamed[r.ID] = k.String()
		r.ID = k.String()
	}
	if len(renamed) == 0 {
		return rs
	}
	// Longest first: an id may begin with another id and a dot.
	olds := make([]string, 0, len(renamed))
	for old := range renamed {
		olds = append(olds, old)
	}
	sort.Slice(olds, func(i, j int) bool {
		return len(olds[i]) > len(olds[j]) || len(olds[i]) == len(olds[j]) && olds[i] < olds[j]
	})
	for i := range rs {
		r := &rs[i]
		for j, d := range r.DependsOn {
			if n, ok := renamed[d]; ok {
				r.DependsOn[j] = n
			}
		}
		r.Attributes, _ = model.ReplaceStrings(r.Attributes, func(s string) (any, bool) {
			if !strings.HasPrefix(s, model.KusionPathPrefix) {
				return nil, false
			}
			rest := strings.TrimPrefix(s, model.KusionPathPrefix)
			for _, old := range olds {
				if strings.HasPrefix(rest, old+".") {
					return model.KusionPathPrefix + renamed[old] + rest[len(old):], true
				}
			}
			return nil, false
		}).(map[string]any)
	}
	return rs
}
