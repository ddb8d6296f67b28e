// Package bot is the GitHub App: it applies what a merged pull request
// changed, and answers /kusion commands on pull requests, through the same
// workflow and templates as the action. Webhooks are answered at once; the
// work runs in a bounded queue.
package bot

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/connect"
	"github.com/kusionpr/kusionpr/executor/ghactions"
	"github.com/kusionpr/kusionpr/executor/kubejob"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/policy"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
	"github.com/kusionpr/kusionpr/runtime/terraform"
	"github.com/kusionpr/kusionpr/workflow"
)

// Config is the bot's settings: environment variables (KUSIONPR_*), over an
// optional YAML file named by KUSIONPR_CONFIG with the same names in
// lower-camel case.
type Config struct {
	// Listen is the HTTP address (KUSIONPR_LISTEN, default :8080).
	Listen string `json:"listen"`
	// WebhookSecret verifies deliveries (KUSIONPR_WEBHOOK_SECRET, required).
	WebhookSecret string `json:"webhookSecret"`
	// AppID and the App's private key (KUSIONPR_APP_ID,
	// KUSIONPR_APP_PRIVATE_KEY or KUSIONPR_APP_PRIVATE_KEY_PATH).
	AppID          int64  `json:"appID"`
	PrivateKey     string `json:"privateKey"`
	PrivateKeyPath string `json:"privateKeyPath"`
	// APIURL is GitHub's REST root (KUSIONPR_GITHUB_API_URL): GitHub
	// Enterprise Server's https://HOST/api/v3, or a test server.
	APIURL string `json:"apiURL"`
	// Backend is the release store (KUSIONPR_BACKEND); Workspace the
	// workspace every stack is applied with (KUSIONPR_WORKSPACE); empty
	// lets each stack name its own (stack.yaml's workspace, else the
	// workspace named after the stack, else "default").
	Backend   string `json:"backend"`
	Workspace string `json:"workspace"`
	// Root is where stacks are looked for in the repository (KUSIONPR_ROOT).
	Root string `json:"root"`
	// Concurrency bounds the runs at once (KUSIONPR_CONCURRENCY, default 4).
	Concurrency int `json:"concurrency"`
	// AllowRepos, if set, are the only owner/repo the bot acts on
	// (KUSIONPR_ALLOW_REPOS, comma-separated).
	AllowRepos []string `json:"allowRepos"`
	// ApplyBranches are the branches whose merges, merge queue groups and
	// pull requests (by /kusion apply) are applied: names or patterns
	// such as release/*, @default for each repository's default branch
	// (KUSIONPR_APPLY_BRANCHES, comma-separated; default the default
	// branch). A pull request into another branch is previewed only.
	ApplyBranches []string `json:"applyBranches"`
	// Conditions for /kusion apply before merge (KUSIONPR_REQUIRE_APPROVAL,
	// _MERGEABLE, _CHECKS; all default true).
	RequireApproval  bool `json:"requireApproval"`
	RequireMergeable bool `json:"requireMergeable"`
	RequireChecks    bool `json:"requireChecks"`
	// RequireLastPushApproval leaves out the approval of whoever pushed
	// the head (KUSIONPR_REQUIRE_LAST_PUSH_APPROVAL, default false), as
	// GitHub's branch protection rule "require approval of the most
	// recent reviewable push" does: a writer cannot push onto someone's
	// pull request, approve it and apply it.
	RequireLastPushApproval bool `json:"requireLastPushApproval"`
	// MergeableStates are the mergeable_state values an apply before merge
	// accepts (KUSIONPR_MERGEABLE_STATES, comma-separated; default clean;
	// unstable and has_hooks may be added).
	MergeableStates []string `json:"mergeableStates"`
	// ShutdownTimeout is how long a stop waits for running applies
	// (KUSIONPR_SHUTDOWN_TIMEOUT, default 10m).
	ShutdownTimeout time.Duration `json:"shutdownTimeout"`
	// ShutdownDelay is how long, after a stop signal, /readyz answers 503
	// while deliveries are still taken (KUSIONPR_SHUTDOWN_DELAY, default 5s).
	ShutdownDelay time.Duration `json:"shutdownDelay"`
	// Lease is the release lease (KUSIONPR_LEASE, default 5m).
	Lease time.Duration `json:"lease"`
	// ReadyTimeout is how long an apply waits for each Kubernetes object
	// to be ready, or gone once deleted (KUSIONPR_READY_TIMEOUT, default 5m).
	ReadyTimeout time.Duration `json:"readyTimeout"`
	// RateLimitWait bounds how long one GitHub request waits for GitHub's
	// rate limits before it fails (KUSIONPR_RATE_LIMIT_WAIT, default 2m).
	RateLimitWait time.Duration `json:"rateLimitWait"`
	// Comment is how a run's stacks are commented on (KUSIONPR_COMMENT):
	// always (default, a comment per stack), on-change, combined (one
	// comment for the pull request) or never. CombineAbove reports the
	// stacks of a run touching more than that many together, one comment
	// and one check run (KUSIONPR_COMBINE_ABOVE, default 10; 0 never).
	Comment      string `json:"comment"`
	CombineAbove int    `json:"combineAbove"`
	// HoldWait is how long an apply waits for another run holding its
	// stack to end (KUSIONPR_HOLD_WAIT, default 30m).
	HoldWait time.Duration `json:"holdWait"`
	// RecoverWindow is how far back the bot looks for work it missed
	// (KUSIONPR_RECOVER_WINDOW, default 24h; 0 turns it off): when it
	// starts, merged pull requests whose apply left no release; at each
	// redelivery pass, deliveries it could not take. RedeliverInterval is
	// how often a redelivery pass runs besides at start and after the
	// bot refused a delivery for want of room or time
	// (KUSIONPR_REDELIVER_INTERVAL, default 5m; 0 turns redelivery off).
	RecoverWindow     time.Duration `json:"recoverWindow"`
	RedeliverInterval time.Duration `json:"redeliverInterval"`
	// MaxUnverifiedBytes bounds the webhook bodies held in memory at once
	// before their signature is checked (KUSIONPR_MAX_UNVERIFIED_BYTES,
	// default 64 MiB); MaxCheckoutBytes and MaxCheckoutFiles bound what a
	// repository's archive may unpack to (KUSIONPR_MAX_CHECKOUT_BYTES,
	// default 1 GiB; KUSIONPR_MAX_CHECKOUT_FILES, default 100000).
	MaxUnverifiedBytes int64 `json:"maxUnverifiedBytes"`
	MaxCheckoutBytes   int64 `json:"maxCheckoutBytes"`
	MaxCheckoutFiles   int64 `json:"maxCheckoutFiles"`
	// TerraformProviders are provider sources a spec may use besides the
	// public registries' hashicorp/* and what the Terraform CLI
	// configuration mirrors (KUSIONPR_TERRAFORM_PROVIDERS, comma-separated
	// host/namespace/type patterns).
	TerraformProviders []string `json:"terraformProviders"`
	// TerraformEnv names the variables of the bot's environment Terraform
	// and its providers get besides what Terraform itself needs
	// (KUSIONPR_TERRAFORM_ENV, comma-separated names or patterns such as
	// ARM_*). Nothing else is passed on: not the App key, the webhook
	// secret or the release store's credentials.
	TerraformEnv []string `json:"terraformEnv"`
	// TerraformProviderSettings are the provider arguments a spec's
	// providerMeta may set besides region (KUSIONPR_TERRAFORM_PROVIDER_SETTINGS:
	// name, type.name, type.* or *): the rest, credentials and exec blocks
	// included, are the operator's.
	TerraformProviderSettings []string `json:"terraformProviderSettings"`
	// Kubeconfigs maps a workspace to the kubeconfig file its stacks use,
	// whatever their spec's context says (KUSIONPR_KUBECONFIGS,
	// dev=/etc/k/dev,prod=/etc/k/prod). Other stacks use their spec's
	// kubeconfig if allowed, else $KUBECONFIG, else the pod's ServiceAccount.
	Kubeconfigs map[string]string `json:"kubeconfigs"`
	// SpecKubeconfigAllow is what a spec's kubeconfig may bring beyond a
	// server and inline credentials (KUSIONPR_SPEC_KUBECONFIG_ALLOW:
	// exec, auth-provider, files; default none).
	SpecKubeconfigAllow []string `json:"specKubeconfigAllow"`
	// ModuleEnv names environment variables Kusion module binaries get
	// besides PATH, HOME, TMPDIR, locale and proxies (KUSIONPR_MODULE_ENV).
	ModuleEnv []string `json:"moduleEnv"`

	// Executor is where a stack's preview or apply runs
	// (KUSIONPR_EXECUTOR): in-process (default), or kubernetes, a Job per
	// stack as KubernetesJobs says (the YAML file's kubernetesJobs), in
	// which case the bot needs no access to the stacks' clusters or clouds.
	Executor       string          `json:"executor"`
	KubernetesJobs *kubejob.Config `json:"kubernetesJobs"`
	// Deployments records each apply and destroy as a GitHub deployment
	// of the commit, environment kusion/<project>/<workspace>
	// (KUSIONPR_DEPLOYMENTS, default true; the App needs deployments:
	// write).
	Deployments bool `json:"deployments"`
	// GitHubActions is how the executor github-actions runs each stack:
	// as a run of the pull request's repository's own workflow (the YAML
	// file's githubActions: workflow, pollInterval, timeout), in which
	// case the bot needs no cluster, cloud or release store credentials.
	GitHubActions *ghactions.Config `json:"githubActions"`
	// ExecutorRules send some repositories' or stacks' runs to another
	// executor (the YAML file's executorRules; the first match wins).
	ExecutorRules []ExecutorRule `json:"executorRules"`
	// UntrustedPreviews is the executor of the previews of pull requests
	// from forks (KUSIONPR_UNTRUSTED_PREVIEWS; default: as the rules say).
	UntrustedPreviews string `json:"untrustedPreviews"`
	// RepositoryExecutors are the executors a repository may pick for its
	// stacks in .github/kusionpr.yaml on its default branch
	// (KUSIONPR_REPOSITORY_EXECUTORS, comma-separated; default none: the
	// file is not read). The operator's rules come first.
	RepositoryExecutors []string `json:"repositoryExecutors"`
	// ApplyInQueue are the repositories (owner/name, or * for all) whose
	// merge queue groups into the default branch are applied in the
	// queue, on the group's commit, instead of after they land
	// (KUSIONPR_APPLY_IN_QUEUE, comma-separated; default none: groups are
	// previewed). QueueWait is the longest a group waits for the group
	// ahead of it (KUSIONPR_QUEUE_WAIT, default 1h).
	ApplyInQueue []string      `json:"applyInQueue"`
	QueueWait    time.Duration `json:"queueWait"`
	// DriftEvery is how often the stacks of each repository in
	// DriftRepositories are scanned for drift (KUSIONPR_DRIFT_EVERY,
	// default 0: never), give or take DriftJitter (KUSIONPR_DRIFT_JITTER,
	// default a tenth of it), by one replica at a time; DriftRepositories
	// are owner/name or * (KUSIONPR_DRIFT_REPOSITORIES, comma-separated,
	// default *).
	// PolicyDir is the folder of a repository's Rego policies
	// (KUSIONPR_POLICY_DIR, default policy; "none" reads none), read as
	// the commit a change was based on holds it; Policies are the
	// operator's own folders, judging every repository's stacks
	// (KUSIONPR_POLICIES, comma-separated paths); PolicyPackages are the
	// packages whose deny, violation and warn rules count
	// (KUSIONPR_POLICY_PACKAGES, default main); PolicyOverride is the
	// permission /kusion apply --override-policy needs
	// (KUSIONPR_POLICY_OVERRIDE: admin, the default, maintain, write, or
	// none: no override at all).
	PolicyDir      string   `json:"policyDir"`
	Policies       []string `json:"policies"`
	PolicyPackages []string `json:"policyPackages"`
	PolicyOverride string   `json:"policyOverride"`
	// PolicyMaxMemory bounds, in bytes, the memory of the child process
	// each evaluation of policies runs in (KUSIONPR_POLICY_MAX_MEMORY,
	// default 512 MiB); past it, or past its time, the plan is refused.
	PolicyMaxMemory int64 `json:"policyMaxMemory"`

	DriftEvery        time.Duration `json:"driftEvery"`
	DriftJitter       time.Duration `json:"driftJitter"`
	DriftRepositories []string      `json:"driftRepositories"`

	specAllow kubernetes.Allowance
}

