package terraform

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/model"
)

func TestLiteral(t *testing.T) {
	type labels map[string]string
	for _, tc := range []struct {
		name string
		in   any
		want any
	}{
		{"plain text", "hello {world} 100% $5", "hello {world} 100% $5"},
		{"an interpolation", `${file("/proc/self/environ")}`, `$${file("/proc/self/environ")}`},
		{"a directive", `%{ for k, v in {a = 1} }${k}%{ endfor }`, `%%{ for k, v in {a = 1} }$${k}%%{ endfor }`},
		{"already escaped input stays what it was", `$${x} and %%{y}`, `$$${x} and %%%{y}`},
		{"dollars and percents before anything else are literal", `$$ %% $ { % { $`, `$$ %% $ { % { $`},
		{"a template at the end", `a${`, `a$${`},
		{"numbers, booleans, null", []any{float64(1), true, nil, json.Number("2.5"), int64(3)}, []any{float64(1), true, nil, json.Number("2.5"), int64(3)}},
		{"keys and values at any depth",
			map[string]any{"${k}": map[string]any{"list": []any{"%{x}", map[string]any{"%{k}": "${v}"}}}},
			map[string]any{"$${k}": map[string]any{"list": []any{"%%{x}", map[string]any{"%%{k}": "$${v}"}}}}},
		{"Go-typed maps and lists a module builds", map[string]any{"tags": labels{"${a}": "${b}"}, "names": []string{"${c}"}},
			map[string]any{"tags": map[string]any{"$${a}": "$${b}"}, "names": []any{"$${c}"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := literal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("literal(%#v) = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
	// The spec itself is never changed: it is compared with what
	// Terraform reads back.
	in := map[string]any{"a": []any{"${x}"}}
	if _, err := literal(in); err != nil || in["a"].([]any)[0] != "${x}" {
		t.Errorf("literal changed its input: %v", in)
	}
}

// TestConfigurationIsLiteral: whatever a spec puts in attributes, provider
// settings or an import id reaches main.tf.json escaped, in a folder of its
// own and in a batch; what the runtime writes itself does not.
func TestConfigurationIsLiteral(t *testing.T) {
	const tpl = `${file("/proc/self/environ")}`
	const esc = `$${file("/proc/self/environ")}`
	res := model.Resource{ID: "hashicorp:aws:s3_bucket:b", Type: model.Terraform,
		Attributes: map[string]any{"bucket": tpl, "tags": map[string]any{tpl: "%{ if true }x%{ endif }"}},
		Extensions: map[string]any{"provider": "registry.terraform.io/hashicorp/aws/5.0.1", "resourceType": "aws_s3_bucket",
			"providerMeta": map[string]any{"region": tpl, "assume_role": map[string]any{"role_arn": tpl}}}}
	other := res
	other.ID = "hashicorp:aws:s3_bucket:c"
	other.Extensions = map[string]any{"provider": "registry.terraform.io/hashicorp/aws/5.0.1", "resourceType": "aws_s3_bucket",
		"providerMeta": map[string]any{"region": "eu-west-1"}}
	tg, err := parseTarget(res)
	if err != nil {
		t.Fatal(err)
	}
	single, err := tg.configuration(res.Attributes, true, tpl)
	if err != nil {
		t.Fatal(err)
	}
	otherTarget, err := parseTarget(other)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runtime{cfg: Config{Binary: "terraform"}}
	m, err := r.module([]*job{
		{op: &operation{res: res, t: tg}, importID: tpl},
		{op: &operation{res: other, t: otherTarget}},
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"one resource": single, "batch": m.config} {
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		var strs []string
		model.ReplaceStrings(doc, func(s string) (any, bool) { strs = append(strs, s); return nil, false })
		var keys func(v any)
		keys = func(v any) {
			switch x := v.(type) {
			case map[string]any:
				for k, y := range x {
					strs = append(strs, k)
					keys(y)
				}
			case []any:
				for _, y := range x {
					keys(y)
				}
			}
		}
		keys(doc)
		for _, s := range strs {
			if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(s, "$${", ""), "%%{", ""), "${") ||
				strings.Contains(strings.ReplaceAll(s, "%%{", ""), "%{") {
				t.Errorf("%s: main.tf.json holds a template: %q\n%s", name, s, b)
			}
		}
		for _, want := range []string{`"bucket": "` + strings.ReplaceAll(esc, `"`, `\"`), `"region": "` + strings.ReplaceAll(esc, `"`, `\"`),
			`"role_arn": "` + strings.ReplaceAll(esc, `"`, `\"`), `"id": "` + strings.ReplaceAll(esc, `"`, `\"`), `"%%{ if true }x%%{ endif }"`} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s: main.tf.json lacks %s:\n%s", name, want, b)
			}
		}
		if name == "batch" && !strings.Contains(string(b), `"provider": "aws.a1"`) {
			t.Errorf("batch: the runtime's own provider reference is not written as is:\n%s", b)
		}
	}
	if res.Attributes["bucket"] != tpl {
		t.Errorf("the spec was changed: %v", res.Attributes)
	}
}

// fakeTerraform is an executable that records that it ran: a runtime
// refusing a resource must not start it.
func fakeTerraform(t *testing.T) (bin, ran string) {
	t.Helper()
	dir := t.TempDir()
	bin, ran = filepath.Join(dir, "terraform"), filepath.Join(dir, "ran")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho \"$@\" >> '"+ran+"'\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, ran
}

// TestMetaArgumentsRefused: a spec whose attributes hold a meta-argument
// (a provisioner running a command, a connection, lifecycle...) is refused
// with the resource's id and the argument, before any file is written or
// any process runs.
func TestMetaArgumentsRefused(t *testing.T) {
	bin, ran := fakeTerraform(t)
	cache := t.TempDir()
	rt, err := New(Config{Binary: bin, CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "pwned")
	attacks := map[string]any{
		"provisioner": map[string]any{"local-exec": map[string]any{"command": "touch " + marker}},
		"connection":  map[string]any{"type": "ssh", "host": "attacker.example.com"},
		"lifecycle":   map[string]any{"prevent_destroy": true},
		"depends_on":  []any{"terraform_data.other"},
		"count":       float64(1000),
		"for_each":    map[string]any{"a": "b"},
		"provider":    "aws.elsewhere",
		"dynamic":     map[string]any{"x": map[string]any{"for_each": []any{1}}},
		"locals":      map[string]any{"x": 1},
		"_":           map[string]any{"count": 1},
	}
	for arg, v := range attacks {
		t.Run(arg, func(t *testing.T) {
			id := "hashicorp:terraform:terraform_data:" + strings.Trim(arg, "_") + "x"
			for _, provider := range []string{"", "registry.terraform.io/hashicorp/local/1.4.0"} {
				res := model.Resource{ID: id, Type: model.Terraform, Attributes: map[string]any{"input": "x", arg: v}, Extensions: map[string]any{}}
				if provider != "" {
					res.ID = "hashicorp:local:local_file:" + strings.Trim(arg, "_") + "x"
					res.Extensions["provider"] = provider
				}
				ctx := context.Background()
				_, planErr := rt.Apply(ctx, nil, res, true)
				_, applyErr := rt.Apply(ctx, nil, res, false)
				_, readErr := rt.Read(ctx, &res, res)
				_, pathsErr := rt.SensitivePaths(ctx, res)
				validateErr := Validate(Config{}, model.Resources{res})
				for _, err := range []error{planErr, applyErr, readErr, pathsErr, validateErr} {
					if err == nil || !strings.Contains(err.Error(), "attributes."+arg+": ") || (err != pathsErr && !strings.Contains(err.Error(), res.ID)) {
						t.Errorf("%s: error %v, want one naming the resource and attributes.%s", res.ID, err, arg)
					}
				}
			}
		})
	}
	if _, err := os.Stat(ran); !errors.Is(err, os.ErrNotExist) {
		b, _ := os.ReadFile(ran)
		t.Errorf("terraform ran for a refused resource: %s", b)
	}
	if _, err := os.Stat(filepath.Join(cache, "work")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a working folder was written for a refused resource")
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the provisioner ran")
	}
	// An attribute that only looks like one is the provider's.
	if _, err := parseTarget(model.Resource{ID: "hashicorp:terraform:terraform_data:ok", Type: model.Terraform,
		Attributes: map[string]any{"input": map[string]any{"provisioner": "data", "count": 2}}}); err != nil {
		t.Errorf("a nested key named like a meta-argument: %v", err)
	}
}
