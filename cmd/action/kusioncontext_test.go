package main

import (
	"bytes"
	"errors"
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

// kusionSpec is a Spec exactly as `kusion generate` prints it (Kusion's
// v1.Spec marshalled: every object with creationTimestamp: null and
// status, a GVK extension per resource, secretStore: null) for the
// quickstart's shape, in namespace ns, with the workspace's context
// naming the kubeconfig as Kusion's docs write it.
func kusionSpec(ns, kubeconfigPath string) string {
	return fmt.Sprintf(`resources:
    - id: v1:Namespace:%[1]s
      type: Kubernetes
      attributes:
        apiVersion: v1
        kind: Namespace
        metadata:
            creationTimestamp: null
            name: %[1]s
        spec: {}
        status: {}
      extensions:
        GVK: /v1, Kind=Namespace
    - id: apps/v1:Deployment:%[1]s:quickstart-default-quickstart
      type: Kubernetes
      attributes:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
            creationTimestamp: null
            labels:
                app.kubernetes.io/name: quickstart
                app.kubernetes.io/part-of: quickstart
            name: quickstart-default-quickstart
            namespace: %[1]s
        spec:
            selector:
                matchLabels:
                    app.kubernetes.io/name: quickstart
                    app.kubernetes.io/part-of: quickstart
            strategy: {}
            template:
                metadata:
                    creationTimestamp: null
                    labels:
                        app.kubernetes.io/name: quickstart
                        app.kubernetes.io/part-of: quickstart
                spec:
                    containers:
                        - image: kusionstack/kusion-quickstart:latest
                          name: quickstart
                          resources: {}
        status: {}
      dependsOn:
        - v1:Namespace:%[1]s
        - v1:Service:%[1]s:quickstart-default-quickstart-private
      extensions:
        GVK: apps/v1, Kind=Deployment
    - id: v1:Service:%[1]s:quickstart-default-quickstart-private
      type: Kubernetes
      attributes:
        apiVersion: v1
        kind: Service
        metadata:
            creationTimestamp: null
            labels:
                app.kubernetes.io/name: quickstart
                app.kubernetes.io/part-of: quickstart
            name: quickstart-default-quickstart-private
            namespace: %[1]s
        spec:
            ports:
                - name: quickstart-default-quickstart-private-8080-tcp
                  port: 8080
                  protocol: TCP
                  targetPort: 8080
            selector:
                app.kubernetes.io/name: quickstart
                app.kubernetes.io/part-of: quickstart
            type: ClusterIP
        status:
            loadBalancer: {}
      dependsOn:
        - v1:Namespace:%[1]s
      extensions:
        GVK: /v1, Kind=Service
secretStore: null
context:
    KUBECONFIG_PATH: %[2]s
`, ns, kubeconfigPath)
}

// commentOf is the comment of the stack in dir on the pull request.
func commentOf(gh *githubfake.Server, o, r string, number int, dir string) string {
	for _, c := range gh.Comments(o, r, number) {
		if strings.Contains(c.Body, "stack="+dir+" ") {
			return c.Body
		}
	}
	return ""
}

// TestKusionGeneratedSpecWithTheInputKubeconfig: Specs as `kusion
// generate` prints them, their workspace's KUBECONFIG_PATH a file of the
// machine that ran it (/path/to/kubeconfig, ~/.kube/config), are
// previewed on a pull request and applied on its merge through the
// action with only its kubeconfig input set: the input takes the path's
// place, and the log says so.
func TestKusionGeneratedSpecWithTheInputKubeconfig(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	operator, err := os.ReadFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	gh := githubfake.New(t)
	root := t.TempDir()
	suffix := fmt.Sprintf("%06x", rand.IntN(1<<24))
	// Two projects: the stacks of one project and workspace are applied
	// one at a time.
	stacks := []struct{ dir, path, ns string }{
		{"quickstart/dev", "/path/to/kubeconfig", "qs-dev-" + suffix},
		{"helloworld/dev", "~/.kube/config", "qs-hello-" + suffix},
	}
	var files []githubfake.PullFile
	for _, s := range stacks {
		write(t, filepath.Join(root, filepath.Dir(s.dir), "project.yaml"), "name: "+filepath.Dir(s.dir)+"-"+suffix+"\n")
		write(t, filepath.Join(root, s.dir, "stack.yaml"), "name: "+filepath.Base(s.dir)+"\n")
		write(t, filepath.Join(root, s.dir, "spec.yaml"), kusionSpec(s.ns, s.path))
		files = append(files, githubfake.PullFile{Filename: s.dir + "/spec.yaml", Status: "added"})
		t.Cleanup(func() {
			exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", s.ns, "--ignore-not-found", "--wait=false").Run()
		})
	}
	const number = 33
	const sha = "3333333333333333333333333333333333333333"
	ev := prEvent(t, number, sha)
	o, r := owner(ev)
	gh.SetPullFiles(o, r, number, files)
	// Only the input: no $KUBECONFIG, no home folder's kubeconfig.
	env := map[string]string{"KUBECONFIG": "", "HOME": t.TempDir(), "INPUT_KUBECONFIG": string(operator),
		"INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases")}

	run := runAction(t, gh, root, "pull_request", ev, env)
	if run.code != 0 {
		t.Fatalf("the preview exited %d\n%s%s", run.code, run.stdout, run.stderr)
	}
	for _, s := range stacks {
		body := commentOf(gh, o, r, number, s.dir)
		for _, want := range []string{":memo: Preview of stack", "apps/v1:Deployment:" + s.ns + ":quickstart-default-quickstart", "v1:Service:" + s.ns + ":quickstart-default-quickstart-private"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s (KUBECONFIG_PATH %s): the comment lacks %q:\n%s", s.dir, s.path, want, body)
			}
		}
	}
	if n := strings.Count(run.stderr, "lies outside the checkout: the stack uses the operator's kubeconfig instead"); n != len(stacks) {
		t.Errorf("the log says %d times that the input replaced the spec's path, want %d:\n%s", n, len(stacks), run.stderr)
	}

	push := githubfake.Event(t, "push", "")
	push["after"] = sha
	gh.SetCommitPulls(o, r, sha, []int{number})
	env["INPUT_COMMAND"], env["GITHUB_SHA"] = "apply", sha
	run = runAction(t, gh, root, "push", push, env)
	if run.code != 0 {
		t.Fatalf("the apply exited %d\n%s%s", run.code, run.stdout, run.stderr)
	}
	for _, s := range stacks {
		if got := kubectl(t, kc, "get", "deployment", "quickstart-default-quickstart", "-n", s.ns, "-o", "jsonpath={.status.availableReplicas}"); got != "1" {
			t.Errorf("%s: the Deployment has %q replicas available, want 1", s.dir, got)
		}
		if got := kubectl(t, kc, "get", "service", "quickstart-default-quickstart-private", "-n", s.ns, "-o", "jsonpath={.spec.ports[0].port}"); got != "8080" {
			t.Errorf("%s: the Service's port is %q", s.dir, got)
		}
	}
	if strings.Contains(run.stdout+run.stderr, "Unhandled Error") {
		t.Errorf("client-go's own error lines in the log:\n%s", run.stderr)
	}
}

