package terraform

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/kusionpr/kusionpr/model"
)

// sensitivePaths lists the paths a plan's or state's sensitivity structure
// (true, or an object or list of them mirroring the value) marks.
func sensitivePaths(v any, prefix string) []string {
	switch t := v.(type) {
	case bool:
		if t && prefix != "" {
			return []string{prefix}
		}
	case map[string]any:
		var out []string
		for k, x := range t {
			out = append(out, sensitivePaths(x, join(prefix, k))...)
		}
		return out
	case []any:
		var out []string
		for i, x := range t {
			out = append(out, sensitivePaths(x, join(prefix, strconv.Itoa(i)))...)
		}
		return out
	}
	return nil
}

func join(prefix, seg string) string {
	if prefix == "" {
		return seg
	}
	return prefix + "." + seg
}

// decodeSensitivity turns a state's sensitive_values into the structure
// sensitivePaths reads.
func decodeSensitivity(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	return v
}

// markUnknown replaces what a plan's after_unknown marks with
// model.KnownAfterApply.
func markUnknown(v any, unknown any) any {
	switch u := unknown.(type) {
	case bool:
		if u {
			return model.KnownAfterApply
		}
	case map[string]any:
		m, _ := v.(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		for k, x := range u {
			m[k] = markUnknown(m[k], x)
		}
		return m
	case []any:
		l, _ := v.([]any)
		for i, x := range u {
			if i < len(l) {
				l[i] = markUnknown(l[i], x)
			} else {
				l = append(l, markUnknown(nil, x))
			}
		}
		return l
	}
	return v
}

// replacePaths renders a plan's replace_paths (lists of attribute names and
// indexes) as dotted paths.
func replacePaths(raw []any) []string {
	var out []string
	for _, p := range raw {
		segs, _ := p.([]any)
		parts := make([]string, 0, len(segs))
		for _, s := range segs {
			switch t := s.(type) {
			case string:
				parts = append(parts, t)
			case float64:
				parts = append(parts, strconv.Itoa(int(t)))
			default:
				parts = append(parts, fmt.Sprint(t))
			}
		}
		if len(parts) > 0 {
			out = append(out, strings.Join(parts, "."))
		}
	}
	sort.Strings(out)
	return out
}

func isReplace(actions tfjson.Actions) bool {
	return actions.Replace()
}

// change finds the planned change of address.
func change(p *tfjson.Plan, address string) *tfjson.ResourceChange {
	for _, rc := range p.ResourceChanges {
		if rc.Address == address && rc.Mode == tfjson.ManagedResourceMode {
			return rc
		}
	}
	return nil
}

// stateResource finds address in a state.
func stateResource(s *tfjson.State, address string) *tfjson.StateResource {
	if s == nil || s.Values == nil || s.Values.RootModule == nil {
		return nil
	}
	for _, r := range s.Values.RootModule.Resources {
		if r.Address == address && r.Mode == tfjson.ManagedResourceMode {
			return r
		}
	}
	return nil
}

// union joins path lists without duplicates, sorted.
func union(lists ...[]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lists {
		for _, p := range l {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// rawInstance is the part of a state file the runtime reads itself.
type rawStateFile struct {
	Resources []struct {
		Mode      string `json:"mode"`
		Type      string `json:"type"`
		Name      string `json:"name"`
		Instances []struct {
			Attributes map[string]any `json:"attributes"`
		} `json:"instances"`
	} `json:"resources"`
}

// stateAttributes returns the attributes t has in a raw state file.
func stateAttributes(raw []byte, t target) map[string]any {
	var f rawStateFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil
	}
	for _, r := range f.Resources {
		if r.Mode == "managed" && r.Type == t.resourceType && r.Name == t.name && len(r.Instances) > 0 {
			return r.Instances[0].Attributes
		}
	}
	return nil
}

// stateFromAttributes writes the state file Terraform would have written for
// attrs: how a release without a recorded state (one written by Kusion,
// which keeps only attributes) is continued.
func stateFromAttributes(t target, attrs map[string]any, schemaVersion uint64) ([]byte, error) {
	var redacted []string
	model.ReplaceStrings(attrs, func(s string) (any, bool) {
		if model.IsFingerprint(s) {
			redacted = append(redacted, s)
		}
		return nil, false
	})
	if len(redacted) > 0 {
		return nil, fmt.Errorf("the release holds no Terraform state for it and its sensitive attributes were not recorded: import it again with extensions[%q]", model.ImportIDExtension)
	}
	doc := map[string]any{
		"version":           4,
		"terraform_version": "1.5.7",
		"serial":            1,
		"lineage":           "kusionpr-" + t.address(),
		"outputs":           map[string]any{},
		"resources": []any{map[string]any{
			"mode":     "managed",
			"type":     t.resourceType,
			"name":     t.name,
			"provider": t.providerAddress(),
			"instances": []any{map[string]any{
				"schema_version":       schemaVersion,
				"attributes":           attrs,
				"sensitive_attributes": []any{},
			}},
		}},
	}
	return json.Marshal(doc)
}
