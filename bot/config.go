// Package bot is the GitHub App: it applies what a merged pull request
// changed, and answers /kusion commands on pull requests, through the same
// workflow and templates as the action. Webhooks are answered at once; the
// work runs in a bounded queue.
package bot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
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
	// Conditions for /kusion apply before merge (KUSIONPR_REQUIRE_APPROVAL,
	// _MERGEABLE, _CHECKS; all default true).
	RequireApproval  bool `json:"requireApproval"`
	RequireMergeable bool `json:"requireMergeable"`
	RequireChecks    bool `json:"requireChecks"`
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
	// HoldWait is how long an apply waits for another run holding its
	// stack to end (KUSIONPR_HOLD_WAIT, default 30m).
	HoldWait time.Duration `json:"holdWait"`
	// RecoverWindow is how far back the bot looks, when it starts, for
	// merged pull requests whose apply left no release
	// (KUSIONPR_RECOVER_WINDOW, default 24h; 0 turns it off).
	RecoverWindow time.Duration `json:"recoverWindow"`
}

// LoadConfig reads the configuration; getenv is os.Getenv outside tests.
func LoadConfig(getenv func(string) string) (*Config, error) {
	c := &Config{Listen: ":8080", Root: ".", Concurrency: 4,
		RequireApproval: true, RequireMergeable: true, RequireChecks: true, MergeableStates: []string{"clean"}, ShutdownTimeout: 10 * time.Minute, ShutdownDelay: 5 * time.Second,
		HoldWait: 30 * time.Minute, RecoverWindow: 24 * time.Hour}
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
	if v := getenv("KUSIONPR_ALLOW_REPOS"); v != "" {
		c.AllowRepos = nil
		for _, r := range strings.Split(v, ",") {
			if r = strings.TrimSpace(r); r != "" {
				c.AllowRepos = append(c.AllowRepos, r)
			}
		}
	}
	flag("KUSIONPR_REQUIRE_APPROVAL", &c.RequireApproval)
	flag("KUSIONPR_REQUIRE_MERGEABLE", &c.RequireMergeable)
	flag("KUSIONPR_REQUIRE_CHECKS", &c.RequireChecks)
	if v := getenv("KUSIONPR_MERGEABLE_STATES"); v != "" {
		c.MergeableStates = list(v)
	}
	errs = append(errs, checkMergeableStates(c.MergeableStates))
	dur("KUSIONPR_SHUTDOWN_TIMEOUT", &c.ShutdownTimeout)
	dur("KUSIONPR_SHUTDOWN_DELAY", &c.ShutdownDelay)
	dur("KUSIONPR_LEASE", &c.Lease)
	dur("KUSIONPR_HOLD_WAIT", &c.HoldWait)
	dur("KUSIONPR_RECOVER_WINDOW", &c.RecoverWindow)

	if c.WebhookSecret == "" {
		errs = append(errs, errors.New("KUSIONPR_WEBHOOK_SECRET is not set: the bot refuses unsigned webhooks, so it needs the App's webhook secret"))
	}
	if c.AppID == 0 {
		errs = append(errs, errors.New("KUSIONPR_APP_ID is not set"))
	}
	if c.PrivateKey == "" && c.PrivateKeyPath != "" {
		b, err := os.ReadFile(c.PrivateKeyPath)
		if err != nil {
			errs = append(errs, fmt.Errorf("KUSIONPR_APP_PRIVATE_KEY_PATH: %w", err))
		}
		c.PrivateKey = string(b)
	}
	if c.PrivateKey == "" && c.PrivateKeyPath == "" {
		errs = append(errs, errors.New("KUSIONPR_APP_PRIVATE_KEY or KUSIONPR_APP_PRIVATE_KEY_PATH is not set"))
	}
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("KUSIONPR_CONCURRENCY must be at least 1, not %d", c.Concurrency))
	}
	return c, errors.Join(errs...)
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
		ShutdownTimeout *string `json:"shutdownTimeout"`
		ShutdownDelay   *string `json:"shutdownDelay"`
		Lease           *string `json:"lease"`
		HoldWait        *string `json:"holdWait"`
		RecoverWindow   *string `json:"recoverWindow"`
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
		{"recoverWindow", aux.RecoverWindow, &c.RecoverWindow},
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
