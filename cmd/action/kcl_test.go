package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// kclEnv is the environment of a run whose KCL packages the test
// environment serves under Kusion's names, fetched into cache.
func kclEnv(t *testing.T, served testenv.KCLServed, cache string) map[string]string {
	t.Helper()
	return map[string]string{
		"KUSIONPR_KCL_RUNTIME": testenv.KCLRuntime(t), "KUSIONPR_KCL_ALLOW": served.Allow,
		"KUSIONPR_KCL_MIRRORS": served.Mirrors, "KUSIONPR_KCL_CACHE": cache,
	}
}

// TestKCLQuickstartInAction: a repository in Kusion's own shape (the
// quickstart `kusion init` writes: main.k, its kcl.mod naming kam from git
// and service and network from OCI, served here by a real git server and
// registry) is previewed on its pull request and applied on the push of
// its merge by the built action, as it is. A second preview of the same
// stack fetches nothing.
func TestKCLQuickstartInAction(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	served := testenv.KCLSettings(t)
	gh := githubfake.New(t)
	root := t.TempDir()
	project := fmt.Sprintf("kcl-%06x", rand.IntN(1<<24))
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", project, "--ignore-not-found", "--wait=false").Run()
	})
	write(t, filepath.Join(root, "quickstart/project.yaml"), "name: "+project+"\n")
	write(t, filepath.Join(root, "quickstart/default/stack.yaml"), "name: default\n")
	write(t, filepath.Join(root, "quickstart/default/kcl.mod"), testenv.KCLQuickstartMod)
	write(t, filepath.Join(root, "quickstart/default/main.k"), testenv.KCLQuickstartMain)
	env := kclEnv(t, served, t.TempDir())
	env["KUBECONFIG"], env["INPUT_BACKEND"] = kc, "file://"+filepath.Join(t.TempDir(), "releases")
	deployment := "apps/v1:Deployment:" + project + ":" + project + "-default-quickstart"

	const number = 34
	ev := prEvent(t, number, "3434343434343434343434343434343434343434")
	o, r := owner(ev)
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: "quickstart/default/main.k", Status: "added"}})
	run := runAction(t, gh, root, "pull_request", ev, env)
	if run.code != 0 {
		t.Fatalf("preview exited %d\n%s", run.code, run.stderr)
	}
	body := onlyComment(t, gh, o, r, number)
	for _, want := range []string{deployment, "kusionstack/kusion-quickstart:latest", "replicas: 2\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("the preview's comment lacks %q:\n%s", want, body)
		}
	}
	fetched := served.Requests()
	if fetched == 0 {
		t.Fatal("the preview reached neither the git server nor the registry")
	}

	// Previewed again (a new commit of the pull request): every
	// dependency is in the cache already.
	if run = runAction(t, gh, root, "pull_request", prEvent(t, number, "3535353535353535353535353535353535353535"), env); run.code != 0 {
		t.Fatalf("second preview exited %d\n%s", run.code, run.stderr)
	}
	if n := served.Requests(); n != fetched {
		t.Errorf("the second preview made %d requests to the package servers, want none", n-fetched)
	}

	const sha = "3636363636363636363636363636363636363636"
	push := githubfake.Event(t, "push", "")
	push["after"] = sha
	gh.SetCommitPulls(o, r, sha, []int{number})
	env["INPUT_COMMAND"], env["GITHUB_SHA"] = "apply", sha
	if run = runAction(t, gh, root, "push", push, env); run.code != 0 {
		t.Fatalf("apply exited %d\n%s", run.code, run.stderr)
	}
	if got := kubectl(t, kc, "-n", project, "get", "deployment", project+"-default-quickstart", "-o", "jsonpath={.spec.replicas}/{.spec.template.spec.containers[0].image}"); got != "2/kusionstack/kusion-quickstart:latest" {
		t.Errorf("applied deployment = %q, want 2/kusionstack/kusion-quickstart:latest", got)
	}
}

