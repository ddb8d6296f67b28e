// Package spec reads, checks and writes Specs, the desired state of a stack
// in Kusion's format, whether `kusion generate` wrote them or a stack's YAML
// did. Every message names the file and, where there is one, the resource
// (by its 1-based position and id), because the reader is someone looking at
// a pull request comment, not at a debugger.
package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
	goyaml "sigs.k8s.io/yaml/goyaml.v2"

	"github.com/kusionpr/kusionpr/model"
)

// Load reads the Spec in the YAML or JSON file at path, and validates it.
func Load(path string) (*model.Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading spec: %w", err)
	}
	s, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	if err := Validate(path, s); err != nil {
		return nil, err
	}
	return s, nil
}

// Parse decodes a Spec from YAML or JSON. name (usually the file path)
// prefixes every message. Parse checks the document's shape — a mapping of
// resources, secretStore and context; resources a list of mappings with
// known fields of the right kinds — and reports every shape problem at once;
// it does not check the meaning of what it decodes: that is Validate's work.
//
// Numbers decode as float64, as everywhere else a Spec is read from JSON.
// Empty dependsOn, extensions, secretStore and context decode as nil, which
// is how they are written back, so a Spec survives Write and Parse unchanged.
func Parse(name string, data []byte) (s *model.Spec, err error) {
	// The YAML decoder is third-party code fed with untrusted pull request
	// content; a panic in it must become an error, not a dead bot.
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("%s: parsing spec: decoder panicked: %v", name, r)
		}
	}()
	js, err := toJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: parsing spec: %w", name, err)
	}
	var doc any
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, fmt.Errorf("%s: parsing spec: %w", name, err)
	}
	if err := checkShape(name, doc); err != nil {
		return nil, err
	}
	s = &model.Spec{}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(s); err != nil {
		// checkShape should have caught it; still say what failed.
		return nil, fmt.Errorf("%s: decoding spec: %w", name, err)
	}
	normalize(s)
	return s, nil
}

// toJSON turns YAML into JSON, rejecting duplicate keys: a key given twice is
// a mistake whose silent resolution would hide a change from review. JSON
// input is used as it is (the YAML decoder chokes on some valid JSON, such as
// tab indentation).
func toJSON(data []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed) {
		return trimmed, nil
	}
	return yaml.YAMLToJSONStrict(data)
}

func normalize(s *model.Spec) {
	if len(s.SecretStore) == 0 {
		s.SecretStore = nil
	}
	if len(s.Context) == 0 {
		s.Context = nil
	}
	for i := range s.Resources {
		r := &s.Resources[i]
		if len(r.DependsOn) == 0 {
			r.DependsOn = nil
		}
		if len(r.Extensions) == 0 {
			r.Extensions = nil
		}
	}
}

// checkShape reports, all at once, where doc is not shaped like a Spec. The
// JSON decoder would say "cannot unmarshal array into Go value of type
// model.Spec"; this says which field of which resource is wrong.
func checkShape(name string, doc any) error {
	if doc == nil {
		return fmt.Errorf("%s: not a Spec: the document is empty, want a mapping with resources", name)
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: not a Spec: the document is %s, want a mapping with resources", name, kindOf(doc))
	}
	specFields := []string{"resources", "secretStore", "context"}
	var errs []error
	for _, k := range sortedKeys(top) {
		if !contains(specFields, k) {
			errs = append(errs, fmt.Errorf("%s: not a Spec: unknown field %q (want %s)", name, k, strings.Join(specFields, ", ")))
		}
	}
	for _, k := range []string{"secretStore", "context"} {
		if v := top[k]; !isMapOrNil(v) {
			errs = append(errs, fmt.Errorf("%s: %s is %s, want a mapping", name, k, kindOf(v)))
		}
	}
	switch rs := top["resources"].(type) {
	case nil:
	case []any:
		for i, r := range rs {
			errs = append(errs, checkResourceShape(name, i, r)...)
		}
	default:
		errs = append(errs, fmt.Errorf("%s: resources is %s, want a list of resources", name, kindOf(rs)))
	}
	return errors.Join(errs...)
}

