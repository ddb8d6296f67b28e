package terraform

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// Config chooses the binary and where the runtime keeps its working folders.
type Config struct {
	// Binary is the terraform or tofu executable; empty looks up terraform,
	// then tofu, on PATH.
	Binary string
	// CacheDir holds one working folder per resource and the shared plugin
	// cache. Default: the user cache folder's kusionpr/terraform, never the
	// repository being worked on.
	CacheDir string
	// PluginCacheDir is TF_PLUGIN_CACHE_DIR; default CacheDir/plugins.
	PluginCacheDir string
	// Env is added to the environment of every terraform process.
	Env map[string]string
	// PassEnv names the variables of ours, besides those Terraform itself
	// needs (baseEnv), that terraform and its providers get: "AWS_REGION",
	// or a pattern ("ARM_*", path.Match's syntax). Nothing else is passed
	// on: the App key, the webhook secret, GitHub tokens and the release
	// store's credentials stay out of reach of the providers a spec names.
	PassEnv []string
	// AllowProviders are provider sources a spec may name besides the
	// defaults (the public registries' hashicorp/* and what the CLI
	// configuration mirrors): host/namespace/type, "*" standing for a whole
	// segment ("registry.terraform.io/acme/*"); namespace/type means either
	// public registry.
	AllowProviders []string
	// ProviderSettings are the provider arguments a spec's providerMeta
	// may set besides "region": "name" for any provider, "type.name" for
	// one ("aws.endpoints"), "type.*", or "*" for all. The rest is the
	// operator's: credentials, profiles, roles, files, exec blocks.
	ProviderSettings []string
	// CLIConfigFile is the Terraform CLI configuration file terraform and
	// tofu read (TF_CLI_CONFIG_FILE), over the one our environment names:
	// the operator's, handed over as a value rather than through the
	// process environment. Empty: TF_CLI_CONFIG_FILE, else ~/.terraformrc.
	CLIConfigFile string
	Logger        *slog.Logger
}

// ErrNoBinary is returned when no terraform or tofu executable can be found.
var ErrNoBinary = errors.New("no terraform or tofu binary found on PATH: install one, or name it with --terraform-binary (KUSIONPR_TERRAFORM_BINARY)")

func (c Config) withDefaults() (Config, error) {
	if c.Binary == "" {
		for _, name := range []string{"terraform", "tofu"} {
			if p, err := exec.LookPath(name); err == nil {
				c.Binary = p
				break
			}
		}
		if c.Binary == "" {
			return c, ErrNoBinary
		}
	} else {
		p, err := exec.LookPath(c.Binary)
		if err != nil {
			return c, fmt.Errorf("terraform binary %q: %w", c.Binary, err)
		}
		c.Binary = p
	}
	if abs, err := filepath.Abs(c.Binary); err == nil {
		c.Binary = abs
	}
	if c.CacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return c, fmt.Errorf("terraform cache folder: %w", err)
		}
		c.CacheDir = filepath.Join(base, "kusionpr", "terraform")
	}
	if c.PluginCacheDir == "" {
		c.PluginCacheDir = filepath.Join(c.CacheDir, "plugins")
	}
	for _, d := range []string{c.CacheDir, c.PluginCacheDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return c, fmt.Errorf("terraform cache folder: %w", err)
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if err := c.CheckSettings(); err != nil {
		return c, err
	}
	return c, nil
}

// CheckSettings reports a malformed PassEnv, AllowProviders or
// ProviderSettings entry,
// naming the setting: what a configuration loader checks at start.
func (c Config) CheckSettings() error {
	for _, p := range c.PassEnv {
		if _, err := path.Match(p, ""); err != nil || p == "" || strings.ContainsAny(p, "=\x00") {
			return fmt.Errorf("%s: %q is not a variable name or pattern", EnvSetting, p)
		}
	}
	if _, err := parsePatterns(c.AllowProviders); err != nil {
		return fmt.Errorf("%s: %w", ProvidersSetting, err)
	}
	if _, err := parseProviderSettings(c.ProviderSettings); err != nil {
		return err
	}
	return nil
}

// EnvSetting and ProvidersSetting name the settings of PassEnv and
// AllowProviders in errors, as the action and the bot spell them.
const (
	EnvSetting       = "terraform-env (--terraform-env, KUSIONPR_TERRAFORM_ENV)"
	ProvidersSetting = "terraform-providers (--terraform-providers, KUSIONPR_TERRAFORM_PROVIDERS)"
)

// baseEnv is what terraform, tofu and the providers need of our environment
// whoever runs them: where programs and home are, temporary files, locale,
// proxies and CA certificates, Terraform's own settings (the CLI
// configuration, registry tokens, the plugin cache) and the update check.
var baseEnv = []string{
	"PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "LC_*",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
	"TF_*", "CHECKPOINT_DISABLE",
}

// passes says whether our variable name goes to terraform.
func (c Config) passes(name string) bool {
	for _, lists := range [][]string{baseEnv, c.PassEnv} {
		for _, p := range lists {
			if ok, _ := path.Match(p, name); ok {
				return true
			}
		}
	}
	return false
}

// environ is the environment of a terraform process: built from an
// allowlist (baseEnv and PassEnv), never inherited whole, since providers
// and whatever a configuration makes them run see it. terraform-exec
// refuses the variables it manages itself (logging, input, TF_CLI_ARGS,
// TF_VAR_...), so those are left out rather than failing every command.
func (c Config) environ() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || managedByExec(k) || !c.passes(k) {
			continue
		}
		env[k] = v
	}
	for k, v := range c.Env {
		if !managedByExec(k) {
			env[k] = v
		}
	}
	if c.CLIConfigFile != "" {
		env["TF_CLI_CONFIG_FILE"] = c.CLIConfigFile
	}
	env["TF_PLUGIN_CACHE_DIR"] = c.PluginCacheDir
	env["CHECKPOINT_DISABLE"] = "1"
	return env
}

func managedByExec(k string) bool {
	switch k {
	case "TF_CLI_ARGS", "TF_INPUT", "TF_IN_AUTOMATION", "TF_LOG", "TF_LOG_CORE", "TF_LOG_PATH",
		"TF_LOG_PROVIDER", "TF_REATTACH_PROVIDERS", "TF_APPEND_USER_AGENT", "TF_WORKSPACE",
		"TF_DISABLE_PLUGIN_TLS", "TF_SKIP_PROVIDER_VERIFY":
		return true
	}
	return strings.HasPrefix(k, "TF_VAR_") || strings.HasPrefix(k, "TF_CLI_ARGS_")
}