// LoadConfig reads the configuration; getenv is os.Getenv outside tests.
func LoadConfig(getenv func(string) string) (*Config, error) {
	c := &Config{Listen: ":8080", Root: ".", Concurrency: 4, Comment: "always", CombineAbove: 10,
		RequireApproval: true, RequireMergeable: true, RequireChecks: true, MergeableStates: []string{"clean"}, ShutdownTimeout: 10 * time.Minute, ShutdownDelay: 5 * time.Second,
		HoldWait: 30 * time.Minute, ReadyTimeout: kubernetes.DefaultReadyTimeout, RateLimitWait: githubapi.DefaultMaxWait, RecoverWindow: 24 * time.Hour, RedeliverInterval: 5 * time.Minute,
		MaxUnverifiedBytes: 64 << 20, MaxCheckoutBytes: 1 << 30, MaxCheckoutFiles: 100000, Deployments: true, PolicyMaxMemory: policy.DefaultMaxMemory,
		QueueWait: time.Hour, PolicyDir: "policy", PolicyOverride: "admin"}
	if path := getenv("KUSIONPR_CONFIG"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if err := yaml.UnmarshalStrict(b, c); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
	}
	var errs []error
	// bad holds the variables already reported, so that one mistake is
	// not also reported as a missing setting.
	bad := map[string]bool{}
	str := func(name string, dst *string) {
		if v := getenv(name); v != "" {
			*dst = v
		}
	}
	num := func(name string, set func(int64)) {
		if v := getenv(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a number", name, v))
				bad[name] = true
				return
			}
			set(n)
		}
	}
	flag := func(name string, dst *bool) {
		if v := getenv(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not true or false", name, v))
				return
			}
			*dst = b
		}
	}
	dur := func(name string, dst *time.Duration) {
		if v := getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				return
			}
			*dst = d
		}
	}
	str("KUSIONPR_LISTEN", &c.Listen)
	str("KUSIONPR_WEBHOOK_SECRET", &c.WebhookSecret)
	num("KUSIONPR_APP_ID", func(n int64) { c.AppID = n })
	str("KUSIONPR_APP_PRIVATE_KEY", &c.PrivateKey)
	str("KUSIONPR_APP_PRIVATE_KEY_PATH", &c.PrivateKeyPath)
	str("KUSIONPR_GITHUB_API_URL", &c.APIURL)
	str("KUSIONPR_BACKEND", &c.Backend)
	str("KUSIONPR_WORKSPACE", &c.Workspace)
	str("KUSIONPR_ROOT", &c.Root)
	num("KUSIONPR_CONCURRENCY", func(n int64) { c.Concurrency = int(n) })
	str("KUSIONPR_EXECUTOR", &c.Executor)
	str("KUSIONPR_UNTRUSTED_PREVIEWS", &c.UntrustedPreviews)
	str("KUSIONPR_COMMENT", &c.Comment)
	num("KUSIONPR_COMBINE_ABOVE", func(n int64) { c.CombineAbove = int(n) })
	strs := func(name string, dst *[]string) {
		if v := getenv(name); v != "" {
			*dst = nil
			for _, x := range strings.Split(v, ",") {
				if x = strings.TrimSpace(x); x != "" {
					*dst = append(*dst, x)
				}
			}
		}
	}
	strs("KUSIONPR_ALLOW_REPOS", &c.AllowRepos)
	strs("KUSIONPR_TERRAFORM_PROVIDERS", &c.TerraformProviders)
	strs("KUSIONPR_TERRAFORM_ENV", &c.TerraformEnv)
	strs("KUSIONPR_TERRAFORM_PROVIDER_SETTINGS", &c.TerraformProviderSettings)
	strs("KUSIONPR_SPEC_KUBECONFIG_ALLOW", &c.SpecKubeconfigAllow)
	strs("KUSIONPR_REPOSITORY_EXECUTORS", &c.RepositoryExecutors)
	strs("KUSIONPR_APPLY_IN_QUEUE", &c.ApplyInQueue)
	strs("KUSIONPR_APPLY_BRANCHES", &c.ApplyBranches)
	strs("KUSIONPR_MODULE_ENV", &c.ModuleEnv)
	if v := getenv("KUSIONPR_KUBECONFIGS"); v != "" {
		var err error
		if c.Kubeconfigs, err = connect.ParseKubeconfigs(v); err != nil {
			errs = append(errs, fmt.Errorf("KUSIONPR_KUBECONFIGS: %w", err))
		}
	}
	flag("KUSIONPR_REQUIRE_APPROVAL", &c.RequireApproval)
	flag("KUSIONPR_DEPLOYMENTS", &c.Deployments)
	flag("KUSIONPR_REQUIRE_MERGEABLE", &c.RequireMergeable)
	flag("KUSIONPR_REQUIRE_CHECKS", &c.RequireChecks)
	flag("KUSIONPR_REQUIRE_LAST_PUSH_APPROVAL", &c.RequireLastPushApproval)
	if v := getenv("KUSIONPR_MERGEABLE_STATES"); v != "" {
		c.MergeableStates = list(v)
	}
	errs = append(errs, checkMergeableStates(c.MergeableStates))
	dur("KUSIONPR_SHUTDOWN_TIMEOUT", &c.ShutdownTimeout)
	dur("KUSIONPR_SHUTDOWN_DELAY", &c.ShutdownDelay)
	dur("KUSIONPR_LEASE", &c.Lease)
	dur("KUSIONPR_HOLD_WAIT", &c.HoldWait)
	dur("KUSIONPR_READY_TIMEOUT", &c.ReadyTimeout)
	dur("KUSIONPR_RATE_LIMIT_WAIT", &c.RateLimitWait)
	dur("KUSIONPR_RECOVER_WINDOW", &c.RecoverWindow)
	dur("KUSIONPR_REDELIVER_INTERVAL", &c.RedeliverInterval)
	dur("KUSIONPR_QUEUE_WAIT", &c.QueueWait)
	dur("KUSIONPR_DRIFT_EVERY", &c.DriftEvery)
	dur("KUSIONPR_DRIFT_JITTER", &c.DriftJitter)
	strs("KUSIONPR_DRIFT_REPOSITORIES", &c.DriftRepositories)
	str("KUSIONPR_POLICY_DIR", &c.PolicyDir)
	strs("KUSIONPR_POLICIES", &c.Policies)
	strs("KUSIONPR_POLICY_PACKAGES", &c.PolicyPackages)
	str("KUSIONPR_POLICY_OVERRIDE", &c.PolicyOverride)
	num("KUSIONPR_POLICY_MAX_MEMORY", func(n int64) { c.PolicyMaxMemory = n })
	num("KUSIONPR_MAX_UNVERIFIED_BYTES", func(n int64) { c.MaxUnverifiedBytes = n })
	num("KUSIONPR_MAX_CHECKOUT_BYTES", func(n int64) { c.MaxCheckoutBytes = n })
	num("KUSIONPR_MAX_CHECKOUT_FILES", func(n int64) { c.MaxCheckoutFiles = n })

	if c.WebhookSecret == "" {
		errs = append(errs, errors.New("KUSIONPR_WEBHOOK_SECRET is not set: the bot refuses unsigned webhooks, so it needs the App's webhook secret"))
	}
	switch {
	case bad["KUSIONPR_APP_ID"]:
	case c.AppID == 0:
		errs = append(errs, errors.New("KUSIONPR_APP_ID is not set: the bot needs its GitHub App's ID (the App's settings page, \"App ID\")"))
	case c.AppID < 0:
		errs = append(errs, fmt.Errorf("KUSIONPR_APP_ID: %d is not an App ID (a positive number)", c.AppID))
	}
	keySetting := "KUSIONPR_APP_PRIVATE_KEY"
	if c.PrivateKey == "" && c.PrivateKeyPath != "" {
		keySetting = "KUSIONPR_APP_PRIVATE_KEY_PATH (" + c.PrivateKeyPath + ")"
		b, err := os.ReadFile(c.PrivateKeyPath)
		if err != nil {
			errs = append(errs, fmt.Errorf("KUSIONPR_APP_PRIVATE_KEY_PATH: %w", err))
			bad["KUSIONPR_APP_PRIVATE_KEY_PATH"] = true
		}
		c.PrivateKey = string(b)
	}
	switch {
	case c.PrivateKey == "" && c.PrivateKeyPath == "":
		errs = append(errs, errors.New("KUSIONPR_APP_PRIVATE_KEY or KUSIONPR_APP_PRIVATE_KEY_PATH is not set"))
	case !bad["KUSIONPR_APP_PRIVATE_KEY_PATH"]:
		// Checked now, not at the first delivery: a bot that cannot sign
		// its requests to GitHub must not start and look healthy.
		if err := checkPrivateKey(c.PrivateKey); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", keySetting, err))
		}
	}
	if err := (terraform.Config{AllowProviders: c.TerraformProviders, PassEnv: c.TerraformEnv, ProviderSettings: c.TerraformProviderSettings}).CheckSettings(); err != nil {
		errs = append(errs, err)
	}
	var err error
	if c.specAllow, err = kubernetes.ParseAllowance(c.SpecKubeconfigAllow); err != nil {
		errs = append(errs, fmt.Errorf("KUSIONPR_SPEC_KUBECONFIG_ALLOW: %w", err))
	}
	for ws, path := range c.Kubeconfigs {
		if _, err := os.Stat(path); err != nil {
			errs = append(errs, fmt.Errorf("KUSIONPR_KUBECONFIGS: workspace %s: %w", ws, err))
		}
	}
	if c.RateLimitWait <= 0 {
		errs = append(errs, fmt.Errorf("KUSIONPR_RATE_LIMIT_WAIT: %s is not a positive duration: want one such as 90s or 10m (default 2m)", c.RateLimitWait))
	}
	if c.ReadyTimeout <= 0 {
		errs = append(errs, fmt.Errorf("KUSIONPR_READY_TIMEOUT: %s is not a positive duration: want one such as 90s or 10m (default 5m)", c.ReadyTimeout))
	}
	if c.RecoverWindow < 0 || c.RedeliverInterval < 0 {
		errs = append(errs, fmt.Errorf("KUSIONPR_RECOVER_WINDOW and KUSIONPR_REDELIVER_INTERVAL: %s and %s: want durations such as 24h and 5m, or 0 (off)", c.RecoverWindow, c.RedeliverInterval))
	}
	if c.QueueWait <= 0 {
		errs = append(errs, fmt.Errorf("KUSIONPR_QUEUE_WAIT: %s is not a positive duration: want one such as 30m or 2h (default 1h)", c.QueueWait))
	}
	errs = append(errs, checkRepositoryList("KUSIONPR_APPLY_IN_QUEUE", c.ApplyInQueue)...)
	errs = append(errs, workflow.CheckApplyBranches("KUSIONPR_APPLY_BRANCHES", c.ApplyBranches))
	errs = append(errs, c.checkDrift()...)
	switch c.PolicyOverride {
	case "admin", "maintain", "write", "none":
	default:
		errs = append(errs, fmt.Errorf("KUSIONPR_POLICY_OVERRIDE: %q is not admin, maintain, write or none", c.PolicyOverride))
	}
	if d := c.PolicyDir; d != "none" && (d == "" || path.IsAbs(d) || path.Clean(d) != d || d == ".." || strings.HasPrefix(d, "../")) {
		errs = append(errs, fmt.Errorf("KUSIONPR_POLICY_DIR: %q is not a folder inside a repository (or none)", d))
	}
	for _, dir := range c.Policies {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			errs = append(errs, fmt.Errorf("KUSIONPR_POLICIES: %s is not a folder", dir))
		}
	}
	switch c.Comment {
	case "always", "on-change", "combined", "never":
	default:
		errs = append(errs, fmt.Errorf("KUSIONPR_COMMENT: %q is not always, on-change, combined or never", c.Comment))
	}
	if err := c.checkExecutors(); err != nil {
		errs = append(errs, err)
	}
	if c.CombineAbove < 0 {
		errs = append(errs, fmt.Errorf("KUSIONPR_COMBINE_ABOVE must be a number of stacks (0 never combines), not %d", c.CombineAbove))
	}
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("KUSIONPR_CONCURRENCY must be at least 1, not %d", c.Concurrency))
	}
	for _, l := range []struct {
		name     string
		v, least int64
	}{{"KUSIONPR_POLICY_MAX_MEMORY", c.PolicyMaxMemory, 64 << 20}, {"KUSIONPR_MAX_UNVERIFIED_BYTES", c.MaxUnverifiedBytes, 1 << 20}, {"KUSIONPR_MAX_CHECKOUT_BYTES", c.MaxCheckoutBytes, 1}, {"KUSIONPR_MAX_CHECKOUT_FILES", c.MaxCheckoutFiles, 1}} {
		if l.v < l.least {
			errs = append(errs, fmt.Errorf("%s must be at least %d, not %d", l.name, l.least, l.v))
		}
	}
	return c, errors.Join(errs...)
}

