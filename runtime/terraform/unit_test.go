package terraform

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/zclconf/go-cty/cty"

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
		{"terraform_data with the provider Kusion needs named", tfResource("hashicorp:terraform:terraform_data:seed", map[string]any{"provider": "registry.terraform.io/hashicorp/local/1.4.0", "resourceType": "terraform_data", "providerMeta": map[string]any{}}),
			target{source: builtinProvider, localName: "terraform", resourceType: "terraform_data", name: "seed"}, ""},
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
	localFile := resourceSchema{Version: 2, Type: cty.Object(map[string]cty.Type{"id": cty.String, "content": cty.String, "sensitive_content": cty.String})}
	b, err := stateFromAttributes(tg, map[string]any{"id": "abc", "content": "x"}, localFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := stateAttributes(b, tg); got["id"] != "abc" {
		t.Errorf("state written from attributes reads back as %v", got)
	}
	if !strings.Contains(string(b), `"schema_version":2`) || !strings.Contains(string(b), `provider[\"registry.terraform.io/hashicorp/local\"]`) {
		t.Errorf("state lacks the schema version or provider: %s", b)
	}
	_, err = stateFromAttributes(tg, map[string]any{"id": "abc", "sensitive_content": model.Fingerprint("s")}, localFile)
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

// TestStateFromShownValues: values as `terraform show -json` shows them
// (and Kusion records them) are written into a state file as Terraform
// itself wrote them: the state below is what terraform apply wrote for
// input = {a = "x", n = [1, 2]}, triggers_replace = "t1". The types come
// from the schema `providers schema -json` printed for terraform_data.
func TestStateFromShownValues(t *testing.T) {
	const providersSchema = `{"format_version":"1.0","provider_schemas":{"terraform.io/builtin/terraform":{"resource_schemas":{"terraform_data":{"version":0,"block":{"attributes":{
		"id":{"type":"string","computed":true},"input":{"type":"dynamic","optional":true},
		"output":{"type":"dynamic","computed":true},"triggers_replace":{"type":"dynamic","optional":true}}}}}}}}`
	const written = `{"id":"c3963179-ecd4-ca9a-45e1-62a5593bf810",
		"input":{"value":{"a":"x","n":[1,2]},"type":["object",{"a":"string","n":["tuple",["number","number"]]}]},
		"output":{"value":{"a":"x","n":[1,2]},"type":["object",{"a":"string","n":["tuple",["number","number"]]}]},
		"triggers_replace":{"value":"t1","type":"string"}}`
	var ps tfjson.ProviderSchemas
	if err := json.Unmarshal([]byte(providersSchema), &ps); err != nil {
		t.Fatal(err)
	}
	rs := resourceSchemas(&ps, builtinProvider)["terraform_data"]
	shown := map[string]any{
		"id":               "c3963179-ecd4-ca9a-45e1-62a5593bf810",
		"input":            map[string]any{"a": "x", "n": []any{float64(1), float64(2)}},
		"output":           map[string]any{"a": "x", "n": []any{float64(1), float64(2)}},
		"triggers_replace": "t1",
	}
	tg := target{source: builtinProvider, localName: "terraform", resourceType: "terraform_data", name: "seed"}
	b, err := stateFromAttributes(tg, shown, rs)
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(written), &want); err != nil {
		t.Fatal(err)
	}
	attrs := got.(map[string]any)["resources"].([]any)[0].(map[string]any)["instances"].([]any)[0].(map[string]any)["attributes"]
	if !reflect.DeepEqual(attrs, want) {
		t.Errorf("attributes in the state\n got %s\nwant %s", mustJSON(attrs), written)
	}
	// A null stays null, as Terraform writes an unset dynamic attribute.
	b, _ = stateFromAttributes(tg, map[string]any{"id": "x", "input": nil, "output": nil, "triggers_replace": nil}, rs)
	if !strings.Contains(string(b), `"triggers_replace":null`) {
		t.Errorf("an unset dynamic attribute: %s", b)
	}
}

