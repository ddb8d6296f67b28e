package terraform

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/model"
)

func TestDerivedPaths(t *testing.T) {
	tests := []struct {
		name      string
		attrs     map[string]any
		sensitive []string
		spec      sensitiveValues
		want      []string
	}{
		{"terraform_data's output is its sensitive input",
			map[string]any{"id": "u", "input": "s3cret", "output": "s3cret"}, []string{"input"}, sensitiveValues{},
			[]string{"input", "output"}},
		{"an object input: its leaves, wherever they are copied",
			map[string]any{"input": map[string]any{"k": "s3cret", "n": float64(5432)}, "output": map[string]any{"k": "s3cret", "n": float64(5432)}, "other": []any{"x", "s3cret"}},
			[]string{"input"}, sensitiveValues{},
			[]string{"input.k", "input.n", "other.1", "output.k", "output.n"}},
		{"numbers compare as numbers",
			map[string]any{"pin": float64(1234), "copy": 1234, "text": "1234"}, []string{"pin"}, sensitiveValues{},
			[]string{"copy", "pin"}},
		{"booleans, nulls, empty strings and unknown values are not compared",
			map[string]any{"flag": true, "other": true, "e": "", "f": "", "u": model.KnownAfterApply, "v": model.KnownAfterApply, "n": nil, "m": nil},
			[]string{"flag", "e", "u", "n"}, sensitiveValues{}, nil},
		{"a value the spec holds at a sensitive path",
			map[string]any{"id": "abc", "derived": "from-spec"}, nil,
			sensitiveValues{attrs: map[string]any{"password": "from-spec"}, paths: []string{"password"}},
			[]string{"derived"}},
		{"a list item's sensitive attribute, by wildcard",
			map[string]any{"rules": []any{map[string]any{"key": "k1"}, map[string]any{"key": "k2"}}, "echo": "k2"},
			[]string{"rules.*.key"}, sensitiveValues{}, []string{"echo", "rules.0.key", "rules.1.key"}},
		{"a map key no path can name: what holds it",
			map[string]any{"secret": "s3cret", "tags": map[string]any{"a.b": "s3cret", "c": "plain"}}, []string{"secret"}, sensitiveValues{},
			[]string{"secret", "tags"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := union(derivedPaths(tt.attrs, tt.sensitive, tt.spec))
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("derivedPaths = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFailMasksDeclaredSecrets: a value the spec declares sensitive
// (SensitivePathsExtension) is masked in errors too, not only those the
// provider's schema marks.
func TestFailMasksDeclaredSecrets(t *testing.T) {
	r := &Runtime{schemas: newSchemas(nil)}
	res := model.Resource{ID: "hashicorp:terraform:terraform_data:sealed", Type: model.Terraform,
		Attributes: map[string]any{"input": "declared-s3cret"},
		Extensions: map[string]any{model.SensitivePathsExtension: []any{"input"}}}
	op := r.begin(context.Background(), res, nil)
	if op.err != nil {
		t.Fatal(op.err)
	}
	err := op.fail("plan", errors.New("exit status 1\n\nError: cannot use declared-s3cret here"))
	if strings.Contains(err.Error(), "declared-s3cret") {
		t.Errorf("error shows the declared sensitive value: %v", err)
	}
}
