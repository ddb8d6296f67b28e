package model

import (
	"sort"
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
	sorted := append([]string(nil), ids...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	var out []Reference
	walkStrings(v, func(s string) {
		if !strings.HasPrefix(s, KusionPathPrefix) {
			return
		}
		out = append(out, parseReference(s, sorted))
	})
	return out
}

func parseReference(s string, idsLongestFirst []string) Reference {
	rest := strings.TrimPrefix(s, KusionPathPrefix)
	for _, id := range idsLongestFirst {
		if strings.HasPrefix(rest, id+".") && len(rest) > len(id)+1 {
			return Reference{Raw: s, ResourceID: id, Path: rest[len(id)+1:]}
		}
	}
	return Reference{Raw: s}
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
