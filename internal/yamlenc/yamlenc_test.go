package yamlenc

import (
	"math"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// TestMarshalAsTheLibrary checks Marshal against sigs.k8s.io/yaml.Marshal
// on the values where they could part:
// numbers of every type and size, strings YAML would quote, fold or
// refuse, empty and nil collections, and types only the detour handles.
func TestMarshalAsTheLibrary(t *testing.T) {
	type release struct {
		Project  string         `json:"project"`
		Revision uint64         `json:"revision"`
		Big      uint64         `json:"big"`
		Ratio    float64        `json:"ratio"`
		Spec     map[string]any `json:"spec,omitempty"`
		Note     *string        `json:"note"`
		Tags     []string       `json:"tags"`
		When     time.Time      `json:"when"`
	}
	tests := []struct {
		name  string
		attrs any
		// direct: Marshal builds the tree itself, without the YAML parser.
		direct bool
	}{
		{"nil", nil, true},
		{"empty", map[string]any{}, true},
		{"deployment", map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "labels": map[string]any{"app.kubernetes.io/name": "web", "a10": "x", "a9": "y"}},
			"spec": map[string]any{"replicas": int64(3), "template": map[string]any{"spec": map[string]any{
				"containers":      []any{map[string]any{"name": "app", "image": "nginx:1.27", "ports": []any{map[string]any{"containerPort": 8080.0}}}},
				"securityContext": map[string]any{},
				"volumes":         []any{},
			}}},
		}, true},
		{"numbers", map[string]any{
			"int": 7, "int64": int64(-42), "int64max": int64(math.MaxInt64), "int64min": int64(math.MinInt64),
			"whole": 3.0, "negzero": math.Copysign(0, -1), "half": 0.5, "tiny": 1e-7, "small": 0.000001,
			"big": 1e20, "bigger": 1e21, "uint64range": 1.8e19, "huge": 1.7976931348623157e308,
			"third": 1.0 / 3, "negative": -2.5e-10, "list": []any{1.0, int64(2), 3},
		}, true},
		{"scalars that look like others", map[string]any{
			"yes": "yes", "no": "no", "on": "on", "true": "true", "null": "null", "tilde": "~", "empty": "",
			"int": "123", "octal": "0o17", "hex": "0x1F", "float": "1.5", "exp": "1e3", "sexagesimal": "1:20",
			"date": "2001-12-14", "timestamp": "2001-12-14T21:59:43.10-05:00", "underscore": "1_000",
			"binary": "0b101", "inf": ".inf", "nan": ".NaN", "merge": "<<",
		}, true},
		{"strings yaml quotes or folds", map[string]any{
			"multiline":  "server:\n  port: 8080\n",
			"noNewline":  "a\nb",
			"trailing":   "a\n\n",
			"leading":    "  padded  ",
			"colon":      "key: value",
			"hash":       "a #comment",
			"indicators": "- [x] {y}, &z *w !t |p >q 'r' \"s\" %u @v `b`",
			"long":       "a sentence with spaces that is longer than eighty characters, so that yaml might fold it over lines",
			"tab":        "a\tb",
			"controls":   "bell\a nul\x00 esc\x1b",
			"unicode":    "grüße 日本 🚀 \u00a0nbsp \u2028ls \u2029ps \ufffd",
			"html":       "<b>&amp;</b>",
			"backslash":  `C:\path\to`,
			"<<":         "a merge key",
			"":           "empty key",
		}, true},
		{"strings the detour changes or refuses", map[string]any{"nel": "a\u0085b"}, false},
		{"c1 control", map[string]any{"c1": "a\u0090b"}, false},
		{"del", map[string]any{"del": "a\x7fb"}, false},
		{"bom", map[string]any{"bom": "\ufeffx"}, false},
		{"noncharacter", map[string]any{"nc": "a\uffffb"}, false},
		{"invalid utf-8", map[string]any{"bad": "a\xffb"}, true},
		{"invalid utf-8 key", map[string]any{"a\xff": "b"}, true},
		{"nil collections", map[string]any{"list": []any(nil), "map": map[string]any(nil), "null": nil}, true},
		{"nan", map[string]any{"nan": math.NaN()}, false},
		{"infinity", map[string]any{"inf": math.Inf(1)}, false},
		{"other types", map[string]any{
			"strings": []string{"a", "b"}, "int32": int32(5), "uint": uint(7), "bytes": []byte("hi"),
			"stringMap": map[string]string{"k": "v"}, "struct": struct {
				Name string `json:"name"`
			}{"x"},
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, wantErr := yaml.Marshal(tc.attrs)
			got, gotErr := Marshal(tc.attrs)
			if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
				t.Fatalf("error: got %v, want %v", gotErr, wantErr)
			}
			if string(got) != string(want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			direct := false
			if _, ok := parsedTree(tc.attrs); ok {
				direct = true
			} else if _, ok := viaJSON(tc.attrs); ok {
				direct = true
			}
			if direct != tc.direct {
				t.Errorf("built directly: %v, want %v", direct, tc.direct)
			}
		})
	}
}
