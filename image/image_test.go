package image

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// TestImageRunsAsTheRunnerDoes runs the action's image as a GitHub-hosted
// runner runs a docker action (see job), against the fake GitHub over HTTPS
// and a stack of Kubernetes objects and Terraform resources on the test
// cluster: a pull request's preview (a comment, a check run, the outputs and
// the job summary written into the runner's files), then the push of its
// merge (Terraform, the image's, installs its provider from a mirror and
// applies with HOME and TMPDIR where the runner leaves them; the objects
// reach the cluster). A USER line in the Dockerfile makes it fail: the
// runner's files belong to uid 1001 and only root writes them.
func TestImageRunsAsTheRunnerDoes(t *testing.T) {
	b := newBuildah(t)
	kubeconfig, err := os.ReadFile(testenv.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	mirror := terraformMirror(t)
	gh := githubfake.NewTLS(t)

	j := newJob(t, b)
	suffix := fmt.Sprintf("%06x", rand.IntN(1<<24))
	ns, seed := "image-"+suffix, "seed-"+suffix
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", testenv.Kubeconfig(t), "delete", "namespace", ns, "--ignore-not-found", "--wait=false").Run()
	})
	const stack = "infra/dev"
	j.checkout(map[string]string{
		"README.md":           "# infra\n",
		"infra/project.yaml":  "name: infra-" + suffix + "\n",
		stack + "/stack.yaml": "name: dev\n",
		stack + "/spec.yaml": fmt.Sprintf(`resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}
- id: hashicorp:terraform:terraform_data:seed
  type: Terraform
  attributes: {input: %[2]s}
  extensions: {provider: terraform.io/builtin/terraform, resourceType: terraform_data}
- id: hashicorp:local:local_file:note
  type: Terraform
  attributes: {filename: /github/workspace/terraform-note.txt, content: "written by the provider\n"}
  extensions: {provider: registry.terraform.io/hashicorp/local/1.4.0, resourceType: local_file}
- id: v1:ConfigMap:%[1]s:from-terraform
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: from-terraform, namespace: %[1]s}
    data: {seed: $kusion_path.hashicorp:terraform:terraform_data:seed.output}
`, ns, seed),
	})
	// A step writes the company's CA into the runner's temp folder and the
	// job's env names it, as a workflow would:
	//   env: {SSL_CERT_DIR: ${{ runner.temp }}/ca}
	// (the runner translates the path to the container's). SSL_CERT_DIR adds
	// to the image's bundle; SSL_CERT_FILE would replace it.
	ca := filepath.Join(j.temp, "ca")
	if err := os.MkdirAll(ca, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ca, "test-ca.pem"), gh.CAPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	linkTree(t, mirror, filepath.Join(j.temp, "terraform-mirror"))
	j.chown(ca, true)
	inputs := map[string]string{
		"kubeconfig": string(kubeconfig),
		"terraform-cli-config": `provider_installation {
  filesystem_mirror {
    path    = "/github/runner_temp/terraform-mirror"
    include = ["registry.terraform.io/hashicorp/*", "registry.opentofu.org/hashicorp/*"]
  }
  direct {
    exclude = ["registry.terraform.io/*/*", "registry.opentofu.org/*/*"]
  }
}
`,
	}
	env := map[string]string{
		"GITHUB_API_URL": strings.TrimSuffix(gh.URL, "/"),
		"SSL_CERT_DIR":   "/github/runner_temp/ca",
	}

	const number = 42
	ev := githubfake.Event(t, "pull_request", "synchronize")
	pr := ev["pull_request"].(map[string]any)
	pr["number"], ev["number"] = float64(number), float64(number)
	headSHA := fmt.Sprintf("%040x", rand.Uint64())
	pr["head"].(map[string]any)["sha"] = headSHA
	full := fmt.Sprint(ev["repository"].(map[string]any)["full_name"])
	o, r, _ := strings.Cut(full, "/")
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{
		{Filename: stack + "/spec.yaml", Status: "modified"}, {Filename: "README.md", Status: "modified"},
	})

	// Without the CA the image does not trust the fake: the HTTPS call is
	// refused, nothing reaches GitHub.
	noCA := map[string]string{"GITHUB_API_URL": env["GITHUB_API_URL"]}
	if run := j.run("pull_request", ev, inputs, noCA); run.code == 0 || !strings.Contains(run.stdout+run.stderr, "certificate signed by unknown authority") {
		t.Fatalf("without the test CA: exit %d, want a refused certificate\nstdout:\n%s\nstderr:\n%s", run.code, run.stdout, run.stderr)
	}
	if n := len(gh.Calls()); n != 0 {
		t.Fatalf("without the test CA, the fake still got %d requests", n)
	}

	// 1. The pull request's preview.
	preview := j.run("pull_request", ev, inputs, env)
	t.Logf("the runner's command, as buildah:\n  buildah %s", strings.Join(quoted(preview.command), " "))
	if preview.code != 0 {
		t.Fatalf("preview exited %d\nstdout:\n%s\nstderr:\n%s", preview.code, preview.stdout, preview.stderr)
	}
	calls := gh.Calls()
	if len(calls) == 0 {
		t.Fatalf("the preview made no GitHub API call")
	}
	t.Logf("container start to the first GitHub API call: %s (%s %s)", calls[0].At.Sub(preview.started).Round(time.Millisecond), calls[0].Method, calls[0].Path)
	comments := gh.Comments(o, r, number)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "kusionpr:preview stack="+stack) ||
		!strings.Contains(comments[0].Body, "v1:ConfigMap:"+ns+":from-terraform") {
		t.Fatalf("comments on #%d: %+v, want one preview of %s", number, comments, stack)
	}
	checks := gh.CheckRuns(o, r)
	slices.SortFunc(checks, func(a, b githubfake.CheckRun) int { return strings.Compare(a.Name, b.Name) })
	if len(checks) != 2 || checks[1].Name != "kusion/preview: "+stack || checks[0].Name != "kusion/preview" {
		t.Errorf("check runs = %+v, want kusion/preview: %s and the overview, kusion/preview", checks, stack)
	}
	for _, ck := range checks {
		if ck.Status != "completed" || ck.Conclusion != "success" || ck.HeadSHA != headSHA {
			t.Errorf("check run %+v, want completed and successful on %s", ck, headSHA)
		}
	}
	assertOutputs(t, preview, stack, "true")
	if !strings.Contains(preview.summary, stack) {
		t.Errorf("job summary does not name %s:\n%s", stack, preview.summary)
	}
	// The runner's files are still its own (written, not replaced).
	for _, f := range []string{j.lastOutput, j.lastSummary} {
		if st, err := os.Stat(f); err != nil || st.Sys().(*syscall.Stat_t).Uid != runnerUID {
			t.Errorf("%s: %v, want a file of uid %d", f, err, runnerUID)
		}
	}

	// 2. The merge's push: the stack is applied.
	push := githubfake.Event(t, "push", "")
	sha := fmt.Sprintf("%040x", rand.Uint64())
	push["after"] = sha
	gh.SetCommitPulls(o, r, sha, []int{number})
	apply := j.run("push", push, inputs, env)
	if apply.code != 0 {
		t.Fatalf("apply exited %d\nstdout:\n%s\nstderr:\n%s", apply.code, apply.stdout, apply.stderr)
	}
	if got := kubectl(t, "get", "configmap", "from-terraform", "-n", ns, "-o", "jsonpath={.data.seed}"); got != seed {
		t.Errorf("ConfigMap data.seed = %q, want the terraform_data output %q", got, seed)
	}
	if got, err := os.ReadFile(filepath.Join(j.workspace, "terraform-note.txt")); err != nil || string(got) != "written by the provider\n" {
		t.Errorf("the local provider's file in the workspace: %q, %v", got, err)
	}
	var report bool
	for _, c := range gh.Comments(o, r, number) {
		report = report || strings.Contains(c.Body, "Applied stack")
	}
	if !report {
		t.Errorf("comments on the merged #%d: %+v, want an apply report", number, gh.Comments(o, r, number))
	}
	var applied bool
	for _, ck := range gh.CheckRuns(o, r) {
		applied = applied || (ck.HeadSHA == sha && ck.Status == "completed" && ck.Conclusion == "success")
	}
	if !applied {
		t.Errorf("no completed, successful check run on %s: %+v", sha, gh.CheckRuns(o, r))
	}
	assertOutputs(t, apply, stack, "true")
	// The default backend is ~/.kusion: the runner's home, kept by the job.
	if entries, err := os.ReadDir(filepath.Join(j.home, ".kusion")); err != nil || len(entries) == 0 {
		t.Errorf("no release under the runner's home (/github/home/.kusion): %v", err)
	}
}

