package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// withKCL gives the bots KCL's runtime and the settings that fetch
// Kusion's packages from the test environment's servers.
func withKCL(served testenv.KCLServed) worldOption {
	return func(w *world) {
		w.env = append(w.env, "KUSIONPR_KCL_RUNTIME="+testenv.KCLRuntime(w.t), "KUSIONPR_KCL_ALLOW="+served.Allow,
			"KUSIONPR_KCL_MIRRORS="+served.Mirrors, "KUSIONPR_KCL_CACHE="+w.t.TempDir())
	}
}

// writeTree writes files (path: content) into the world's repository.
func (w *world) writeTree(files map[string]string) {
	w.t.Helper()
	for name, body := range files {
		p := filepath.Join(w.tree, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			w.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			w.t.Fatal(err)
		}
	}
}

// TestKCLQuickstartOnMerge: the quickstart `kusion init` writes (main.k,
// its kcl.mod naming kam from git and service and network from OCI) is
// previewed by the bot on /kusion preview and applied on merge, as it is.
func TestKCLQuickstartOnMerge(t *testing.T) {
	served := testenv.KCLSettings(t)
	w := newWorld(t, withKCL(served), func(w *world) {
		os.Remove(filepath.Join(w.tree, "apps/web/dev/spec.yaml"))
		w.writeTree(map[string]string{
			"apps/web/dev/stack.yaml": "name: dev\nextensions:\n  - kind: kubernetesNamespace\n    kubernetesNamespace:\n      namespace: " + w.ns + "\n",
			"apps/web/dev/kcl.mod":    testenv.KCLQuickstartMod,
			"apps/web/dev/main.k":     testenv.KCLQuickstartMain,
		})
	})
	const number, head, merge = 34, "3434343434343434343434343434343434343434", "3535353535353535353535353535353535353535"
	w.pullRequest(number, head)
	w.gh.SetPullFiles(w.owner, w.repo, number, []githubfake.PullFile{{Filename: "apps/web/dev/main.k", Status: "added"}})
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "someone", "/kusion preview"))
	w.waitFor("the preview", func() bool { return w.commentsContaining(number, "Preview of stack") == 1 })
	deployment := "apps/v1:Deployment:" + w.ns + ":web-dev-quickstart"
	if w.commentsContaining(number, deployment) != 1 {
		t.Fatalf("the preview does not show %s: %+v\nlogs:\n%s", deployment, w.gh.Comments(w.owner, w.repo, number), w.logs())
	}

	w.mergeApplied(number, merge)
	out, err := exec.Command("kubectl", "--kubeconfig", testenv.Kubeconfig(t), "-n", w.ns, "get", "deployment", "web-dev-quickstart",
		"-o", "jsonpath={.spec.replicas}/{.spec.template.spec.containers[0].image}").CombinedOutput()
	if got := strings.TrimSpace(string(out)); err != nil || got != "2/kusionstack/kusion-quickstart:latest" {
		t.Errorf("applied deployment = %q (%v), want 2/kusionstack/kusion-quickstart:latest\nlogs:\n%s", got, err, w.logs())
	}
}