// TestBlockType: the object type of a resource follows Terraform's
// configschema: nested blocks as lists, sets and maps of objects, nested
// attributes likewise, and a list block holding a dynamic type is dynamic.
func TestBlockType(t *testing.T) {
	const schema = `{"attributes":{"name":{"type":"string"},"tags":{"type":["map","string"]},
		"rules":{"nested_type":{"nesting_mode":"list","attributes":{"port":{"type":"number"}}}}},
		"block_types":{"disk":{"nesting_mode":"set","block":{"attributes":{"size":{"type":"number"}}}},
		"settings":{"nesting_mode":"single","block":{"attributes":{"mode":{"type":"string"}}}},
		"extra":{"nesting_mode":"list","block":{"attributes":{"any":{"type":"dynamic"}}}}}}`
	var b tfjson.SchemaBlock
	if err := json.Unmarshal([]byte(schema), &b); err != nil {
		t.Fatal(err)
	}
	want := cty.Object(map[string]cty.Type{
		"name":     cty.String,
		"tags":     cty.Map(cty.String),
		"rules":    cty.List(cty.Object(map[string]cty.Type{"port": cty.Number})),
		"disk":     cty.Set(cty.Object(map[string]cty.Type{"size": cty.Number})),
		"settings": cty.Object(map[string]cty.Type{"mode": cty.String}),
		"extra":    cty.DynamicPseudoType,
	})
	if got := blockType(&b); !got.Equals(want) {
		t.Errorf("blockType = %#v, want %#v", got, want)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestStateReadAsShown: the object a state file holds reads as `terraform
// show -json` of that file shows it. The state and the show output below
// are what Terraform 1.11.4 (and OpenTofu 1.12.6, byte for byte the same)
// wrote and printed after applying terraform_data "a" with input = {x = [1,
// 2.5, "s"], y = var.s, z = {k = var.s}, n = 12345678901234567890}, var.s
// sensitive. What the reading does not know is left to show.
func TestStateReadAsShown(t *testing.T) {
	const state = `{"version":4,"terraform_version":"1.11.4","serial":1,"lineage":"l","outputs":{},"resources":[
		{"mode":"managed","type":"terraform_data","name":"a","provider":"provider[\"terraform.io/builtin/terraform\"]","instances":[{"schema_version":0,
		"attributes":{"id":"581f9c9d-5361-e7c4-f418-ccc633c6959e",
		"input":{"value":{"n":12345678901234567000,"x":[1,2.5,"s"],"y":"hush-hush","z":{"k":"hush-hush"}},"type":["object",{"n":"number","x":["tuple",["number","number","string"]],"y":"string","z":["object",{"k":"string"}]}]},
		"output":{"value":{"n":12345678901234567000,"x":[1,2.5,"s"],"y":"hush-hush","z":{"k":"hush-hush"}},"type":["object",{"n":"number","x":["tuple",["number","number","string"]],"y":"string","z":["object",{"k":"string"}]}]},
		"triggers_replace":null},
		"sensitive_attributes":[[{"type":"get_attr","value":"input"},{"type":"get_attr","value":"y"}],[{"type":"get_attr","value":"input"},{"type":"get_attr","value":"z"},{"type":"get_attr","value":"k"}]]}]}]}`
	const show = `{"format_version":"1.0","terraform_version":"1.11.4","values":{"root_module":{"resources":[{"address":"terraform_data.a","mode":"managed","type":"terraform_data","name":"a","provider_name":"terraform.io/builtin/terraform","schema_version":0,
		"values":{"id":"581f9c9d-5361-e7c4-f418-ccc633c6959e","input":{"n":12345678901234567000,"x":[1,2.5,"s"],"y":"hush-hush","z":{"k":"hush-hush"}},"output":{"n":12345678901234567000,"x":[1,2.5,"s"],"y":"hush-hush","z":{"k":"hush-hush"}},"triggers_replace":null},
		"sensitive_values":{"input":{"x":[false,false,false],"y":true,"z":{"k":true}},"output":{"x":[false,false,false],"z":{}}}}]}}}`
	var shown tfjson.State
	shown.UseJSONNumber(true)
	if err := json.Unmarshal([]byte(show), &shown); err != nil {
		t.Fatal(err)
	}
	sr := stateResource(&shown, "terraform_data.a")
	j := jobOf(t, "hashicorp:terraform:terraform_data:a", nil, nil)
	rs, err := (&schemas{}).of(context.Background(), j.op.t)
	if err != nil {
		t.Fatal(err)
	}
	j.op.schema = rs
	st, err := readModuleState([]byte(state))
	if err != nil {
		t.Fatal(err)
	}
	attrs, marked, ok := st.shown(j)
	if !ok {
		t.Fatal("the state was not read")
	}
	if !reflect.DeepEqual(attrs, sr.AttributeValues) {
		t.Errorf("attributes\n got %s\nwant %s", mustJSON(attrs), mustJSON(sr.AttributeValues))
	}
	if want := sensitivePaths(decodeSensitivity(sr.SensitiveValues), ""); !reflect.DeepEqual(union(marked), union(want)) {
		t.Errorf("sensitive paths %v, want %v", marked, want)
	}

	for name, edit := range map[string]func(string) string{
		"an attribute the type lacks": func(s string) string {
			return strings.Replace(s, `"triggers_replace":null`, `"triggers_replace":null,"later":"x"`, 1)
		},
		"a dynamic value without its type": func(s string) string {
			return strings.Replace(s, `"triggers_replace":null`, `"triggers_replace":"bare"`, 1)
		},
		"a path step of another kind": func(s string) string {
			return strings.Replace(s, `{"type":"get_attr","value":"y"}`, `{"type":"new_step","value":"y"}`, 1)
		},
	} {
		st, err := readModuleState([]byte(edit(state)))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := st.shown(j); ok {
			t.Errorf("%s: read from the file; want it left to show", name)
		}
	}
}
