package terraform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

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
// attrs, the resource's values as `terraform show -json` shows them: how a
// release without a recorded state (one written by Kusion, which records
// only those values, or by an earlier version of ours) is continued. The
// values are encoded as the schema types them: in a state file, a value of
// Terraform's dynamic type (terraform_data's input, output and
// triggers_replace) carries its type, {"value": ..., "type": ...}, where
// show prints the bare value.
func stateFromAttributes(t target, attrs map[string]any, schema resourceSchema) ([]byte, error) {
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
	typed, err := stateValue(attrs, schema.Type, "")
	if err != nil {
		return nil, fmt.Errorf("rebuild its Terraform state from the recorded attributes: %w", err)
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
				"schema_version":       schema.Version,
				"attributes":           typed,
				"sensitive_attributes": []any{},
			}},
		}},
	}
	return json.Marshal(doc)
}

// stateValue is v, a value as `terraform show -json` shows it, as a state
// file holds a value of type ty. Only dynamic types differ: such a value is
// stored with the type it had, which for a value that came from JSON (the
// configuration is main.tf.json, Kusion's as ours) is the type JSON implies:
// objects, tuples, numbers, strings and bools. What the schema does not
// know is kept as it is, for Terraform to judge.
func stateValue(v any, ty cty.Type, path string) (any, error) {
	if v == nil || ty == cty.NilType {
		return v, nil
	}
	switch {
	case ty == cty.DynamicPseudoType:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dotted(path), err)
		}
		implied, err := ctyjson.ImpliedType(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dotted(path), err)
		}
		return map[string]any{"value": v, "type": implied}, nil
	case ty.IsObjectType():
		m, ok := v.(map[string]any)
		if !ok {
			return v, nil
		}
		out := make(map[string]any, len(m))
		for k, x := range m {
			if !ty.HasAttribute(k) {
				out[k] = x
				continue
			}
			y, err := stateValue(x, ty.AttributeType(k), join(path, k))
			if err != nil {
				return nil, err
			}
			out[k] = y
		}
		return out, nil
	case ty.IsMapType():
		m, ok := v.(map[string]any)
		if !ok {
			return v, nil
		}
		out := make(map[string]any, len(m))
		for k, x := range m {
			y, err := stateValue(x, ty.ElementType(), join(path, k))
			if err != nil {
				return nil, err
			}
			out[k] = y
		}
		return out, nil
	case ty.IsListType(), ty.IsSetType(), ty.IsTupleType():
		l, ok := v.([]any)
		if !ok {
			return v, nil
		}
		out := make([]any, len(l))
		for i, x := range l {
			et := cty.NilType
			switch {
			case !ty.IsTupleType():
				et = ty.ElementType()
			case i < len(ty.TupleElementTypes()):
				et = ty.TupleElementType(i)
			}
			y, err := stateValue(x, et, join(path, strconv.Itoa(i)))
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	}
	return v, nil
}

func dotted(path string) string {
	if path == "" {
		return "attributes"
	}
	return "attributes." + path
}

// shown is j's object as `terraform show -json` of the module's state shows
// it, read from the state file itself rather than from a Terraform process
// more after every apply: its attributes, values of Terraform's dynamic
// type unwrapped ({"value": ..., "type": ...} in a state file, the bare
// value in show's output; the inverse of stateValue), numbers as
// json.Number, and the paths the state marks sensitive. ok is false when
// the entry holds what this reading does not know for certain (no type for
// the resource, an attribute its type lacks, more than one instance, a
// path step of another kind): then show reads it.
func (s *moduleState) shown(j *job) (attrs map[string]any, sensitive []string, ok bool) {
	ty := j.op.schema.Type
	if s == nil || ty == cty.NilType {
		return nil, nil, false
	}
	entries := s.entries[[2]string{j.op.t.resourceType, j.op.t.name}]
	if len(entries) != 1 {
		return nil, nil, false
	}
	var entry struct {
		Instances []struct {
			IndexKey            any               `json:"index_key"`
			Attributes          map[string]any    `json:"attributes"`
			SensitiveAttributes []json.RawMessage `json:"sensitive_attributes"`
		} `json:"instances"`
	}
	dec := json.NewDecoder(bytes.NewReader(entries[0]))
	dec.UseNumber()
	if err := dec.Decode(&entry); err != nil || len(entry.Instances) != 1 || entry.Instances[0].IndexKey != nil {
		return nil, nil, false
	}
	in := entry.Instances[0]
	v, ok := shownValue(in.Attributes, ty)
	if !ok {
		return nil, nil, false
	}
	attrs, _ = v.(map[string]any)
	for _, raw := range in.SensitiveAttributes {
		p, ok := statePath(raw)
		if !ok {
			return nil, nil, false
		}
		sensitive = append(sensitive, p)
	}
	return attrs, sensitive, true
}

