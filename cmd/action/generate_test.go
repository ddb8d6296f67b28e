package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// copyTree copies the folder src to dst, which must not hold its files.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

// TestGeneratedStackLifecycle takes the example project's dev stack, whose
// spec is generated from main.yaml and workspaces/dev.yaml by the built-in
// service, network, opsrule and mysql modules, through preview, apply,
// a second preview that must find nothing to do, a change of the
// AppConfiguration, and destroy, on the test cluster.
func TestGeneratedStackLifecycle(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	t.Setenv("KUBECONFIG", kc)
	suffix := fmt.Sprintf("%06x", rand.IntN(1<<24))
	project := "shop-" + suffix // the project's name is the namespace
	root := t.TempDir()
	copyTree(t, filepath.Join("..", "..", "examples", "shop"), root)
	write(t, filepath.Join(root, "project.yaml"), "name: "+project+"\n")
	stack := filepath.Join(root, "dev")
	c := &cli{t: t, kubeconfig: kc, backend: "file://" + filepath.Join(t.TempDir(), "releases")}

	// The local database claims a volume; the test cluster has no
	// provisioner, so a volume waits for it as a cluster's storage would.
	pv := "kpr-" + suffix
	kubectlApply(t, kc, fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: %s}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/%s}
  claimRef: {namespace: %s, name: %s-dev-web-mysql-db-local-pvc}
`, pv, pv, project, project))
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", project, "--ignore-not-found", "--wait=false").Run()
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "pv", pv, "--ignore-not-found", "--wait=false").Run()
	})

	app := project + "-dev-web"
	db := app + "-mysql"
	ids := map[string]string{
		"namespace":  "v1:Namespace:" + project,
		"deployment": "apps/v1:Deployment:" + project + ":" + app,
		"files":      "v1:ConfigMap:" + project + ":" + app + "-web-0",
		"session":    "v1:Secret:" + project + ":web-session",
		"service":    "v1:Service:" + project + ":" + app + "-private",
		"db":         "apps/v1:Deployment:" + project + ":" + db + "-db-local-deployment",
		"dbSecret":   "v1:Secret:" + project + ":" + db + "-mysql",
		"pvc":        "v1:PersistentVolumeClaim:" + project + ":" + db + "-db-local-pvc",
	}

	// generate prints the Spec the preview and apply run with.
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"generate", "--stack", stack, "--backend", c.backend}, strings.NewReader(""), &stdout, &stderr)
	out, errOut := stdout.String(), stderr.String()
	if code != 0 {
		t.Fatalf("generate exited %d: %s", code, errOut)
	}
	for _, id := range ids {
		if !strings.Contains(out, "- id: "+id+"\n") {
			t.Errorf("generate does not print %s", id)
		}
	}

	p := c.preview(stack)
	for name, id := range ids {
		if got := actions(p)[id]; got != "Create" {
			t.Errorf("first preview: %s (%s) is %q, want Create", name, id, got)
		}
	}
	assertBefore(t, p.StepKeys, ids["namespace"], ids["deployment"])
	assertBefore(t, p.StepKeys, ids["dbSecret"], ids["deployment"])

	_, errOut, code = c.run("apply", "--stack", stack, "--yes")
	if code != 0 {
		t.Fatalf("apply exited %d: %s", code, errOut)
	}
	// The release is kept under the workspace the stack generated with.
	if _, err := os.Stat(filepath.Join(strings.TrimPrefix(c.backend, "file://"), "releases", project, "dev", "1.yaml")); err != nil {
		t.Errorf("the release is not under workspace dev: %v", err)
	}

	// What the modules and their patches made is live.
	env := kubectl(t, kc, "-n", project, "get", "deployment", app, "-o", "jsonpath={range .spec.template.spec.containers[0].env[*]}{.name}={.value}{.valueFrom.secretKeyRef.name}/{.valueFrom.secretKeyRef.key} {end}")
	dbEnv := "KUSION_DB_HOST_" + strings.ToUpper(strings.ReplaceAll(db, "-", "_"))
	if !strings.HasPrefix(env, dbEnv+"="+db+"-mysql/hostAddress ") || !strings.Contains(env, " LOG_LEVEL=debug/ ") {
		t.Errorf("workload env = %q: want the database's variables first, then the developer's", env)
	}
	if got := kubectl(t, kc, "-n", project, "get", "deployment", app, "-o", "jsonpath={.spec.strategy.rollingUpdate.maxUnavailable}/{.status.availableReplicas}"); got != "1/1" {
		t.Errorf("maxUnavailable/available = %q, want 1/1 (opsrule, and ready)", got)
	}
	if got := kubectl(t, kc, "-n", project, "get", "service", app+"-private", "-o", "jsonpath={.spec.ports[0].port}:{.spec.ports[0].targetPort}"); got != "80:8080" {
		t.Errorf("service ports = %q", got)
	}
	raw := kubectl(t, kc, "-n", project, "get", "secret", "web-session", "-o", "jsonpath={.data.key}")
	if v, _ := base64.StdEncoding.DecodeString(raw); string(v) != "dev-only-session-key" {
		t.Errorf("session secret = %q", v)
	}
	if got := kubectl(t, kc, "-n", project, "get", "pvc", db+"-db-local-pvc", "-o", "jsonpath={.status.phase}"); got != "Bound" {
		t.Errorf("database volume is %s", got)
	}
	if strings.Contains(c.printed.String(), "dev-only-session-key") {
		t.Error("a secret value was printed")
	}

	// Generated again from the same files, nothing is to change: the spec
	// is stable and what the server defaulted is not taken for a change.
	for id, a := range actions(c.preview(stack)) {
		if a != "UnChanged" {
			t.Errorf("second preview: %s is %s, want UnChanged", id, a)
		}
	}

	// A change to the AppConfiguration changes the workload only.
	mainYAML := filepath.Join(stack, "main.yaml")
	b, _ := os.ReadFile(mainYAML)
	write(t, mainYAML, strings.Replace(string(b), "LOG_LEVEL: debug", "LOG_LEVEL: warn", 1))
	changed := map[string]string{}
	for id, a := range actions(c.preview(stack)) {
		if a != "UnChanged" {
			changed[id] = a
		}
	}
	if len(changed) != 1 || changed[ids["deployment"]] != "Update" {
		t.Errorf("after changing LOG_LEVEL the preview changes %v, want only %s updated", changed, ids["deployment"])
	}

	_, errOut, code = c.run("destroy", "--stack", stack, "--yes")
	if code != 0 {
		t.Fatalf("destroy exited %d: %s", code, errOut)
	}
	if got := kubectl(t, kc, "get", "namespace", project, "--ignore-not-found", "-o", "name"); got != "" {
		phase := kubectl(t, kc, "get", "namespace", project, "-o", "jsonpath={.status.phase}")
		if phase != "Terminating" {
			t.Errorf("namespace %s is still %s after destroy", project, phase)
		}
	}
}

func kubectlApply(t *testing.T, kubeconfig, manifest string) {
	t.Helper()
	cmd := exec.Command("kubectl", "--kubeconfig", kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}
