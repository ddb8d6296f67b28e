package model

import (
	"strings"
)

// KusionPathPrefix starts a string that refers to another resource's attribute:
// "$kusion_path.<resourceId>.<attribute.path>". Resource ids contain dots
// (apiVersion groups, versions), so the id is found by matching known ids, the
// longest first, not by splitting.
const KusionPathPrefix = "$kusion_path."

// KnownAfterApply stands for a value that exists only once a resource is
// applied: a reference to a resource not created yet, a value a Terraform
// provider computes.
const KnownAfterApply = "(known after apply)"

// Reference is one $kusion_path found in a resource's attributes.
type Reference struct {
	// Raw is the whole string as written.
	Raw string
	// ResourceID is the resource referred to; empty if no known id matches.
	ResourceID string
	// Path is the attribute path inside that resource, dot separated.
	Path string
}

// References lists the $kusion_path strings anywhere in v, resolved against ids.
func References(v any, ids []string) []Reference {
	return NewReferenceIndex(ids).References(v)
}

// ReferenceIndex resolves $kusion_path strings against one set of ids.
// Build it once per spec: resolving is then a map lookup per dot of the
// string, where matching every id one by one made a 1,000-resource spec
// cost a million comparisons a pass.
type ReferenceIndex struct {
	ids map[string]bool
}

// NewReferenceIndex indexes ids.
func NewReferenceIndex(ids []string) *ReferenceIndex {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return &ReferenceIndex{ids: m}
}

// References lists the $kusion_path strings anywhere in v.
func (x *ReferenceIndex) References(v any) []Reference {
	var out []Reference
	walkStrings(v, func(s string) {
		if ref, ok := x.Parse(s); ok {
			out = append(out, ref)
		}
	})
	return out
}

// Parse reads s as a $kusion_path; ok is false if s is not one. A string
// naming no known id has an empty ResourceID. Ids contain dots, so the id
// is the longest known prefix of what follows the prefix that ends where
// a dot starts a non-empty path.
func (x *ReferenceIndex) Parse(s string) (ref Reference, ok bool) {
	if !strings.HasPrefix(s, KusionPathPrefix) {
		return Reference{}, false
	}
	rest := strings.TrimPrefix(s, KusionPathPrefix)
	for i := len(rest) - 2; i > 0; i-- {
		if rest[i] == '.' && x.ids[rest[:i]] {
			return Reference{Raw: s, ResourceID: rest[:i], Path: rest[i+1:]}, true
		}
	}
	return Reference{Raw: s}, true
}

func walkStrings(v any, fn func(string)) {
	switch t := v.(type) {
	case string:
		fn(t)
	case map[string]any:
		for _, x := range t {
			walkStrings(x, fn)
		}
	case []any:
		for _, x := range t {
			walkStrings(x, fn)
		}
	}
}

// ReplaceStrings returns a copy of v with every string s replaced by fn(s)'s
// value where fn reports true. Used to put live values in place of $kusion_path.
func ReplaceStrings(v any, fn func(string) (any, bool)) any {
	switch t := v.(type) {
	case string:
		if r, ok := fn(t); ok {
			return r
		}
		return t
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = ReplaceStrings(x, fn)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, x := range t {
			s[i] = ReplaceStrings(x, fn)
		}
		return s
	default:
		return v
	}
}

// Lookup follows a dot-separated path through maps (and numeric list indexes).
func Lookup(v any, path string) (any, bool) {
	if path == "" {
		return v, true
	}
	for _, part := range strings.Split(path, ".") {
		switch t := v.(type) {
		case map[string]any:
			x, ok := t[part]
			if !ok {
				return nil, false
			}
			v = x
		case []any:
			i := 0
			for _, c := range part {
				if c < '0' || c > '9' {
					return nil, false
				}
				i = i*10 + int(c-'0')
			}
			if part == "" || i >= len(t) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}
