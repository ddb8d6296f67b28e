package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
)

// newNamespaceRepo is a checkout with one stack, apps/shop/dev, whose spec
// creates its namespace and a ConfigMap, a Deployment and a Service in it:
// every new app's first pull request.
type newNamespaceRepo struct {
	t          *testing.T
	root, ns   string
	kubeconfig string
	store      string
}

func newNewNamespaceRepo(t *testing.T) *newNamespaceRepo {
	r := &newNamespaceRepo{t: t, root: t.TempDir(), ns: fmt.Sprintf("newns-%06x", rand.IntN(1<<24)), kubeconfig: testenv.Kubeconfig(t)}
	r.store = filepath.Join(t.TempDir(), "releases")
	write(t, filepath.Join(r.root, "apps/shop/project.yaml"), "name: shop\n")
	write(t, filepath.Join(r.root, "apps/shop/dev/stack.yaml"), "name: dev\n")
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", r.kubeconfig, "delete", "namespace", r.ns, "--ignore-not-found", "--wait=false").Run()
	})
	return r
}

// writeSpec writes the stack's spec with the Deployment's replicas and
// container as given (YAML flow values).
func (r *newNamespaceRepo) writeSpec(replicas, container string) {
	write(r.t, filepath.Join(r.root, "apps/shop/dev/spec.yaml"), fmt.Sprintf(`resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}
- id: v1:ConfigMap:%[1]s:settings
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: %[1]s}, data: {mode: one}}
- id: apps/v1:Deployment:%[1]s:web
  type: Kubernetes
  attributes:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: %[1]s}
    spec:
      replicas: %[2]s
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec:
          terminationGracePeriodSeconds: 1
          containers: [%[3]s]
- id: v1:Service:%[1]s:web
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: Service
    metadata: {name: web, namespace: %[1]s}
    spec: {selector: {app: web}, ports: [{port: 80, targetPort: 80}]}
`, r.ns, replicas, container))
}

// action runs the action binary on the stack from the command line.
func (r *newNamespaceRepo) action(args ...string) (stdout, stderr string, code int) {
	r.t.Helper()
	cmd := exec.Command(actionBinary(r.t), append(args, "--stack", filepath.Join(r.root, "apps/shop/dev"), "--backend", "file://"+r.store)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + r.t.TempDir(), "KUBECONFIG=" + r.kubeconfig}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		r.t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// pullRequest previews the stack as the action does on a pull request
// touching it, and returns the run and the stack's comment.
func (r *newNamespaceRepo) pullRequest(number int) (actionRun, string) {
	r.t.Helper()
	gh := githubfake.New(r.t)
	ev := prEvent(r.t, number, strings.Repeat(fmt.Sprint(number%10), 40))
	o, name := owner(ev)
	gh.SetPullFiles(o, name, number, []githubfake.PullFile{{Filename: "apps/shop/dev/spec.yaml", Status: "added"}})
	run := runAction(r.t, gh, r.root, "pull_request", ev, map[string]string{"KUBECONFIG": r.kubeconfig, "INPUT_BACKEND": "file://" + r.store})
	comments := gh.Comments(o, name, number)
	if len(comments) != 1 {
		r.t.Fatalf("%d comments, want 1 (exit %d)\n%s", len(comments), run.code, run.stderr)
	}
	return run, comments[0].Body
}

// releases lists the files the stack's releases left in the store.
func (r *newNamespaceRepo) releases() []string {
	var files []string
	filepath.WalkDir(r.store, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return nil
	})
	return files
}