// TestKCLFromAPullRequestCannotReachTheBotsSecrets: a pull request's
// main.k is code, evaluated next to the App's key. Each stack attacks the
// bot with it: reading the key from the bot's environment
// (file.read_env), /proc/self/environ, the key's file, the
// ServiceAccount token's path, writing into the checkout, and a
// dependency on a loopback port. Each fails or sees nothing: no secret
// reaches a comment or the bot's log, and the loopback listener sees no
// connection. (engine/kcl's TestConfinementAgainstMainK shows the
// environment and the write work without the confinement;
// internal/sandbox's TestAttacks the reads.)
func TestKCLFromAPullRequestCannotReachTheBotsSecrets(t *testing.T) {
	served := testenv.KCLSettings(t)
	loopback, dialed := testenv.Listener(t)
	var keyLine, keyPath string
	attacks := map[string]struct{ main, mod, want string }{
		"environ":     {main: "import file\nleak = file.read_env(\"KUSIONPR_APP_PRIVATE_KEY\")\n", want: "no apps"},
		"procenviron": {main: "import file\nleak = file.read(\"/proc/self/environ\")\n", want: "main.k:2"},
		"keyfile":     {main: "import file\nleak = file.read(\"%KEY%\")\n", want: "main.k:2"},
		"satoken":     {main: "import file\nleak = file.read(\"/var/run/secrets/kubernetes.io/serviceaccount/token\")\n", want: "main.k:2"},
		"write":       {main: "import file\n_w = file.write(\"planted.txt\", \"x\")\n", want: "Permission denied"},
		"loopback": {main: testenv.KCLQuickstartMain, want: "KUSIONPR_KCL_ALLOW",
			mod: "[package]\nname = \"loopback\"\nversion = \"0.1.0\"\n\n[dependencies]\nevil = { oci = \"oci://" + loopback + "/evil\", tag = \"1.0.0\" }\n"},
	}
	w := newWorld(t, withKCL(served), withKeyInEnvironment(&keyLine), func(w *world) {
		for _, kv := range w.env {
			if p, ok := strings.CutPrefix(kv, "KUSIONPR_APP_PRIVATE_KEY_PATH="); ok {
				keyPath = p
			}
		}
		os.RemoveAll(filepath.Join(w.tree, "apps/web"))
		files := map[string]string{"attacks/project.yaml": "name: " + w.ns + "\n"}
		for name, a := range attacks {
			files["attacks/"+name+"/stack.yaml"] = "name: " + name + "\n"
			files["attacks/"+name+"/main.k"] = strings.ReplaceAll(a.main, "%KEY%", keyPath)
			if a.mod != "" {
				files["attacks/"+name+"/kcl.mod"] = a.mod
			}
		}
		w.writeTree(files)
	})
	const number, head = 35, "3636363636363636363636363636363636363636"
	w.pullRequest(number, head)
	var changed []githubfake.PullFile
	for name := range attacks {
		changed = append(changed, githubfake.PullFile{Filename: "attacks/" + name + "/main.k", Status: "added"})
	}
	w.gh.SetPullFiles(w.owner, w.repo, number, changed)
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "someone", "/kusion preview"))
	stackComment := func(name string) string {
		for _, c := range w.gh.Comments(w.owner, w.repo, number) {
			if strings.Contains(c.Body, "stack=attacks/"+name+" ") {
				return c.Body
			}
		}
		return ""
	}
	seen := ""
	for name, a := range attacks {
		w.waitFor("the preview of "+name, func() bool { return strings.Contains(stackComment(name), "Preview of stack") })
		body := stackComment(name)
		if !strings.Contains(body, ":x: Preview of stack") || !strings.Contains(body, a.want) {
			t.Errorf("%s: the comment is not the failure naming %q:\n%s", name, a.want, body)
		}
		seen += body
	}
	if found := secretsIn(seen+w.logs(), keyLine); len(found) != 0 {
		t.Errorf("%v in a comment or the bot's log", found)
	}
	if n := dialed(); n != 0 {
		t.Errorf("the loopback listener saw %d connections, want none", n)
	}
}

// TestKCLMergeAppliesThroughAWorkflowRun: with the executor
// github-actions, a merged stack in KCL is compiled and applied by the run
// of the repository's workflow (the example one): the action in it
// compiles main.k with the settings of the step's environment, fetching
// its packages; the bot, which compiles nothing, reports the release.
func TestKCLMergeAppliesThroughAWorkflowRun(t *testing.T) {
	served := testenv.KCLSettings(t)
	// The workflow's step environment, as its env: would set them.
	t.Setenv("KUSIONPR_KCL_ALLOW", served.Allow)
	t.Setenv("KUSIONPR_KCL_MIRRORS", served.Mirrors)
	t.Setenv("KUSIONPR_KCL_CACHE", t.TempDir())
	w := newWorld(t, withActions(), func(w *world) {
		os.Remove(filepath.Join(w.tree, "apps/web/dev/spec.yaml"))
		w.writeTree(map[string]string{
			"apps/web/dev/stack.yaml": "name: dev\nextensions:\n  - kind: kubernetesNamespace\n    kubernetesNamespace:\n      namespace: " + w.ns + "\n",
			"apps/web/dev/kcl.mod":    testenv.KCLQuickstartMod,
			"apps/web/dev/main.k":     testenv.KCLQuickstartMain,
		})
	})
	repoID := int64(w.payload("pull_request", "closed")["repository"].(map[string]any)["id"].(float64))
	w.gh.SetWorkflow(w.owner, w.repo, "kusion-run.yml", githubfake.ReadWorkflow(t, exampleRunWorkflow))
	w.gh.OnDispatch(func(d githubfake.Dispatch) { w.runWorkflow(d, repoID) })

	const number, head, merge = 36, "3636363636363636363636363636363636363636", "3737373737373737373737373737373737373737"
	w.pullRequest(number, head)
	w.gh.SetPullFiles(w.owner, w.repo, number, []githubfake.PullFile{{Filename: "apps/web/dev/main.k", Status: "added"}})
	w.mergeApplied(number, merge)
	out, err := exec.Command("kubectl", "--kubeconfig", testenv.Kubeconfig(t), "-n", w.ns, "get", "deployment", "web-dev-quickstart",
		"-o", "jsonpath={.spec.template.spec.containers[0].image}").CombinedOutput()
	if got := strings.TrimSpace(string(out)); err != nil || got != "kusionstack/kusion-quickstart:latest" {
		t.Errorf("applied deployment image = %q (%v)", got, err)
	}
	if served.Requests() == 0 {
		t.Error("the workflow run fetched nothing from the package servers")
	}
}
