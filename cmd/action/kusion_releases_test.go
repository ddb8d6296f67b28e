package main

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// TestContinuesKusionReleases: a release folder Kusion v0.15 wrote
// (backend/testdata/kusion-v0.15: an apply, a failed generate, an unlocked
// apply, a destroy and an apply, objects Kusion created in the cluster)
// previews as unchanged, writing nothing, and the next apply writes
// revision 6 without touching the earlier files.
func TestContinuesKusionReleases(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	t.Setenv("KUBECONFIG", kc)
	ns := fmt.Sprintf("kusion-shop-%06x", rand.IntN(1<<24))
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", ns, "--ignore-not-found", "--wait=false").Run()
	})
	store := t.TempDir()
	src := filepath.Join("..", "..", "backend", "testdata", "kusion-v0.15")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		write(t, filepath.Join(store, rel), strings.ReplaceAll(string(data), "kusion-shop", ns))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	before := readTree(t, store)

	// What Kusion created (a plain create, its state the planned object).
	manifest := filepath.Join(t.TempDir(), "objects.yaml")
	write(t, manifest, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %[1]s}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: %[1]s}\ndata: {version: v1}\n", ns))
	kubectl(t, kc, "create", "-f", manifest)

	root := t.TempDir()
	write(t, filepath.Join(root, "project.yaml"), "name: shop\n")
	write(t, filepath.Join(root, "dev", "stack.yaml"), "name: dev\n")
	spec := func(version string) {
		write(t, filepath.Join(root, "dev", "spec.yaml"), fmt.Sprintf(`resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}
  extensions: {GVK: "/v1, Kind=Namespace"}
- id: v1:ConfigMap:%[1]s:settings
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: settings, namespace: %[1]s}
    data: {version: %[2]s}
  dependsOn: [v1:Namespace:%[1]s]
  extensions: {GVK: "/v1, Kind=ConfigMap"}
`, ns, version))
	}
	spec("v1")
	c := &cli{t: t, kubeconfig: kc, backend: "file://" + store, extra: []string{"--workspace", "default"}}
	p := c.preview(filepath.Join(root, "dev"))
	if len(p.ChangeSteps) != 2 {
		t.Fatalf("preview has %d steps, want the 2 objects", len(p.ChangeSteps))
	}
	for id, s := range p.ChangeSteps {
		if s.Action != "UnChanged" || len(s.Drift) > 0 {
			t.Errorf("%s: %s with drift %+v, want unchanged: it is as Kusion's release 5 left it", id, s.Action, s.Drift)
		}
	}
	if after := readTree(t, store); after != before {
		t.Errorf("the preview wrote to Kusion's release folder")
	}

	spec("v2")
	if _, errOut, code := c.run("apply", "--stack", filepath.Join(root, "dev"), "--yes"); code != 0 {
		t.Fatalf("apply exited %d: %s", code, errOut)
	}
	if got := kubectl(t, kc, "get", "configmap", "settings", "-n", ns, "-o", "jsonpath={.data.version}"); got != "v2" {
		t.Errorf("ConfigMap version %q after the apply, want v2", got)
	}
	dir := filepath.Join(store, "releases", "shop", "default")
	for rev := 1; rev <= 5; rev++ {
		name := fmt.Sprintf("%d.yaml", rev)
		was, _ := os.ReadFile(filepath.Join(src, "releases", "shop", "default", name))
		now, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(now) != strings.ReplaceAll(string(was), "kusion-shop", ns) {
			t.Errorf("Kusion's release %d changed (%v)", rev, err)
		}
	}
	next, err := os.ReadFile(filepath.Join(dir, "6.yaml"))
	if err != nil || !strings.Contains(string(next), "phase: succeeded") || !strings.Contains(string(next), "version: v2") {
		t.Errorf("release 6: %v\n%s", err, next)
	}
}
