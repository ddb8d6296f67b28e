// Package bot is the GitHub App: it applies what a merged pull request
// changed, and answers /kusion commands on pull requests, through the same
// workflow and templates as the action. Webhooks are answered at once; the
// work runs in a bounded queue.
package bot

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kusionpr/kusionpr/connect"
	"github.com/kusionpr/kusionpr/engine/kcl"
	"github.com/kusionpr/kusionpr/executor/ghactions"
	"github.com/kusionpr/kusionpr/executor/kubejob"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
	"github.com/kusionpr/kusionpr/runtime/terraform"
	"github.com/kusionpr/kusionpr/settings"
	"github.com/kusionpr/kusionpr/workflow"
)

// Config is the bot's settings, each field filled from the setting its
// tag names (package settings declares them, with their defaults, checks
// and help): environment variables (KUSIONPR_*) over an optional YAML file
// named by KUSIONPR_CONFIG. The comments say what the code does with a
// field; docs/settings.md says what each setting means.
type Config struct {
	Listen        string `setting:"listen"`
	WebhookSecret string `setting:"webhook-secret"`
	// AppID and the App's private key, in PrivateKey once LoadConfig has
	// read the file PrivateKeyPath names.
	AppID          int64  `setting:"app-id"`
	PrivateKey     string `setting:"app-private-key"`
	PrivateKeyPath string `setting:"app-private-key-path"`
	// APIURL is GitHub's REST root: GitHub Enterprise Server's
	// https://HOST/api/v3, or a test server.
	APIURL string `setting:"github-api-url"`
	// Workspace, when set, is the workspace of every stack; empty lets
	// each stack name its own.
	Backend     string `setting:"backend"`
	Workspace   string `setting:"workspace"`
	Root        string `setting:"root"`
	Concurrency int    `setting:"concurrency"`
	// AllowRepos, if set, are the only owner/repo the bot acts on.
	AllowRepos []string `setting:"allow-repos"`
	// ApplyBranches are the branches that apply (appliesFrom); empty is
	// each repository's default branch.
	ApplyBranches []string `setting:"apply-branches"`
	// The gates of /kusion apply before merge.
	RequireApproval         bool     `setting:"require-approval"`
	RequireMergeable        bool     `setting:"require-mergeable"`
	RequireChecks           bool     `setting:"require-checks"`
	RequireLastPushApproval bool     `setting:"require-last-push-approval"`
	MergeableStates         []string `setting:"mergeable-states"`
	// ShutdownTimeout bounds the wait for running applies at a stop;
	// ShutdownDelay is how long /readyz answers 503 before it.
	ShutdownTimeout time.Duration `setting:"shutdown-timeout"`
	ShutdownDelay   time.Duration `setting:"shutdown-delay"`
	Lease           time.Duration `setting:"lease"`
	ReadyTimeout    time.Duration `setting:"timeout"`
	RateLimitWait   time.Duration `setting:"rate-limit-wait"`
	Comment         string        `setting:"comment"`
	CombineAbove    int           `setting:"combine-above"`
	HoldWait        time.Duration `setting:"hold-wait"`
	// RecoverWindow and RedeliverInterval: 0 turns recovery, or
	// redelivery, off.
	RecoverWindow      time.Duration `setting:"recover-window"`
	RedeliverInterval  time.Duration `setting:"redeliver-interval"`
	MaxUnverifiedBytes int64         `setting:"max-unverified-bytes"`
	MaxCheckoutBytes   int64         `setting:"max-checkout-bytes"`
	MaxCheckoutFiles   int64         `setting:"max-checkout-files"`
	// The Terraform runtime's lists (terraform.Config).
	TerraformProviders        []string `setting:"terraform-providers"`
	TerraformEnv              []string `setting:"terraform-env"`
	TerraformProviderSettings []string `setting:"terraform-provider-settings"`
	// Kubeconfigs maps a workspace to the kubeconfig file its stacks
	// use; SpecKubeconfigAllow is what a spec's own may bring.
	Kubeconfigs         map[string]string `setting:"kubeconfigs"`
	SpecKubeconfigAllow []string          `setting:"spec-kubeconfig-allow"`
	ModuleEnv           []string          `setting:"module-env"`

	// Executor is where a stack's preview or apply runs by default;
	// KubernetesJobs, GitHubActions and ExecutorRules are the file's.
	Executor       string          `setting:"executor"`
	KubernetesJobs *kubejob.Config `setting:"kubernetes-jobs"`
	Deployments    bool            `setting:"deployments"`
	// GitHubActions is how the executor github-actions runs each stack.
	GitHubActions *ghactions.Config `setting:"github-actions"`
	// ExecutorRules send some repositories' or stacks' runs to another
	// executor (the first match wins).
	ExecutorRules       []ExecutorRule `setting:"executor-rules"`
	UntrustedPreviews   string         `setting:"untrusted-previews"`
	RepositoryExecutors []string       `setting:"repository-executors"`
	// ApplyInQueue are the repositories (owner/name, or * for all) whose
	// merge queue groups are applied in the queue (appliesInQueue).
	ApplyInQueue []string      `setting:"apply-in-queue"`
	QueueWait    time.Duration `setting:"queue-wait"`
	// PolicyDir is the folder of a repository's policies ("none": none);
	// Policies the operator's own folders.
	PolicyDir       string   `setting:"policy"`
	Policies        []string `setting:"policies"`
	PolicyPackages  []string `setting:"policy-packages"`
	PolicyOverride  string   `setting:"policy-override"`
	PolicyMaxMemory int64    `setting:"policy-max-memory"`

	// DriftEvery is 0 when no scan is scheduled; LoadConfig fills in
	// DriftJitter's and DriftRepositories' defaults when it is not.
	DriftEvery        time.Duration `setting:"drift-every"`
	DriftJitter       time.Duration `setting:"drift-jitter"`
	DriftRepositories []string      `setting:"drift-repositories"`

	// KCL's settings (kcl.Settings), variables of the environment alone.
	KCLRuntime    string `setting:"kcl-runtime"`
	KCLAllow      string `setting:"kcl-allow"`
	KCLMirrors    string `setting:"kcl-mirrors"`
	KCLCache      string `setting:"kcl-cache"`
	KCLUnconfined bool   `setting:"kcl-unconfined"`
}

