package bot

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/chatops"
	"github.com/kusionpr/kusionpr/executor/kubejob"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/workflow"
)

// named is an executor that says who ran the stack.
type named string

func (n named) Run(context.Context, workflow.Request) *workflow.StackResult {
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
			req, err := workflow.Request{Root: root, Offline: tc.offline, Origin: &model.Origin{Repository: &model.Repository{FullName: tc.repo}}}.For(tc.cmd, filepath.Join(root, "infra", tc.stack))
			if err != nil {
				t.Fatal(err)
			}
			got := r.Run(context.Background(), req).Skipped
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
		{"an unknown default", Config{Executor: "lambda"}, `KUSIONPR_EXECUTOR: "lambda" is not in-process, kubernetes or github-actions`},
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

// TestRepositoryPicksExecutors: a repository picks executors for its
// stacks in .github/kusionpr.yaml as its default branch holds it (never
// the pull request's head), among those the operator lets it, after the
// operator's own rules; a file naming another executor, or one that is
// not the settings it should be, refuses the command, naming the file.
func TestRepositoryPicksExecutors(t *testing.T) {
	const file = ".github/kusionpr.yaml"
	for _, tc := range []struct {
		name    string
		allowed []string
		files   map[string]string
		// want maps a stack to the executor that runs it; empty when the
		// command is refused.
		want      map[string]string
		wantReply string
		wantRead  bool
	}{
		{name: "the operator lets a repository pick nothing", files: map[string]string{"main:" + file: "executors: [{stacks: ['*'], executor: kubernetes}]"},
			want: map[string]string{"apps/web/prod": "in-process"}},
		{name: "the default branch's file", allowed: []string{"kubernetes"}, wantRead: true,
			files: map[string]string{"main:" + file: "executors:\n  - stacks: [apps/*/prod]\n    executor: kubernetes\n", headSHA + ":" + file: "executors: [{stacks: ['*'], executor: in-process}]"},
			want:  map[string]string{"apps/web/prod": "kubernetes", "apps/web/dev": "in-process", "legacy/prod": "sandbox"}},
		{name: "the operator's rule comes first", allowed: []string{"kubernetes"}, wantRead: true,
			files: map[string]string{"main:" + file: "executors: [{stacks: ['legacy/*'], executor: kubernetes}]"},
			want:  map[string]string{"legacy/prod": "sandbox"}},
		{name: "no file", allowed: []string{"kubernetes"}, wantRead: true, want: map[string]string{"apps/web/prod": "in-process"}},
		{name: "an executor the operator does not let it pick", allowed: []string{"kubernetes"}, wantRead: true,
			files: map[string]string{"main:" + file: "executors: [{stacks: ['*'], executor: sandbox}]"},
			wantReply: `could not be used:

` + "```text\nexecutors[0]: \"sandbox\" is not among the executors the bot lets a repository pick (kubernetes)"},
		{name: "a field it may not set", allowed: []string{"kubernetes"}, wantRead: true,
			files:     map[string]string{"main:" + file: "executors: [{repositories: [other/repo], executor: kubernetes}]"},
			wantReply: `unknown field "repositories"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := &fakeGitHub{prs: []githubapi.PullRequestDetail{open()}, files: tc.files}
			work := &fakeWork{out: &workflow.Outcome{}}
			b := testBot(t, gh, work)
			b.cfg.RepositoryExecutors = tc.allowed
			b.executors = &executorRouter{cfg: &Config{Root: ".", Executor: "in-process", ExecutorRules: []ExecutorRule{{Stacks: []string{"legacy/*"}, Executor: "sandbox"}}},
				by: map[string]workflow.StackRunner{"kubernetes": named("kubernetes"), "in-process": named("in-process"), "sandbox": named("sandbox")}}
			b.handle(context.Background(), job{installation: 1, owner: "octo", repo: "infra", defaultBranch: "main", number: 7, actor: "alice", commentID: 99,
				command: chatops.Command{Verb: chatops.Preview}})
			if read := len(gh.fileReads) > 0; read != tc.wantRead || read && gh.fileReads[0] != "main:"+file {
				t.Errorf("file reads %v, want one of main:%s: %v", gh.fileReads, file, tc.wantRead)
			}
			if tc.wantReply != "" {
				if len(work.changes) != 0 || !strings.Contains(strings.Join(gh.replies, "\n"), tc.wantReply) || !strings.Contains(strings.Join(gh.replies, "\n"), "`.github/kusionpr.yaml`") {
					t.Fatalf("ran %d changes; replies %q, want a refusal naming the file and saying %q", len(work.changes), gh.replies, tc.wantReply)
				}
				return
			}
			if len(work.changes) != 1 {
				t.Fatalf("%d changes, want one; replies %q", len(work.changes), gh.replies)
			}
			c := work.changes[0]
			for stack, want := range tc.want {
				req, err := c.Request.For(workflow.Preview, filepath.Join(c.Request.Root, stack))
				if err != nil {
					t.Fatal(err)
				}
				got := c.Runner.Run(context.Background(), req).Skipped
				if got != want {
					t.Errorf("%s ran through %s, want %s", stack, got, want)
				}
			}
		})
	}
}