// TestKubeconfigsInputOutsideTheCheckout: the input kubeconfigs names the
// operator's files; one in the checkout, or reached through a link in it,
// is the pull request's and is refused before anything runs, naming the
// workspace. A file outside is used for its workspace whatever the spec
// says: its cluster unreachable here, the comment names that file, the
// input, the context and the server, and never the file's token.
func TestKubeconfigsInputOutsideTheCheckout(t *testing.T) {
	gh := githubfake.New(t)
	repo := newPRRepo(t)
	outside := filepath.Join(t.TempDir(), "default.kubeconfig")
	if err := os.WriteFile(outside, []byte(unreachableKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(repo.root, "kube", "default.kubeconfig"), unreachableKubeconfig)
	if err := os.Symlink(outside, filepath.Join(repo.root, "kube", "linked")); err != nil {
		t.Fatal(err)
	}
	const number = 34
	ev := prEvent(t, number, "3434343434343434343434343434343434343434")
	o, r := owner(ev)
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
	for _, tc := range []struct {
		name, input string
		code        int
		want        []string
	}{
		{"a file in the checkout", "default=" + filepath.Join(repo.root, "kube", "default.kubeconfig"), 2,
			[]string{"input kubeconfigs: workspace default:", "lies in the checkout, which a pull request writes"}},
		{"a relative path (the checkout's)", "default=kube/default.kubeconfig", 2, []string{"lies in the checkout"}},
		{"a link in the checkout to a file outside", "default=" + filepath.Join(repo.root, "kube", "linked"), 2, []string{"lies in the checkout"}},
		{"a file that does not exist", "default=/nonexistent/kubeconfig", 2, []string{"workspace default: /nonexistent/kubeconfig: no such file or directory"}},
		{"not a pair", "default", 2, []string{`input kubeconfigs: "default": want WORKSPACE=FILE`}},
		{"a file outside", "default=" + outside, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(gh.Comments(o, r, number))
			run := runAction(t, gh, repo.root, "pull_request", ev, map[string]string{
				"KUBECONFIG": "", "INPUT_KUBECONFIGS": tc.input, "INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"),
			})
			if run.code != tc.code {
				t.Errorf("exit %d, want %d\n%s", run.code, tc.code, run.stdout)
			}
			for _, want := range tc.want {
				if !strings.Contains(run.stdout, want) {
					t.Errorf("the log lacks %q:\n%s", want, run.stdout)
				}
			}
			comments := gh.Comments(o, r, number)
			if tc.code == 2 {
				if len(comments) != before {
					t.Errorf("refused, yet %d comments were written", len(comments)-before)
				}
				return
			}
			body := commentOf(gh, o, r, number, "apps/web/dev")
			want := `(cluster: server https://127.0.0.1:1, context "gone", kubeconfig ` + outside + ` (the input kubeconfigs, workspace default))`
			if !strings.Contains(body, want) {
				t.Errorf("the comment does not name the cluster as %s:\n%s", want, body)
			}
			seen := body + withoutMaskCommands(run.stdout) + run.stderr + run.summary
			if strings.Contains(seen, "unreachable-t0ken-4821") {
				t.Errorf("the kubeconfig's token is in a comment or the log")
			}
			if strings.Contains(seen, "Unhandled Error") {
				t.Errorf("client-go's own error lines in the log:\n%s", run.stderr)
			}
		})
	}
}

