package terraform

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/model"
)

func tfResource(id string, ext map[string]any) model.Resource {
	return model.Resource{ID: id, Type: model.Terraform, Attributes: map[string]any{"content": "x"}, Extensions: ext}
}

func TestParseTarget(t *testing.T) {
	local := map[string]any{"provider": "registry.terraform.io/hashicorp/local/1.4.0"}
	tests := []struct {
		name    string
		r       model.Resource
		want    target
		wantErr string
	}{
		{"versioned provider", tfResource("hashicorp:local:local_file:note", local),
			target{source: "registry.terraform.io/hashicorp/local", version: "1.4.0", localName: "local", resourceType: "local_file", name: "note"}, ""},
		{"builtin without provider", tfResource("hashicorp:terraform:terraform_data:seed", nil),
			target{source: builtinProvider, localName: "terraform", resourceType: "terraform_data", name: "seed"}, ""},
		{"resourceType extension wins", tfResource("hashicorp:local:file:note", map[string]any{"provider": "registry.terraform.io/hashicorp/local/1.4.0", "resourceType": "local_file"}),
			target{source: "registry.terraform.io/hashicorp/local", version: "1.4.0", localName: "local", resourceType: "local_file", name: "note"}, ""},
		{"name Terraform refuses", tfResource("hashicorp:local:local_file:my.note", local),
			target{source: "registry.terraform.io/hashicorp/local", version: "1.4.0", localName: "local", resourceType: "local_file", name: terraformName("my.note")}, ""},
		{"no provider", tfResource("hashicorp:local:local_file:note", nil), target{}, "extensions.provider is missing"},
		{"short provider", tfResource("hashicorp:local:local_file:note", map[string]any{"provider": "local/1.4.0"}), target{}, `extensions.provider "local/1.4.0"`},
		{"malformed id", tfResource("local_file:note", local), target{}, "malformed Terraform id"},
		{"providerMeta not an object", tfResource("hashicorp:local:local_file:note", map[string]any{"provider": "registry.terraform.io/hashicorp/local/1.4.0", "providerMeta": "x"}), target{}, "providerMeta is not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseTarget(tt.r)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.id = model.TerraformID{}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("target %+v, want %+v", got, tt.want)
			}
		})
	}
	if n := terraformName("my.note"); !identifier.MatchString(n) || n != terraformName("my.note") {
		t.Errorf("terraformName(my.note) = %q: not a stable identifier", n)
	}
}

func TestConfiguration(t *testing.T) {
	tg, err := parseTarget(model.Resource{ID: "hashicorp:aws:s3_bucket:b", Type: model.Terraform, Extensions: map[string]any{
		"provider": "registry.terraform.io/hashicorp/aws/5.0.1", "resourceType": "aws_s3_bucket", "providerMeta": map[string]any{"region": "eu-west-1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := tg.configuration(map[string]any{"bucket": "b"}, true, "existing-bucket")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"terraform": map[string]any{"required_providers": map[string]any{"aws": map[string]any{"source": "registry.terraform.io/hashicorp/aws", "version": "5.0.1"}}},
		"provider":  map[string]any{"aws": map[string]any{"region": "eu-west-1"}},
		"resource":  map[string]any{"aws_s3_bucket": map[string]any{"b": map[string]any{"bucket": "b"}}},
		"import":    []any{map[string]any{"to": "aws_s3_bucket.b", "id": "existing-bucket"}},
	}
	if !reflect.DeepEqual(doc, want) {
		t.Errorf("configuration\n%s\nwant %v", b, want)
	}
	b, _ = tg.configuration(map[string]any{"bucket": "b"}, false, "")
	if strings.Contains(string(b), "resource") {
		t.Errorf("provider-only configuration holds the resource: %s", b)
	}
}

func TestSensitivityAndUnknowns(t *testing.T) {
	sens := map[string]any{"password": true, "tags": map[string]any{"a": false}, "rules": []any{map[string]any{"key": true}, false}}
	got := union(sensitivePaths(sens, ""))
	if want := []string{"password", "rules.0.key"}; !reflect.DeepEqual(got, want) {
		t.Errorf("sensitivePaths = %v, want %v", got, want)
	}
	after := map[string]any{"id": nil, "name": "n", "list": []any{"a"}}
	unknown := map[string]any{"id": true, "list": []any{false, true}, "nested": map[string]any{"x": true}}
	want := map[string]any{"id": model.KnownAfterApply, "name": "n", "list": []any{"a", model.KnownAfterApply}, "nested": map[string]any{"x": model.KnownAfterApply}}
	if got := markUnknown(after, unknown); !reflect.DeepEqual(got, want) {
		t.Errorf("markUnknown = %v, want %v", got, want)
	}
	if got := replacePaths([]any{[]any{"content"}, []any{"rules", float64(0), "key"}}); !reflect.DeepEqual(got, []string{"content", "rules.0.key"}) {
		t.Errorf("replacePaths = %v", got)
	}
}

func TestStateFromAttributes(t *testing.T) {
	tg := target{source: "registry.terraform.io/hashicorp/local", resourceType: "local_file", name: "note"}
	b, err := stateFromAttributes(tg, map[string]any{"id": "abc", "content": "x"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := stateAttributes(b, tg); got["id"] != "abc" {
		t.Errorf("state written from attributes reads back as %v", got)
	}
	if !strings.Contains(string(b), `"schema_version":2`) || !strings.Contains(string(b), `provider[\"registry.terraform.io/hashicorp/local\"]`) {
		t.Errorf("state lacks the schema version or provider: %s", b)
	}
	_, err = stateFromAttributes(tg, map[string]any{"id": "abc", "sensitive_content": model.Fingerprint("s")}, 0)
	if err == nil || !strings.Contains(err.Error(), "import") {
		t.Errorf("a redacted value must refuse to make a state, got %v", err)
	}
}

func TestFailMasksSecrets(t *testing.T) {
	op := &operation{res: model.Resource{ID: "hashicorp:x:x_thing:a"}, secrets: secretValues(map[string]any{"password": "hunter2-long", "blocks": []any{map[string]any{"key": "k3y-value"}}}, []string{"password", "blocks.*.key"})}
	err := op.fail("apply", errors.New("exit status 1\n\nError: provider said: hunter2-long and k3y-value are wrong"))
	if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "k3y-value") {
		t.Errorf("error shows a secret: %v", err)
	}
	if !strings.Contains(err.Error(), "apply hashicorp:x:x_thing:a: Error: provider said: (sensitive) and (sensitive) are wrong") {
		t.Errorf("error = %v", err)
	}
}

func TestNoBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := New(Config{CacheDir: t.TempDir()})
	if !errors.Is(err, ErrNoBinary) {
		t.Errorf("New without terraform or tofu: %v, want ErrNoBinary", err)
	}
	_, err = New(Config{Binary: "/nonexistent/terraform", CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/terraform") {
		t.Errorf("New with a missing binary: %v", err)
	}
}
