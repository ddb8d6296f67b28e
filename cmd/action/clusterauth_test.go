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

// TestSpecKubeconfigRefusedUnlessAllowed: a pull request whose stacks'
// specs reach the cluster through an exec plugin, a tokenFile outside the
// checkout and a KUBECONFIG_PATH outside the checkout. By default each
// stack's comment names the field and the input spec-kubeconfig-allow, the
// step fails, and the plugin never ran; with the input kubeconfig given,
// it takes the place of the path outside the checkout (that stack is
// previewed with it, the file never read), and the spec's own content is
// refused all the same. With exec and files allowed the three preview
// against the test cluster, and the plugin's environment held neither the
// GitHub token nor the kubeconfig input.
func TestSpecKubeconfigRefusedUnlessAllowed(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	operatorKubeconfig, err := os.ReadFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	gh := githubfake.New(t)
	root := t.TempDir()
	marker := filepath.Join(t.TempDir(), "plugin-ran")
	envDump := filepath.Join(t.TempDir(), "plugin-env")
	stacks := testenv.WriteHostileStacks(t, root, fmt.Sprintf("%06x", rand.IntN(1<<24)), marker, envDump, "the input spec-kubeconfig-allow")
	t.Cleanup(func() {
		for _, s := range stacks {
			exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", s.Namespace, "--ignore-not-found", "--wait=false").Run()
		}
	})
	const number = 14
	ev := prEvent(t, number, "1414141414141414141414141414141414141414")
	o, r := owner(ev)
	var files []githubfake.PullFile
	for _, s := range stacks {
		files = append(files, githubfake.PullFile{Filename: s.Dir + "/spec.yaml", Status: "added"})
	}
	gh.SetPullFiles(o, r, number, files)
	const token = "ghs_testtoken1234567890"
	env := map[string]string{
		"INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"), "KUBECONFIG": "",
		"INPUT_KUBECONFIG": string(operatorKubeconfig), "GITHUB_TOKEN": token,
	}
	stackComment := func(dir string) string {
		for _, c := range gh.Comments(o, r, number) {
			if strings.Contains(c.Body, "stack="+dir+" ") {
				return c.Body
			}
		}
		return ""
	}

	for _, input := range []string{"", string(operatorKubeconfig)} {
		env["INPUT_KUBECONFIG"] = input
		run := runAction(t, gh, root, "pull_request", ev, env)
		if run.code == 0 {
			t.Errorf("the step succeeded with stacks refused")
		}
		for _, s := range stacks {
			body := stackComment(s.Dir)
			if input != "" && strings.HasSuffix(s.Dir, "outside/dev") {
				// The operator's kubeconfig is the one meant for
				// this runner: the spec's path gives way to it.
				if !strings.Contains(body, ":memo: Preview of stack") || !strings.Contains(body, "v1:ConfigMap:"+s.Namespace+":settings") {
					t.Errorf("%s: with the input kubeconfig, no preview:\n%s", s.Dir, body)
				}
				continue
			}
			want := append([]string{":x: Preview of stack", "spec context"}, s.Refusal...)
			if strings.HasSuffix(s.Dir, "outside/dev") {
				want = append(want, "or the operator gives the stacks a kubeconfig (the input kubeconfig or the input kubeconfigs)")
			}
			for _, want := range want {
				if !strings.Contains(body, want) {
					t.Errorf("%s (input kubeconfig %v): the comment lacks %q:\n%s", s.Dir, input != "", want, body)
				}
			}
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the spec's exec plugin ran in the action")
	}
	for _, s := range stacks {
		if err := exec.Command("kubectl", "--kubeconfig", kc, "get", "namespace", s.Namespace).Run(); err == nil {
			t.Errorf("%s reached the cluster", s.Namespace)
		}
	}

	env["INPUT_SPEC-KUBECONFIG-ALLOW"] = "exec, files"
	run := runAction(t, gh, root, "pull_request", ev, env)
	if run.code == 0 {
		t.Errorf("the step succeeded with the cloud plugin's stack refused")
	}
	for _, s := range stacks {
		body := stackComment(s.Dir)
		if s.CloudIdentity {
			// exec does not lend the runner's cloud identity.
			if !strings.Contains(body, ":x: Preview of stack") || !strings.Contains(body, s.Refusal[len(s.Refusal)-1]) {
				t.Errorf("%s: with exec and files allowed, not refused naming cloud-identity:\n%s", s.Dir, body)
			}
			continue
		}
		if !strings.Contains(body, ":memo: Preview of stack") || !strings.Contains(body, "v1:ConfigMap:"+s.Namespace+":settings") {
			t.Errorf("%s: allowed, the preview is not shown:\n%s", s.Dir, body)
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
	for _, leaked := range []string{token, "INPUT_GITHUB-TOKEN=", "GITHUB_TOKEN=", "INPUT_KUBECONFIG="} {
		if strings.Contains(string(b), leaked) {
			t.Errorf("the exec plugin's environment holds %s", leaked)
		}
	}
}

// TestCheckoutLookupsStopAtItsRoot: the runner's folders above the checkout
// are nobody's project: a stack without a project.yaml of its own is
// refused, not taken into one planted above GITHUB_WORKSPACE.
func TestCheckoutLookupsStopAtItsRoot(t *testing.T) {
	gh := githubfake.New(t)
	above := t.TempDir()
	root := filepath.Join(above, "checkout")
	write(t, filepath.Join(above, "project.yaml"), "name: planted\n")
	write(t, filepath.Join(above, "workspaces", "default.yaml"), "{}\n")
	write(t, filepath.Join(root, "apps/web/dev/stack.yaml"), "name: dev\n")
	write(t, filepath.Join(root, "apps/web/dev/spec.yaml"), "resources: []\n")
	const number = 15
	ev := prEvent(t, number, "1515151515151515151515151515151515151515")
	o, r := owner(ev)
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "added"}})
	run := runAction(t, gh, root, "pull_request", ev, map[string]string{"INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"), "KUBECONFIG": ""})
	if run.code == 0 {
		t.Errorf("the stack without a project was previewed\n%s", run.stderr)
	}
	comments := gh.Comments(o, r, number)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "no project.yaml in apps/web/dev or any folder above it up to the checkout's root") {
		t.Errorf("comments: %+v", comments)
	}
}
