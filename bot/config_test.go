package bot

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

var (
	appKeyOnce sync.Once
	appKey     *rsa.PrivateKey
)

// testAppKey is an App key as GitHub issues them: RSA, PKCS #1 PEM.
func testAppKey(t *testing.T) string {
	t.Helper()
	appKeyOnce.Do(func() {
		var err error
		if appKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(appKey)}))
}

// keyLine is a line from the middle of a PEM key: no error may show it.
func keyLine(key string) string {
	lines := strings.Split(key, "\n")
	return lines[len(lines)/2]
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "key.pem")
	key := testAppKey(t)
	os.WriteFile(keyPath, []byte(key), 0o600)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(appKey)
	pkcs8Key := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ec)
	ecKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}))
	garbledKey := "-----BEGIN RSA PRIVATE KEY-----\nTm90IGEga2V5IGF0IGFsbA==\n-----END RSA PRIVATE KEY-----\n"
	notPEMFile := filepath.Join(dir, "notpem.pem")
	os.WriteFile(notPEMFile, []byte("notapem"), 0o600)
	file := filepath.Join(dir, "bot.yaml")
	os.WriteFile(file, []byte("workspace: prod\nshutdownTimeout: 90s\nholdWait: 1m\nallowRepos: [octo/web]\nrequireChecks: false\n"), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("workspaces: prod\n"), 0o644)
	badDur := filepath.Join(dir, "baddur.yaml")
	os.WriteFile(badDur, []byte("lease: soon\n"), 0o644)
	readyFile := filepath.Join(dir, "ready.yaml")
	os.WriteFile(readyFile, []byte("readyTimeout: 2m\n"), 0o644)
	clusterFile := filepath.Join(dir, "clusters.yaml")
	os.WriteFile(clusterFile, []byte("specKubeconfigAllow: [auth-provider]\nkubeconfigs: {qa: "+keyPath+"}\nmoduleEnv: [VAULT_ADDR]\n"), 0o644)
	actionsFile := filepath.Join(dir, "actions.yaml")
	os.WriteFile(actionsFile, []byte("executor: github-actions\ngithubActions: {workflow: infra-run.yaml, pollInterval: 1m, timeout: 2h}\n"), 0o644)
	badActions := filepath.Join(dir, "badactions.yaml")
	os.WriteFile(badActions, []byte("githubActions: {workflow: .github/workflows/run.yml}\n"), 0o644)
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
				c.PrivateKey == key && c.AppID == 12
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
		{"no app", map[string]string{"KUSIONPR_WEBHOOK_SECRET": "s", "KUSIONPR_APP_PRIVATE_KEY": key}, nil, "KUSIONPR_APP_ID is not set"},
		{"no key", map[string]string{"KUSIONPR_WEBHOOK_SECRET": "s", "KUSIONPR_APP_ID": "1"}, nil, "KUSIONPR_APP_PRIVATE_KEY or KUSIONPR_APP_PRIVATE_KEY_PATH is not set"},
		{"a key file that is missing", with("KUSIONPR_APP_PRIVATE_KEY_PATH", filepath.Join(dir, "nope.pem")), nil, "KUSIONPR_APP_PRIVATE_KEY_PATH: open"},
		{"a key in the variable", with("KUSIONPR_APP_PRIVATE_KEY", key, "KUSIONPR_APP_PRIVATE_KEY_PATH", ""), func(c *Config) bool { return c.PrivateKey == key }, ""},
		{"a PKCS #8 RSA key", with("KUSIONPR_APP_PRIVATE_KEY", pkcs8Key), func(c *Config) bool { return c.PrivateKey == pkcs8Key }, ""},
		{"a key that is not PEM", with("KUSIONPR_APP_PRIVATE_KEY", "notapem"), nil, "KUSIONPR_APP_PRIVATE_KEY: not a PEM private key"},
		{"a key file that is not PEM", with("KUSIONPR_APP_PRIVATE_KEY_PATH", notPEMFile), nil, "KUSIONPR_APP_PRIVATE_KEY_PATH (" + notPEMFile + "): not a PEM private key"},
		{"a PEM block that is no key", with("KUSIONPR_APP_PRIVATE_KEY", garbledKey), nil, `KUSIONPR_APP_PRIVATE_KEY: the PEM block "RSA PRIVATE KEY" is not an RSA private key`},
		{"a key that is not RSA", with("KUSIONPR_APP_PRIVATE_KEY", ecKey), nil, "KUSIONPR_APP_PRIVATE_KEY: a *ecdsa.PrivateKey, not the RSA private key"},
		{"an App ID that is a word", with("KUSIONPR_APP_ID", "abc"), nil, `KUSIONPR_APP_ID: "abc" is not a number`},
		{"an App ID below one", with("KUSIONPR_APP_ID", "-3"), nil, "KUSIONPR_APP_ID: -3 is not an App ID"},
		{"a word for a number", with("KUSIONPR_CONCURRENCY", "many"), nil, `KUSIONPR_CONCURRENCY: "many" is not a number`},
		{"a bad flag", with("KUSIONPR_REQUIRE_APPROVAL", "sometimes"), nil, `KUSIONPR_REQUIRE_APPROVAL: "sometimes" is not true or false`},
		{"a bad duration", with("KUSIONPR_LEASE", "5"), nil, "KUSIONPR_LEASE: time: missing unit"},
		{"the readiness timeout's default", base, func(c *Config) bool { return c.ReadyTimeout == 5*time.Minute }, ""},
		{"a readiness timeout", with("KUSIONPR_READY_TIMEOUT", "90s"), func(c *Config) bool { return c.ReadyTimeout == 90*time.Second }, ""},
		{"a readiness timeout in the file", with("KUSIONPR_CONFIG", readyFile), func(c *Config) bool { return c.ReadyTimeout == 2*time.Minute }, ""},
		{"a readiness timeout of zero", with("KUSIONPR_READY_TIMEOUT", "0s"), nil, "KUSIONPR_READY_TIMEOUT: 0s is not a positive duration: want one such as 90s or 10m (default 5m)"},
		{"a negative readiness timeout", with("KUSIONPR_READY_TIMEOUT", "-1m"), nil, "KUSIONPR_READY_TIMEOUT: -1m0s is not a positive duration"},
		{"a readiness timeout without a unit", with("KUSIONPR_READY_TIMEOUT", "300"), nil, "KUSIONPR_READY_TIMEOUT: time: missing unit"},
		{"the rate-limit wait's default", base, func(c *Config) bool { return c.RateLimitWait == 2*time.Minute }, ""},
		{"redelivery every 5 minutes by default", base, func(c *Config) bool { return c.RedeliverInterval == 5*time.Minute }, ""},
		{"redelivery turned off", with("KUSIONPR_REDELIVER_INTERVAL", "0"), func(c *Config) bool { return c.RedeliverInterval == 0 }, ""},
		{"a negative redelivery interval", with("KUSIONPR_REDELIVER_INTERVAL", "-5m"), nil, "KUSIONPR_REDELIVER_INTERVAL: 24h0m0s and -5m0s: want durations such as 24h and 5m, or 0 (off)"},
		{"comments by default", with("KUSIONPR_LISTEN", ":1"), func(c *Config) bool { return c.Comment == "always" && c.CombineAbove == 10 }, ""},
		{"one combined comment", with("KUSIONPR_COMMENT", "combined"), func(c *Config) bool { return c.Comment == "combined" }, ""},
		{"an unknown way to comment", with("KUSIONPR_COMMENT", "sometimes"), nil, `KUSIONPR_COMMENT: "sometimes" is not always, on-change, combined or never`},
		{"stacks combined above none", with("KUSIONPR_COMBINE_ABOVE", "-1"), nil, "KUSIONPR_COMBINE_ABOVE must be a number of stacks (0 never combines), not -1"},
		{"apply in the queue of two repositories", with("KUSIONPR_APPLY_IN_QUEUE", "o/a, O/B"), func(c *Config) bool {
			return c.appliesInQueue("o/a") && c.appliesInQueue("o/b") && !c.appliesInQueue("o/c") && c.QueueWait == time.Hour
		}, ""},
		{"apply in every repository's queue", with("KUSIONPR_APPLY_IN_QUEUE", "*"), func(c *Config) bool { return c.appliesInQueue("any/one") }, ""},
		{"no apply in the queue by default", with("KUSIONPR_COMMENT", "always"), func(c *Config) bool { return !c.appliesInQueue("o/a") }, ""},
		{"apply branches", with("KUSIONPR_APPLY_BRANCHES", "@default, release/*"), func(c *Config) bool {
			return c.appliesFrom("main", "main") && c.appliesFrom("release/2", "main") && !c.appliesFrom("weak", "main")
		}, ""},
		{"the default branch alone applies by default", with("KUSIONPR_COMMENT", "always"), func(c *Config) bool {
			return c.appliesFrom("main", "main") && !c.appliesFrom("weak", "main") && !c.RequireLastPushApproval
		}, ""},
		{"an apply branch that is no pattern", with("KUSIONPR_APPLY_BRANCHES", "release/["), nil, `KUSIONPR_APPLY_BRANCHES: "release/[" is not a branch name or pattern`},
		{"approvals of the last push", with("KUSIONPR_REQUIRE_LAST_PUSH_APPROVAL", "true"), func(c *Config) bool { return c.RequireLastPushApproval }, ""},
		{"apply in the queue of an owner", with("KUSIONPR_APPLY_IN_QUEUE", "octo"), nil, `KUSIONPR_APPLY_IN_QUEUE: "octo" is not a repository (owner/name) or *`},
		{"a drift schedule", with("KUSIONPR_DRIFT_EVERY", "6h", "KUSIONPR_BACKEND", "mem://"), func(c *Config) bool {
			return c.DriftJitter == 36*time.Minute && c.scansDrift("any/one")
		}, ""},
		{"a drift schedule of some repositories", with("KUSIONPR_DRIFT_EVERY", "1h", "KUSIONPR_DRIFT_JITTER", "5m", "KUSIONPR_DRIFT_REPOSITORIES", "o/a", "KUSIONPR_BACKEND", "mem://"), func(c *Config) bool {
			return c.DriftJitter == 5*time.Minute && c.scansDrift("O/A") && !c.scansDrift("o/b")
		}, ""},
		{"no drift schedule by default", with("KUSIONPR_DRIFT_REPOSITORIES", "o/a"), func(c *Config) bool { return !c.scansDrift("o/a") }, ""},
		{"a drift schedule without a store", with("KUSIONPR_DRIFT_EVERY", "6h"), nil, "KUSIONPR_DRIFT_EVERY: a drift scan compares with the releases, and the bot has no release store (KUSIONPR_BACKEND)"},
		{"a drift jitter as long as the schedule", with("KUSIONPR_DRIFT_EVERY", "1h", "KUSIONPR_DRIFT_JITTER", "1h", "KUSIONPR_BACKEND", "mem://"), nil, "KUSIONPR_DRIFT_JITTER: 1h0m0s is not shorter than KUSIONPR_DRIFT_EVERY (1h0m0s)"},
		{"a drift schedule with stacks run away", with("KUSIONPR_DRIFT_EVERY", "1h", "KUSIONPR_BACKEND", "mem://", "KUSIONPR_EXECUTOR", "github-actions"), nil, "the bot scans for drift in its own process, and KUSIONPR_EXECUTOR=github-actions runs stacks away from it"},
		{"policies by default", with("KUSIONPR_COMMENT", "always"), func(c *Config) bool {
			return c.PolicyDir == "policy" && c.PolicyOverride == "admin" && len(c.Policies) == 0
		}, ""},
		{"policies set", with("KUSIONPR_POLICY_DIR", "rules/rego", "KUSIONPR_POLICIES", dir, "KUSIONPR_POLICY_PACKAGES", "main,k8s", "KUSIONPR_POLICY_OVERRIDE", "maintain"), func(c *Config) bool {
			return c.PolicyDir == "rules/rego" && len(c.Policies) == 1 && len(c.PolicyPackages) == 2 && c.PolicyOverride == "maintain"
		}, ""},
		{"a policy folder outside the repository", with("KUSIONPR_POLICY_DIR", "../rules"), nil, `KUSIONPR_POLICY_DIR: "../rules" is not a folder inside a repository (or none)`},
		{"an operator's policy folder that is not one", with("KUSIONPR_POLICIES", keyPath), nil, "KUSIONPR_POLICIES: " + keyPath + " is not a folder"},
		{"an override by triagers", with("KUSIONPR_POLICY_OVERRIDE", "triage"), nil, `KUSIONPR_POLICY_OVERRIDE: "triage" is not admin, maintain, write or none`},
		{"a queue wait", with("KUSIONPR_QUEUE_WAIT", "20m"), func(c *Config) bool { return c.QueueWait == 20*time.Minute }, ""},
		{"a queue wait of zero", with("KUSIONPR_QUEUE_WAIT", "0s"), nil, "KUSIONPR_QUEUE_WAIT: 0s is not a positive duration"},
		{"a rate-limit wait", with("KUSIONPR_RATE_LIMIT_WAIT", "10m"), func(c *Config) bool { return c.RateLimitWait == 10*time.Minute }, ""},
		{"a rate-limit wait of zero", with("KUSIONPR_RATE_LIMIT_WAIT", "0s"), nil, "KUSIONPR_RATE_LIMIT_WAIT: 0s is not a positive duration: want one such as 90s or 10m (default 2m)"},
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
		{"an unknown allowance", with("KUSIONPR_SPEC_KUBECONFIG_ALLOW", "exec,everything"), nil, `KUSIONPR_SPEC_KUBECONFIG_ALLOW: unknown allowance "everything": want exec, auth-provider, files or cloud-identity`},
		{"a workspace kubeconfig without a file", with("KUSIONPR_KUBECONFIGS", "dev"), nil, `KUSIONPR_KUBECONFIGS: "dev": want WORKSPACE=FILE`},
		{"github-actions with its defaults", with("KUSIONPR_EXECUTOR", "github-actions"), func(c *Config) bool {
			return c.Executor == "github-actions" && c.GitHubActions != nil && c.GitHubActions.Workflow == ""
		}, ""},
		{"github-actions from the file", with("KUSIONPR_CONFIG", actionsFile), func(c *Config) bool {
			g := c.GitHubActions
			return c.Executor == "github-actions" && g.Workflow == "infra-run.yaml" && g.PollInterval.Duration == time.Minute && g.Timeout.Duration == 2*time.Hour
		}, ""},
		{"github-actions settings no run could use", with("KUSIONPR_CONFIG", badActions, "KUSIONPR_EXECUTOR", "github-actions"), nil, "githubActions.workflow"},
		{"an unknown executor", with("KUSIONPR_EXECUTOR", "lambda"), nil, `KUSIONPR_EXECUTOR: "lambda" is not in-process, kubernetes or github-actions`},
		{"a workspace kubeconfig that is missing", with("KUSIONPR_KUBECONFIGS", "dev="+filepath.Join(dir, "nope")), nil, "KUSIONPR_KUBECONFIGS: workspace dev: stat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadConfig(env(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				for _, k := range []string{key, pkcs8Key, ecKey} {
					if strings.Contains(err.Error(), keyLine(k)) {
						t.Errorf("the error shows the key: %v", err)
					}
				}
				if strings.Contains(err.Error(), "notapem") || strings.Contains(err.Error(), "Tm90IGEga2V5") {
					t.Errorf("the error quotes the key's content: %v", err)
				}
				// One mistake, one line: not also "not set" or the like.
				if n := strings.Count(err.Error(), "\n"); n != 0 {
					t.Errorf("%d more errors than the one:\n%v", n, err)
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