// appliesFrom says whether what merges into branch of a repository whose
// default branch is def is applied (KUSIONPR_APPLY_BRANCHES).
func (c *Config) appliesFrom(branch, def string) bool {
	return workflow.AppliesFrom(branch, def, c.ApplyBranches)
}

// checkPrivateKey tells whether key is what GitHub gives an App: an RSA
// private key in PEM (PKCS #1, or PKCS #8 as some tools convert it to), as
// ghinstallation reads it. The error never quotes the key.
func checkPrivateKey(key string) error {
	block, _ := pem.Decode([]byte(key))
	if block == nil {
		return errors.New("not a PEM private key: want the App's key file as GitHub gives it, from -----BEGIN RSA PRIVATE KEY----- to its END line")
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return fmt.Errorf("the PEM block %q is not an RSA private key GitHub could have issued", block.Type)
	}
	if _, ok := k.(*rsa.PrivateKey); !ok {
		return fmt.Errorf("a %T, not the RSA private key GitHub issues Apps", k)
	}
	return nil
}

// clusters is how stacks reach their cluster, as configured.
func (c *Config) clusters() connect.Clusters {
	return connect.Clusters{Kubeconfigs: c.Kubeconfigs, KubeconfigsName: "KUSIONPR_KUBECONFIGS", SpecAllow: c.specAllow, Setting: "KUSIONPR_SPEC_KUBECONFIG_ALLOW"}
}

