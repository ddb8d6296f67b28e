package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/wI2L/jsondiff"
)

// FieldChange is one field that differs between two versions of a resource.
type FieldChange struct {
	// Path is the field, dotted, with [i] for list items and ["k"] for keys
	// holding dots or slashes: spec.template.spec.containers[0].image.
	Path string `json:"path"`
	// Op is add, remove or replace.
	Op   string `json:"op"`
	From any    `json:"from,omitempty"`
	To   any    `json:"to,omitempty"`
}

// Diff lists the field changes from one attribute tree to another. Numbers
// are compared by value whatever their Go type (YAML gives float64, the API
// server int64).
func Diff(from, to map[string]any) ([]FieldChange, error) {
	a, b := jsonShape(from), jsonShape(to)
	if reflect.DeepEqual(a, b) {
		return nil, nil
	}
	patch, err := jsondiff.CompareWithoutMarshal(a, b)
	if err != nil {
		return nil, fmt.Errorf("compare attributes: %w", err)
	}
	out := make([]FieldChange, 0, len(patch))
	for _, op := range patch {
		c := FieldChange{Path: dotPath(op.Path), Op: op.Type}
		switch op.Type {
		case jsondiff.OperationAdd:
			c.To = op.Value
		case jsondiff.OperationRemove:
			c.From = op.OldValue
		default:
			c.From, c.To = op.OldValue, op.Value
		}
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Equal reports whether two attribute trees hold the same values.
func Equal(a, b map[string]any) bool {
	return reflect.DeepEqual(jsonShape(a), jsonShape(b))
}

// jsonShape gives v the types encoding/json decodes into, so trees from YAML,
// JSON and the API server compare alike. nil maps become empty ones.
func jsonShape(v map[string]any) any {
	if v == nil {
		return map[string]any{}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

// dotPath turns a JSON pointer into the dotted form people read in kubectl's docs.
func dotPath(pointer string) string {
	if pointer == "" || pointer == "/" {
		return "."
	}
	var b strings.Builder
	for _, raw := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		seg := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
		switch {
		case isIndex(seg):
			b.WriteString("[" + seg + "]")
		case strings.ContainsAny(seg, "./[] \"") || seg == "":
			b.WriteString("[" + strconv.Quote(seg) + "]")
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(seg)
		}
	}
	return b.String()
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Project keeps only the parts of v that template declares: the keys of its
// maps, and list items position by position. Drift is judged on the fields a
// spec declares, so values servers and controllers fill in (defaults, status
// annotations) are not reported as someone's change.
func Project(v, template any) any {
	switch t := template.(type) {
	case map[string]any:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		out := make(map[string]any, len(t))
		for k, tv := range t {
			if x, ok := m[k]; ok {
				out[k] = Project(x, tv)
			}
		}
		return out
	case []any:
		s, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, len(s))
		for i, x := range s {
			if i < len(t) {
				out[i] = Project(x, t[i])
			} else {
				out[i] = x
			}
		}
		return out
	default:
		return v
	}
}
