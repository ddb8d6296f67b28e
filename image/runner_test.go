package image

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// runnerUID is the user GitHub-hosted runners run as; everything the runner
// mounts into an action's container belongs to it.
const runnerUID = 1001

// buildah runs buildah with the storage options the image was built under.
type buildah struct {
	opts  []string
	image string
}

func newBuildah(t *testing.T) buildah {
	t.Helper()
	image, opts := testenv.Image(t)
	if _, err := exec.LookPath("buildah"); err != nil {
		t.Fatalf("KUSIONPR_TEST_IMAGE is set but buildah is not on PATH: %v", err)
	}
	return buildah{opts: opts, image: image}
}

func (b buildah) command(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "buildah", append(append([]string{}, b.opts...), args...)...)
}

func (b buildah) output(t *testing.T, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := b.command(context.Background(), args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("buildah %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// container makes a working container of the image (docker run makes one
// per step, and so does each run here), removed at the test's end.
func (b buildah) container(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("kusionpr-test-%08x", rand.Uint32())
	b.output(t, "from", "--pull=never", "--quiet", "--name", name, b.image)
	t.Cleanup(func() { b.command(context.Background(), "rm", name).Run() })
	return name
}

// imageConfig is the part of the image's OCI configuration docker run reads.
type imageConfig struct {
	User       string   `json:"User"`
	Env        []string `json:"Env"`
	Entrypoint []string `json:"Entrypoint"`
	Cmd        []string `json:"Cmd"`
	WorkingDir string   `json:"WorkingDir"`
}

func (b buildah) config(t *testing.T) imageConfig {
	t.Helper()
	var v struct {
		OCIv1 struct {
			Config imageConfig `json:"config"`
		} `json:"OCIv1"`
	}
	if err := json.Unmarshal([]byte(b.output(t, "inspect", "--type", "image", b.image)), &v); err != nil {
		t.Fatalf("buildah inspect %s: %v", b.image, err)
	}
	return v.OCIv1.Config
}

// actionMetadata is what the runner reads of action.yml for a docker action.
type actionMetadata struct {
	Inputs map[string]struct {
		Default string `json:"default"`
	} `json:"inputs"`
	Runs struct {
		Using      string            `json:"using"`
		Image      string            `json:"image"`
		Args       []string          `json:"args"`
		Entrypoint string            `json:"entrypoint"`
		Env        map[string]string `json:"env"`
	} `json:"runs"`
}

func readActionYAML(t *testing.T) actionMetadata {
	t.Helper()
	b, err := os.ReadFile("../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var m actionMetadata
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if m.Runs.Using != "docker" {
		t.Fatalf("action.yml: runs.using is %q, want docker", m.Runs.Using)
	}
	return m
}

// expression is a ${{ ... }} of action.yml.
var expression = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// evaluate replaces the expressions action.yml's defaults and args use:
// github.token and inputs.NAME.
func evaluate(t *testing.T, s, token string, inputs map[string]string) string {
	t.Helper()
	return expression.ReplaceAllStringFunc(s, func(e string) string {
		x := expression.FindStringSubmatch(e)[1]
		switch {
		case x == "github.token":
			return token
		case strings.HasPrefix(x, "inputs."):
			return inputs[strings.TrimPrefix(x, "inputs.")]
		}
		t.Fatalf("action.yml: the test does not evaluate ${{ %s }}", x)
		return ""
	})
}

// job is a job of a GitHub-hosted runner at the step that uses the action,
// as actions/runner's ContainerActionHandler and DockerCommandManager set it
// up: the runner's temp folder with _github_home, _github_workflow and
// _runner_file_commands, and the checkout, all owned by the runner's user
// and mounted at /github/...; the checkout the working directory; the
// event's payload at /github/workflow/event.json; the file-command files
// made empty before the step; HOME=/github/home; every input as
// INPUT_<NAME> with hyphens kept; GITHUB_* and RUNNER_* with the runner's
// paths translated to the container's.
type job struct {
	t                                   *testing.T
	b                                   buildah
	meta                                actionMetadata
	temp, workspace                     string
	home, workflow, fileCommands        string
	token                               string
	step                                int
	runID                               int64
	lastOutput, lastSummary, lastCmdArg string
}

func newJob(t *testing.T, b buildah) *job {
	root := t.TempDir()
	j := &job{t: t, b: b, meta: readActionYAML(t), temp: filepath.Join(root, "_temp"), workspace: filepath.Join(root, "repo"),
		token: "ghs_" + strings.Repeat("x", 36), runID: 1000000 + rand.Int64N(1000000)}
	j.home = filepath.Join(j.temp, "_github_home")
	j.workflow = filepath.Join(j.temp, "_github_workflow")
	j.fileCommands = filepath.Join(j.temp, "_runner_file_commands")
	for _, d := range []string{j.temp, j.home, j.workflow, j.fileCommands, j.workspace} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

// checkout writes files into the checkout as actions/checkout would: owned
// by the runner's user.
func (j *job) checkout(files map[string]string) {
	for p, content := range files {
		full := filepath.Join(j.workspace, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			j.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			j.t.Fatal(err)
		}
	}
	j.chown(j.workspace, true)
}

// chown gives path (and, if all, everything under it) to the runner's user.
func (j *job) chown(path string, all bool) {
	j.t.Helper()
	if !all {
		if err := os.Lchown(path, runnerUID, runnerUID); err != nil {
			j.t.Fatal(err)
		}
		return
	}
	err := filepath.WalkDir(path, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, runnerUID, runnerUID)
	})
	if err != nil {
		j.t.Fatal(err)
	}
}

// run is one step's run of the action's container.
type run struct {
	code           int
	stdout, stderr string
	outputs        map[string]string
	summary        string
	started        time.Time
	// command is the buildah command line, to show how to do the same.
	command []string
}

// stepEnv is what the runner passes for a step: the inputs, GITHUB_*,
// RUNNER_*, HOME, CI and the step's own env.
func (j *job) stepEnv(eventName string, event map[string]any, inputs, env map[string]string) []string {
	j.step++
	suffix := fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rand.Uint32(), rand.Uint32()&0xffff, rand.Uint32()&0xffff, rand.Uint32()&0xffff, rand.Uint64()&0xffffffffffff)
	files := map[string]string{
		"GITHUB_OUTPUT": "set_output_", "GITHUB_STEP_SUMMARY": "step_summary_", "GITHUB_ENV": "set_env_",
		"GITHUB_PATH": "add_path_", "GITHUB_STATE": "save_state_",
	}
	var out []string
	add := func(k, v string) { out = append(out, k+"="+v) }
	for _, name := range slices.Sorted(maps.Keys(files)) {
		prefix := files[name]
		host := filepath.Join(j.fileCommands, prefix+suffix)
		if err := os.WriteFile(host, nil, 0o644); err != nil {
			j.t.Fatal(err)
		}
		j.chown(host, false)
		add(name, "/github/file_commands/"+prefix+suffix)
	}
	j.lastOutput = filepath.Join(j.fileCommands, files["GITHUB_OUTPUT"]+suffix)
	j.lastSummary = filepath.Join(j.fileCommands, files["GITHUB_STEP_SUMMARY"]+suffix)

	payload, err := json.MarshalIndent(event, "", "  ")
	if err != nil {
		j.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(j.workflow, "event.json"), payload, 0o644); err != nil {
		j.t.Fatal(err)
	}
	for _, d := range []string{j.temp, j.home, j.workflow, j.fileCommands, filepath.Join(j.workflow, "event.json")} {
		j.chown(d, false)
	}

	// Inputs: every one action.yml declares, its default unless the step
	// sets it; the name upper-cased, spaces to underscores, hyphens kept.
	values := map[string]string{}
	for name, in := range j.meta.Inputs {
		values[name] = evaluate(j.t, in.Default, j.token, nil)
	}
	for name, v := range inputs {
		if _, ok := j.meta.Inputs[name]; !ok {
			j.t.Fatalf("input %q is not in action.yml", name)
		}
		values[name] = v
	}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		add("INPUT_"+strings.ToUpper(strings.ReplaceAll(name, " ", "_")), values[name])
	}
	for _, k := range slices.Sorted(maps.Keys(j.meta.Runs.Env)) {
		add(k, evaluate(j.t, j.meta.Runs.Env[k], j.token, values))
	}

	repo := event["repository"].(map[string]any)
	owner := repo["owner"].(map[string]any)
	sender := event["sender"].(map[string]any)
	full := fmt.Sprint(repo["full_name"])
	ref, sha, headRef, baseRef := "", "", "", ""
	switch eventName {
	case "pull_request", "pull_request_target":
		pr := event["pull_request"].(map[string]any)
		ref = fmt.Sprintf("refs/pull/%.0f/merge", pr["number"])
		sha = fmt.Sprintf("%040x", rand.Uint64())
		headRef = fmt.Sprint(pr["head"].(map[string]any)["ref"])
		baseRef = fmt.Sprint(pr["base"].(map[string]any)["ref"])
	case "push":
		ref, sha = fmt.Sprint(event["ref"]), fmt.Sprint(event["after"])
	}
	refName := strings.TrimPrefix(strings.TrimPrefix(ref, "refs/heads/"), "refs/")
	add("HOME", "/github/home")
	for _, kv := range [][2]string{
		{"GITHUB_ACTIONS", "true"}, {"CI", "true"},
		{"GITHUB_WORKSPACE", "/github/workspace"}, {"GITHUB_EVENT_PATH", "/github/workflow/event.json"},
		{"GITHUB_EVENT_NAME", eventName}, {"GITHUB_REPOSITORY", full},
		{"GITHUB_REPOSITORY_ID", fmt.Sprintf("%.0f", repo["id"])}, {"GITHUB_REPOSITORY_OWNER", fmt.Sprint(owner["login"])},
		{"GITHUB_REPOSITORY_OWNER_ID", fmt.Sprintf("%.0f", owner["id"])},
		{"GITHUB_REF", ref}, {"GITHUB_REF_NAME", refName}, {"GITHUB_REF_TYPE", "branch"}, {"GITHUB_REF_PROTECTED", "false"},
		{"GITHUB_SHA", sha}, {"GITHUB_HEAD_REF", headRef}, {"GITHUB_BASE_REF", baseRef},
		{"GITHUB_ACTOR", fmt.Sprint(sender["login"])}, {"GITHUB_ACTOR_ID", fmt.Sprintf("%.0f", sender["id"])},
		{"GITHUB_TRIGGERING_ACTOR", fmt.Sprint(sender["login"])},
		{"GITHUB_RUN_ID", fmt.Sprint(j.runID)}, {"GITHUB_RUN_NUMBER", "7"}, {"GITHUB_RUN_ATTEMPT", "1"},
		{"GITHUB_JOB", "kusion"}, {"GITHUB_ACTION", fmt.Sprintf("__kusionpr_kusionpr_%d", j.step)},
		{"GITHUB_ACTION_REPOSITORY", "kusionpr/kusionpr"}, {"GITHUB_ACTION_REF", "v1"},
		{"GITHUB_WORKFLOW", "kusion"}, {"GITHUB_WORKFLOW_REF", full + "/.github/workflows/kusion.yml@" + ref},
		{"GITHUB_WORKFLOW_SHA", sha}, {"GITHUB_RETENTION_DAYS", "90"},
		{"GITHUB_SERVER_URL", "https://github.com"}, {"GITHUB_GRAPHQL_URL", "https://api.github.com/graphql"},
		{"RUNNER_OS", "Linux"}, {"RUNNER_ARCH", "X64"}, {"RUNNER_NAME", "GitHub Actions 1"},
		{"RUNNER_ENVIRONMENT", "github-hosted"}, {"RUNNER_TEMP", "/github/runner_temp"},
		{"RUNNER_TOOL_CACHE", "/opt/hostedtoolcache"}, {"RUNNER_WORKSPACE", "/home/runner/work/" + fmt.Sprint(repo["name"])},
		{"ACTIONS_RUNTIME_URL", "https://pipelines.actions.githubusercontent.com/test/"},
		{"ACTIONS_RUNTIME_TOKEN", "runtime-token"}, {"ACTIONS_RESULTS_URL", "https://results-receiver.actions.githubusercontent.com/"},
	} {
		add(kv[0], kv[1])
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		add(k, env[k])
	}
	return out
}

// run runs the action's container for one step: docker run --rm --workdir
// /github/workspace -e ... -v ... IMAGE ARGS, as buildah run in a fresh
// container of the image, with the image's own user and entrypoint.
func (j *job) run(eventName string, event map[string]any, inputs, env map[string]string) run {
	j.t.Helper()
	cfg := j.b.config(j.t)
	ctr := j.b.container(j.t)
	args := []string{"run", "--isolation", "chroot", "--workingdir", "/github/workspace"}
	for _, m := range [][2]string{
		{j.temp, "/github/runner_temp"}, {j.home, "/github/home"}, {j.workflow, "/github/workflow"},
		{j.fileCommands, "/github/file_commands"}, {j.workspace, "/github/workspace"},
	} {
		args = append(args, "-v", m[0]+":"+m[1])
	}
	for _, kv := range j.stepEnv(eventName, event, inputs, env) {
		args = append(args, "-e", kv)
	}
	// docker run IMAGE ARGS: the entrypoint, then the action's args in place
	// of the image's CMD, if it has any.
	cmdline := append([]string{ctr, "--"}, cfg.Entrypoint...)
	if len(j.meta.Runs.Args) > 0 {
		for _, a := range j.meta.Runs.Args {
			cmdline = append(cmdline, evaluate(j.t, a, j.token, inputs))
		}
	} else {
		cmdline = append(cmdline, cfg.Cmd...)
	}
	args = append(args, cmdline...)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := j.b.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := run{started: time.Now(), command: cmd.Args[1:]}
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		j.t.Fatalf("buildah run: %v", err)
	}
	r.stdout, r.stderr = stdout.String(), stderr.String()
	o, err := os.ReadFile(j.lastOutput)
	if err != nil {
		j.t.Fatal(err)
	}
	s, err := os.ReadFile(j.lastSummary)
	if err != nil {
		j.t.Fatal(err)
	}
	r.outputs, r.summary = parseOutputs(j.t, string(o)), string(s)
	return r
}

// parseOutputs reads GITHUB_OUTPUT as the runner does: name=value lines and
// name<<DELIMITER ... DELIMITER records; anything else fails the test, as
// the runner would fail the step.
func parseOutputs(t *testing.T, s string) map[string]string {
	t.Helper()
	out := map[string]string{}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		if lines[i] == "" {
			continue
		}
		if name, delim, ok := strings.Cut(lines[i], "<<"); ok && !strings.Contains(name, "=") {
			var val []string
			for i++; i < len(lines) && lines[i] != delim; i++ {
				val = append(val, lines[i])
			}
			if i == len(lines) {
				t.Fatalf("GITHUB_OUTPUT: %s has no closing %s", name, delim)
			}
			out[name] = strings.Join(val, "\n")
			continue
		}
		k, v, ok := strings.Cut(lines[i], "=")
		if !ok {
			t.Fatalf("GITHUB_OUTPUT: line %q is neither name=value nor name<<DELIMITER", lines[i])
		}
		out[k] = v
	}
	return out
}