// shownValue is v, a value of type ty as a state file holds it, as show
// prints it; ok is false for what ty does not describe.
func shownValue(v any, ty cty.Type) (any, bool) {
	if v == nil {
		return nil, true
	}
	switch {
	case ty == cty.DynamicPseudoType:
		m, isMap := v.(map[string]any)
		if _, typed := m["type"]; !isMap || len(m) != 2 || !typed {
			return nil, false
		}
		inner, has := m["value"]
		return inner, has
	case ty.IsObjectType():
		m, isMap := v.(map[string]any)
		if !isMap {
			return nil, false
		}
		out := make(map[string]any, len(m))
		for k, x := range m {
			if !ty.HasAttribute(k) {
				return nil, false
			}
			y, ok := shownValue(x, ty.AttributeType(k))
			if !ok {
				return nil, false
			}
			out[k] = y
		}
		return out, true
	case ty.IsMapType():
		m, isMap := v.(map[string]any)
		if !isMap {
			return nil, false
		}
		out := make(map[string]any, len(m))
		for k, x := range m {
			y, ok := shownValue(x, ty.ElementType())
			if !ok {
				return nil, false
			}
			out[k] = y
		}
		return out, true
	case ty.IsListType(), ty.IsSetType(), ty.IsTupleType():
		l, isList := v.([]any)
		if !isList || (ty.IsTupleType() && len(l) != len(ty.TupleElementTypes())) {
			return nil, false
		}
		out := make([]any, len(l))
		for i, x := range l {
			et := cty.NilType
			if ty.IsTupleType() {
				et = ty.TupleElementType(i)
			} else {
				et = ty.ElementType()
			}
			y, ok := shownValue(x, et)
			if !ok {
				return nil, false
			}
			out[i] = y
		}
		return out, true
	case ty.IsPrimitiveType():
		switch v.(type) {
		case string, bool, json.Number:
			return v, true
		}
	}
	return nil, false
}

// statePath renders a path of a state's sensitive_attributes (steps
// {"type": "get_attr", "value": name} and {"type": "index", "value":
// {"value": key, "type": "string" or "number"}}) as a dotted path.
func statePath(raw json.RawMessage) (string, bool) {
	var steps []struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(raw, &steps); err != nil || len(steps) == 0 {
		return "", false
	}
	var parts []string
	for _, st := range steps {
		switch st.Type {
		case "get_attr":
			var name string
			if json.Unmarshal(st.Value, &name) != nil {
				return "", false
			}
			parts = append(parts, name)
		case "index":
			var key struct {
				Value json.RawMessage `json:"value"`
				Type  string          `json:"type"`
			}
			if json.Unmarshal(st.Value, &key) != nil {
				return "", false
			}
			switch key.Type {
			case "string":
				var k string
				if json.Unmarshal(key.Value, &k) != nil {
					return "", false
				}
				parts = append(parts, k)
			case "number":
				var n json.Number
				if json.Unmarshal(key.Value, &n) != nil {
					return "", false
				}
				parts = append(parts, n.String())
			default:
				return "", false
			}
		default:
			return "", false
		}
	}
	return strings.Join(parts, "."), true
}