// runtimes is how the bot's stacks reach their clusters and run
// Terraform: built once, for the bot's one workflow.Runner.
func (c *Config) runtimes() connect.Factory {
	return connect.Factory{
		Clusters: c.clusters(), ForceConflicts: true, ReadyTimeout: c.ReadyTimeout,
		Terraform: terraform.Config{AllowProviders: c.TerraformProviders, PassEnv: c.TerraformEnv, ProviderSettings: c.TerraformProviderSettings},
	}
}

// checkDrift checks the drift schedule and fills in its defaults.
func (c *Config) checkDrift() []error {
	var errs []error
	if c.DriftEvery < 0 || c.DriftJitter < 0 {
		errs = append(errs, fmt.Errorf("KUSIONPR_DRIFT_EVERY and KUSIONPR_DRIFT_JITTER: %s and %s: want durations such as 6h and 30m, or 0", c.DriftEvery, c.DriftJitter))
	}
	errs = append(errs, checkRepositoryList("KUSIONPR_DRIFT_REPOSITORIES", c.DriftRepositories)...)
	if c.DriftEvery <= 0 {
		return errs
	}
	if c.DriftJitter == 0 {
		c.DriftJitter = c.DriftEvery / 10
	}
	if c.DriftJitter >= c.DriftEvery {
		errs = append(errs, fmt.Errorf("KUSIONPR_DRIFT_JITTER: %s is not shorter than KUSIONPR_DRIFT_EVERY (%s)", c.DriftJitter, c.DriftEvery))
	}
	if len(c.DriftRepositories) == 0 {
		c.DriftRepositories = []string{"*"}
	}
	if c.Executor != "" && c.Executor != "in-process" {
		// The scan reads every stack's live objects: with the stacks run
		// away from the bot, the bot has no credentials to read them.
		errs = append(errs, fmt.Errorf("KUSIONPR_DRIFT_EVERY: the bot scans for drift in its own process, and KUSIONPR_EXECUTOR=%s runs stacks away from it, with credentials the bot does not hold; scan with the action's scheduled drift workflow instead (.github/workflow-examples/kusion-drift.yml)", c.Executor))
	}
	if c.Backend == "" {
		errs = append(errs, errors.New("KUSIONPR_DRIFT_EVERY: a drift scan compares with the releases, and the bot has no release store (KUSIONPR_BACKEND)"))
	}
	return errs
}

