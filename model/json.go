package model

import "encoding/json"

func jsonScalar(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// Overlay sets every value of top into base, objects merged key by key, and
// returns base (a new map when base is nil).
func Overlay(base, top map[string]any) map[string]any {
	if base == nil {
		base = map[string]any{}
	}
	for k, v := range top {
		if tm, ok := v.(map[string]any); ok {
			if bm, ok := base[k].(map[string]any); ok {
				base[k] = Overlay(bm, tm)
				continue
			}
		}
		base[k] = v
	}
	return base
}

// DeletePath removes the value at a dotted path from attrs. A map key that
// itself holds dots (an annotation name) is matched whole before the path is
// split at a dot.
func DeletePath(attrs map[string]any, path string) {
	if attrs == nil || path == "" {
		return
	}
	if _, ok := attrs[path]; ok {
		delete(attrs, path)
		return
	}
	for i := 0; i < len(path); i++ {
		if path[i] != '.' {
			continue
		}
		if next, ok := attrs[path[:i]].(map[string]any); ok {
			DeletePath(next, path[i+1:])
			if len(next) == 0 {
				delete(attrs, path[:i])
			}
			return
		}
	}
}
