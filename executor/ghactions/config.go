// Package ghactions runs a stack's request as a GitHub Actions run of the
// pull request's own repository: the bot dispatches the operator's
// workflow (workflow_dispatch, on the default branch) with the request as
// an input, follows the run GitHub answers the dispatch with through
// workflow_run webhooks and polling, and reads the result the run
// uploaded as an artifact, checked against the request. A run the bot's
// own user did not dispatch is never read: an earlier dispatch of the same
// request (a restart, another replica) is adopted by the request id its
// run-name carries only if it is the bot's. The run holds the
// repository's own credentials (OIDC, environments with required
// reviewers); the bot holds none of the stacks' clusters, clouds or
// release store.
package ghactions

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
)

// Duration is a Go duration written as text ("30s", "6h") in the
// configuration file.
type Duration struct{ time.Duration }

// UnmarshalJSON reads "30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration such as \"30s\" or \"6h\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// Config is how the bot runs stacks as workflow runs.
type Config struct {
	// Workflow is the workflow file, under .github/workflows of each
	// repository, that runs one request (default kusion-run.yml; see
	// .github/workflow-examples/kusion-run.yml). It is dispatched on the
	// repository's default branch: a pull request cannot change it.
	Workflow string `json:"workflow,omitempty"`
	// PollInterval is how often a run is read without news from a
	// workflow_run webhook (default 30s): a lost delivery or a restart
	// costs at most this.
	PollInterval Duration `json:"pollInterval,omitzero"`
	// Timeout bounds the wait for a run's result, queue included
	// (default 6h, GitHub's limit on a job of its hosted runners).
	Timeout Duration `json:"timeout,omitzero"`
}

const (
	defaultWorkflow     = "kusion-run.yml"
	defaultPollInterval = 30 * time.Second
	defaultTimeout      = 6 * time.Hour
)

func (c Config) workflow() string {
	if c.Workflow != "" {
		return c.Workflow
	}
	return defaultWorkflow
}

func (c Config) poll() time.Duration {
	if c.PollInterval.Duration > 0 {
		return c.PollInterval.Duration
	}
	return defaultPollInterval
}

func (c Config) timeout() time.Duration {
	if c.Timeout.Duration > 0 {
		return c.Timeout.Duration
	}
	return defaultTimeout
}

// Check names every setting no run could be dispatched with.
func (c Config) Check() error {
	var errs []error
	if w := c.Workflow; w != "" {
		ext := path.Ext(w)
		if strings.ContainsAny(w, `/\`) || (ext != ".yml" && ext != ".yaml") || w == ext {
			errs = append(errs, fmt.Errorf("githubActions.workflow %q: want a workflow file's name in .github/workflows, such as kusion-run.yml", w))
		}
	}
	if c.PollInterval.Duration < 0 || (c.PollInterval.Duration > 0 && c.PollInterval.Duration < time.Second) {
		errs = append(errs, fmt.Errorf("githubActions.pollInterval: %s is shorter than a second", c.PollInterval.Duration))
	}
	if c.Timeout.Duration < 0 || (c.Timeout.Duration > 0 && c.Timeout.Duration < time.Minute) {
		errs = append(errs, fmt.Errorf("githubActions.timeout: %s is shorter than a minute", c.Timeout.Duration))
	}
	return errors.Join(errs...)
}