// LoadConfig reads the configuration; getenv is os.Getenv outside tests.
// A mistake in the file stops it at once; the others are all said, each
// once, naming its variable.
func LoadConfig(getenv func(string) string) (*Config, error) {
	vals, err := settings.Bot(getenv)
	var inFile *settings.FileError
	if errors.As(err, &inFile) {
		return nil, err
	}
	c := &Config{}
	if ferr := vals.Fill(c); ferr != nil {
		return nil, ferr
	}
	errs := []error{err, c.readPrivateKey(), c.checkKubeconfigFiles(), c.checkRecovery(), c.checkExecutors()}
	errs = append(errs, c.checkDrift()...)
	return c, errors.Join(errs...)
}

// readPrivateKey reads the key from PrivateKeyPath when the variable
// does not hold it, and checks it now, not at the first delivery: a bot
// that cannot sign its requests to GitHub must not start and look
// healthy. No error quotes the key.
func (c *Config) readPrivateKey() error {
	keySetting := "KUSIONPR_APP_PRIVATE_KEY"
	if c.PrivateKey == "" && c.PrivateKeyPath != "" {
		keySetting = "KUSIONPR_APP_PRIVATE_KEY_PATH (" + c.PrivateKeyPath + ")"
		b, err := os.ReadFile(c.PrivateKeyPath)
		if err != nil {
			return fmt.Errorf("KUSIONPR_APP_PRIVATE_KEY_PATH: %w", err)
		}
		c.PrivateKey = string(b)
	}
	if c.PrivateKey == "" && c.PrivateKeyPath == "" {
		return errors.New("KUSIONPR_APP_PRIVATE_KEY or KUSIONPR_APP_PRIVATE_KEY_PATH is not set")
	}
	if err := checkPrivateKey(c.PrivateKey); err != nil {
		return fmt.Errorf("%s: %w", keySetting, err)
	}
	return nil
}

// checkKubeconfigFiles: each workspace's kubeconfig must be there at
// start, not at the first apply of the workspace.
func (c *Config) checkKubeconfigFiles() error {
	var errs []error
	for _, ws := range slices.Sorted(maps.Keys(c.Kubeconfigs)) {
		if _, err := os.Stat(c.Kubeconfigs[ws]); err != nil {
			errs = append(errs, fmt.Errorf("KUSIONPR_KUBECONFIGS: workspace %s: %w", ws, err))
		}
	}
	return errors.Join(errs...)
}

// checkRecovery: recovery and redelivery are off at 0, never negative.
func (c *Config) checkRecovery() error {
	if c.RecoverWindow < 0 || c.RedeliverInterval < 0 {
		return fmt.Errorf("KUSIONPR_RECOVER_WINDOW and KUSIONPR_REDELIVER_INTERVAL: %s and %s: want durations such as 24h and 5m, or 0 (off)", c.RecoverWindow, c.RedeliverInterval)
	}
	return nil
}

// kcl is the process's KCL settings.
func (c *Config) kcl() kcl.Settings {
	return kcl.Settings{Runtime: c.KCLRuntime, Allow: c.KCLAllow, Mirrors: c.KCLMirrors, CacheDir: c.KCLCache, Unconfined: c.KCLUnconfined}
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
	// Checked when the settings were read.
	allow, _ := kubernetes.ParseAllowance(c.SpecKubeconfigAllow)
	return connect.Clusters{Kubeconfigs: c.Kubeconfigs, KubeconfigsName: "KUSIONPR_KUBECONFIGS", SpecAllow: allow, Setting: "KUSIONPR_SPEC_KUBECONFIG_ALLOW"}
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

// SecretVariables are the environment variables holding the bot's secrets
// (and where the key lies). LoadConfig reads them; the bot's main then
// removes them from its environment, which every child would inherit.
func SecretVariables() []string {
	return settings.BotSecrets()
}