// assertOutputs checks what the action writes to GITHUB_OUTPUT parses as
// action.yml documents it.
func assertOutputs(t *testing.T, r run, stack, changed string) {
	t.Helper()
	if r.outputs["changed"] != changed || r.outputs["complete"] != "true" {
		t.Errorf("outputs changed = %q, complete = %q; want %s and true", r.outputs["changed"], r.outputs["complete"], changed)
	}
	var stacks []string
	if err := json.Unmarshal([]byte(r.outputs["stacks"]), &stacks); err != nil || len(stacks) != 1 || stacks[0] != stack {
		t.Errorf("output stacks = %q (%v), want [%q]", r.outputs["stacks"], err, stack)
	}
	var summary map[string]map[string]int
	if err := json.Unmarshal([]byte(r.outputs["summary"]), &summary); err != nil || summary[stack] == nil {
		t.Errorf("output summary = %q (%v)", r.outputs["summary"], err)
	}
	var urls map[string][]string
	if err := json.Unmarshal([]byte(r.outputs["comment-urls"]), &urls); err != nil || len(urls[stack]) == 0 {
		t.Errorf("output comment-urls = %q (%v)", r.outputs["comment-urls"], err)
	}
}

// terraformMirror is the test environment's provider mirror, named by its
// Terraform CLI configuration.
func terraformMirror(t *testing.T) string {
	t.Helper()
	testenv.TerraformBinaries(t)
	rc, err := os.ReadFile(os.Getenv("TF_CLI_CONFIG_FILE"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`path\s*=\s*"([^"]+)"`).FindSubmatch(rc)
	if m == nil {
		t.Fatalf("%s names no filesystem mirror", os.Getenv("TF_CLI_CONFIG_FILE"))
	}
	return string(m[1])
}

// linkTree makes dst a copy of the folder src, hard-linking files where it can.
func linkTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if os.Link(p, to) == nil {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o755)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", testenv.Kubeconfig(t)}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// quoted shows a command line as a shell would take it (values with spaces
// or newlines, the kubeconfig's and the CLI configuration's, shortened).
func quoted(args []string) []string {
	var out []string
	for _, a := range args {
		if strings.Contains(a, "\n") {
			k, _, _ := strings.Cut(a, "=")
			a = k + "=..."
		}
		if strings.ContainsAny(a, " \"'$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out = append(out, a)
	}
	return out
}

// TestImageFollowsGitHubsDockerfileRules reads the built image's
// configuration and files against GitHub's "Dockerfile support for GitHub
// Actions": the default user (root), no working directory of its own, an
// exec-form entrypoint with an absolute path; and what a stack needs at run
// time, as the README's image section lists it.
func TestImageFollowsGitHubsDockerfileRules(t *testing.T) {
	b := newBuildah(t)
	cfg := b.config(t)
	if u := cfg.User; u != "" && u != "root" && u != "0" && u != "0:0" && u != "root:root" {
		t.Errorf("the image's user is %q: GitHub runs a docker action as the image's user, which must be root to write the runner's files", u)
	}
	if cfg.WorkingDir != "" && cfg.WorkingDir != "/" {
		t.Errorf("the image's working directory is %q: the runner replaces it with /github/workspace", cfg.WorkingDir)
	}
	if len(cfg.Entrypoint) != 1 || !filepath.IsAbs(cfg.Entrypoint[0]) {
		t.Errorf("entrypoint %q: want the exec form, one absolute path", cfg.Entrypoint)
	}

	ctr := b.container(t)
	root := b.output(t, "mount", ctr)
	t.Cleanup(func() { b.command(t.Context(), "umount", ctr).Run() })
	for _, bin := range []string{"action", "bot", "terraform"} {
		if st, err := os.Stat(filepath.Join(root, "usr/local/bin", bin)); err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("/usr/local/bin/%s: %v, want an executable", bin, err)
		}
	}
	if st, err := os.Stat(filepath.Join(root, "tmp")); err != nil || st.Mode()&os.ModeSticky == 0 || st.Mode().Perm() != 0o777 {
		t.Errorf("/tmp: %v, want mode 1777 (the action and Terraform write their temporary files there)", err)
	}
	bundle, err := os.ReadFile(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt"))
	if n := strings.Count(string(bundle), "BEGIN CERTIFICATE"); err != nil || n < 100 {
		t.Errorf("/etc/ssl/certs/ca-certificates.crt: %d certificates (%v), want the Mozilla bundle", n, err)
	}
	passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if err != nil || !strings.HasPrefix(string(passwd), "root:x:0:0:") || !strings.Contains(string(passwd), "\nnonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd: %q (%v), want root and nonroot (65532, the bot's user in deploy/kubernetes/bot.yaml)", passwd, err)
	}
	if _, err := os.Stat(filepath.Join(root, "usr/share/zoneinfo/Europe/Berlin")); err != nil {
		t.Errorf("time zones: %v", err)
	}
	for _, absent := range []string{"bin/sh", "usr/bin/apt-get"} {
		if _, err := os.Lstat(filepath.Join(root, absent)); err == nil {
			t.Errorf("/%s is in the image: it should hold static binaries only", absent)
		}
	}
}
