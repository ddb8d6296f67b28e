package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// stackFixture writes a project with one stack whose spec holds seven kinds:
// Namespace, ConfigMap, Secret, Service, Deployment, a CRD and an object of it.
type stackFixture struct {
	t                     *testing.T
	root, stackDir        string
	ns, group, secret     string
	cmValue               string
	withService, replicas int
}

func newStackFixture(t *testing.T) *stackFixture {
	suffix := fmt.Sprintf("%06x", rand.IntN(1<<24))
	f := &stackFixture{
		t: t, root: t.TempDir(),
		ns: "e2e-" + suffix, group: "e2e" + suffix + ".kusionpr.io",
		secret: "pa55-" + suffix + "-word", cmValue: "one", withService: 1, replicas: 2,
	}
	f.stackDir = filepath.Join(f.root, "dev")
	write(t, filepath.Join(f.root, "project.yaml"), "name: e2e\n")
	write(t, filepath.Join(f.stackDir, "stack.yaml"), "name: dev\n")
	f.writeSpec()
	return f
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *stackFixture) writeSpec() {
	ns, g := f.ns, f.group
	var b strings.Builder
	fmt.Fprintf(&b, `resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: Namespace
    metadata: {name: %[1]s}
- id: v1:ConfigMap:%[1]s:settings
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: settings, namespace: %[1]s}
    data: {mode: %[3]s, color: blue}
- id: v1:Secret:%[1]s:creds
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: Secret
    metadata: {name: creds, namespace: %[1]s}
    stringData: {password: %[4]s}
- id: apps/v1:Deployment:%[1]s:web
  type: Kubernetes
  attributes:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: %[1]s, labels: {app: web}}
    spec:
      replicas: %[5]d
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec:
          containers:
          - name: web
            image: nginx:1.27
            ports: [{containerPort: 80}]
- id: apiextensions.k8s.io/v1:CustomResourceDefinition:widgets.%[2]s
  type: Kubernetes
  attributes:
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: widgets.%[2]s}
    spec:
      group: %[2]s
      scope: Namespaced
      names: {plural: widgets, singular: widget, kind: Widget}
      versions:
      - name: v1
        served: true
        storage: true
        schema:
          openAPIV3Schema:
            type: object
            properties:
              spec:
                type: object
                properties:
                  size: {type: integer}
- id: %[2]s/v1:Widget:%[1]s:gear
  type: Kubernetes
  attributes:
    apiVersion: %[2]s/v1
    kind: Widget
    metadata: {name: gear, namespace: %[1]s}
    spec: {size: 3}
`, ns, g, f.cmValue, f.secret, f.replicas)
	if f.withService == 1 {
		fmt.Fprintf(&b, `- id: v1:Service:%[1]s:web
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: Service
    metadata: {name: web, namespace: %[1]s}
    spec:
      selector: {app: web}
      ports: [{port: 80, targetPort: 80}]
`, ns)
	}
	write(f.t, filepath.Join(f.stackDir, "spec.yaml"), b.String())
}

// cli runs the action in-process, collecting everything it prints.
type cli struct {
	t          *testing.T
	kubeconfig string
	backend    string
	// extra is added to every command line.
	extra   []string
	mu      sync.Mutex
	printed bytes.Buffer
}

func (c *cli) run(args ...string) (stdout, stderr string, code int) {
	c.t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	code = run(ctx, append(append(args, "--backend", c.backend), c.extra...), strings.NewReader(""), &out, &errb)
	c.mu.Lock()
	c.printed.Write(out.Bytes())
	c.printed.Write(errb.Bytes())
	c.mu.Unlock()
	return out.String(), errb.String(), code
}

