package model

import (
	"strings"
	"testing"
)

func TestRedactPaths(t *testing.T) {
	tests := []struct {
		name   string
		paths  []string
		masked []string // values that must disappear
		kept   []string // values that must stay
	}{
		{"top-level", []string{"password"}, []string{"pw-value"}, []string{"plain-value", "key-0", "key-1"}},
		{"list index", []string{"rules.1.key"}, []string{"key-1"}, []string{"key-0", "pw-value"}},
		{"every list item", []string{"rules.*.key"}, []string{"key-0", "key-1"}, []string{"pw-value"}},
		{"whole subtree", []string{"rules"}, []string{"key-0", "key-1"}, []string{"plain-value"}},
		{"missing path", []string{"nope.deeper"}, nil, []string{"pw-value", "key-0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Resource{ID: "a:b:c:d", Type: Terraform, Attributes: map[string]any{
				"password": "pw-value", "plain": "plain-value",
				"rules": []any{map[string]any{"key": "key-0"}, map[string]any{"key": "key-1"}},
			}}
			out := Public(WithSensitivePaths(r, tt.paths))
			text := MaskFingerprints(strings.Join(flatten(out.Attributes), " "))
			for _, v := range tt.masked {
				if strings.Contains(text, v) {
					t.Errorf("%q still shown: %s", v, text)
				}
			}
			for _, v := range tt.kept {
				if !strings.Contains(text, v) {
					t.Errorf("%q masked though not sensitive: %s", v, text)
				}
			}
			if r.Attributes["password"] != "pw-value" {
				t.Error("redaction changed the input")
			}
		})
	}
}

func TestPublicDropsPrivateState(t *testing.T) {
	r := Resource{ID: "a:b:c:d", Type: Terraform, Extensions: map[string]any{StateExtension: "{...}", ReplacePathsExtension: []string{"x"}, "provider": "p"}}
	out := Public(r)
	if _, ok := out.Extensions[StateExtension]; ok {
		t.Error("Public kept the private state")
	}
	if out.Extensions["provider"] != "p" || r.Extensions[StateExtension] == nil {
		t.Error("Public dropped other extensions or changed its input")
	}
}

func flatten(v any) []string {
	var out []string
	walkStrings(v, func(s string) { out = append(out, s) })
	return out
}

func TestDeletePath(t *testing.T) {
	tests := []struct {
		path string
		want string
	}{
		{"spec.replicas", `{"metadata":{"annotations":{"example.com/rev":"3","keep":"x"},"name":"a"},"spec":{"image":"i"}}`},
		{"metadata.annotations.example.com/rev", `{"metadata":{"annotations":{"keep":"x"},"name":"a"},"spec":{"image":"i","replicas":2}}`},
		{"spec", `{"metadata":{"annotations":{"example.com/rev":"3","keep":"x"},"name":"a"}}`},
		{"nope.deeper", `{"metadata":{"annotations":{"example.com/rev":"3","keep":"x"},"name":"a"},"spec":{"image":"i","replicas":2}}`},
	}
	for _, tt := range tests {
		attrs := map[string]any{
			"metadata": map[string]any{"name": "a", "annotations": map[string]any{"example.com/rev": "3", "keep": "x"}},
			"spec":     map[string]any{"replicas": 2, "image": "i"},
		}
		DeletePath(attrs, tt.path)
		if got, _ := jsonScalar(attrs); got != tt.want {
			t.Errorf("DeletePath(%q) = %s, want %s", tt.path, got, tt.want)
		}
	}
}
