package bot

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/executor/kubejob"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/workflow"
)

// named is an executor that says who ran the stack.
type named string

func (n named) RunStack(context.Context, workflow.Command, string, workflow.Options) *workflow.StackResult {
	return &workflow.StackResult{Skipped: string(n)}
}

// TestExecutorRules: each stack runs through the executor the operator's
// configuration picks: a fork's preview through the untrusted previews'
// one, else the first rule matching its repository and folder, else the
// default; a fork's apply (never run) and a same-repository preview are
// not "untrusted previews".
func TestExecutorRules(t *testing.T) {
	cfg := &Config{Root: "infra", Executor: "kubernetes", UntrustedPreviews: "sandbox", ExecutorRules: []ExecutorRule{
		{Repositories: []string{"acme/legacy"}, Executor: "in-process"},
		{Repositories: []string{"ACME/*"}, Stacks: []string{"apps/*/dev"}, Executor: "in-process"},
	}}
	r := &executorRouter{cfg: cfg, by: map[string]workflow.StackRunner{"kubernetes": named("kubernetes"), "in-process": named("in-process"), "sandbox": named("sandbox")}}
	root := t.TempDir()
	for _, tc := range []struct {
		name, repo, stack string
		cmd               workflow.Command
		offline           bool
		want              string
	}{
		{"the default", "acme/infra", "apps/web/prod", workflow.Apply, false, "kubernetes"},
		{"a repository's rule", "acme/legacy", "apps/web/prod", workflow.Apply, false, "in-process"},
		{"a stack's rule, the owner's name in another case", "Acme/infra", "apps/web/dev", workflow.Apply, false, "in-process"},
		{"another owner's dev stack", "other/infra", "apps/web/dev", workflow.Apply, false, "kubernetes"},
		{"a fork's preview", "acme/legacy", "apps/web/dev", workflow.Preview, true, "sandbox"},
		{"a same-repository preview", "acme/infra", "apps/web/prod", workflow.Preview, false, "kubernetes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := workflow.Options{CheckoutRoot: root, Offline: tc.offline, Origin: &model.Origin{Repository: &model.Repository{FullName: tc.repo}}}
			got := r.RunStack(context.Background(), tc.cmd, filepath.Join(root, "infra", tc.stack), opts).Skipped
			if got != tc.want {
				t.Errorf("ran through %s, want %s", got, tc.want)
			}
		})
	}
}

// TestExecutorSettingsChecked: an executor no run could go through stops
// the bot at start, naming the setting.
func TestExecutorSettingsChecked(t *testing.T) {
	jobs := &kubejob.Config{Image: "ghcr.io/acme/kusionpr@sha256:0"}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"an unknown default", Config{Executor: "lambda"}, `KUSIONPR_EXECUTOR: "lambda" is not in-process or kubernetes`},
		{"kubernetes without its settings", Config{Executor: "kubernetes"}, "KUSIONPR_EXECUTOR is kubernetes, but the configuration file has no kubernetesJobs"},
		{"a rule naming kubernetes without its settings", Config{ExecutorRules: []ExecutorRule{{Executor: "kubernetes"}}}, "executorRules[0].executor is kubernetes"},
		{"an unknown untrusted previews' executor", Config{UntrustedPreviews: "sandbox"}, `KUSIONPR_UNTRUSTED_PREVIEWS: "sandbox"`},
		{"a bad pattern", Config{ExecutorRules: []ExecutorRule{{Stacks: []string{"apps/["}, Executor: "in-process"}}}, `pattern "apps/["`},
		{"Jobs without an image", Config{Executor: "kubernetes", KubernetesJobs: &kubejob.Config{}}, "kubernetesJobs.image"},
		{"all well", Config{Executor: "kubernetes", KubernetesJobs: jobs, ExecutorRules: []ExecutorRule{{Stacks: []string{"apps/*"}, Executor: "in-process"}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.checkExecutors()
			if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