// scansDrift reports whether the repository's stacks are scanned for drift.
func (c *Config) scansDrift(fullName string) bool {
	return c.DriftEvery > 0 && listed(c.DriftRepositories, fullName)
}

// appliesInQueue reports whether the repository's merge queue groups are
// applied in the queue (ApplyInQueue).
func (c *Config) appliesInQueue(fullName string) bool {
	return listed(c.ApplyInQueue, fullName)
}

// listed says whether a list of repositories (owner/name, or * for all)
// names fullName; GitHub's names ignore case.
func listed(list []string, fullName string) bool {
	for _, r := range list {
		if r == "*" || strings.EqualFold(r, fullName) {
			return true
		}
	}
	return false
}

// checkRepositoryList refuses an entry of the setting's list that is
// neither owner/name nor *.
func checkRepositoryList(setting string, list []string) []error {
	var errs []error
	for _, r := range list {
		if r != "*" && strings.Count(r, "/") != 1 {
			errs = append(errs, fmt.Errorf("%s: %q is not a repository (owner/name) or *", setting, r))
		}
	}
	return errs
}

func (c *Config) allowed(fullName string) bool {
	if len(c.AllowRepos) == 0 {
		return true
	}
	for _, r := range c.AllowRepos {
		if strings.EqualFold(r, fullName) {
			return true
		}
	}
	return false
}