type previewJSON struct {
	StepKeys    []string `json:"stepKeys"`
	ChangeSteps map[string]struct {
		ID      string `json:"id"`
		Action  string `json:"action"`
		Changes []struct {
			Path string `json:"path"`
		} `json:"changes"`
		Drift []struct {
			Path string `json:"path"`
			From any    `json:"from"`
			To   any    `json:"to"`
		} `json:"drift"`
		Error   string   `json:"error"`
		Replace []string `json:"replace"`
		From    *struct {
			Attributes map[string]any `json:"attributes"`
		} `json:"from"`
		To *struct {
			Attributes map[string]any `json:"attributes"`
		} `json:"to"`
	} `json:"changeSteps"`
}

func (c *cli) preview(stack string) previewJSON {
	c.t.Helper()
	out, errOut, code := c.run("preview", "--stack", stack, "-o", "json")
	if code != 0 {
		c.t.Fatalf("preview exited %d: %s", code, errOut)
	}
	var p previewJSON
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		c.t.Fatalf("preview json: %v\n%s", err, out)
	}
	return p
}

func actions(p previewJSON) map[string]string {
	m := map[string]string{}
	for id, s := range p.ChangeSteps {
		m[id] = s.Action
	}
	return m
}

func kubectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestStackLifecycle(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	t.Setenv("KUBECONFIG", kc)
	f := newStackFixture(t)
	c := &cli{t: t, kubeconfig: kc, backend: "file://" + filepath.Join(t.TempDir(), "releases")}
	ns, g := f.ns, f.group
	ids := struct{ ns, cm, secret, deploy, crd, widget, svc string }{
		"v1:Namespace:" + ns, "v1:ConfigMap:" + ns + ":settings", "v1:Secret:" + ns + ":creds",
		"apps/v1:Deployment:" + ns + ":web", "apiextensions.k8s.io/v1:CustomResourceDefinition:widgets." + g,
		g + "/v1:Widget:" + ns + ":gear", "v1:Service:" + ns + ":web",
	}
	all := []string{ids.ns, ids.cm, ids.secret, ids.deploy, ids.crd, ids.widget, ids.svc}
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", ns, "--ignore-not-found", "--wait=false").Run()
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "crd", "widgets."+g, "--ignore-not-found", "--wait=false").Run()
	})

	// 1. First preview: everything is a Create, in dependency order.
	p := c.preview(f.stackDir)
	for _, id := range all {
		if got := actions(p)[id]; got != "Create" {
			t.Errorf("first preview: %s is %q, want Create", id, got)
		}
	}
	if p.StepKeys[0] != ids.ns && p.StepKeys[0] != ids.crd {
		t.Errorf("first step is %s; the Namespace or the CRD must come first", p.StepKeys[0])
	}
	assertBefore(t, p.StepKeys, ids.crd, ids.widget)
	assertBefore(t, p.StepKeys, ids.ns, ids.deploy)

	// 2. Apply; the Deployment is Available through the simulated node.
	if _, errOut, code := c.run("apply", "--stack", f.stackDir, "--yes", "-o", "json"); code != 0 {
		t.Fatalf("apply exited %d: %s", code, errOut)
	}
	if got := kubectl(t, kc, "get", "deployment", "web", "-n", ns, "-o", "jsonpath={.status.availableReplicas}"); got != "2" {
		t.Errorf("deployment availableReplicas = %q after apply, want 2", got)
	}
	if got := kubectl(t, kc, "get", "widget.v1."+g, "gear", "-n", ns, "-o", "jsonpath={.spec.size}"); got != "3" {
		t.Errorf("widget spec.size = %q, want 3", got)
	}

	// 3. Re-preview: nothing to do.
	p = c.preview(f.stackDir)
	for _, id := range all {
		if got := actions(p)[id]; got != "UnChanged" {
			t.Errorf("re-preview: %s is %q, want UnChanged (changes %+v)", id, got, p.ChangeSteps[id].Changes)
		}
	}

	// 4. A spec change is an Update naming exactly the changed field.
	f.cmValue = "two"
	f.writeSpec()
	p = c.preview(f.stackDir)
	if got := actions(p)[ids.cm]; got != "Update" {
		t.Fatalf("after editing the ConfigMap: action %q, want Update", got)
	}
	if ch := p.ChangeSteps[ids.cm].Changes; len(ch) != 1 || ch[0].Path != "data.mode" {
		t.Errorf("ConfigMap changes = %+v, want exactly data.mode", ch)
	}
	for _, id := range all {
		if id != ids.cm && actions(p)[id] != "UnChanged" {
			t.Errorf("after editing the ConfigMap: %s is %q, want UnChanged", id, actions(p)[id])
		}
	}

	// 5. An edit behind our back with kubectl is drift, and an apply reverts it.
	kubectl(t, kc, "scale", "deployment", "web", "-n", ns, "--replicas=3")
	p = c.preview(f.stackDir)
	st := p.ChangeSteps[ids.deploy]
	if st.Action != "Update" || len(st.Drift) != 1 || st.Drift[0].Path != "spec.replicas" {
		t.Errorf("after kubectl scale: action %q drift %+v, want Update with drift on spec.replicas", st.Action, st.Drift)
	}

	// 6. A resource that leaves the spec is a Delete.
	f.withService = 0
	f.writeSpec()
	p = c.preview(f.stackDir)
	if got := actions(p)[ids.svc]; got != "Delete" {
		t.Errorf("Service removed from the spec: action %q, want Delete", got)
	}
	if _, errOut, code := c.run("apply", "--stack", f.stackDir, "--yes"); code != 0 {
		t.Fatalf("second apply exited %d: %s", code, errOut)
	}
	if out, _ := exec.Command("kubectl", "--kubeconfig", kc, "get", "service", "web", "-n", ns).CombinedOutput(); !strings.Contains(string(out), "NotFound") {
		t.Errorf("Service still there after it left the spec: %s", out)
	}
	if got := kubectl(t, kc, "get", "deployment", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}"); got != "2" {
		t.Errorf("replicas = %s after apply, want the spec's 2", got)
	}
	if got := kubectl(t, kc, "get", "configmap", "settings", "-n", ns, "-o", "jsonpath={.data.mode}"); got != "two" {
		t.Errorf("configmap data.mode = %q after apply, want two", got)
	}
	p = c.preview(f.stackDir)
	for id, a := range actions(p) {
		if a != "UnChanged" {
			t.Errorf("after the second apply: %s is %q, want UnChanged", id, a)
		}
	}

	// 7. Destroy removes everything the release holds.
	if _, errOut, code := c.run("destroy", "--stack", f.stackDir, "--yes"); code != 0 {
		t.Fatalf("destroy exited %d: %s", code, errOut)
	}
	for _, args := range [][]string{
		{"get", "namespace", ns},
		{"get", "crd", "widgets." + g},
	} {
		out, _ := exec.Command("kubectl", append([]string{"--kubeconfig", kc}, args...)...).CombinedOutput()
		if !strings.Contains(string(out), "NotFound") {
			t.Errorf("kubectl %s after destroy: %s (want NotFound)", strings.Join(args, " "), out)
		}
	}

	// 8. The Secret's value is in no output, in no log, and not in the releases.
	released := readTree(t, strings.TrimPrefix(c.backend, "file://"))
	for name, text := range map[string]string{"outputs and logs": c.printed.String(), "releases": released} {
		for _, form := range []string{f.secret, base64.StdEncoding.EncodeToString([]byte(f.secret))} {
			if strings.Contains(text, form) {
				t.Errorf("the Secret's value appears in the %s", name)
			}
		}
	}
	if !strings.Contains(released, "revision: 3") || !strings.Contains(released, "phase: succeeded") {
		t.Errorf("releases folder lacks revision 3 or a succeeded phase")
	}
}

func assertBefore(t *testing.T, keys []string, first, then string) {
	t.Helper()
	pos := map[string]int{}
	for i, k := range keys {
		pos[k] = i
	}
	if pos[first] >= pos[then] {
		t.Errorf("%s must come before %s in %v", first, then, keys)
	}
}

func readTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(path)
			b.Write(data)
			b.WriteByte('\n')
		}
		return nil
	})
	return b.String()
}
