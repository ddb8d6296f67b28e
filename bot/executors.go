package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/executor/ghactions"
	"github.com/kusionpr/kusionpr/executor/kubejob"
	"github.com/kusionpr/kusionpr/workflow"
)

// The executors the bot knows by name.
const (
	execInProcess     = "in-process"
	execKubernetes    = "kubernetes"
	execGitHubActions = "github-actions"
)

// ExecutorRule sends the stacks it matches to another executor than the
// default (KUSIONPR_EXECUTOR). Rules are the operator's, in the
// configuration file: never a repository's.
type ExecutorRule struct {
	// Repositories are owner/repo names, or owner/* for an owner's;
	// empty matches every repository.
	Repositories []string `json:"repositories,omitempty"`
	// Stacks are stack folders, or path.Match patterns of them
	// (apps/prod/*); empty matches every stack.
	Stacks []string `json:"stacks,omitempty"`
	// Executor is in-process, kubernetes or github-actions.
	Executor string `json:"executor"`
}

func (r ExecutorRule) matches(repo, stack string) bool {
	return matchAny(r.Repositories, strings.ToLower(repo), true) && matchAny(r.Stacks, stack, false)
}

func matchAny(patterns []string, s string, fold bool) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if fold {
			p = strings.ToLower(p)
		}
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

