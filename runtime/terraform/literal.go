package terraform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// A spec is data. In Terraform's JSON syntax every string in an expression,
// and every key of an object in one, is a template: "${file(...)}" reads a
// file of whoever runs Terraform and "%{ for }" loops. So everything taken
// from a spec is escaped on its way into main.tf.json ("$${" and "%%{" are
// Terraform's own escapes), and Terraform reads back exactly the string the
// spec holds: the plan and the state show it, and the next plan finds no
// change.

// escapeTemplate makes s a template whose value is s. Only "${" and "%{"
// start a template sequence; "$$" or "%%" before anything else are read as
// they are, so the two replacements are all it takes, already escaped
// input ("$${") included: it becomes "$$${", which reads back as "$${".
func escapeTemplate(s string) string {
	if !strings.Contains(s, "{") {
		return s
	}
	s = strings.ReplaceAll(s, "${", "$${")
	return strings.ReplaceAll(s, "%{", "%%{")
}

// literal returns a copy of v, as written into main.tf.json, that Terraform
// reads as v: every string escaped, object keys at any depth included (an
// object in an attribute is an object constructor, whose keys are templates
// too; the keys of nested blocks are argument names, which never hold "${").
func literal(v any) (any, error) {
	switch t := v.(type) {
	case nil, bool, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, json.Number:
		return t, nil
	case string:
		return escapeTemplate(t), nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			y, err := literal(x)
			if err != nil {
				return nil, err
			}
			// The escape is one to one (Terraform reads each back as it
			// was), so no two keys become one.
			out[escapeTemplate(k)] = y
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			y, err := literal(x)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return nil, nil
	}
	// Any other Go value (a typed map or slice a built-in module made, a
	// struct) is escaped in the shape JSON gives it.
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	return literal(generic)
}

// literalMap is literal for an attribute map or a provider block.
func literalMap(m map[string]any) (map[string]any, error) {
	if m == nil {
		return map[string]any{}, nil
	}
	v, err := literal(m)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// metaArguments are the names Terraform reads in a resource block itself
// rather than passing to the provider: run commands (provisioner,
// connection), evaluate expressions (count, for_each, dynamic blocks),
// change which provider configuration or which objects are involved
// (provider, depends_on, lifecycle), or are reserved for that ("locals", and
// "_", the block that passes meta-argument names on to the provider).
var metaArguments = map[string]bool{
	"provisioner": true, "connection": true, "lifecycle": true, "depends_on": true,
	"count": true, "for_each": true, "provider": true, "dynamic": true,
	"locals": true, "_": true,
}

// checkAttributes refuses a resource whose attributes hold a Terraform
// meta-argument: a spec gives the provider's arguments, nothing else.
func checkAttributes(attrs map[string]any) error {
	var found []string
	for k := range attrs {
		if metaArguments[k] {
			found = append(found, k)
		}
	}
	if len(found) == 0 {
		return nil
	}
	sort.Strings(found)
	return fmt.Errorf("attributes.%s: %q is a Terraform meta-argument, not an argument of the resource: refused (a spec gives the provider's arguments only; provisioners, connections, lifecycle, depends_on, count and for_each are never written)", found[0], found[0])
}