func (r *newNamespaceRepo) namespaceExists() bool {
	r.t.Helper()
	out, err := exec.Command("kubectl", "--kubeconfig", r.kubeconfig, "get", "namespace", r.ns, "--ignore-not-found", "-o", "name").CombinedOutput()
	if err != nil {
		r.t.Fatalf("kubectl get namespace: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out)) != ""
}

// TestInvalidObjectInNewNamespaceFailsThePreview: a Deployment that is
// wrong in its type or lacks a required field, in the namespace its stack
// creates, fails the preview (exit 1) in the text, the JSON and the pull
// request's comment, each naming the resource and the field; an apply
// refuses before it changes anything: the namespace is not created, no
// release is written. Before, both previewed as Create, and the apply
// created the namespace, the ConfigMap and the Service and stopped at the
// Deployment.
func TestInvalidObjectInNewNamespaceFailsThePreview(t *testing.T) {
	for i, tc := range []struct {
		name, replicas, container, field string
	}{
		{"wrong type", `"two"`, "{name: web, image: nginx:1.27}", ".spec.replicas: expected numeric (int or float), got string"},
		{"missing required field", "2", "{image: nginx:1.27}", ".spec.template.spec.containers[0].name: Required value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newNewNamespaceRepo(t)
			r.writeSpec(tc.replicas, tc.container)
			web := "apps/v1:Deployment:" + r.ns + ":web"

			out, errOut, code := r.action("preview")
			if code != 1 || !strings.Contains(out, "x Failed    "+web+"\n    error: dry-run apply "+web+": ") || !strings.Contains(out, tc.field) {
				t.Errorf("preview exited %d; want 1, and the text to show %s failed naming %q:\n%s\n%s", code, web, tc.field, out, errOut)
			}

			out, errOut, code = r.action("preview", "-o", "json")
			var p struct {
				ChangeSteps map[string]struct{ Action, Error, NotChecked string } `json:"changeSteps"`
			}
			if err := json.Unmarshal([]byte(out), &p); err != nil {
				t.Fatalf("preview -o json: %v\n%s\n%s", err, out, errOut)
			}
			if st := p.ChangeSteps[web]; code != 1 || st.Action != "Failed" || !strings.Contains(st.Error, tc.field) {
				t.Errorf("preview -o json exited %d, the Deployment's step %+v; want 1 and Failed naming %q", code, st, tc.field)
			}

			run, body := r.pullRequest(40 + i)
			if run.code != 1 || !strings.Contains(body, ":x: **Failed** `"+web+"`") || !strings.Contains(body, tc.field) {
				t.Errorf("the pull request's step exited %d; want 1, and the comment to list %s failed naming %q:\n%s", run.code, web, tc.field, body)
			}

			out, errOut, code = r.action("apply", "--yes")
			if code != 1 || !strings.Contains(errOut, "preview failed, nothing changed") {
				t.Errorf("apply exited %d; want 1, refused as its preview failed:\n%s\n%s", code, out, errOut)
			}
			if r.namespaceExists() {
				t.Errorf("the apply created namespace %s", r.ns)
			}
			if files := r.releases(); len(files) != 0 {
				t.Errorf("the apply that changed nothing wrote %v", files)
			}
		})
	}
}

// TestNewNamespaceStackPreviewsAndApplies: a valid stack that creates its
// namespace previews (exit 0) with the objects in it to create, each
// checked against the API server's schema, and says, once for the stack,
// that no dry run checked them; then it applies, and a second preview
// dry-runs them all and finds nothing to change.
func TestNewNamespaceStackPreviewsAndApplies(t *testing.T) {
	r := newNewNamespaceRepo(t)
	r.writeSpec("2", "{name: web, image: nginx:1.27}")
	note := "3 resources " + kubernetes.NotCheckedNewNamespace

	out, errOut, code := r.action("preview")
	if code != 0 || strings.Count(out, "+ Create") != 4 || strings.Count(out, "NOT DRY-RUN: "+note+"\n") != 1 {
		t.Errorf("preview exited %d; want 0, 4 to create and a line saying %q:\n%s\n%s", code, note, out, errOut)
	}
	out, errOut, code = r.action("preview", "-o", "json")
	var p struct {
		ChangeSteps map[string]struct{ Action, NotChecked string } `json:"changeSteps"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil || code != 0 {
		t.Fatalf("preview -o json exited %d: %v\n%s\n%s", code, err, out, errOut)
	}
	for id, st := range p.ChangeSteps {
		want := kubernetes.NotCheckedNewNamespace
		if id == "v1:Namespace:"+r.ns {
			want = ""
		}
		if st.Action != "Create" || st.NotChecked != want {
			t.Errorf("JSON step %s: %s, notChecked %q; want Create, %q", id, st.Action, st.NotChecked, want)
		}
	}
	run, body := r.pullRequest(42)
	if run.code != 0 || strings.Count(body, "> **Not dry-run**: "+note+".") != 1 {
		t.Errorf("the pull request's step exited %d; want 0, and the comment to say %q once:\n%s", run.code, note, body)
	}

	out, errOut, code = r.action("apply", "--yes")
	if code != 0 {
		t.Fatalf("apply exited %d:\n%s\n%s", code, out, errOut)
	}
	for _, obj := range []string{"configmap/settings", "deployment/web", "service/web"} {
		kubectl(t, r.kubeconfig, "get", "-n", r.ns, obj)
	}
	if files := r.releases(); len(files) == 0 {
		t.Error("the apply wrote no release")
	}
	out, errOut, code = r.action("preview")
	if code != 0 || strings.Count(out, "= UnChanged") != 4 || strings.Contains(out, "NOT DRY-RUN") {
		t.Errorf("second preview exited %d; want 0, 4 unchanged, all dry-run:\n%s\n%s", code, out, errOut)
	}
}
