package settings

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/connect"
	"github.com/kusionpr/kusionpr/engine/kcl"
	"github.com/kusionpr/kusionpr/engine/kcl/deps"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/policy"
	"github.com/kusionpr/kusionpr/report"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
	"github.com/kusionpr/kusionpr/runtime/terraform"
	"github.com/kusionpr/kusionpr/workflow"
)

// declared is every setting, once. The inputs are in action.yml's order
// (hack/settingsgen writes them there in this order); the bot's --help
// lists its variables in this order, the required ones first.
var declared = []Setting{
	{Name: "command", Type: String, Check: check(func(c string) error {
		if c == "" || c == "drift" {
			return nil
		}
		_, err := workflow.ParseCommand(c)
		return err
	}), Input: &Input{Doc: "preview, apply, destroy or drift. Default: preview on a pull request and on a merge queue's group (merge_group), apply on a push. drift (on schedule or workflow_dispatch) compares every stack under root with its latest release, reading only, and fails the step with exit code 2 when some stack drifted (see fail-on-drift)."}},
	{Name: "stack", Type: String, Default: ".", Help: "stack folder (holds stack.yaml; project.yaml is in it or above it)",
		Flag: &Flag{Commands: runs("generate", "unlock", "cancel", "releases")}},
	{Name: "drift-stack", Type: String, Help: "scan this one stack folder instead of every stack under --root",
		Flag: &Flag{Name: "stack", Commands: []string{"drift"}}},
	{Name: "root", Type: String, Default: ".", Help: "folder under which every stack (a folder holding stack.yaml) is looked for",
		Flag:  &Flag{Commands: []string{"drift"}},
		Input: &Input{Doc: "The folder, relative to the repository, under which stacks (folders holding stack.yaml) are looked for."},
		Var:   &Var{Name: "KUSIONPR_ROOT", YAML: "root", Bot: true}},
	{Name: "stacks", Type: List, DefaultDoc: "all", Help: "comma-separated globs (** for any depth) a stack folder under the root must match to be worked on",
		Flag:  &Flag{Commands: []string{"drift"}},
		Input: &Input{Doc: "Globs (** for any depth) a stack folder must match to be considered, one per line or comma-separated. Default: all."}},
	{Name: "shared-paths", Type: List,
		Input: &Input{Doc: "Globs of files every stack uses: a change to one touches all stacks."}},
	{Name: "workspace", Type: String, DefaultDoc: "stack.yaml's workspace, else the workspace named after the stack, else default", Help: "workspace name",
		Flag:  &Flag{Commands: runs("generate", "unlock", "cancel", "releases", "drift")},
		Input: &Input{Doc: "The workspace every stack is generated and released with. Default: each stack's own (stack.yaml's workspace, else the workspace named after the stack when the repository has its file, else default). A workspace the backend holds (Kusion's workspaces/<name>.yaml, as kusion workspace create writes it) is used before the repository's file of that name."},
		Var:   &Var{Name: "KUSIONPR_WORKSPACE", YAML: "workspace", Bot: true}},
	{Name: "backend", Type: String, DefaultDoc: "the Kusion CLI's current backend, else file:// of $KUSION_HOME or ~/.kusion",
		Help:  "release store URL: file:///ABSOLUTE/PATH, s3://BUCKET, gs://BUCKET, azblob://CONTAINER, oss://BUCKET?endpoint=HOST or mem://; its workspaces (Kusion's workspaces/<name>.yaml) are used before the repository's",
		Flag:  &Flag{Commands: runs("generate", "unlock", "cancel", "releases", "drift")},
		Input: &Input{Doc: "Where releases are kept, and the workspaces the Kusion CLI keeps there (read only): s3://, gs://, azblob://, oss://, file://. Default: the Kusion configuration's current backend, else a local folder (lost with the runner)."},
		Var:   &Var{Name: "KUSIONPR_BACKEND", YAML: "backend", Bot: true}},
	{Name: "kubeconfig", Type: String, Secret: true,
		Input: &Input{Doc: "The content of a kubeconfig for Kubernetes resources (pass a secret), kept in memory: the cluster of every stack whose spec's context names none, or names a KUBECONFIG_PATH outside the checkout (a file of the runner, as Kusion's workspaces write /path/to/kubeconfig or ~/.kube/config), which it replaces. A pull request from a fork is previewed against the prior release only, without it, unless allow-fork-credentials is true."}},
	{Name: "kubeconfigs", Type: Map, Help: "WORKSPACE=FILE,...: the kubeconfig the stacks of each workspace use, whatever their spec says",
		Parse: func(s string) (any, error) { return connect.ParseKubeconfigs(s) },
		Flag:  &Flag{Commands: runs("generate", "drift"), FromEnv: true},
		Input: &Input{Doc: "WORKSPACE=FILE pairs, one per line or comma-separated, as the bot's KUSIONPR_KUBECONFIGS: the kubeconfig file the stacks of each workspace use, whatever their spec's context says. Each file must lie outside the checkout (which a pull request writes), e.g. written from a secret by an earlier step under $RUNNER_TEMP (/github/runner_temp inside this action's container); its credentials are masked."},
		Var:   &Var{Name: "KUSIONPR_KUBECONFIGS", YAML: "kubeconfigs", Bot: true}},
	{Name: "generate-command", Type: String,
		Input: &Input{Doc: "A shell command (sh -c) the action runs in the folder of each stack a pull request or push touches, before the stack is read, e.g. kusion generate -o spec.yaml. It runs with the job's environment less the action's inputs, the GitHub token, the runner's tokens, KUBECONFIG and the runner's file commands; for a fork's pull request without allow-fork-credentials, with only PATH, HOME, locale, proxies and CA certificates. Its output (1 MiB at most, stdout and stderr together, or the stack fails) goes to the job log; a failure fails that stack alone, naming it and the exit status. It runs the pull request's code if the command does: see SECURITY.md."}},
	{Name: "generate-timeout", Type: Duration, Default: "10m", Want: "a duration such as 10m", Check: positive("10m", "10m"),
		Input: &Input{Doc: "How long generate-command may run in one stack before it is stopped (its process group killed) and the stack fails."}},
	{Name: "spec-kubeconfig-allow", Type: List, DefaultDoc: "none: a server and inline credentials only",
		Help:  "what a spec's kubeconfig (context KUBECONFIG_CONTENT or KUBECONFIG_PATH) may bring, comma-separated: exec, auth-provider, files, cloud-identity",
		Check: check(func(l []string) error { _, err := kubernetes.ParseAllowance(l); return err }),
		Flag:  &Flag{Commands: runs("generate", "drift"), FromEnv: true},
		Input: &Input{Doc: "What a spec's kubeconfig (context KUBECONFIG_CONTENT or KUBECONFIG_PATH, which the repository and so any pull request writes) may bring besides a server and inline credentials, comma-separated. Default none. exec: the pull request's author runs a command of their choice in this job (a credential plugin); auth-provider: a kubeconfig auth-provider; files: tokenFile, client-key, client-certificate, certificate-authority paths and a KUBECONFIG_PATH outside the checkout, so any file this job can read may be sent to a server the author names; cloud-identity: a managed cluster's credential plugin (aws eks get-token, gke-gcloud-auth-plugin, kubelogin), whose token this job makes from its own cloud credentials and sends to a server the author names."},
		Var:   &Var{Name: "KUSIONPR_SPEC_KUBECONFIG_ALLOW", YAML: "specKubeconfigAllow", Bot: true}},
	{Name: "module-env", Type: List, DefaultDoc: "none",
		Help:  "comma-separated names of environment variables Kusion module binaries get besides PATH, HOME, TMPDIR, locale and proxies",
		Flag:  &Flag{Commands: runs("generate", "drift"), FromEnv: true},
		Input: &Input{Doc: "Names of environment variables Kusion module binaries get, comma-separated, besides PATH, HOME, TMPDIR, locale, time zone and proxies; they get nothing else of the job's environment."},
		Var:   &Var{Name: "KUSIONPR_MODULE_ENV", YAML: "moduleEnv", Bot: true}},
	{Name: "allow-fork-credentials", Type: Bool, Default: "false",
		Input: &Input{Doc: "true previews a pull request from a fork (pull_request_target) live, with the kubeconfig and the environment's credentials: the fork's spec then runs with them (a Terraform plan runs providers). Default false: a fork is previewed against the prior release only, whatever credentials are given. Forks are never applied."}},
	{Name: "github-token", Type: String, Secret: true,
		Input: &Input{Default: Text("${{ github.token }}"), Doc: "Token for comments and check runs; needs pull-requests: write and checks: write."}},
	{Name: "comment-user", Type: String, Default: "github-actions[bot]",
		// Outside a workflow, none: the client asks GitHub whose token it is.
		Input: &Input{Empty: Text(""), Doc: "The login github-token writes comments as. Only comments of this user that start with the action's hidden marker are edited, marked outdated or deleted; anyone else's are left alone. github-actions[bot] for the workflow's GITHUB_TOKEN; your login for a personal access token; <app-slug>[bot] for a GitHub App's token."}},
	{Name: "ignore-fields", Type: List, DefaultDoc: "none", Help: "comma-separated attribute paths no comparison counts (fields a controller or webhook owns)",
		Flag:  &Flag{Commands: runs("drift")},
		Input: &Input{Doc: "Attribute paths no comparison counts, one per line (fields a controller or webhook owns), e.g. metadata.annotations.example.com/revision."}},
	{Name: "max-parallel", Type: Int, Default: "4", Help: "stacks worked on at once",
		Flag:  &Flag{Commands: []string{"drift"}},
		Input: &Input{Doc: "Stacks worked on at once."}},
	{Name: "comment", Type: String, Default: "always",
		Help: "how a run's stacks are commented on: always (a comment per stack), on-change (only stacks with changes, drift or errors), combined (one comment for the pull request) or never",
		Check: check(func(c string) error {
			switch c {
			case "always", "on-change", "combined", "never":
				return nil
			}
			return fmt.Errorf("%q is not always, on-change, combined or never", c)
		}),
		Input: &Input{Doc: "always (one comment per touched stack, edited in place), on-change (only stacks with changes, drift or errors), combined (one comment for the whole pull request, edited in place, a collapsed section per stack) or never. Every preview also sets one check run, kusion/preview, summing up all stacks: the one to require in branch protection."},
		Var:   &Var{Name: "KUSIONPR_COMMENT", YAML: "comment", Bot: true}},
	{Name: "combine-above", Type: Int, Default: "10", Range: &Range{Min: 0, Want: "a number of stacks (0 never combines)"},
		Help:  "when a run touches more stacks than this, they are reported together, in one comment and one check run; 0 never combines",
		Input: &Input{Doc: "When a push touches more stacks than this, they are reported together (as comment: combined does, and with one check run instead of one per stack), to stay within GitHub's limits on content creation; the job log and the comment say so. 0 never switches."},
		Var:   &Var{Name: "KUSIONPR_COMBINE_ABOVE", YAML: "combineAbove", Bot: true}},
	{Name: "max-comments", Type: Int, Default: "10",
		Input: &Input{Doc: "The most comments one stack's preview (or the combined comment) is split into; the rest goes to the job summary."}},
	{Name: "record-unchanged", Type: Bool, Default: "false", Help: "on apply or destroy, write a release even when there is nothing to change (an audit trail of every run)",
		Flag:  &Flag{Commands: runs()},
		Input: &Input{Doc: "true writes a release for an apply or destroy of a stack with nothing to change (an audit trail of every run). Default false: such a stack gets no release, and its check says so."}},
	{Name: "deployments", Type: Bool, Default: "true", Help: "record each apply and destroy as a GitHub deployment of the commit, environment kusion/<project>/<workspace>",
		Input: &Input{Doc: "true records each apply and destroy as a GitHub deployment of the commit, environment kusion/<project>/<workspace> (the job needs permissions: deployments: write; without it the apply goes on and the log says why). false records none."},
		Var:   &Var{Name: "KUSIONPR_DEPLOYMENTS", YAML: "deployments", Bot: true}},
	{Name: "policy", Type: String, Default: "policy",
		Help:  "the repository's folder of Rego policies, read at the commit the change was made onto; none reads none",
		Parse: func(s string) (any, error) { return strings.Trim(s, "/"), nil },
		Check: check(func(d string) error {
			if d != "none" && !workflow.InRepository(d) {
				return fmt.Errorf("%q is not a folder inside a repository (or none)", d)
			}
			return nil
		}),
		// Outside a workflow, none, as it always was.
		Input: &Input{Empty: Text("none"), Doc: "The repository's folder of Rego policies judging each stack's plan (deny, violation and warn rules; see docs/policy.md). On a pull request and a merge queue's group it is read, through the API, as the base commit holds it, never the change's own; on a push, as the commit holds it. none reads no policies."},
		Var:   &Var{Name: "KUSIONPR_POLICY_DIR", YAML: "policyDir", Bot: true}},
	{Name: "policy-packages", Type: List, DefaultDoc: "main", Help: "the Rego packages whose deny, violation and warn rules count",
		Input: &Input{Doc: "Comma-separated Rego packages whose deny, violation and warn rules count (default main)."},
		Var:   &Var{Name: "KUSIONPR_POLICY_PACKAGES", YAML: "policyPackages", Bot: true}},
	{Name: "lease", Type: Duration, Default: durationText(backend.DefaultLease),
		Help:  "how long a running release holds its stack without a sign of life before the next run takes it as abandoned",
		Flag:  &Flag{Commands: runs()},
		Input: &Input{Doc: "How long a running release holds its stack without a sign of life before the next run takes over."},
		Var:   &Var{Name: "KUSIONPR_LEASE", YAML: "lease", Bot: true}},
	{Name: "timeout", Type: Duration, Default: durationText(kubernetes.DefaultReadyTimeout), Check: positive("90s or 10m", durationText(kubernetes.DefaultReadyTimeout)),
		Help:  "how long apply and destroy wait for each Kubernetes object to be ready, or to be gone once deleted; past it the release is marked failed and the objects stay as applied",
		Flag:  &Flag{Commands: runs()},
		Input: &Input{Doc: "How long an apply or destroy waits for each Kubernetes object to be ready, or to be gone once deleted; the job log shows what it waits for. Past it the release is marked failed and the objects stay as applied."},
		Var:   &Var{Name: "KUSIONPR_READY_TIMEOUT", YAML: "readyTimeout", Bot: true}},
	{Name: "rate-limit-wait", Type: Duration, Default: durationText(githubapi.DefaultMaxWait), Check: positive("90s or 10m", durationText(githubapi.DefaultMaxWait)),
		Help:  "how long one GitHub request may wait in all for GitHub's rate limits (Retry-After, the limit's reset) before it fails, naming the request",
		Input: &Input{Doc: "How long one request to GitHub may wait for GitHub's rate limits (Retry-After, the hourly reset) before the step fails naming it. The job log says how long the run waited in all."},
		Var:   &Var{Name: "KUSIONPR_RATE_LIMIT_WAIT", YAML: "rateLimitWait", Bot: true}},
	{Name: "terraform-cli-config", Type: String, Secret: true,
		Input: &Input{Doc: "The content of a Terraform CLI configuration (provider mirrors, credentials)."}},
	{Name: "terraform-providers", Type: List, DefaultDoc: "none",
		Help:       "comma-separated provider sources allowed besides the public registries' hashicorp/* and the CLI configuration's mirrors, e.g. registry.terraform.io/acme/*",
		CheckNamed: terraformCheck(func(l []string) terraform.Config { return terraform.Config{AllowProviders: l} }),
		Flag:       &Flag{Commands: runs("drift"), FromEnv: true},
		Input:      &Input{Doc: "Provider sources a spec may use besides the public registries' hashicorp/* and the providers the CLI configuration mirrors, one per line or comma-separated: host/namespace/type, * for a whole segment (registry.terraform.io/acme/*). Any other is refused before Terraform installs anything."},
		Var:        &Var{Name: "KUSIONPR_TERRAFORM_PROVIDERS", YAML: "terraformProviders", Bot: true}},
	{Name: "terraform-provider-settings", Type: List, DefaultDoc: "none",
		Help:       "comma-separated provider arguments a spec's providerMeta may set besides region: name, type.name (aws.endpoints), type.* or *",
		CheckNamed: terraformCheck(func(l []string) terraform.Config { return terraform.Config{ProviderSettings: l} }),
		Flag:       &Flag{Commands: runs("drift"), FromEnv: true},
		Input:      &Input{Doc: "Provider arguments a spec's providerMeta may set besides region, one per line or comma-separated: name (any provider's), type.name (aws.endpoints), type.* or *. The others, which choose how a provider authenticates or run commands (credentials, profiles, roles, files, the kubernetes and helm providers' exec), are refused before Terraform runs."},
		Var:        &Var{Name: "KUSIONPR_TERRAFORM_PROVIDER_SETTINGS", YAML: "terraformProviderSettings", Bot: true}},
	{Name: "terraform-env", Type: List, DefaultDoc: "none",
		Help:       "comma-separated variables (or patterns) of ours terraform and its providers get besides PATH, HOME, proxies, TF_*..., e.g. AWS_REGION,ARM_*",
		CheckNamed: terraformCheck(func(l []string) terraform.Config { return terraform.Config{PassEnv: l} }),
		Flag:       &Flag{Commands: runs("drift"), FromEnv: true},
		Input:      &Input{Doc: "Variables of the job's environment Terraform and its providers get, one per line or comma-separated, * as a wildcard (AWS_REGION, ARM_*). Only PATH, HOME, TMPDIR, locale, proxies, SSL_CERT_*, TF_* and CHECKPOINT_DISABLE are passed otherwise: never the GitHub token, the kubeconfig or other inputs."},
		Var:        &Var{Name: "KUSIONPR_TERRAFORM_ENV", YAML: "terraformEnv", Bot: true}},
	{Name: "request", Type: String, Help: "the request to run, as JSON",
		Flag:  &Flag{Commands: []string{"execute"}, FromEnv: true},
		Input: &Input{Doc: "Set by a workflow the kusionpr bot dispatches (executor: github-actions, on: workflow_dispatch): the one request, as JSON, to run on the checkout in the workspace (check out its commit first). The action comments on nothing and writes the result to the file named by the output result-file, for actions/upload-artifact; the bot reports. See .github/workflow-examples/kusion-run.yml."},
		Var:   &Var{Name: "KUSIONPR_REQUEST"}},
	{Name: "issues", Type: Bool, Default: "false",
		Input: &Input{Doc: "With command drift: keep one issue per drifted stack, labelled kusion-drift, edited on every scan and closed when the drift is gone (the token needs issues: write). Default: false."}},
	{Name: "fail-on-drift", Type: Bool, Default: "true",
		Input: &Input{Doc: "With command drift: fail the step (exit code 2) when some stack drifted. false leaves drift to the outputs and the issues."}},

	// The action's command line alone.
	{Name: "output", Type: String, Default: "text", Help: "output format: json, markdown or text",
		Check: check(func(s string) error { _, err := report.ParseFormat(s); return err }),
		Flag:  &Flag{Name: "o", Commands: runs("drift")}},
	{Name: "yes", Type: Bool, Default: "false", Help: "apply, destroy or roll back without asking", Flag: &Flag{Commands: runs()}},
	{Name: "dry-run", Type: Bool, Default: "false", Help: "show what would happen; change nothing anywhere", Flag: &Flag{Commands: runs()}},
	{Name: "parallelism", Type: Int, Default: "10", Help: "resources worked on at once", Flag: &Flag{Commands: runs("drift")}},
	{Name: "force-conflicts", Type: Bool, Default: "true", Help: "on apply, take over fields another field manager owns", Flag: &Flag{Commands: runs()}},
	{Name: "no-watch", Type: Bool, Default: "false", Help: "do not wait for applied resources to become ready", Flag: &Flag{Commands: runs()}},
	{Name: "log-level", Type: String, Default: "info", Help: "debug, info, warn or error",
		Check: check(func(s string) error { var l slog.Level; return l.UnmarshalText([]byte(s)) }),
		Flag:  &Flag{Commands: runs("drift"), Default: map[string]string{"drift": "warn"}}},
	{Name: "terraform-binary", Type: String, DefaultDoc: "terraform, then tofu, on PATH", Help: "terraform or tofu executable",
		Flag: &Flag{Commands: runs("drift"), FromEnv: true}, Var: &Var{Name: "KUSIONPR_TERRAFORM_BINARY"}},
	{Name: "terraform-cache", Type: String, DefaultDoc: "the user cache folder's kusionpr/terraform",
		Help: "folder for Terraform working folders and plugin cache",
		Flag: &Flag{Commands: runs("drift"), FromEnv: true}, Var: &Var{Name: "KUSIONPR_TERRAFORM_CACHE"}},
	{Name: "hold-wait", Type: Duration, Default: "30m", Help: "how long an apply waits for another run holding its stack to end",
		Flag: &Flag{Commands: []string{"execute"}}, Var: &Var{Name: "KUSIONPR_HOLD_WAIT", YAML: "holdWait", Bot: true}},
	{Name: "generate-output", Type: String, Help: "write the Spec to this file instead of standard output",
		Flag: &Flag{Name: "o", Commands: []string{"generate"}}},
	{Name: "format", Type: String, Default: "yaml", Help: "yaml or json", Flag: &Flag{Commands: []string{"generate"}}},
	{Name: "reason", Type: String, Help: "why the running release is ended or cancelled (recorded with it)", Flag: &Flag{Commands: []string{"unlock", "cancel"}}},
	{Name: "rollback-to", Type: Int, Default: "0", DefaultDoc: "required", Range: &Range{Min: 0, Want: "a release's revision"},
		Help: "the revision of the release whose recorded spec the stack goes back to", Flag: &Flag{Name: "to", Commands: []string{"rollback"}}},
	{Name: "releases-output", Type: String, Default: "text", Help: "output format: text or json", Check: textOrJSON,
		Flag: &Flag{Name: "o", Commands: []string{"releases"}}},
	{Name: "releases-limit", Type: Int, Default: "20", Range: &Range{Min: 0, Want: "a number of releases (0 for all)"},
		Help: "how many releases, newest first (0 for all)", Flag: &Flag{Name: "limit", Commands: []string{"releases"}}},
	{Name: "releases-all-projects", Type: Bool, Default: "false",
		Help: "list the releases of every project in the store (of --workspace's, if given) in place of the stack's: a PostgreSQL store answers it",
		Flag: &Flag{Name: "all-projects", Commands: []string{"releases"}}},
	{Name: "releases-running", Type: Bool, Default: "false", Help: "list only the releases that have not ended: what runs now, or died holding its stack",
		Flag: &Flag{Name: "running", Commands: []string{"releases"}}},
	{Name: "policy-test-dir", Type: String, Default: "policy", Help: "the policy folder: every .rego file below it, *_test.rego included",
		Flag: &Flag{Name: "dir", Commands: []string{"policy test"}}},
	{Name: "policy-test-output", Type: String, Default: "text", Help: "output format: text or json", Check: textOrJSON,
		Flag: &Flag{Name: "o", Commands: []string{"policy test"}}},

	// The bot alone.
	{Name: "config", Type: String, DefaultDoc: "none", Help: "a YAML file with the bot's settings, each under its key (a variable that is set wins)",
		Var: &Var{Name: ConfigVar, Bot: true}},
	{Name: "webhook-secret", Type: String, Secret: true, DefaultDoc: "required",
		Required: "the bot refuses unsigned webhooks, so it needs the App's webhook secret",
		Help:     "the App's webhook secret, without a trailing newline; unsigned or badly signed deliveries are refused",
		Var:      &Var{Name: "KUSIONPR_WEBHOOK_SECRET", YAML: "webhookSecret", Bot: true}},
	{Name: "app-id", Type: Int, Default: "0", DefaultDoc: "required", Help: "the App's ID",
		Required: `the bot needs its GitHub App's ID (the App's settings page, "App ID")`,
		Check: check(func(n int64) error {
			if n < 0 {
				return fmt.Errorf("%d is not an App ID (a positive number)", n)
			}
			return nil
		}),
		Var: &Var{Name: "KUSIONPR_APP_ID", YAML: "appID", Bot: true}},
	{Name: "app-private-key", Type: String, Secret: true, DefaultDoc: "none; this or KUSIONPR_APP_PRIVATE_KEY_PATH is required",
		Help: "the App's private key (PEM), checked at start; prefer it to the file, which stays readable by every process of the bot's user",
		Var:  &Var{Name: "KUSIONPR_APP_PRIVATE_KEY", YAML: "privateKey", Bot: true}},
	{Name: "app-private-key-path", Type: String, Unset: true, Help: "the file holding the App's private key",
		Var: &Var{Name: "KUSIONPR_APP_PRIVATE_KEY_PATH", YAML: "privateKeyPath", Bot: true}},
	{Name: "listen", Type: String, Default: ":8080", Help: "the address of /webhook, /healthz, /readyz and /metrics",
		Var: &Var{Name: "KUSIONPR_LISTEN", YAML: "listen", Bot: true}},
	{Name: "github-api-url", Type: String, DefaultDoc: "https://api.github.com/", Help: "GitHub's REST root; GitHub Enterprise Server's is https://HOST/api/v3",
		Var: &Var{Name: "KUSIONPR_GITHUB_API_URL", YAML: "apiURL", Bot: true}},
	{Name: "concurrency", Type: Int, Default: "4", Range: &Range{Min: 1}, Help: "runs at once in one replica",
		Var: &Var{Name: "KUSIONPR_CONCURRENCY", YAML: "concurrency", Bot: true}},
	{Name: "allow-repos", Type: List, DefaultDoc: "all", Help: "comma-separated owner/repo the bot acts on; others are ignored",
		Var: &Var{Name: "KUSIONPR_ALLOW_REPOS", YAML: "allowRepos", Bot: true}},
	{Name: "apply-branches", Type: List, DefaultDoc: "the default branch",
		Help:       "comma-separated branches (names or patterns such as release/*; @default is each repository's default branch) whose merges, merge queue groups and pull requests apply; a pull request into another is previewed, never applied",
		CheckNamed: func(name string, v any) error { return workflow.CheckApplyBranches(name, v.([]string)) },
		Var:        &Var{Name: "KUSIONPR_APPLY_BRANCHES", YAML: "applyBranches", Bot: true}},
	{Name: "require-approval", Type: Bool, Default: "true",
		Help: "/kusion apply before merge needs an approval of the exact head commit by someone with write access other than the author",
		Var:  &Var{Name: "KUSIONPR_REQUIRE_APPROVAL", YAML: "requireApproval", Bot: true}},
	{Name: "require-last-push-approval", Type: Bool, Default: "false",
		Help: "... and other than whoever pushed the head, as GitHub's branch rule \"require approval of the most recent reviewable push\"",
		Var:  &Var{Name: "KUSIONPR_REQUIRE_LAST_PUSH_APPROVAL", YAML: "requireLastPushApproval", Bot: true}},
	{Name: "require-mergeable", Type: Bool, Default: "true", Help: "... a pull request whose mergeable_state is one of KUSIONPR_MERGEABLE_STATES",
		Var: &Var{Name: "KUSIONPR_REQUIRE_MERGEABLE", YAML: "requireMergeable", Bot: true}},
	{Name: "mergeable-states", Type: List, Default: "clean", Check: check(mergeableStates),
		Help: "comma-separated mergeable_state values an apply accepts: clean, and also unstable (a check that is not required failed) or has_hooks (GitHub Enterprise's pre-receive hooks)",
		Var:  &Var{Name: "KUSIONPR_MERGEABLE_STATES", YAML: "mergeableStates", Bot: true}},
	{Name: "require-checks", Type: Bool, Default: "true", Help: "... green checks: every check run and commit status on the head but those this App made",
		Var: &Var{Name: "KUSIONPR_REQUIRE_CHECKS", YAML: "requireChecks", Bot: true}},
	{Name: "shutdown-delay", Type: Duration, Default: "5s", Help: "how long after SIGTERM /readyz answers 503 while deliveries are still taken",
		Var: &Var{Name: "KUSIONPR_SHUTDOWN_DELAY", YAML: "shutdownDelay", Bot: true}},
	{Name: "shutdown-timeout", Type: Duration, Default: "10m", Help: "how long SIGTERM waits for running applies",
		Var: &Var{Name: "KUSIONPR_SHUTDOWN_TIMEOUT", YAML: "shutdownTimeout", Bot: true}},
	{Name: "recover-window", Type: Duration, Default: "24h",
		Help: "how far back the bot looks for work it missed: on start, merges whose apply left no release; at each redelivery pass, deliveries it could not take; 0 turns both off",
		Var:  &Var{Name: "KUSIONPR_RECOVER_WINDOW", YAML: "recoverWindow", Bot: true}},
	{Name: "redeliver-interval", Type: Duration, Default: "5m",
		Help: "how often the bot asks GitHub again for the deliveries it could not take, besides at start and after refusing one for want of room or time; 0 turns redelivery off",
		Var:  &Var{Name: "KUSIONPR_REDELIVER_INTERVAL", YAML: "redeliverInterval", Bot: true}},
	{Name: "max-unverified-bytes", Type: Int, Default: strconv.Itoa(64 << 20), Range: &Range{Min: 1 << 20},
		Help: "webhook bodies held at once before their signature is checked, in bytes (64 MiB)",
		Var:  &Var{Name: "KUSIONPR_MAX_UNVERIFIED_BYTES", YAML: "maxUnverifiedBytes", Bot: true}},
	{Name: "max-checkout-bytes", Type: Int, Default: strconv.Itoa(1 << 30), Range: &Range{Min: 1},
		Help: "the most a repository's archive may unpack to, in bytes (1 GiB)",
		Var:  &Var{Name: "KUSIONPR_MAX_CHECKOUT_BYTES", YAML: "maxCheckoutBytes", Bot: true}},
	{Name: "max-checkout-files", Type: Int, Default: "100000", Range: &Range{Min: 1},
		Help: "the most files and folders a repository's archive may unpack to",
		Var:  &Var{Name: "KUSIONPR_MAX_CHECKOUT_FILES", YAML: "maxCheckoutFiles", Bot: true}},
	{Name: "apply-in-queue", Type: List, DefaultDoc: "none", Check: check(repositories),
		Help: "repositories (owner/name, comma-separated, or *) whose merge queue groups into the default branch are applied in the queue, on the group's commit",
		Var:  &Var{Name: "KUSIONPR_APPLY_IN_QUEUE", YAML: "applyInQueue", Bot: true}},
	{Name: "queue-wait", Type: Duration, Default: "1h", Check: positive("30m or 2h", "1h"),
		Help: "how long a merge queue's group waits for the group ahead of it to land or pass before it fails unapplied",
		Var:  &Var{Name: "KUSIONPR_QUEUE_WAIT", YAML: "queueWait", Bot: true}},
	{Name: "executor", Type: String, Default: "in-process",
		Help: "where stacks run: in-process, kubernetes (a Job per stack, set in the file's kubernetesJobs) or github-actions (a run of the repository's workflow per stack, set in the file's githubActions)",
		Var:  &Var{Name: "KUSIONPR_EXECUTOR", YAML: "executor", Bot: true}},
	{Name: "kubernetes-jobs", Type: Object, DefaultDoc: "none", Help: "the executor kubernetes' Jobs: image, namespace, ServiceAccount...",
		Var: &Var{YAML: "kubernetesJobs", Bot: true}},
	{Name: "github-actions", Type: Object, DefaultDoc: "none", Help: "the executor github-actions' runs: workflow, pollInterval, timeout",
		Var: &Var{YAML: "githubActions", Bot: true}},
	{Name: "executor-rules", Type: Object, DefaultDoc: "none", Help: "rules sending some repositories' or stacks' runs to another executor, the first match winning: [{repositories, stacks, executor}]",
		Var: &Var{YAML: "executorRules", Bot: true}},
	{Name: "untrusted-previews", Type: String, DefaultDoc: "as the rules pick", Help: "the executor of the previews of pull requests from forks",
		Var: &Var{Name: "KUSIONPR_UNTRUSTED_PREVIEWS", YAML: "untrustedPreviews", Bot: true}},
	{Name: "repository-executors", Type: List, DefaultDoc: "none",
		Help: "comma-separated executors a repository may pick for its stacks in .github/kusionpr.yaml on its default branch; none: the file is not read",
		Var:  &Var{Name: "KUSIONPR_REPOSITORY_EXECUTORS", YAML: "repositoryExecutors", Bot: true}},
	{Name: "policies", Type: List, DefaultDoc: "none", Help: "comma-separated folders of the operator's own policies, judging every repository",
		Check: check(func(dirs []string) error {
			for _, dir := range dirs {
				if st, err := os.Stat(dir); err != nil || !st.IsDir() {
					return fmt.Errorf("%s is not a folder", dir)
				}
			}
			return nil
		}),
		Var: &Var{Name: "KUSIONPR_POLICIES", YAML: "policies", Bot: true}},
	{Name: "policy-override", Type: String, Default: "admin",
		Help: "the permission /kusion apply --override-policy <rule> needs: admin, maintain, write, or none (no override)",
		Check: check(func(p string) error {
			switch p {
			case "admin", "maintain", "write", "none":
				return nil
			}
			return fmt.Errorf("%q is not admin, maintain, write or none", p)
		}),
		Var: &Var{Name: "KUSIONPR_POLICY_OVERRIDE", YAML: "policyOverride", Bot: true}},
	{Name: "policy-max-memory", Type: Int, Default: strconv.Itoa(policy.DefaultMaxMemory), Range: &Range{Min: 64 << 20},
		Help: "the memory, in bytes, of the child process each evaluation of policies runs in (512 MiB); past it, or past the rules' 5 s, the stack is refused",
		Var:  &Var{Name: "KUSIONPR_POLICY_MAX_MEMORY", YAML: "policyMaxMemory", Bot: true}},
	{Name: "drift-every", Type: Duration, Default: "0", DefaultDoc: "0, never",
		Help: "how often the stacks of each repository are scanned for drift; needs KUSIONPR_BACKEND and the in-process executor",
		Var:  &Var{Name: "KUSIONPR_DRIFT_EVERY", YAML: "driftEvery", Bot: true}},
	{Name: "drift-jitter", Type: Duration, Default: "0", DefaultDoc: "a tenth of KUSIONPR_DRIFT_EVERY", Help: "how much each replica's scans wander around the schedule",
		Var: &Var{Name: "KUSIONPR_DRIFT_JITTER", YAML: "driftJitter", Bot: true}},
	{Name: "drift-repositories", Type: List, DefaultDoc: "*", Check: check(repositories), Help: "the repositories (owner/name, comma-separated, or *) scanned on the schedule",
		Var: &Var{Name: "KUSIONPR_DRIFT_REPOSITORIES", YAML: "driftRepositories", Bot: true}},

	// KCL's, read from the environment by the bot, the action, and the
	// Jobs the bot starts, one name everywhere (engine/kcl).
	{Name: "kcl-allow", Type: String, DefaultDoc: "Kusion's and KCL's catalogs on GitHub and ghcr.io",
		Help: "where stacks in KCL may fetch their kcl.mod dependencies from (host[:port][/path-prefix], comma-separated); any other source is refused before a connection",
		Var:  &Var{Name: deps.AllowSetting, Bot: true, Action: true}},
	{Name: "kcl-mirrors", Type: String, DefaultDoc: "none", Help: "from=to prefix rewrites of those sources (a registry or git server of your own), applied before the allowlist",
		Var: &Var{Name: deps.MirrorsSetting, Bot: true, Action: true}},
	{Name: "kcl-cache", Type: String, DefaultDoc: "the user cache folder's kusionpr/kcl", Help: "where fetched KCL packages are kept, by content",
		Var: &Var{Name: kcl.CacheSetting, Bot: true, Action: true}},
	{Name: "kcl-unconfined", Type: Bool, Default: "false",
		Help: "true compiles KCL where the kernel cannot confine it (no Landlock); by default such a stack is refused naming this setting",
		Var:  &Var{Name: kcl.UnconfinedSetting, Bot: true, Action: true}},
	{Name: "kcl-runtime", Type: String, DefaultDoc: "none (the image sets /opt/kcl)", Help: "KCL's runtime: a Python environment holding kcl-lib (hack/kcl.sh install makes one)",
		Var: &Var{Name: kcl.RuntimeSetting, Bot: true, Action: true}},
}

