package spec

import (
	"errors"
	"fmt"
	"sort"

	"github.com/kusionpr/kusionpr/engine/graph"
	"github.com/kusionpr/kusionpr/model"
)

// Validate checks what Parse cannot: that ids are unique and well formed for
// their type, that Kubernetes ids agree with the objects they name, that
// every dependsOn and $kusion_path points at a resource of the spec, and that
// the dependencies have no cycle. It returns every problem found, joined, so
// one review round fixes them all; each names the file and the resource.
func Validate(name string, s *model.Spec) error {
	if s == nil {
		return fmt.Errorf("%s: no spec", name)
	}
	// Resources without an id are reported below; they cannot be referred to.
	ids := make([]string, 0, len(s.Resources))
	known := make(map[string]bool, len(s.Resources))
	for _, r := range s.Resources {
		if r.ID != "" {
			ids = append(ids, r.ID)
			known[r.ID] = true
		}
	}
	refs := model.NewReferenceIndex(ids)
	first := map[string]int{}
	var errs []error
	for i, r := range s.Resources {
		where := resourceLabel(name, i, r.ID)
		if r.ID == "" {
			errs = append(errs, fmt.Errorf("%s: missing id", where))
		} else if j, dup := first[r.ID]; dup {
			errs = append(errs, fmt.Errorf("%s: duplicate resource id %q (resources %d and %d)", name, r.ID, j+1, i+1))
		} else {
			first[r.ID] = i
		}
		errs = append(errs, checkType(where, r)...)
		for _, d := range r.DependsOn {
			if !known[d] {
				errs = append(errs, fmt.Errorf("%s: dependsOn %q names no resource in the spec", where, d))
			}
		}
		errs = append(errs, checkReferences(where, r, refs)...)
	}
	if err := checkCycles(s.Resources, first); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	return errors.Join(errs...)
}

func checkType(where string, r model.Resource) []error {
	switch r.Type {
	case model.Kubernetes:
		if r.ID == "" {
			return nil
		}
		k, err := model.ParseKubernetesID(r.ID)
		if err != nil {
			return []error{fmt.Errorf("%s: %w", where, err)}
		}
		return checkKubernetesAttributes(where, k, r.Attributes)
	case model.Terraform:
		if r.ID == "" {
			return nil
		}
		if _, err := model.ParseTerraformID(r.ID); err != nil {
			return []error{fmt.Errorf("%s: %w", where, err)}
		}
		return nil
	case "":
		return []error{fmt.Errorf("%s: missing type: want %s or %s", where, model.Kubernetes, model.Terraform)}
	default:
		return []error{fmt.Errorf("%s: unknown type %q: want %s or %s", where, r.Type, model.Kubernetes, model.Terraform)}
	}
}

// checkKubernetesAttributes makes sure the id names the object the attributes
// describe: the runtime applies the attributes but records and diffs by id,
// so a disagreement would manage one object under another's name.
func checkKubernetesAttributes(where string, k model.KubernetesID, attrs map[string]any) []error {
	if attrs == nil {
		return []error{fmt.Errorf("%s: attributes are missing: a Kubernetes resource needs apiVersion, kind and metadata.name", where)}
	}
	var errs []error
	for _, p := range []struct{ part, fromID, path string }{
		{"apiVersion", k.APIVersion, "apiVersion"},
		{"kind", k.Kind, "kind"},
		{"namespace", k.Namespace, "metadata.namespace"},
		{"name", k.Name, "metadata.name"},
	} {
		v, present := model.Lookup(attrs, p.path)
		got, isString := v.(string)
		switch {
		case isString && got == p.fromID:
			continue
		case p.part == "namespace" && p.fromID == "" && (!present || v == nil || got == ""):
			continue // cluster-scoped, and the object says so too
		case p.part == "namespace" && p.fromID == "":
			errs = append(errs, fmt.Errorf("%s: id has no namespace but attributes.%s is %s", where, p.path, describe(v, present)))
		default:
			errs = append(errs, fmt.Errorf("%s: id %s %q differs from attributes.%s %s", where, p.part, p.fromID, p.path, describe(v, present)))
		}
	}
	return errs
}

func describe(v any, present bool) string {
	switch {
	case !present || v == nil:
		return "(missing)"
	case kindOf(v) == "a string":
		return fmt.Sprintf("%q", v)
	default:
		return fmt.Sprintf("(%s: %v)", kindOf(v), v)
	}
}

// checkReferences reports $kusion_path strings that match no resource: at
// apply time they could never be replaced by a live value.
func checkReferences(where string, r model.Resource, refs *model.ReferenceIndex) []error {
	seen := map[string]bool{}
	var unresolved []string
	for _, ref := range refs.References(r.Attributes) {
		if ref.ResourceID == "" && !seen[ref.Raw] {
			seen[ref.Raw] = true
			unresolved = append(unresolved, ref.Raw)
		}
	}
	// References walks maps in random order; sort for stable messages.
	sort.Strings(unresolved)
	errs := make([]error, 0, len(unresolved))
	for _, raw := range unresolved {
		errs = append(errs, fmt.Errorf("%s: %s refers to no resource in the spec", where, raw))
	}
	return errs
}

// checkCycles builds the dependency graph of the resources minus what the
// other checks already reported (later duplicates, dependsOn to nowhere), so
// that a cycle is found even in a spec with other problems.
func checkCycles(resources model.Resources, first map[string]int) error {
	clean := make(model.Resources, 0, len(resources))
	for i, r := range resources {
		if j, ok := first[r.ID]; !ok || j != i {
			continue // no id, or a later duplicate
		}
		var deps []string
		for _, d := range r.DependsOn {
			if _, ok := first[d]; ok {
				deps = append(deps, d)
			}
		}
		r.DependsOn = deps
		clean = append(clean, r)
	}
	if _, err := graph.New(clean); err != nil {
		var cycle *graph.CycleError
		if errors.As(err, &cycle) {
			return cycle
		}
		return fmt.Errorf("checking dependencies: %w", err)
	}
	return nil
}
