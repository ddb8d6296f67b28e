package githubfake

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// validator checks a JSON value against a schema of the description. The
// checks are JSON Schema's as OpenAPI 3.0 uses them: type and nullable,
// enum, required, properties, additionalProperties, items, allOf/anyOf,
// oneOf (as anyOf: GitHub's alternatives overlap, a null matches several),
// min/maxLength (in characters), minimum/maximum, min/maxItems, pattern,
// and the formats date-time and uri.
type validator struct {
	d *description
	// strict makes a property no schema declares an error, where JSON Schema
	// would allow it: GitHub ignores unknown request fields, so a misspelt
	// one would otherwise pass unnoticed.
	strict bool
	errs   []string
}

const maxErrors = 20

func (v *validator) fail(path, format string, args ...any) {
	if len(v.errs) < maxErrors {
		v.errs = append(v.errs, path+": "+fmt.Sprintf(format, args...))
	}
}

// check validates val (decoded with UseNumber) at path. known holds the
// property names enclosing schemas declare, so that alternatives which
// spell out only some properties do not call the others unknown.
func (v *validator) check(s map[string]any, val any, path string, known map[string]bool) {
	s = v.d.resolve(s)
	if s == nil {
		return
	}
	if val == nil {
		if n, _ := s["nullable"].(bool); n {
			return
		}
		if s["type"] == nil {
			// Only alternatives say what it is, and whether null is one.
			v.composition(s, val, path, known)
			return
		}
		v.fail(path, "is null, and the schema does not allow null")
		return
	}
	if enum, ok := s["enum"].([]any); ok && !inEnum(enum, val) {
		v.fail(path, "%s is not one of %s", show(val), show(enum))
	}
	switch str(s["type"]) {
	case "string":
		sv, ok := val.(string)
		if !ok {
			v.fail(path, "%s is not a string", show(val))
			return
		}
		v.checkString(s, sv, path)
	case "integer":
		n, ok := val.(json.Number)
		if !ok || strings.ContainsAny(n.String(), ".eE") {
			v.fail(path, "%s is not an integer", show(val))
			return
		}
		v.checkNumber(s, n, path)
	case "number":
		n, ok := val.(json.Number)
		if !ok {
			v.fail(path, "%s is not a number", show(val))
			return
		}
		v.checkNumber(s, n, path)
	case "boolean":
		if _, ok := val.(bool); !ok {
			v.fail(path, "%s is not a boolean", show(val))
			return
		}
	case "array":
		a, ok := val.([]any)
		if !ok {
			v.fail(path, "%s is not an array", show(val))
			return
		}
		v.checkArray(s, a, path)
	case "object":
		if _, ok := val.(map[string]any); !ok {
			v.fail(path, "%s is not an object", show(val))
			return
		}
	}
	if o, ok := val.(map[string]any); ok {
		v.checkObject(s, o, path, known)
	}
	v.composition(s, val, path, known)
}

func (v *validator) checkString(s map[string]any, sv, path string) {
	n := utf8.RuneCountInString(sv)
	if max, ok := num(s["maxLength"]); ok && n > int(max) {
		// GitHub's own wording for an over-long field.
		v.fail(path, "Only %d characters are allowed; %d were supplied.", int(max), n)
	}
	if min, ok := num(s["minLength"]); ok && n < int(min) {
		v.fail(path, "is %d characters long, shorter than the minimum %d", n, int(min))
	}
	if p, ok := s["pattern"].(string); ok {
		if re := v.d.patterns[p]; re != nil && !re.MatchString(sv) {
			v.fail(path, "%q does not match %q", sv, p)
		}
	}
	switch str(s["format"]) {
	case "date-time":
		if _, err := time.Parse(time.RFC3339, sv); err != nil {
			v.fail(path, "%q is not a date-time (RFC 3339)", sv)
		}
	case "uri":
		if u, err := url.Parse(sv); err != nil || u.Scheme == "" {
			v.fail(path, "%q is not an absolute URI", sv)
		}
	}
}

func (v *validator) checkNumber(s map[string]any, n json.Number, path string) {
	f, err := n.Float64()
	if err != nil {
		v.fail(path, "%s is not a number", n)
		return
	}
	if max, ok := num(s["maximum"]); ok && f > max {
		v.fail(path, "%s is above the maximum %v", n, max)
	}
	if min, ok := num(s["minimum"]); ok && f < min {
		v.fail(path, "%s is below the minimum %v", n, min)
	}
}