// checkExecutors names every executor setting no run could go through.
func (c *Config) checkExecutors() error {
	var errs []error
	known := func(where, name string) {
		switch name {
		case execInProcess:
		case execKubernetes:
			if c.KubernetesJobs == nil {
				errs = append(errs, fmt.Errorf("%s is kubernetes, but the configuration file has no kubernetesJobs: the image, namespace and ServiceAccount of the Jobs", where))
			}
		case execGitHubActions:
			if c.GitHubActions == nil {
				c.GitHubActions = &ghactions.Config{}
			}
		default:
			errs = append(errs, fmt.Errorf("%s: %q is not in-process, kubernetes or github-actions", where, name))
		}
	}
	if c.Executor == "" {
		c.Executor = execInProcess
	}
	known("KUSIONPR_EXECUTOR", c.Executor)
	if c.UntrustedPreviews != "" {
		known("KUSIONPR_UNTRUSTED_PREVIEWS", c.UntrustedPreviews)
	}
	for _, name := range c.RepositoryExecutors {
		known("KUSIONPR_REPOSITORY_EXECUTORS", name)
	}
	for i, r := range c.ExecutorRules {
		known(fmt.Sprintf("executorRules[%d].executor", i), r.Executor)
		for _, p := range append(append([]string(nil), r.Repositories...), r.Stacks...) {
			if _, err := path.Match(p, ""); err != nil {
				errs = append(errs, fmt.Errorf("executorRules[%d]: pattern %q: %w", i, p, err))
			}
		}
	}
	if c.KubernetesJobs != nil {
		if err := c.KubernetesJobs.Check(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.GitHubActions != nil {
		if err := c.GitHubActions.Check(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// executors builds every executor the configuration names, each counted
// in the metrics, and the one that picks among them per stack. runner is
// the in-process one.
func (c *Config) executors(runner *workflow.Runner, m *metrics, log *slog.Logger) (*executorRouter, error) {
	if c.Executor == "" {
		c.Executor = execInProcess
	}
	used := map[string]bool{c.Executor: true, c.UntrustedPreviews: c.UntrustedPreviews != ""}
	for _, r := range c.ExecutorRules {
		used[r.Executor] = true
	}
	for _, name := range c.RepositoryExecutors {
		used[name] = true
	}
	r := &executorRouter{cfg: c, by: map[string]workflow.StackRunner{}, m: m}
	for name := range used {
		var x workflow.StackRunner = runner
		switch name {
		case "":
			continue
		case execKubernetes:
			k, err := kubejob.New(*c.KubernetesJobs, log)
			if err != nil {
				return nil, err
			}
			k.Store = runner.Store
			x = k
		case execGitHubActions:
			// A run of the repository's own workflow, dispatched through
			// each command's installation client (with).
			r.actions = ghactions.New(*c.GitHubActions, log)
			continue
		}
		r.by[name] = observed{next: x, executor: name, m: m}
	}
	return r, nil
}

// executorRouter runs each stack through the executor the configuration
// picks for it: a fork's preview through UntrustedPreviews if set, else
// the first of the operator's rules matching the repository and the stack,
// else the first of the repository's own (repo), else the default.
type executorRouter struct {
	cfg  *Config
	by   map[string]workflow.StackRunner
	repo []ExecutorRule
	// actions is the github-actions executor, when used; it runs through
	// a command's own client.
	actions *ghactions.Executor
	m       *metrics
}

// with is the router of one command: a repository's own rules, and gh, the
// command's installation client, for the github-actions executor.
func (r *executorRouter) with(repo []ExecutorRule, gh ghactions.GitHub) *executorRouter {
	out := *r
	out.repo = repo
	if r.actions != nil && gh != nil {
		out.by = maps.Clone(r.by)
		out.by[execGitHubActions] = observed{next: r.actions.For(gh), executor: execGitHubActions, m: r.m}
	}
	return &out
}

func (r *executorRouter) pick(req workflow.Request) string {
	// Offline is how a fork's preview runs: the pull request is not
	// trusted with anything of ours.
	if req.Offline && req.Command == workflow.Preview && r.cfg.UntrustedPreviews != "" {
		return r.cfg.UntrustedPreviews
	}
	repo := ""
	if req.Origin != nil && req.Origin.Repository != nil {
		repo = req.Origin.Repository.FullName
	}
	stack := req.Stack
	if rel, err := filepath.Rel(filepath.Join(req.Root, r.cfg.Root), req.Dir()); err == nil {
		stack = filepath.ToSlash(rel)
	}
	for _, rule := range append(append([]ExecutorRule(nil), r.cfg.ExecutorRules...), r.repo...) {
		if rule.matches(repo, stack) {
			return rule.Executor
		}
	}
	return r.cfg.Executor
}

func (r *executorRouter) Run(ctx context.Context, req workflow.Request) *workflow.StackResult {
	name := r.pick(req)
	if req.Log != nil {
		req.Log.Debug("executor picked", "executor", name)
	}
	x, ok := r.by[name]
	if !ok {
		return &workflow.StackResult{Err: fmt.Errorf("the executor %s has no GitHub client to run through", name)}
	}
	return x.Run(ctx, req)
}

// repositorySettings is the file on a repository's default branch in which
// it picks executors for its stacks, among those the operator lets it
// (KUSIONPR_REPOSITORY_EXECUTORS):
//
//	executors:
//	  - stacks: [apps/*/prod]
//	    executor: kubernetes
const repositorySettings = ".github/kusionpr.yaml"

// maxRepositorySettings bounds the file: a few rules, not a dump.
const maxRepositorySettings = 64 << 10

// repositoryRules are the rules of the repository's settings file on its
// default branch, none when the operator lets a repository pick nothing
// or it has no such file. A rule naming an executor the operator does not
// let repositories pick is an error, naming the file and the rule.
func (b *Bot) repositoryRules(ctx context.Context, c *command) ([]ExecutorRule, error) {
	allowed := b.cfg.RepositoryExecutors
	if len(allowed) == 0 || c.j.defaultBranch == "" {
		return nil, nil
	}
	raw, err := c.gh.FileAt(ctx, repositorySettings, c.j.defaultBranch, maxRepositorySettings)
	if err != nil || raw == nil {
		return nil, err
	}
	var file struct {
		Executors []struct {
			Stacks   []string `json:"stacks"`
			Executor string   `json:"executor"`
		} `json:"executors"`
	}
	if err := yaml.UnmarshalStrict(raw, &file); err != nil {
		return nil, err
	}
	var rules []ExecutorRule
	for i, r := range file.Executors {
		if !slices.Contains(allowed, r.Executor) {
			return nil, fmt.Errorf("executors[%d]: %q is not among the executors the bot lets a repository pick (%s)", i, r.Executor, strings.Join(allowed, ", "))
		}
		for _, p := range r.Stacks {
			if _, err := path.Match(p, ""); err != nil {
				return nil, fmt.Errorf("executors[%d]: pattern %q: %w", i, p, err)
			}
		}
		// A repository's rule is about its own stacks only.
		rules = append(rules, ExecutorRule{Stacks: r.Stacks, Executor: r.Executor})
	}
	return rules, nil
}
