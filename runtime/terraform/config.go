package terraform

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
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
	// Env is added to the environment of every terraform process (which
	// otherwise inherits ours, so TF_CLI_CONFIG_FILE and cloud credentials
	// work as usual).
	Env    map[string]string
	Logger *slog.Logger
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
	return c, nil
}

// environ is the environment of a terraform process. terraform-exec refuses
// the variables it manages itself (logging, input, TF_CLI_ARGS, TF_VAR_...),
// so those are left out rather than failing every command.
func (c Config) environ() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || managedByExec(k) {
			continue
		}
		env[k] = v
	}
	for k, v := range c.Env {
		if !managedByExec(k) {
			env[k] = v
		}
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