// TestUnreachableClusterNamedOnce: a preview whose cluster cannot be
// reached, through the binary on one's machine and in a job: each
// resource's error names the kubeconfig, the context and the server
// tried, and client-go's own "Unhandled Error" lines are not printed
// (they are debug lines of the tool's log, shown when asked for).
func TestUnreachableClusterNamedOnce(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "unreachable.kubeconfig")
	write(t, kubeconfig, unreachableKubeconfig)
	write(t, filepath.Join(dir, "project.yaml"), "name: unreachable\n")
	write(t, filepath.Join(dir, "dev", "stack.yaml"), "name: dev\n")
	write(t, filepath.Join(dir, "dev", "spec.yaml"), `resources:
- id: v1:ConfigMap:default:a
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: default}, data: {k: v}}
- id: v1:ConfigMap:default:b
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: default}, data: {k: v}}
`)
	named := `(cluster: server https://127.0.0.1:1, context "gone", kubeconfig ` + kubeconfig + ` ($KUBECONFIG))`
	for _, tc := range []struct {
		name     string
		args     []string
		unhandle int // "Unhandled Error" lines wanted
	}{
		{"text", []string{"preview", "-o", "text"}, 0},
		{"apply --yes", []string{"apply", "--yes"}, 0},
		{"debug", []string{"preview", "--log-level", "debug"}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(actionBinary(t), append(tc.args, "--stack", filepath.Join(dir, "dev"), "--backend", "file://"+filepath.Join(t.TempDir(), "store"))...)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "KUBECONFIG=" + kubeconfig}
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			var exit *exec.ExitError
			if err := cmd.Run(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("exit %v, want 1\n%s%s", err, out.String(), errOut.String())
			}
			seen := out.String() + errOut.String()
			if n := strings.Count(seen, "connection refused "+named); n != 2 {
				t.Errorf("%d errors name the cluster as %s, want one per resource, 2:\n%s", n, named, seen)
			}
			switch n := strings.Count(seen, "Unhandled Error"); {
			case tc.unhandle == 0 && n > 0:
				t.Errorf("client-go's own error lines printed:\n%s", seen)
			case tc.unhandle < 0 && !strings.Contains(seen, `level=DEBUG msg="Unhandled Error"`):
				t.Errorf("with --log-level debug, client-go's lines are not debug lines of the log:\n%s", seen)
			}
			if strings.Contains(seen, "unreachable-t0ken-4821") {
				t.Errorf("the kubeconfig's token is shown:\n%s", seen)
			}
		})
	}
}

// TestKlogLevel: client-go's lines show when a command asks for debug
// logging, in any of the flag's spellings, or the runner's debug logging
// is on; otherwise they are left out.
func TestKlogLevel(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		debug string
		want  string
	}{
		{[]string{"preview", "--stack", "dev"}, "", "INFO"},
		{[]string{"preview", "--log-level", "debug"}, "", "DEBUG"},
		{[]string{"preview", "-log-level=DEBUG"}, "", "DEBUG"},
		{[]string{"preview", "--log-level=warn"}, "", "INFO"},
		{[]string{"preview", "--stack", "--log-level"}, "", "INFO"},
		{nil, "1", "DEBUG"},
	} {
		getenv := func(k string) string {
			if k == "RUNNER_DEBUG" {
				return tc.debug
			}
			return ""
		}
		if got := klogLevel(tc.args, getenv).String(); got != tc.want {
			t.Errorf("klogLevel(%q, RUNNER_DEBUG=%q) = %s, want %s", tc.args, tc.debug, got, tc.want)
		}
	}
}