// UnmarshalJSON reads the durations of the YAML file as Go durations
// ("10m"), as the environment variables are read.
func (c *Config) UnmarshalJSON(b []byte) error {
	type plain Config
	aux := struct {
		*plain
		ShutdownTimeout   *string `json:"shutdownTimeout"`
		ShutdownDelay     *string `json:"shutdownDelay"`
		Lease             *string `json:"lease"`
		HoldWait          *string `json:"holdWait"`
		ReadyTimeout      *string `json:"readyTimeout"`
		RateLimitWait     *string `json:"rateLimitWait"`
		RecoverWindow     *string `json:"recoverWindow"`
		RedeliverInterval *string `json:"redeliverInterval"`
		QueueWait         *string `json:"queueWait"`
		DriftEvery        *string `json:"driftEvery"`
		DriftJitter       *string `json:"driftJitter"`
	}{plain: (*plain)(c)}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&aux); err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		v    *string
		dst  *time.Duration
	}{
		{"shutdownTimeout", aux.ShutdownTimeout, &c.ShutdownTimeout},
		{"shutdownDelay", aux.ShutdownDelay, &c.ShutdownDelay},
		{"lease", aux.Lease, &c.Lease},
		{"holdWait", aux.HoldWait, &c.HoldWait},
		{"readyTimeout", aux.ReadyTimeout, &c.ReadyTimeout},
		{"rateLimitWait", aux.RateLimitWait, &c.RateLimitWait},
		{"recoverWindow", aux.RecoverWindow, &c.RecoverWindow},
		{"redeliverInterval", aux.RedeliverInterval, &c.RedeliverInterval},
		{"queueWait", aux.QueueWait, &c.QueueWait},
		{"driftEvery", aux.DriftEvery, &c.DriftEvery},
		{"driftJitter", aux.DriftJitter, &c.DriftJitter},
	} {
		if d.v == nil {
			continue
		}
		v, err := time.ParseDuration(*d.v)
		if err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
		*d.dst = v
	}
	return nil
}

// SecretVariables are the environment variables holding the bot's secrets
// (and where the key lies). LoadConfig reads them; the bot's main then
// removes them from its environment, which every child would inherit.
func SecretVariables() []string {
	return []string{"KUSIONPR_WEBHOOK_SECRET", "KUSIONPR_APP_PRIVATE_KEY", "KUSIONPR_APP_PRIVATE_KEY_PATH"}
}
