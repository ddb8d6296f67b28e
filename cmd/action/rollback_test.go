package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// rollbackSpec is one release's spec of TestRollback: a Namespace, the
// ConfigMaps named with their data, a Secret's password and a
// terraform_data's input.
func rollbackSpec(ns string, cms map[string]string, password, seed string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "resources:\n- id: v1:Namespace:%[1]s\n  type: Kubernetes\n  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}\n", ns)
	for _, name := range []string{"a", "b", "c", "d"} {
		if v, ok := cms[name]; ok {
			fmt.Fprintf(&b, "- id: v1:ConfigMap:%[1]s:%[2]s\n  type: Kubernetes\n  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: %[2]s, namespace: %[1]s}, data: {v: %[3]q}}\n", ns, name, v)
		}
	}
	if password != "" {
		fmt.Fprintf(&b, "- id: v1:Secret:%[1]s:creds\n  type: Kubernetes\n  attributes: {apiVersion: v1, kind: Secret, metadata: {name: creds, namespace: %[1]s}, stringData: {password: %[2]q}}\n", ns, password)
	}
	fmt.Fprintf(&b, "- id: hashicorp:terraform:terraform_data:seed\n  type: Terraform\n  attributes: {input: %q}\n  extensions: {provider: terraform.io/builtin/terraform}\n", seed)
	return b.String()
}

