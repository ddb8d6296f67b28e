package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// TestFailedPreviewErrorsOnce runs preview, apply and destroy through the
// binary, in each output format, with one resource of five that cannot be
// previewed (a kind the cluster no longer serves: its CRD was deleted by
// hand) and with all five (KUBECONFIG names a file that does not exist).
// Each resource's error is shown exactly once across stdout and stderr:
// the document lists it, stderr only counts the failures and says where
// they are listed, and the command exits 1.
func TestFailedPreviewErrorsOnce(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	dir := t.TempDir()
	suffix := fmt.Sprintf("%06x", rand.IntN(1<<24))
	ns, group := "once-"+suffix, "once"+suffix+".kusionpr.io"
	crd := "apiextensions.k8s.io/v1:CustomResourceDefinition:gadgets." + group
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", ns, "--ignore-not-found", "--wait=false").Run()
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "crd", "gadgets."+group, "--ignore-not-found", "--wait=false").Run()
	})
	resources := fmt.Sprintf(`resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}
- id: v1:ConfigMap:%[1]s:a
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: %[1]s}, data: {k: v}}
- id: v1:ConfigMap:%[1]s:b
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: %[1]s}, data: {k: v}}
- id: %[2]s/v1:Gadget:%[1]s:g
  type: Kubernetes
  attributes: {apiVersion: %[2]s/v1, kind: Gadget, metadata: {name: g, namespace: %[1]s}, spec: {size: 1}}
`, ns, group)
	write(t, filepath.Join(dir, "project.yaml"), "name: once\n")
	write(t, filepath.Join(dir, "dev", "stack.yaml"), "name: dev\n")
	write(t, filepath.Join(dir, "dev", "spec.yaml"), resources+fmt.Sprintf(`- id: %[1]s
  type: Kubernetes
  attributes:
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: gadgets.%[2]s}
    spec:
      group: %[2]s
      scope: Namespaced
      names: {plural: gadgets, singular: gadget, kind: Gadget}
      versions:
      - name: v1
        served: true
        storage: true
        schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, crd, group))

	type result struct {
		stdout, stderr string
		code           int
	}
	action := func(kubeconfig, store string, args ...string) result {
		t.Helper()
		cmd := exec.Command(actionBinary(t), append(args, "--stack", filepath.Join(dir, "dev"), "--backend", "file://"+store)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "KUBECONFIG=" + kubeconfig}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		r := result{stdout: out.String(), stderr: errOut.String()}
		switch {
		case errors.As(err, &exit):
			r.code = exit.ExitCode()
		case err != nil:
			t.Fatal(err)
		}
		return r
	}

	// Release 1 holds the five resources; then the CRD goes, by hand, and
	// the spec no longer has it: the Gadget's kind is served no more.
	applied := filepath.Join(dir, "applied")
	if r := action(kc, applied, "apply", "--yes"); r.code != 0 {
		t.Fatalf("the first apply exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	kubectl(t, kc, "delete", "crd", "gadgets."+group)
	write(t, filepath.Join(dir, "dev", "spec.yaml"), resources)
	missing := filepath.Join(dir, "nonexistent")

	for _, cluster := range []struct {
		name, kubeconfig string
		failed           int
	}{{"one failing", kc, 1}, {"all failing", missing, 5}} {
		for _, cmd := range []string{"preview", "apply", "destroy"} {
			if cmd == "destroy" && cluster.failed == 1 {
				// A destroy takes an object whose kind is served no more
				// as gone: with the cluster reachable, none of its reads
				// fails here.
				continue
			}
			// The errors to be shown: the JSON preview's, each once.
			store := filepath.Join(t.TempDir(), "store")
			if err := os.CopyFS(store, os.DirFS(applied)); err != nil {
				t.Fatal(err)
			}
			args := []string{cmd}
			if cmd != "preview" {
				args = []string{cmd, "--dry-run"}
			}
			doc := action(cluster.kubeconfig, store, append(args, "-o", "json")...)
			var p previewJSON
			if err := json.Unmarshal([]byte(doc.stdout), &p); err != nil {
				t.Fatalf("%s %s: the JSON preview: %v\n%s%s", cluster.name, cmd, err, doc.stdout, doc.stderr)
			}
			var want []string
			for _, st := range p.ChangeSteps {
				if st.Error != "" {
					want = append(want, strings.Split(st.Error, "\n")...)
				}
			}
			if len(want) < cluster.failed {
				t.Fatalf("%s %s: %d errors in the preview, want %d at least", cluster.name, cmd, len(want), cluster.failed)
			}
			for _, format := range []string{"text", "json", "markdown"} {
				t.Run(fmt.Sprintf("%s/%s/%s", cluster.name, cmd, format), func(t *testing.T) {
					store := filepath.Join(t.TempDir(), "store")
					if err := os.CopyFS(store, os.DirFS(applied)); err != nil {
						t.Fatal(err)
					}
					args := []string{cmd, "-o", format}
					if cmd != "preview" {
						args = append(args, "--yes")
					}
					r := action(cluster.kubeconfig, store, args...)
					if r.code != 1 {
						t.Errorf("exit %d, want 1", r.code)
					}
					seen := r.stdout + r.stderr
					for _, line := range want {
						n := strings.Count(seen, line)
						if format == "json" {
							if b, _ := json.Marshal(line); string(b[1:len(b)-1]) != line {
								n += strings.Count(seen, string(b[1:len(b)-1]))
							}
						}
						if n != 1 {
							t.Errorf("shown %d times, want once: %s", n, line)
						}
					}
					wantCount := fmt.Sprintf("%d of %d resources could not be previewed", cluster.failed, 5)
					if !strings.Contains(r.stderr, "error: ") || !strings.Contains(r.stderr, wantCount) {
						t.Errorf("stderr does not say %q:\n%s", wantCount, r.stderr)
					}
					if t.Failed() {
						t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
					}
				})
			}
		}
	}
	// Nothing was deleted by the destroys that could not preview.
	if got := kubectl(t, kc, "get", "configmap", "a", "-n", ns, "-o", "name"); got != "configmap/a" {
		t.Errorf("configmap a: %q", got)
	}
}
