package bot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "key.pem")
	os.WriteFile(keyPath, []byte("PEM"), 0o600)
	file := filepath.Join(dir, "bot.yaml")
	os.WriteFile(file, []byte("workspace: prod\nshutdownTimeout: 90s\nholdWait: 1m\nallowRepos: [octo/web]\nrequireChecks: false\n"), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("workspaces: prod\n"), 0o644)
	badDur := filepath.Join(dir, "baddur.yaml")
	os.WriteFile(badDur, []byte("lease: soon\n"), 0o644)
	clusterFile := filepath.Join(dir, "clusters.yaml")
	os.WriteFile(clusterFile, []byte("specKubeconfigAllow: [auth-provider]\nkubeconfigs: {qa: "+keyPath+"}\nmoduleEnv: [VAULT_ADDR]\n"), 0o644)
	base := map[string]string{"KUSIONPR_WEBHOOK_SECRET": "s", "KUSIONPR_APP_ID": "12", "KUSIONPR_APP_PRIVATE_KEY_PATH": keyPath}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		check   func(*Config) bool
		wantErr string
	}{
		{"defaults", base, func(c *Config) bool {
			return c.Listen == ":8080" && c.Workspace == "" && c.Concurrency == 4 && c.RequireApproval &&
				c.RequireMergeable && c.RequireChecks && c.ShutdownTimeout == 10*time.Minute && c.RecoverWindow == 24*time.Hour &&
				c.PrivateKey == "PEM" && c.AppID == 12
		}, ""},
		{"file, then the environment over it", with("KUSIONPR_CONFIG", file, "KUSIONPR_HOLD_WAIT", "2m"), func(c *Config) bool {
			return c.Workspace == "prod" && c.ShutdownTimeout == 90*time.Second && c.HoldWait == 2*time.Minute &&
				len(c.AllowRepos) == 1 && !c.RequireChecks && c.allowed("Octo/Web") && !c.allowed("octo/api")
		}, ""},
		{"terraform settings", with("KUSIONPR_TERRAFORM_PROVIDERS", "registry.terraform.io/acme/*, corp/*", "KUSIONPR_TERRAFORM_ENV", "AWS_REGION,ARM_*"), func(c *Config) bool {
			return strings.Join(c.TerraformProviders, " ") == "registry.terraform.io/acme/* corp/*" && strings.Join(c.TerraformEnv, " ") == "AWS_REGION ARM_*"
		}, ""},
		{"a provider pattern without a type", with("KUSIONPR_TERRAFORM_PROVIDERS", "registry.terraform.io/acme/x/y"), nil, "KUSIONPR_TERRAFORM_PROVIDERS"},
		{"a variable pattern that is not one", with("KUSIONPR_TERRAFORM_ENV", "AWS_[REGION"), nil, "KUSIONPR_TERRAFORM_ENV"},
		{"no secret", with("KUSIONPR_WEBHOOK_SECRET", ""), nil, "KUSIONPR_WEBHOOK_SECRET is not set"},
		{"no app", map[string]string{"KUSIONPR_WEBHOOK_SECRET": "s"}, nil, "KUSIONPR_APP_ID is not set"},
		{"no key", map[string]string{"KUSIONPR_WEBHOOK_SECRET": "s", "KUSIONPR_APP_ID": "1"}, nil, "KUSIONPR_APP_PRIVATE_KEY or KUSIONPR_APP_PRIVATE_KEY_PATH is not set"},
		{"a key file that is missing", with("KUSIONPR_APP_PRIVATE_KEY_PATH", filepath.Join(dir, "nope.pem")), nil, "KUSIONPR_APP_PRIVATE_KEY_PATH: open"},
		{"a word for a number", with("KUSIONPR_CONCURRENCY", "many"), nil, `KUSIONPR_CONCURRENCY: "many" is not a number`},
		{"a bad flag", with("KUSIONPR_REQUIRE_APPROVAL", "sometimes"), nil, `KUSIONPR_REQUIRE_APPROVAL: "sometimes" is not true or false`},
		{"a bad duration", with("KUSIONPR_LEASE", "5"), nil, "KUSIONPR_LEASE: time: missing unit"},
		{"an unknown setting in the file", with("KUSIONPR_CONFIG", bad), nil, `unknown field "workspaces"`},
		{"a bad duration in the file", with("KUSIONPR_CONFIG", badDur), nil, "lease: time: invalid duration"},
		{"load limits' defaults", base, func(c *Config) bool {
			return c.MaxUnverifiedBytes == 64<<20 && c.MaxCheckoutBytes == 1<<30 && c.MaxCheckoutFiles == 100000
		}, ""},
		{"load limits set", with("KUSIONPR_MAX_UNVERIFIED_BYTES", "104857600", "KUSIONPR_MAX_CHECKOUT_BYTES", "5368709120", "KUSIONPR_MAX_CHECKOUT_FILES", "20000"), func(c *Config) bool {
			return c.MaxUnverifiedBytes == 100<<20 && c.MaxCheckoutBytes == 5<<30 && c.MaxCheckoutFiles == 20000
		}, ""},
		{"an unverified budget too small for any delivery", with("KUSIONPR_MAX_UNVERIFIED_BYTES", "1000"), nil, "KUSIONPR_MAX_UNVERIFIED_BYTES must be at least 1048576, not 1000"},
		{"no checkout allowed", with("KUSIONPR_MAX_CHECKOUT_FILES", "0"), nil, "KUSIONPR_MAX_CHECKOUT_FILES must be at least 1, not 0"},
		{"cluster access by default", base, func(c *Config) bool {
			cl := c.clusters()
			return cl.SpecAllow.String() == "none" && len(cl.Kubeconfigs) == 0 && cl.Setting == "KUSIONPR_SPEC_KUBECONFIG_ALLOW" && len(c.ModuleEnv) == 0
		}, ""},
		{"cluster access from the environment", with("KUSIONPR_SPEC_KUBECONFIG_ALLOW", "exec, files", "KUSIONPR_KUBECONFIGS", "dev="+keyPath+", prod="+keyPath,
			"KUSIONPR_MODULE_ENV", "VAULT_ADDR,AWS_REGION"), func(c *Config) bool {
			cl := c.clusters()
			return cl.SpecAllow.String() == "exec,files" && cl.Kubeconfigs["dev"] == keyPath && cl.Kubeconfigs["prod"] == keyPath &&
				strings.Join(c.ModuleEnv, " ") == "VAULT_ADDR AWS_REGION"
		}, ""},
		{"cluster access from the file", with("KUSIONPR_CONFIG", clusterFile), func(c *Config) bool {
			cl := c.clusters()
			return cl.SpecAllow.String() == "auth-provider" && cl.Kubeconfigs["qa"] == keyPath && strings.Join(c.ModuleEnv, " ") == "VAULT_ADDR"
		}, ""},
		{"an unknown allowance", with("KUSIONPR_SPEC_KUBECONFIG_ALLOW", "exec,everything"), nil, `KUSIONPR_SPEC_KUBECONFIG_ALLOW: unknown allowance "everything": want exec, auth-provider or files`},
		{"a workspace kubeconfig without a file", with("KUSIONPR_KUBECONFIGS", "dev"), nil, `KUSIONPR_KUBECONFIGS: "dev": want WORKSPACE=FILE`},
		{"a workspace kubeconfig that is missing", with("KUSIONPR_KUBECONFIGS", "dev="+filepath.Join(dir, "nope")), nil, "KUSIONPR_KUBECONFIGS: workspace dev: stat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadConfig(env(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "PEM") {
					t.Errorf("the error shows the key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Errorf("config %+v", *c)
			}
		})
	}
}