// TestRollback: a stack of Kubernetes objects and a Terraform resource
// goes through five releases that add, change and remove resources; a
// rollback to release 3 makes the live objects what release 3 recorded,
// object by object (the ConfigMaps added since deleted, the one removed
// since back, Terraform's input as it was, the Secret's unchanged
// password restored from the checkout), and release 6 records rollback to
// 3. Once the password changed, a rollback to 3 is refused naming it, the
// values unsaid. releases lists them all, newest first.
func TestRollback(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	t.Setenv("KUBECONFIG", kc)
	bin := testenv.TerraformBinaries(t)[0]
	suffix := fmt.Sprintf("%06x", rand.IntN(1<<24))
	ns := "rollback-" + suffix
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", ns, "--ignore-not-found", "--wait=false").Run()
	})
	root := t.TempDir()
	stack := filepath.Join(root, "dev")
	project := "rollback-" + suffix
	write(t, filepath.Join(root, "project.yaml"), "name: "+project+"\n")
	write(t, filepath.Join(stack, "stack.yaml"), "name: dev\n")
	c := &cli{t: t, kubeconfig: kc, backend: "file://" + filepath.Join(t.TempDir(), "releases"),
		extra: []string{"--terraform-binary", bin, "--terraform-cache", filepath.Join(t.TempDir(), "cache")}}
	pw1, pw2 := "pw1-"+suffix, "pw2-"+suffix
	for i, spec := range []string{
		rollbackSpec(ns, map[string]string{"a": "1"}, "", "one"),
		rollbackSpec(ns, map[string]string{"a": "1", "b": "1"}, "", "one"),
		rollbackSpec(ns, map[string]string{"a": "2", "b": "1"}, pw1, "two"),
		rollbackSpec(ns, map[string]string{"a": "3", "c": "1"}, pw1, "three"),
		rollbackSpec(ns, map[string]string{"a": "3", "c": "2", "d": "1"}, pw1, "three"),
	} {
		write(t, filepath.Join(stack, "spec.yaml"), spec)
		if _, errOut, code := c.run("apply", "--stack", stack, "--yes"); code != 0 {
			t.Fatalf("apply of release %d exited %d: %s", i+1, code, errOut)
		}
	}

	// The plan: what went since 3 is deleted, what 3 had is back.
	out, errOut, code := c.run("rollback", "--stack", stack, "--to", "3", "--dry-run", "-o", "json")
	if code != 0 {
		t.Fatalf("rollback --dry-run exited %d: %s", code, errOut)
	}
	var p previewJSON
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("rollback --dry-run -o json: %v\n%s", err, out)
	}
	cm := func(n string) string { return "v1:ConfigMap:" + ns + ":" + n }
	for id, want := range map[string]string{cm("a"): "Update", cm("b"): "Create", cm("c"): "Delete", cm("d"): "Delete",
		"hashicorp:terraform:terraform_data:seed": "Update", "v1:Secret:" + ns + ":creds": "UnChanged", "v1:Namespace:" + ns: "UnChanged"} {
		if got := actions(p)[id]; got != want {
			t.Errorf("the rollback's plan: %s is %q, want %s (%s)", id, got, want, p.ChangeSteps[id].Error)
		}
	}

	if _, errOut, code := c.run("rollback", "--stack", stack, "--to", "3", "--yes"); code != 0 {
		t.Fatalf("rollback exited %d: %s", code, errOut)
	}
	rels := releases(t, c.backend, project)
	if len(rels) != 6 {
		t.Fatalf("%d releases, want 6", len(rels))
	}
	three, six := rels[2], rels[5]
	if six.Phase != model.PhaseSucceeded || six.Origin == nil || six.Origin.RollbackTo != 3 || six.Origin.Command != "rollback" || !strings.HasPrefix(six.Origin.Reason, "rollback to 3") {
		t.Fatalf("release 6: %s, origin %+v; want a succeeded rollback to 3", six.Phase, six.Origin)
	}
	// Object by object: what release 3 recorded is what is live.
	if len(three.State.Resources) != len(six.State.Resources) {
		t.Errorf("release 3 recorded %d objects, release 6 %d", len(three.State.Resources), len(six.State.Resources))
	}
	for _, r := range three.State.Resources {
		switch {
		case strings.HasPrefix(r.ID, "v1:ConfigMap:"):
			name := r.Attributes["metadata"].(map[string]any)["name"].(string)
			want := r.Attributes["data"].(map[string]any)["v"]
			if got := kubectl(t, kc, "get", "configmap", name, "-n", ns, "-o", "jsonpath={.data.v}"); got != want {
				t.Errorf("ConfigMap %s: live v = %q, release 3 recorded %q", name, got, want)
			}
		case strings.HasPrefix(r.ID, "v1:Secret:"):
			live := kubectl(t, kc, "get", "secret", "creds", "-n", ns, "-o", "jsonpath={.data.password}")
			if got := model.Redact(model.Resource{Type: model.Kubernetes, Attributes: map[string]any{"kind": "Secret", "data": map[string]any{"password": live}}}); got.Attributes["data"].(map[string]any)["password"] != r.Attributes["data"].(map[string]any)["password"] {
				t.Error("the Secret's password is not the one release 3 recorded")
			}
		case r.Type == model.Terraform:
			var now *model.Resource
			for i := range six.State.Resources {
				if six.State.Resources[i].ID == r.ID {
					now = &six.State.Resources[i]
				}
			}
			if now == nil || now.Attributes["input"] != r.Attributes["input"] || r.Attributes["input"] != "two" {
				t.Errorf("%s: release 6 holds %v, release 3 recorded input %v", r.ID, now, r.Attributes["input"])
			}
		}
	}
	for _, gone := range []string{"c", "d"} {
		if out, err := exec.Command("kubectl", "--kubeconfig", kc, "get", "configmap", gone, "-n", ns).CombinedOutput(); err == nil {
			t.Errorf("ConfigMap %s, made after release 3, is still live: %s", gone, out)
		}
	}

	// The password changed since: going back to 3 would need the old one.
	write(t, filepath.Join(stack, "spec.yaml"), rollbackSpec(ns, map[string]string{"a": "3"}, pw2, "three"))
	if _, errOut, code := c.run("apply", "--stack", stack, "--yes"); code != 0 {
		t.Fatalf("apply of release 7 exited %d: %s", code, errOut)
	}
	_, errOut, code = c.run("rollback", "--stack", stack, "--to", "3", "--yes")
	if code == 0 || !strings.Contains(errOut, "rollback of dev to release 3: v1:Secret:"+ns+":creds.stringData.password holds a sensitive value the release recorded only by its fingerprint") {
		t.Errorf("rollback to 3 with the password changed: exit %d, %q", code, errOut)
	}
	if _, errOut, code := c.run("rollback", "--stack", stack, "--to", "99", "--yes"); code == 0 || !strings.Contains(errOut, "has no release 99") {
		t.Errorf("rollback to a release that does not exist: exit %d, %s", code, errOut)
	}
	if n := len(releases(t, c.backend, project)); n != 7 {
		t.Errorf("%d releases after the refused rollbacks, want 7", n)
	}

	list := &cli{t: t, backend: c.backend}
	out, _, code = list.run("releases", "--stack", stack)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 8 || !strings.HasPrefix(lines[1], "7 ") || !strings.HasPrefix(lines[2], "6 ") || !strings.Contains(lines[2], "rollback to 3") || !strings.HasPrefix(lines[7], "1 ") {
		t.Errorf("releases: exit %d\n%s", code, out)
	}
	out, _, _ = list.run("releases", "--stack", stack, "-o", "json", "--limit", "2")
	var h struct {
		Releases []struct {
			Revision   uint64 `json:"revision"`
			RollbackTo uint64 `json:"rollbackTo"`
		} `json:"releases"`
		More int `json:"more"`
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil || len(h.Releases) != 2 || h.Releases[1].RollbackTo != 3 || h.More != 5 {
		t.Errorf("releases -o json --limit 2: %+v, %v\n%s", h, err, out)
	}
	// --running on a folder: the stack's releases read newest first, the
	// ended ones left out.
	if out, _, code := list.run("releases", "--stack", stack, "--running"); code != 0 || strings.TrimSpace(out) != project+"/default has no running releases." {
		t.Errorf("releases --running with every release ended: exit %d, %q", code, out)
	}
	store, err := backend.Open(context.Background(), c.backend)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	held := &model.Release{Project: project, Workspace: "default", Stack: "dev", Phase: model.PhaseApplying, Origin: &model.Origin{User: "runner", Command: "apply"}}
	if _, err := store.Begin(context.Background(), held); err != nil {
		t.Fatal(err)
	}
	out, _, code = list.run("releases", "--stack", stack, "--running")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[1], "8 ") || !strings.Contains(lines[1], "applying") {
		t.Errorf("releases --running with release 8 applying: exit %d\n%s", code, out)
	}
	for _, s := range []string{pw1, pw2} {
		if strings.Contains(c.printed.String(), s) {
			t.Errorf("a password appears in what the commands printed")
		}
	}
}
