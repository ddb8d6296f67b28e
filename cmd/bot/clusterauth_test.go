package main

import (
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// withKeyInEnvironment gives the bot its App key as KUSIONPR_APP_PRIVATE_KEY
// (the PEM itself) instead of a file, so a child inheriting the variable
// would hold the key. It returns a line of the key's body to look for.
func withKeyInEnvironment(keyLine *string) worldOption {
	return func(w *world) {
		for _, kv := range w.env {
			if path, ok := strings.CutPrefix(kv, "KUSIONPR_APP_PRIVATE_KEY_PATH="); ok {
				b, err := os.ReadFile(path)
				if err != nil {
					w.t.Fatal(err)
				}
				block, _ := pem.Decode(b)
				if block == nil {
					w.t.Fatal("the test's App key is not PEM")
				}
				*keyLine = strings.Split(string(b), "\n")[1]
				w.env = append(w.env, "KUSIONPR_APP_PRIVATE_KEY="+string(b))
				return
			}
		}
		w.t.Fatal("no KUSIONPR_APP_PRIVATE_KEY_PATH in the bot's environment")
	}
}

// secretsIn names the bot's secrets found in s: the App key (by a line of
// its body), the webhook secret, the release store's secret key, and the
// variables that held them.
func secretsIn(s, keyLine string) []string {
	var found []string
	for name, v := range map[string]string{
		"the App key": keyLine, "the webhook secret": secret, "the store's secret key": os.Getenv("AWS_SECRET_ACCESS_KEY"),
		"KUSIONPR_APP_PRIVATE_KEY=": "KUSIONPR_APP_PRIVATE_KEY=", "KUSIONPR_WEBHOOK_SECRET=": "KUSIONPR_WEBHOOK_SECRET=",
	} {
		if v != "" && strings.Contains(s, v) {
			found = append(found, name)
		}
	}
	return found
}

// TestModuleBinarySeesNoSecrets: a merged pull request whose stack is
// generated through a Kusion module binary (the test module, which writes
// its environment to the file its workspace configuration names). The
// module runs, the apply succeeds, and the module saw neither the App's
// key nor the webhook secret nor the store's credentials; it saw the
// variable the operator passed with KUSIONPR_MODULE_ENV.
func TestModuleBinarySeesNoSecrets(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "acme", "echo", "0.1.0", runtime.GOOS, runtime.GOARCH)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "kusion-module-echo_0.1.0"),
		"../../engine/generate/module/testdata/kusion-module-echo").CombinedOutput(); err != nil {
		t.Fatalf("building the test module: %v\n%s", err, out)
	}
	var keyLine string
	w := newWorld(t, withKeyInEnvironment(&keyLine),
		withEnv("KUSION_MODULE_PATH="+home, "KUSIONPR_MODULE_ENV=ECHO_REGION", "ECHO_REGION=eu-west-1"))
	dump := filepath.Join(t.TempDir(), "module-env")

	// The project is named after the test's namespace: the app's objects
	// and the module's ConfigMap go there.
	os.Remove(filepath.Join(w.tree, "apps/web/dev/spec.yaml"))
	for p, content := range map[string]string{
		"apps/web/project.yaml": "name: " + w.ns + "\n",
		"apps/web/dev/main.yaml": `web:
  workload:
    _type: service.Service
    containers:
      web: {image: "nginx:1.27"}
  accessories:
    echo: {_type: echo.Echo}
`,
		"apps/web/workspaces/dev.yaml": fmt.Sprintf(`modules:
  echo:
    path: oci://ghcr.io/acme/echo
    version: 0.1.0
    configs:
      default:
        tier: gold
        dumpEnvTo: %s
`, dump),
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(w.tree, p)), 0o755)
		if err := os.WriteFile(filepath.Join(w.tree, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const number, head, merge = 61, "6161616161616161616161616161616161616161", "6262626262626262626262626262626262626262"
	w.pullRequest(number, head)
	w.gh.SetPullFiles(w.owner, w.repo, number, []githubfake.PullFile{{Filename: "apps/web/dev/main.yaml", Status: "added"}})
	w.mergeApplied(number, merge)
	out, err := exec.Command("kubectl", "--kubeconfig", testenv.Kubeconfig(t), "-n", w.ns, "get", "configmap", "web-echo", "-o", "jsonpath={.data.tier}").CombinedOutput()
	if err != nil || string(out) != "gold" {
		t.Errorf("the module's ConfigMap in the cluster: %v %s", err, out)
	}

	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatalf("the module did not run (no environment dump): %v", err)
	}
	env := string(b)
	if found := secretsIn(env, keyLine); len(found) > 0 {
		t.Errorf("the module binary's environment holds %s", strings.Join(found, ", "))
	}
	for _, v := range []string{"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "KUSIONPR_"} {
		if strings.Contains(env, v) {
			t.Errorf("the module binary's environment holds %s...", v)
		}
	}
	for _, want := range []string{"PATH=", "ECHO_REGION=eu-west-1", "MODULE_PLUGIN=ON"} {
		if !strings.Contains(env, want) {
			t.Errorf("the module binary's environment lacks %s:\n%s", want, env)
		}
	}
	// The premise: the bot itself had the secrets in its environment when
	// it started.
	if found := secretsIn(strings.Join(w.env, "\n"), keyLine); len(found) < 3 {
		t.Errorf("the bot was started with only %v: the test proves nothing about the others", found)
	}
}

