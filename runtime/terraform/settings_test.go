package terraform

import (
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/model"
)

func TestProviderSettings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		allow   []string
		source  string
		meta    map[string]any
		refused string // "" when allowed
	}{
		{"region by default", nil, "registry.terraform.io/hashicorp/aws/5.0.1", map[string]any{"region": "us-east-1"}, ""},
		{"no provider block", nil, "registry.terraform.io/hashicorp/aws/5.0.1", nil, ""},
		{"kubernetes exec", nil, "registry.terraform.io/hashicorp/kubernetes/2.35.1",
			map[string]any{"host": "https://x", "exec": map[string]any{"command": "sh"}}, `argument "exec"`},
		{"credentials", nil, "registry.terraform.io/hashicorp/aws/5.0.1",
			map[string]any{"region": "eu-west-1", "access_key": "AKIA", "secret_key": "s"}, `argument "access_key"`},
		{"a file of the runner's", nil, "registry.terraform.io/hashicorp/google/6.0.0", map[string]any{"credentials": "/etc/key.json"}, `argument "credentials"`},
		{"a name allowed for every provider", []string{"default_tags"}, "registry.terraform.io/hashicorp/aws/5.0.1",
			map[string]any{"region": "x", "default_tags": map[string]any{"tags": map[string]any{"team": "a"}}}, ""},
		{"a name allowed for one provider", []string{"aws.endpoints"}, "registry.terraform.io/hashicorp/aws/5.0.1",
			map[string]any{"endpoints": map[string]any{"s3": "http://127.0.0.1:9000"}}, ""},
		{"... not for another", []string{"aws.endpoints"}, "registry.terraform.io/hashicorp/google/6.0.0",
			map[string]any{"endpoints": map[string]any{}}, `argument "endpoints"`},
		{"every name of one provider", []string{"kubernetes.*"}, "registry.terraform.io/hashicorp/kubernetes/2.35.1",
			map[string]any{"exec": map[string]any{}}, ""},
		{"everything", []string{"*"}, "registry.terraform.io/hashicorp/helm/2.0.0", map[string]any{"kubernetes": map[string]any{}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ext := map[string]any{"provider": tc.source}
			if tc.meta != nil {
				ext["providerMeta"] = tc.meta
			}
			typ := strings.Split(tc.source, "/")[2]
			res := model.Resource{ID: "hashicorp:" + typ + ":" + typ + "_thing:x", Type: model.Terraform,
				Attributes: map[string]any{"name": "x"}, Extensions: ext}
			err := Validate(Config{ProviderSettings: tc.allow}, []model.Resource{res})
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && err == nil:
				t.Fatalf("allowed; want refused naming %s", tc.refused)
			case tc.refused != "":
				for _, want := range []string{res.ID, "extensions.providerMeta", tc.refused, "KUSIONPR_TERRAFORM_PROVIDER_SETTINGS"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("the error does not name %s: %v", want, err)
					}
				}
				for _, v := range []string{"AKIA", "/etc/key.json", `"sh"`} {
					if strings.Contains(err.Error(), v) {
						t.Errorf("the error repeats the value %s: %v", v, err)
					}
				}
			}
		})
	}
}

func TestProviderSettingsChecked(t *testing.T) {
	for _, bad := range []string{"", ".", "aws.", "a b", "aws.access key", "*.region", "aws.exec.command"} {
		if err := (Config{ProviderSettings: []string{bad}}).CheckSettings(); err == nil || !strings.Contains(err.Error(), "KUSIONPR_TERRAFORM_PROVIDER_SETTINGS") {
			t.Errorf("setting %q: %v, want refused naming the setting", bad, err)
		}
	}
	if err := (Config{ProviderSettings: []string{"aws.endpoints", "default_tags", "kubernetes.*", "*"}}).CheckSettings(); err != nil {
		t.Errorf("good settings refused: %v", err)
	}
}
