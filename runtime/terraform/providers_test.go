package terraform

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/model"
)

// mirrorDir makes a filesystem mirror holding the given providers
// (host/namespace/type), in Terraform's unpacked layout.
func mirrorDir(t *testing.T, providers ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range providers {
		if err := os.MkdirAll(filepath.Join(dir, p, "1.0.0", "linux_amd64"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestProviderAllowlist(t *testing.T) {
	mirror := mirrorDir(t, "registry.terraform.io/hashicorp/local", "example.com/acme/thing", "example.com/acme/skipped",
		"example.com/other/tool")
	mirrorAll := mirrorDir(t, "tools.example.net/ops/widget", "tools.example.net/ops/banned")
	dir := t.TempDir()
	hclConfig := filepath.Join(dir, "terraformrc")
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(hclConfig, `
plugin_cache_dir = "/tmp/cache"
provider_installation {
  filesystem_mirror {
    path    = "`+mirror+`"
    include = ["example.com/acme/*", "registry.terraform.io/*/*"]
    exclude = ["example.com/acme/skipped"]
  }
  filesystem_mirror {
    path    = "`+mirrorAll+`"
    exclude = ["tools.example.net/ops/banned"]
  }
  network_mirror {
    url     = "https://mirror.example.org/providers/"
    include = ["mirror.example.org/corp/*"]
  }
  network_mirror {
    url = "https://everything.example.org/"
  }
  direct {
    exclude = ["example.com/*/*"]
  }
}
`)
	jsonConfig := filepath.Join(dir, "terraformrc.json")
	write(jsonConfig, `{"provider_installation": {"network_mirror": {"url": "https://m.example/", "include": ["m.example/team/*"]}}}`)
	jsonLists := filepath.Join(dir, "lists.tfrc.json")
	write(jsonLists, `{"provider_installation": [{"network_mirror": [{"url": "https://l.example/", "include": ["l.example/team/*"]}], "direct": [{}]}]}`)

	a, err := newProviderAllowlist([]string{"registry.terraform.io/acme/*", "corp/*"}, []string{hclConfig, jsonConfig, jsonLists, filepath.Join(dir, "missing")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		source string
		allow  bool
	}{
		{"registry.terraform.io/hashicorp/aws", true},       // the default
		{"registry.opentofu.org/hashicorp/aws", true},       // the default, for tofu
		{"Registry.Terraform.IO/HashiCorp/AWS", true},       // Terraform compares without case
		{"registry.terraform.io/evil/aws", false},           // another namespace on the registry
		{"evil.example.com/x/y", false},                     // another host
		{"evil.example.com/hashicorp/aws", false},           // hashicorp elsewhere
		{"example.com/acme/thing", true},                    // mirrored and included
		{"example.com/acme/missing", false},                 // included, but the mirror does not hold it
		{"example.com/acme/skipped", false},                 // held, but excluded
		{"example.com/other/tool", false},                   // held, but not included
		{"tools.example.net/ops/widget", true},              // a mirror without include: what it holds
		{"tools.example.net/ops/banned", false},             // ... but its excludes
		{"mirror.example.org/corp/x", true},                 // a network mirror's include
		{"everything.example.org/any/thing", false},         // a network mirror without include allows nothing
		{"m.example/team/x", true},                          // a JSON CLI configuration
		{"registry.terraform.io/acme/x", true},              // the setting
		{"registry.opentofu.org/corp/x", true},              // the setting, namespace/type: either registry
		{"registry.terraform.io/hashicorp/\u212a8s", false}, // Kelvin sign: not ASCII, never folded into an allowed name
		{"registry.terraform.io/hashicorp", false},
	} {
		t.Run(tc.source, func(t *testing.T) {
			err := a.check(target{source: tc.source, localName: "x", id: model.TerraformID{}})
			if (err == nil) != tc.allow {
				t.Fatalf("check(%s) = %v, want allowed %v", tc.source, err, tc.allow)
			}
			if err != nil {
				for _, want := range []string{`"` + tc.source + `"`, ProvidersSetting, "registry.terraform.io/hashicorp/*", "registry.terraform.io/acme/*"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %s", err, want)
					}
				}
				// The message may reach a pull request comment: it names no
				// file or mirror of the operator.
				for _, secret := range []string{mirror, hclConfig, "mirror.example.org/providers"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error %q shows %s", err, secret)
					}
				}
			}
		})
	}
	if err := a.check(target{source: builtinProvider}); err != nil {
		t.Errorf("terraform_data's builtin provider refused: %v", err)
	}

	for _, bad := range [][]string{{"a/b/c/d"}, {"acme"}, {"registry.terraform.io/ac me/*"}, {"registry.terraform.io/a*/b"}} {
		if _, err := newProviderAllowlist(bad, nil); err == nil || !strings.Contains(err.Error(), ProvidersSetting) {
			t.Errorf("pattern %q: %v, want an error naming the setting", bad, err)
		}
	}
	broken := filepath.Join(dir, "broken")
	write(broken, "provider_installation {")
	if _, err := newProviderAllowlist(nil, []string{broken}); err == nil || !strings.Contains(err.Error(), broken) {
		t.Errorf("an unreadable CLI configuration: %v, want an error naming it", err)
	}
	if got := cliConfigFiles(func(k string) string { return map[string]string{"HOME": "/home/u"}[k] }); strings.Join(got, " ") != "/home/u/.terraformrc /home/u/.tofurc" {
		t.Errorf("CLI configuration files without TF_CLI_CONFIG_FILE: %v", got)
	}
}

// TestProviderOutsideAllowlistRefused: a resource whose provider comes from
// a host the allowlist does not name is refused, naming the resource, the
// source and the setting, before terraform runs at all (no init).
func TestProviderOutsideAllowlistRefused(t *testing.T) {
	bin, ran := fakeTerraform(t)
	t.Setenv("TF_CLI_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	cache := t.TempDir()
	rt, err := New(Config{Binary: bin, CacheDir: cache, AllowProviders: []string{"registry.terraform.io/acme/*"}})
	if err != nil {
		t.Fatal(err)
	}
	res := model.Resource{ID: "x:y:y_thing:a", Type: model.Terraform, Attributes: map[string]any{"name": "a"},
		Extensions: map[string]any{"provider": "evil.example.com/x/y/1.0.0"}}
	ctx := context.Background()
	_, planErr := rt.Apply(ctx, nil, res, true)
	_, applyErr := rt.Apply(ctx, nil, res, false)
	_, readErr := rt.Read(ctx, &res, res)
	deleteErr := rt.Delete(ctx, res)
	_, pathsErr := rt.SensitivePaths(ctx, res)
	validateErr := Validate(Config{AllowProviders: []string{"registry.terraform.io/acme/*"}}, model.Resources{res})
	for _, err := range []error{planErr, applyErr, readErr, deleteErr, pathsErr, validateErr} {
		if err == nil || !strings.Contains(err.Error(), `"evil.example.com/x/y"`) || !strings.Contains(err.Error(), ProvidersSetting) ||
			(err != pathsErr && !strings.Contains(err.Error(), res.ID)) {
			t.Errorf("error %v, want one naming %s, the source and the setting", err, res.ID)
		}
	}
	if _, err := os.Stat(ran); !errors.Is(err, os.ErrNotExist) {
		b, _ := os.ReadFile(ran)
		t.Errorf("terraform ran for a provider outside the allowlist: %s", b)
	}
	// The same resource from an allowed namespace passes the check (and
	// then reaches terraform, which the fake fails).
	res.Extensions["provider"] = "registry.terraform.io/acme/y/1.0.0"
	if err := Validate(Config{AllowProviders: []string{"registry.terraform.io/acme/*"}}, model.Resources{res}); err != nil {
		t.Errorf("an allowed provider refused: %v", err)
	}
}

func TestEnviron(t *testing.T) {
	canaries := map[string]string{
		"KUSIONPR_WEBHOOK_SECRET":        "canary-webhook",
		"KUSIONPR_APP_PRIVATE_KEY":       "canary-app-key",
		"AWS_ACCESS_KEY_ID":              "canary-aws-id",
		"AWS_SECRET_ACCESS_KEY":          "canary-aws-secret",
		"GITHUB_TOKEN":                   "canary-github",
		"INPUT_GITHUB-TOKEN":             "canary-input",
		"ACTIONS_RUNTIME_TOKEN":          "canary-actions",
		"AZURE_STORAGE_KEY":              "canary-azure",
		"GOOGLE_APPLICATION_CREDENTIALS": "/canary/gcp.json",
		"PGPASSWORD":                     "canary-postgres",
		"KUSIONPR_STORE_AUTHORIZATION":   "Bearer canary-store",
		"KUBECONFIG":                     "/canary/kubeconfig",
		"TF_LOG":                         "trace", // terraform-exec refuses it
		"TF_VAR_x":                       "1",     // likewise
	}
	passed := map[string]string{
		"PATH": "/usr/bin", "HOME": "/home/u", "LC_ALL": "C.UTF-8", "https_proxy": "http://proxy:3128", "SSL_CERT_FILE": "/etc/ca.pem",
		"TF_CLI_CONFIG_FILE": "/etc/tfrc", "TF_TOKEN_app_terraform_io": "registry-token",
		// named by the operator
		"AWS_REGION": "eu-west-1", "ARM_CLIENT_ID": "arm-id",
	}
	for k, v := range canaries {
		t.Setenv(k, v)
	}
	for k, v := range passed {
		t.Setenv(k, v)
	}
	env := Config{PluginCacheDir: "/cache", PassEnv: []string{"AWS_REGION", "ARM_*"}}.environ()
	for k := range canaries {
		if v, ok := env[k]; ok {
			t.Errorf("%s=%s reaches terraform", k, v)
		}
	}
	for k, v := range passed {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if env["CHECKPOINT_DISABLE"] != "1" || env["TF_PLUGIN_CACHE_DIR"] != "/cache" {
		t.Errorf("environment lacks the checkpoint or plugin cache setting: %v", env)
	}
	// Named by the operator, a secret is theirs to pass.
	if env := (Config{PassEnv: []string{"AWS_SECRET_ACCESS_KEY"}}).environ(); env["AWS_SECRET_ACCESS_KEY"] != "canary-aws-secret" {
		t.Errorf("a variable the operator named is not passed")
	}
	// The operator's CLI configuration, given as a value, is the one
	// terraform reads, over our environment's.
	if env := (Config{CLIConfigFile: "/operator/tfrc"}).environ(); env["TF_CLI_CONFIG_FILE"] != "/operator/tfrc" {
		t.Errorf("TF_CLI_CONFIG_FILE = %q, want the configured /operator/tfrc", env["TF_CLI_CONFIG_FILE"])
	}
	for _, bad := range []string{"AWS_[", "", "A=B"} {
		if err := (Config{PassEnv: []string{bad}}).CheckSettings(); err == nil || !strings.Contains(err.Error(), EnvSetting) {
			t.Errorf("PassEnv %q: %v, want an error naming the setting", bad, err)
		}
	}
}

// TestCLIConfigFileAllowsItsMirrors: the CLI configuration given as
// Config.CLIConfigFile is the one whose mirrors Validate allows, whatever
// TF_CLI_CONFIG_FILE says.
func TestCLIConfigFileAllowsItsMirrors(t *testing.T) {
	mirror := mirrorDir(t, "example.com/acme/thing")
	rc := filepath.Join(t.TempDir(), "terraformrc")
	if err := os.WriteFile(rc, []byte("provider_installation {\n  filesystem_mirror {\n    path = \""+mirror+"\"\n  }\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TF_CLI_CONFIG_FILE", filepath.Join(t.TempDir(), "missing"))
	res := model.Resource{ID: "hashicorp:thing:thing:x", Type: model.Terraform, Attributes: map[string]any{},
		Extensions: map[string]any{"provider": "example.com/acme/thing/1.0.0", "resourceType": "thing"}}
	if err := Validate(Config{}, model.Resources{res}); err == nil {
		t.Fatal("a provider no configuration mirrors passed")
	}
	if err := Validate(Config{CLIConfigFile: rc}, model.Resources{res}); err != nil {
		t.Errorf("the provider the configured CLI configuration mirrors is refused: %v", err)
	}
}