// TestSpecKubeconfigRefusedUnlessAllowed: a `/kusion preview` comment,
// which needs no permission, on a pull request whose stacks' specs reach
// the cluster through an exec plugin, a tokenFile outside the checkout and
// a KUBECONFIG_PATH outside the checkout. By default each stack's comment
// names the field and KUSIONPR_SPEC_KUBECONFIG_ALLOW, and the plugin never
// ran; so does a fourth's, naming the EKS plugin. With exec and files
// allowed, the same comment previews the first three against the test
// cluster (the EKS one still refused, naming cloud-identity), and the plugin's environment held neither the
// App's key nor the webhook secret.
func TestSpecKubeconfigRefusedUnlessAllowed(t *testing.T) {
	var keyLine string
	w := newWorld(t, withKeyInEnvironment(&keyLine))
	marker := filepath.Join(t.TempDir(), "plugin-ran")
	envDump := filepath.Join(t.TempDir(), "plugin-env")
	os.RemoveAll(filepath.Join(w.tree, "apps/web"))
	stacks := testenv.WriteHostileStacks(t, w.tree, w.ns, marker, envDump, "KUSIONPR_SPEC_KUBECONFIG_ALLOW")
	const number, head = 62, "6363636363636363636363636363636363636363"
	w.pullRequest(number, head)
	var files []githubfake.PullFile
	for _, s := range stacks {
		files = append(files, githubfake.PullFile{Filename: s.Dir + "/spec.yaml", Status: "added"})
	}
	w.gh.SetPullFiles(w.owner, w.repo, number, files)
	w.gh.SetPermission(w.owner, w.repo, "stranger", "read")

	comment := func() map[string]any { return w.prComment(number, "stranger", "/kusion preview") }
	stackComment := func(dir string) string {
		for _, c := range w.gh.Comments(w.owner, w.repo, number) {
			if strings.Contains(c.Body, "stack="+dir+" ") {
				return c.Body
			}
		}
		return ""
	}
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", comment())
	for _, s := range stacks {
		w.waitFor("the refusal of "+s.Dir, func() bool { return strings.Contains(stackComment(s.Dir), "Preview of stack") })
		body := stackComment(s.Dir)
		for _, want := range append([]string{":x: Preview of stack", "spec context"}, s.Refusal...) {
			if !strings.Contains(body, want) {
				t.Errorf("%s: the comment lacks %q:\n%s", s.Dir, want, body)
			}
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the spec's exec plugin ran in the bot")
	}
	for _, s := range stacks {
		if err := exec.Command("kubectl", "--kubeconfig", testenv.Kubeconfig(t), "get", "namespace", s.Namespace).Run(); err == nil {
			t.Errorf("%s reached the cluster", s.Namespace)
		}
	}

	// The operator allows exec plugins and files: a new bot with the setting.
	w.bots[0].proc.Process.Kill()
	w.bots[0].proc.Wait()
	w.env = append(w.env, "KUSIONPR_SPEC_KUBECONFIG_ALLOW=exec,files")
	w.url = w.start().url
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", comment())
	for _, s := range stacks {
		if s.CloudIdentity {
			continue
		}
		w.waitFor("the preview of "+s.Dir, func() bool { return strings.Contains(stackComment(s.Dir), ":memo: Preview of stack") })
		body := stackComment(s.Dir)
		if !strings.Contains(body, "v1:ConfigMap:"+s.Namespace+":settings") || strings.Contains(body, "not allowed in a spec") {
			t.Errorf("%s: allowed, the preview is not shown:\n%s", s.Dir, body)
		}
	}
	// exec does not lend the runner's cloud identity: that stack's
	// comment (updated in place) still refuses it.
	for _, s := range stacks {
		if body := stackComment(s.Dir); s.CloudIdentity && !strings.Contains(body, s.Refusal[len(s.Refusal)-1]) {
			t.Errorf("%s: with exec and files allowed, not refused naming cloud-identity:\n%s", s.Dir, body)
		}
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("allowed, the exec plugin did not run: %v", err)
	}
	if _, err := os.Stat(marker + ".cloud"); err == nil {
		t.Error("the spec's aws plugin ran as a command")
	}
	b, err := os.ReadFile(envDump)
	if err != nil {
		t.Fatalf("the exec plugin wrote no environment: %v", err)
	}
	// The store's credentials are the bot's own, which every run uses: an
	// allowed plugin inherits them, as the README says. The App's key and
	// the webhook secret it must not.
	for _, found := range secretsIn(string(b), keyLine) {
		if found != "the store's secret key" {
			t.Errorf("the exec plugin's environment holds %s", found)
		}
	}
}

// TestCheckoutLookupsStopAtItsRoot: the bot's checkout lands in the
// temporary folder, where anyone on the machine may leave a project.yaml or
// a workspaces/ folder. A stack without a project of its own is refused
// rather than taken into the planted one, and a workspace file above the
// checkout does not name the stack's workspace.
func TestCheckoutLookupsStopAtItsRoot(t *testing.T) {
	tmp := t.TempDir()
	for p, content := range map[string]string{"project.yaml": "name: planted\n", "workspaces/dev.yaml": "{}\n"} {
		os.MkdirAll(filepath.Dir(filepath.Join(tmp, p)), 0o755)
		if err := os.WriteFile(filepath.Join(tmp, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := newWorld(t, withEnv("TMPDIR="+tmp))
	s := w.store()
	ctx := t.Context()

	project := filepath.Join(w.tree, "apps/web/project.yaml")
	if err := os.Remove(project); err != nil {
		t.Fatal(err)
	}
	const number, head, merge = 71, "7171717171717171717171717171717171717171", "7272727272727272727272727272727272727272"
	w.pullRequest(number, head)
	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)
	githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge))
	w.waitFor("the refusal of a stack without a project", func() bool {
		return w.commentsContaining(number, "no project.yaml in apps/web/dev or any folder above it up to the checkout's root") == 1
	})
	for _, ws := range []string{"dev", "default"} {
		if rel, err := s.Latest(ctx, "planted", ws); err != nil || rel != nil {
			t.Errorf("a release of the planted project, workspace %s: %+v (%v)", ws, rel, err)
		}
	}

	// With its project back, the stack is applied under its own
	// workspace, default: the planted workspaces/dev.yaml is not its.
	os.WriteFile(project, []byte("name: web\n"), 0o644)
	const number2, head2, merge2 = 72, "7373737373737373737373737373737373737373", "7474747474747474747474747474747474747474"
	w.pullRequest(number2, head2)
	w.gh.SetTree(w.owner, w.repo, merge2, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, number2, merge2)
	githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number2, merge2))
	w.waitFor("the apply", func() bool { return w.commentsContaining(number2, "Applied stack") == 1 })
	if rel, err := s.Latest(ctx, "web", "default"); err != nil || rel == nil || rel.Phase != "succeeded" {
		t.Errorf("release of web/default: %+v (%v)", rel, err)
	}
	if rel, err := s.Latest(ctx, "web", "dev"); err != nil || rel != nil {
		t.Errorf("a release under the planted workspace dev: %+v (%v)", rel, err)
	}
}
