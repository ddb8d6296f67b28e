package terraform

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/kusionpr/kusionpr/model"
)

// Terraform marks sensitive what the provider's schema and the
// configuration mark, and carries the marks through the plan
// (before_sensitive, after_sensitive) and the state (sensitive_attributes).
// It does not mark what a provider computes from a sensitive value:
// terraform_data's output is its input, unmarked, so the input masked left
// the same value in clear text beside it. So a value of a resource equal to
// one of its sensitive values is masked too.

// secretSet holds the sensitive values of one resource, as comparable keys.
type secretSet map[string]bool

// addAt adds the values attrs holds at paths ("*" for any item).
func (s secretSet) addAt(attrs map[string]any, paths []string) {
	for _, p := range paths {
		leavesAt(attrs, strings.Split(p, "."), func(v any) {
			if k, ok := secretKey(v); ok {
				s[k] = true
			}
		})
	}
}

// paths lists the paths of attrs whose value is one of s's.
func (s secretSet) paths(attrs map[string]any) []string {
	if len(s) == 0 {
		return nil
	}
	var out []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				if strings.Contains(k, ".") {
					// A path cannot name this key: mask what holds it.
					if path != "" && containsSecret(s, x) {
						out = append(out, path)
					}
					continue
				}
				walk(x, join(path, k))
			}
		case []any:
			for i, x := range t {
				walk(x, join(path, strconv.Itoa(i)))
			}
		default:
			if k, ok := secretKey(v); ok && s[k] && path != "" {
				out = append(out, path)
			}
		}
	}
	walk(attrs, "")
	return out
}

func containsSecret(s secretSet, v any) bool {
	found := false
	leavesAt(v, nil, func(x any) {
		if k, ok := secretKey(x); ok && s[k] {
			found = true
		}
	})
	return found
}

// secretKey is how a sensitive value is compared. Strings and numbers
// count; a boolean, null or empty string does not (every resource has many
// equal to it, and seeing one tells nothing of the other), nor what is
// already masked or not known yet.
func secretKey(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		if t == "" || t == model.KnownAfterApply || model.IsFingerprint(t) {
			return "", false
		}
		return "s" + t, true
	case float64:
		return "n" + strconv.FormatFloat(t, 'g', -1, 64), true
	case json.Number:
		if f, err := t.Float64(); err == nil {
			return "n" + strconv.FormatFloat(f, 'g', -1, 64), true
		}
		return "n" + t.String(), true
	case int:
		return "n" + strconv.FormatFloat(float64(t), 'g', -1, 64), true
	case int64:
		return "n" + strconv.FormatFloat(float64(t), 'g', -1, 64), true
	}
	return "", false
}

// leavesAt calls fn with every scalar below what path names in v.
func leavesAt(v any, path []string, fn func(any)) {
	if len(path) == 0 {
		switch t := v.(type) {
		case map[string]any:
			for _, x := range t {
				leavesAt(x, nil, fn)
			}
		case []any:
			for _, x := range t {
				leavesAt(x, nil, fn)
			}
		default:
			fn(v)
		}
		return
	}
	switch t := v.(type) {
	case map[string]any:
		if path[0] == "*" {
			for _, x := range t {
				leavesAt(x, path[1:], fn)
			}
			return
		}
		if x, ok := t[path[0]]; ok {
			leavesAt(x, path[1:], fn)
		}
	case []any:
		if path[0] == "*" {
			for _, x := range t {
				leavesAt(x, path[1:], fn)
			}
			return
		}
		if i, err := strconv.Atoi(path[0]); err == nil && i >= 0 && i < len(t) {
			leavesAt(t[i], path[1:], fn)
		}
	}
}

// derivedPaths are the paths of attrs holding a value equal to one at a
// sensitive path of attrs, or of one of also (each with its own sensitive
// paths): the resource's spec, whose sensitive values the object may hold
// under another name.
func derivedPaths(attrs map[string]any, sensitive []string, also ...sensitiveValues) []string {
	s := secretSet{}
	s.addAt(attrs, sensitive)
	for _, a := range also {
		s.addAt(a.attrs, a.paths)
	}
	return s.paths(attrs)
}

// sensitiveValues are attributes and which of them are sensitive.
type sensitiveValues struct {
	attrs map[string]any
	paths []string
}