// TestKCLFromAPullRequestIsConfined: a pull request's main.k is code, and
// each of these stacks attacks the action with it: reading a variable of
// the job's environment (file.read_env), /proc/self/environ, the runner's
// key file and a ServiceAccount token path, writing into the checkout
// (outside the runtime's scratch folder), and a dependency on a loopback
// port. Each stack fails or sees nothing, no secret reaches the comment,
// the checkout gets no file, and the loopback listener sees no
// connection. (engine/kcl's TestConfinementAgainstMainK shows the
// environment and the write work without the confinement;
// internal/sandbox's TestAttacks the reads.)
func TestKCLFromAPullRequestIsConfined(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	served := testenv.KCLSettings(t)
	gh := githubfake.New(t)
	root := t.TempDir()
	const secret = "kcl-job-s3cret-value"
	keyFile := filepath.Join(t.TempDir(), "app-key.pem")
	write(t, keyFile, "-----BEGIN RSA PRIVATE KEY-----\n"+secret+"\n")

	loopback, dialed := testenv.Listener(t)

	project := fmt.Sprintf("kcla-%06x", rand.IntN(1<<24))
	write(t, filepath.Join(root, "attacks/project.yaml"), "name: "+project+"\n")
	attacks := []struct {
		stack, main, mod string
		// want is what the stack's part of the comment says.
		want string
	}{
		{stack: "environ", main: `import file
leak = file.read_env("AWS_SECRET_ACCESS_KEY")
`, want: "no apps"},
		{stack: "procenviron", main: `import file
leak = file.read("/proc/self/environ")
`, want: "main.k:2"},
		{stack: "keyfile", main: `import file
leak = file.read("` + keyFile + `")
`, want: "main.k:2"},
		{stack: "satoken", main: `import file
leak = file.read("/var/run/secrets/kubernetes.io/serviceaccount/token")
`, want: "main.k:2"},
		{stack: "write", main: `import file
_w = file.write("planted.txt", "x")
`, want: "main.k:2"},
		{stack: "loopback", main: testenv.KCLQuickstartMain, mod: `[package]
name = "loopback"
version = "0.1.0"

[dependencies]
evil = { oci = "oci://` + loopback + `/evil", tag = "1.0.0" }
`, want: "KUSIONPR_KCL_ALLOW"},
	}
	var files []githubfake.PullFile
	for _, a := range attacks {
		dir := filepath.Join(root, "attacks", a.stack)
		write(t, filepath.Join(dir, "stack.yaml"), "name: "+a.stack+"\n")
		write(t, filepath.Join(dir, "main.k"), a.main)
		if a.mod != "" {
			write(t, filepath.Join(dir, "kcl.mod"), a.mod)
		}
		files = append(files, githubfake.PullFile{Filename: "attacks/" + a.stack + "/main.k", Status: "added"})
	}
	env := kclEnv(t, served, t.TempDir())
	env["KUBECONFIG"], env["INPUT_BACKEND"] = kc, "file://"+filepath.Join(t.TempDir(), "releases")
	env["AWS_SECRET_ACCESS_KEY"] = secret

	const number = 35
	ev := prEvent(t, number, "3737373737373737373737373737373737373737")
	o, r := owner(ev)
	gh.SetPullFiles(o, r, number, files)
	run := runAction(t, gh, root, "pull_request", ev, env)
	if run.code == 0 {
		t.Fatalf("the preview of six attacks passed\n%s", run.stderr)
	}
	var body strings.Builder
	for _, c := range gh.Comments(o, r, number) {
		body.WriteString(c.Body)
	}
	for _, a := range attacks {
		ck := stackCheck(t, gh, o, r, "attacks/"+a.stack)
		if !strings.Contains(ck.Summary, a.want) {
			t.Errorf("stack %s: its check run lacks %q:\n%s", a.stack, a.want, ck.Summary)
		}
	}
	for where, text := range map[string]string{"comments": body.String(), "log": run.stdout + run.stderr} {
		if strings.Contains(text, secret) {
			t.Errorf("the secret is in the %s", where)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "attacks/write/planted.txt")); err == nil {
		t.Error("main.k wrote planted.txt into the checkout")
	}
	if n := dialed(); n != 0 {
		t.Errorf("the loopback listener saw %d connections, want none", n)
	}
}