// runs are the commands that run a stack (action run's), and more.
func runs(more ...string) []string {
	return append([]string{"preview", "apply", "destroy", "rollback", "execute"}, more...)
}

// textOrJSON checks an output format of text or json.
var textOrJSON = check(func(s string) error {
	if s != "text" && s != "json" {
		return fmt.Errorf("%q is neither text nor json", s)
	}
	return nil
})

// check adapts a check of one type of value.
func check[T any](f func(T) error) func(any) error {
	return func(v any) error { return f(v.(T)) }
}

// positive accepts a positive duration, with examples and the default
// in what it says of another.
func positive(examples, def string) func(any) error {
	return check(func(d time.Duration) error {
		if d <= 0 {
			return fmt.Errorf("%s is not a positive duration: want one such as %s (default %s)", d, examples, def)
		}
		return nil
	})
}

// terraformCheck checks one of the Terraform runtime's lists; its errors
// name the setting by all its names (terraform.EnvSetting...).
func terraformCheck(config func([]string) terraform.Config) func(string, any) error {
	return func(_ string, v any) error { return config(v.([]string)).CheckSettings() }
}

// mergeableStates are the mergeable_state values an apply may accept:
// clean, and the two that merge as well but say more (a non-required
// check failed; GitHub Enterprise's pre-receive hooks).
func mergeableStates(states []string) error {
	const acceptable = "clean, unstable, has_hooks"
	if len(states) == 0 {
		return Predicate("is empty: name the mergeable_state values an apply accepts (%s)", acceptable)
	}
	for _, s := range states {
		switch s {
		case "clean", "unstable", "has_hooks":
		default:
			return fmt.Errorf("%q is not a state an apply may accept; accepted: %s", s, acceptable)
		}
	}
	return nil
}

// repositories refuses an entry that is neither owner/name nor *.
func repositories(list []string) error {
	for _, r := range list {
		if r != "*" && strings.Count(r, "/") != 1 {
			return fmt.Errorf("%q is not a repository (owner/name) or *", r)
		}
	}
	return nil
}

// durationText is a duration as one writes it: 5m, 1h, 30s.
func durationText(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