func checkResourceShape(name string, i int, v any) []error {
	r, ok := v.(map[string]any)
	if !ok {
		return []error{fmt.Errorf("%s: resource %d is %s, want a mapping with id, type and attributes", name, i+1, kindOf(v))}
	}
	id, _ := r["id"].(string)
	where := resourceLabel(name, i, id)
	resourceFields := []string{"id", "type", "attributes", "dependsOn", "extensions"}
	var errs []error
	for _, k := range sortedKeys(r) {
		if !contains(resourceFields, k) {
			errs = append(errs, fmt.Errorf("%s: unknown field %q (want %s)", where, k, strings.Join(resourceFields, ", ")))
		}
	}
	for _, k := range []string{"id", "type"} {
		if _, isString := r[k].(string); !isString && r[k] != nil {
			errs = append(errs, fmt.Errorf("%s: %s is %s, want a string", where, k, kindOf(r[k])))
		}
	}
	for _, k := range []string{"attributes", "extensions"} {
		if !isMapOrNil(r[k]) {
			errs = append(errs, fmt.Errorf("%s: %s is %s, want a mapping", where, k, kindOf(r[k])))
		}
	}
	switch deps := r["dependsOn"].(type) {
	case nil:
	case []any:
		for j, d := range deps {
			if _, isString := d.(string); !isString {
				errs = append(errs, fmt.Errorf("%s: dependsOn entry %d is %s, want a resource id", where, j+1, kindOf(d)))
			}
		}
	default:
		errs = append(errs, fmt.Errorf("%s: dependsOn is %s, want a list of resource ids", where, kindOf(deps)))
	}
	return errs
}

// resourceLabel names a resource in messages: "spec.yaml: resource 3 (id)".
func resourceLabel(name string, i int, id string) string {
	if id == "" {
		return fmt.Sprintf("%s: resource %d", name, i+1)
	}
	return fmt.Sprintf("%s: resource %d (%s)", name, i+1, id)
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	default:
		return fmt.Sprintf("a %T", v)
	}
}

func isMapOrNil(v any) bool {
	if v == nil {
		return true
	}
	_, ok := v.(map[string]any)
	return ok
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// Write encodes s as "yaml" (or "yml") or "json". YAML keeps a resource's
// fields in Kusion's order (id, type, attributes, dependsOn, extensions) so
// that written specs read and diff like `kusion generate` output; nested
// mappings are sorted by key.
func Write(w io.Writer, s *model.Spec, format string) error {
	if s == nil {
		return errors.New("writing spec: no spec")
	}
	out := *s
	if out.Resources == nil {
		out.Resources = model.Resources{}
	}
	var data []byte
	switch strings.ToLower(format) {
	case "json":
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		// "<" and ">" appear in real attributes (scripts, HTML); keep them readable.
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&out); err != nil {
			return fmt.Errorf("writing spec as JSON: %w", err)
		}
		data = buf.Bytes()
	case "yaml", "yml":
		doc, err := yamlDocument(&out)
		if err != nil {
			return fmt.Errorf("writing spec as YAML: %w", err)
		}
		if data, err = goyaml.Marshal(doc); err != nil {
			return fmt.Errorf("writing spec as YAML: %w", err)
		}
	default:
		return fmt.Errorf("writing spec: unknown format %q: want yaml or json", format)
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("writing spec: %w", err)
	}
	return nil
}

// yamlDocument lays s out as ordered YAML. Values go through JSON first, as
// sigs.k8s.io/yaml does, so what Parse reads back is what was written.
func yamlDocument(s *model.Spec) (goyaml.MapSlice, error) {
	resources := make([]any, 0, len(s.Resources))
	for i, r := range s.Resources {
		attrs, err := yamlValue(r.Attributes)
		if err != nil {
			return nil, fmt.Errorf("resource %d (%s): attributes: %w", i+1, r.ID, err)
		}
		item := goyaml.MapSlice{{Key: "id", Value: r.ID}, {Key: "type", Value: string(r.Type)}, {Key: "attributes", Value: attrs}}
		if len(r.DependsOn) > 0 {
			item = append(item, goyaml.MapItem{Key: "dependsOn", Value: r.DependsOn})
		}
		if len(r.Extensions) > 0 {
			ext, err := yamlValue(r.Extensions)
			if err != nil {
				return nil, fmt.Errorf("resource %d (%s): extensions: %w", i+1, r.ID, err)
			}
			item = append(item, goyaml.MapItem{Key: "extensions", Value: ext})
		}
		resources = append(resources, item)
	}
	doc := goyaml.MapSlice{{Key: "resources", Value: resources}}
	for _, f := range []struct {
		key string
		v   map[string]any
	}{{"secretStore", s.SecretStore}, {"context", s.Context}} {
		if len(f.v) == 0 {
			continue
		}
		v, err := yamlValue(f.v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
		doc = append(doc, goyaml.MapItem{Key: f.key, Value: v})
	}
	return doc, nil
}

func yamlValue(v any) (any, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := goyaml.Unmarshal(js, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