func (v *validator) checkArray(s map[string]any, a []any, path string) {
	if max, ok := num(s["maxItems"]); ok && len(a) > int(max) {
		v.fail(path, "has %d items, more than the maximum %d", len(a), int(max))
	}
	if min, ok := num(s["minItems"]); ok && len(a) < int(min) {
		v.fail(path, "has %d items, fewer than the minimum %d", len(a), int(min))
	}
	if items := v.d.resolve(s["items"]); items != nil {
		for i, e := range a {
			v.check(items, e, fmt.Sprintf("%s[%d]", path, i), nil)
		}
	}
}

func (v *validator) checkObject(s map[string]any, o map[string]any, path string, known map[string]bool) {
	for _, r := range list(s["required"]) {
		if name, _ := r.(string); name != "" {
			if _, ok := o[name]; !ok {
				v.fail(path, "missing required property %q", name)
			}
		}
	}
	props, _ := s["properties"].(map[string]any)
	for name, ps := range props {
		if pv, ok := o[name]; ok {
			v.check(v.d.resolve(ps), pv, path+"."+name, nil)
		}
	}
	declared := v.declared(s, known)
	switch ap := s["additionalProperties"].(type) {
	case bool:
		if !ap {
			for name := range o {
				if props[name] == nil {
					v.fail(path, "property %q is not allowed", name)
				}
			}
		}
	case map[string]any:
		for name, pv := range o {
			if props[name] == nil && !declared[name] {
				v.check(v.d.resolve(ap), pv, path+"."+name, nil)
			}
		}
	case nil:
		if v.strict && len(declared) > 0 {
			names := make([]string, 0, len(o))
			for name := range o {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				if !declared[name] {
					v.fail(path, "unknown property %q (the description declares %s)", name, keys(declared))
				}
			}
		}
	}
}

// declared is every property name s, its alternatives and the enclosing
// schemas declare.
func (v *validator) declared(s map[string]any, known map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range known {
		out[k] = true
	}
	var add func(s map[string]any, depth int)
	add = func(s map[string]any, depth int) {
		if s == nil || depth > 4 {
			return
		}
		props, _ := s["properties"].(map[string]any)
		for k := range props {
			out[k] = true
		}
		for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
			for _, b := range list(s[kw]) {
				add(v.d.resolve(b), depth+1)
			}
		}
	}
	add(s, 0)
	return out
}

func (v *validator) composition(s map[string]any, val any, path string, known map[string]bool) {
	var inner map[string]bool
	if _, isObj := val.(map[string]any); isObj {
		inner = v.declared(s, known)
	}
	for _, b := range list(s["allOf"]) {
		v.check(v.d.resolve(b), val, path, inner)
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		alts := list(s[kw])
		if len(alts) == 0 {
			continue
		}
		var first []string
		ok := false
		for _, b := range alts {
			sub := &validator{d: v.d, strict: v.strict}
			sub.check(v.d.resolve(b), val, path, inner)
			if len(sub.errs) == 0 {
				ok = true
				break
			}
			if first == nil {
				first = sub.errs
			}
		}
		if !ok {
			v.fail(path, "matches none of the %d alternatives of %s (the first: %s)", len(alts), kw, strings.Join(first, "; "))
		}
	}
}

// paramValue turns a path or query parameter's text into the JSON value its
// schema describes, so it is checked like a body field.
func paramValue(schema map[string]any, raw []string) any {
	switch str(schema["type"]) {
	case "array":
		var out []any
		for _, r := range raw {
			for _, p := range strings.Split(r, ",") {
				out = append(out, scalarValue(nil, p))
			}
		}
		return out
	default:
		return scalarValue(schema, raw[len(raw)-1])
	}
}

func scalarValue(schema map[string]any, s string) any {
	switch str(schema["type"]) {
	case "integer", "number":
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return json.Number(s)
		}
	case "boolean":
		if b, err := strconv.ParseBool(s); err == nil {
			return b
		}
	}
	return s
}

func inEnum(enum []any, val any) bool {
	for _, e := range enum {
		if fmt.Sprint(e) == fmt.Sprint(val) {
			return true
		}
	}
	return false
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

func keys(m map[string]bool) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func num(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	}
	return 0, false
}
