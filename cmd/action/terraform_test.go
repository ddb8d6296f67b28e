package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// mixedFixture is a stack of Terraform resources (terraform_data, two
// local_file, time_static) and Kubernetes ones, a ConfigMap taking values
// from Terraform attributes.
type mixedFixture struct {
	t              *testing.T
	root, stackDir string
	files          string
	ns             string
	seed, note     string
	secret         string
	// extra and broken add a resource that works and one whose provider fails.
	extra, broken bool
}

const (
	seedID   = "hashicorp:terraform:terraform_data:seed"
	noteID   = "hashicorp:local:local_file:note"
	secretID = "hashicorp:local:local_file:secret"
	timeID   = "hashicorp:time:time_static:born"
	extraID  = "hashicorp:local:local_file:extra"
	brokenID = "hashicorp:local:local_file:broken"
)

func newMixedFixture(t *testing.T) *mixedFixture {
	suffix := fmt.Sprintf("%06x", rand.IntN(1<<24))
	f := &mixedFixture{
		t: t, root: t.TempDir(), files: t.TempDir(), ns: "tf-" + suffix,
		seed: "seed-one", note: "first note\n", secret: "hunter2-" + suffix + "-secret",
	}
	f.stackDir = filepath.Join(f.root, "dev")
	write(t, filepath.Join(f.root, "project.yaml"), "name: mixed\n")
	write(t, filepath.Join(f.stackDir, "stack.yaml"), "name: dev\n")
	f.writeSpec()
	return f
}

func (f *mixedFixture) writeSpec() {
	var b strings.Builder
	fmt.Fprintf(&b, `resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: Namespace
    metadata: {name: %[1]s}
- id: %[2]s
  type: Terraform
  attributes:
    input: %[3]q
  extensions:
    provider: terraform.io/builtin/terraform
    resourceType: terraform_data
- id: %[4]s
  type: Terraform
  attributes:
    filename: %[5]q
    content: %[6]q
  extensions:
    provider: registry.terraform.io/hashicorp/local/1.4.0
    resourceType: local_file
- id: %[7]s
  type: Terraform
  attributes:
    filename: %[8]q
    sensitive_content: %[9]q
  extensions:
    provider: registry.terraform.io/hashicorp/local/1.4.0
    resourceType: local_file
- id: %[10]s
  type: Terraform
  attributes:
    triggers: {owner: platform}
  extensions:
    provider: registry.terraform.io/hashicorp/time/0.14.2
    resourceType: time_static
- id: v1:ConfigMap:%[1]s:from-terraform
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: from-terraform, namespace: %[1]s}
    data:
      seed: $kusion_path.%[2]s.output
      born: $kusion_path.%[10]s.rfc3339
`, f.ns, seedID, f.seed, noteID, filepath.Join(f.files, "note.txt"), f.note,
		secretID, filepath.Join(f.files, "secret.txt"), f.secret, timeID)
	if f.extra {
		fmt.Fprintf(&b, `- id: %s
  type: Terraform
  attributes: {filename: %q, content: "extra\n"}
  extensions: {provider: registry.terraform.io/hashicorp/local/1.4.0}
`, extraID, filepath.Join(f.files, "extra.txt"))
	}
	if f.broken {
		// /proc refuses new folders: the provider fails to create the file.
		fmt.Fprintf(&b, `- id: %s
  type: Terraform
  attributes: {filename: /proc/kusionpr-forbidden/broken.txt, content: "never\n"}
  extensions: {provider: registry.terraform.io/hashicorp/local/1.4.0}
`, brokenID)
	}
	write(f.t, filepath.Join(f.stackDir, "spec.yaml"), b.String())
}

func (f *mixedFixture) file(name string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.files, name))
	if err != nil {
		f.t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

func TestMixedStack(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	binaries := testenv.TerraformBinaries(t)
	t.Setenv("KUBECONFIG", kc)
	for _, bin := range binaries {
		t.Run(filepath.Base(bin), func(t *testing.T) { testMixedStack(t, kc, bin) })
	}
}

func testMixedStack(t *testing.T, kc, bin string) {
	f := newMixedFixture(t)
	cache := filepath.Join(t.TempDir(), "terraform-cache")
	c := &cli{t: t, kubeconfig: kc, backend: "file://" + filepath.Join(t.TempDir(), "releases"),
		extra: []string{"--terraform-binary", bin, "--terraform-cache", cache, "--log-level", "debug"}}
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", f.ns, "--ignore-not-found", "--wait=false").Run()
	})
	cmID := "v1:ConfigMap:" + f.ns + ":from-terraform"
	all := []string{"v1:Namespace:" + f.ns, seedID, noteID, secretID, timeID, cmID}
	apply := func(step string) {
		t.Helper()
		if _, errOut, code := c.run("apply", "--stack", f.stackDir, "--yes"); code != 0 {
			t.Fatalf("%s: apply exited %d: %s", step, code, errOut)
		}
	}
	expectAll := func(step string, p previewJSON, want string) {
		t.Helper()
		for _, id := range all {
			if got := actions(p)[id]; got != want {
				t.Errorf("%s: %s is %q, want %s (changes %+v, error %q)", step, id, got, want, p.ChangeSteps[id].Changes, p.ChangeSteps[id].Error)
			}
		}
	}

	// 1. First preview: everything is created; the ConfigMap's values wait
	// for the Terraform resources.
	p := c.preview(f.stackDir)
	expectAll("first preview", p, "Create")
	if to := p.ChangeSteps[cmID].To; to == nil || fmt.Sprint(to.Attributes["data"].(map[string]any)["seed"]) != model.KnownAfterApply {
		t.Errorf("first preview: ConfigMap data.seed = %v, want %q", to, model.KnownAfterApply)
	}
	assertBefore(t, p.StepKeys, seedID, cmID)
	c.run("preview", "--stack", f.stackDir, "-o", "markdown")

	// 2. Apply: files written, the ConfigMap holds the Terraform values.
	apply("first apply")
	if got := f.file("note.txt"); got != f.note {
		t.Errorf("note.txt = %q, want %q", got, f.note)
	}
	if got := f.file("secret.txt"); got != f.secret {
		t.Errorf("secret.txt does not hold the sensitive content")
	}
	if got := kubectl(t, kc, "get", "configmap", "from-terraform", "-n", f.ns, "-o", "jsonpath={.data.seed}"); got != f.seed {
		t.Errorf("ConfigMap data.seed = %q, want the terraform_data output %q", got, f.seed)
	}
	born := kubectl(t, kc, "get", "configmap", "from-terraform", "-n", f.ns, "-o", "jsonpath={.data.born}")
	if !strings.HasPrefix(born, "20") {
		t.Errorf("ConfigMap data.born = %q, want time_static's rfc3339", born)
	}

	// 3. Re-preview: nothing to do.
	p = c.preview(f.stackDir)
	expectAll("re-preview", p, "UnChanged")
	seedUUID := p.ChangeSteps[seedID].From.Attributes["id"]

	// 4. Drift: the note edited on disk. The provider reports the file gone,
	// so the apply writes it again.
	write(t, filepath.Join(f.files, "note.txt"), "edited by hand\n")
	p = c.preview(f.stackDir)
	if st := p.ChangeSteps[noteID]; len(st.Drift) == 0 || st.Action == "UnChanged" {
		t.Errorf("after editing note.txt: action %q drift %+v, want drift and a change", st.Action, st.Drift)
	}
	apply("apply after drift")
	if got := f.file("note.txt"); got != f.note {
		t.Errorf("note.txt = %q after apply, want %q back", got, f.note)
	}

	// 5. Update: new content replaces the file; a new seed flows into the
	// ConfigMap at apply time.
	f.note, f.seed = "second note\n", "seed-two"
	f.writeSpec()
	p = c.preview(f.stackDir)
	note := p.ChangeSteps[noteID]
	if note.Action != "Update" || !contains(note.Replace, "content") {
		t.Errorf("after changing the note: action %q replace %v, want Update replacing because of content", note.Action, note.Replace)
	}
	if got := actions(p)[cmID]; got != "Update" {
		t.Errorf("after changing the seed: ConfigMap is %q, want Update", got)
	}
	if got := actions(p)[timeID]; got != "UnChanged" {
		t.Errorf("after changing the seed: time_static is %q, want UnChanged", got)
	}
	apply("update")
	if got := f.file("note.txt"); got != f.note {
		t.Errorf("note.txt = %q after update, want %q", got, f.note)
	}
	if got := kubectl(t, kc, "get", "configmap", "from-terraform", "-n", f.ns, "-o", "jsonpath={.data.seed}"); got != "seed-two" {
		t.Errorf("ConfigMap data.seed = %q after update, want seed-two", got)
	}
	p = c.preview(f.stackDir)
	expectAll("after update", p, "UnChanged")
	seedUUID = p.ChangeSteps[seedID].From.Attributes["id"]

	// 6. A fresh machine: no working folder, no plugin cache. The release's
	// state is enough: nothing changes and nothing is created twice.
	if err := os.RemoveAll(cache); err != nil {
		t.Fatal(err)
	}
	p = c.preview(f.stackDir)
	expectAll("with an empty cache", p, "UnChanged")
	apply("apply with an empty cache")
	p = c.preview(f.stackDir)
	expectAll("after applying with an empty cache", p, "UnChanged")
	if got := p.ChangeSteps[seedID].From.Attributes["id"]; got != seedUUID {
		t.Errorf("terraform_data id %v became %v: it was created again", seedUUID, got)
	}
	if got := kubectl(t, kc, "get", "configmap", "from-terraform", "-n", f.ns, "-o", "jsonpath={.data.born}"); got != born {
		t.Errorf("time_static changed from %q to %q: it was created again", born, got)
	}

	// 7. One failing resource: the release fails with the provider's error,
	// the resource applied beside it is recorded.
	f.extra, f.broken = true, true
	f.writeSpec()
	if _, errOut, code := c.run("apply", "--stack", f.stackDir, "--yes"); code == 0 {
		t.Fatalf("apply with a broken resource succeeded: %s", errOut)
	}
	rel := latestRelease(t, c.backend, "mixed")
	t.Logf("failed release %d: %s", rel.Revision, rel.Message)
	if rel.Phase != model.PhaseFailed {
		t.Errorf("release %d phase %q, want failed", rel.Revision, rel.Phase)
	}
	if !strings.Contains(rel.Message, brokenID) || !strings.Contains(rel.Message, "kusionpr-forbidden") {
		t.Errorf("release message %q does not carry the provider's error for %s", rel.Message, brokenID)
	}
	for _, id := range append(all, extraID) {
		r, ok := rel.State.Resources.ByID(id)
		if !ok {
			t.Errorf("failed release lacks the state of %s", id)
			continue
		}
		if r.Type == model.Terraform && r.Extensions[model.StateExtension] == nil {
			t.Errorf("failed release keeps no Terraform state for %s", id)
		}
	}
	if got := f.file("extra.txt"); got != "extra\n" {
		t.Errorf("extra.txt = %q", got)
	}
	f.broken = false
	f.writeSpec()
	apply("apply without the broken resource")

	// 8. Destroy removes the files and the Kubernetes objects; the
	// Terraform resources are read in one run and destroyed in another.
	_, errOut, code := c.run("destroy", "--stack", f.stackDir, "--yes")
	if code != 0 {
		t.Fatalf("destroy exited %d: %s", code, errOut)
	}
	// (A batch takes what arrives within its window: a loaded machine may
	// split one in two, never into a run per resource.)
	if batched, alone := strings.Count(errOut, `msg=terraform folder="state `), strings.Count(errOut, `msg=terraform folder=hashicorp:`); batched < 2 || alone > 0 {
		t.Errorf("destroy of 5 Terraform resources: %d batched Terraform runs, %d for one resource each; want one refresh and one destroy, batched:\n%s", batched, alone, errOut)
	}
	for _, name := range []string{"note.txt", "secret.txt", "extra.txt"} {
		if _, err := os.Stat(filepath.Join(f.files, name)); !os.IsNotExist(err) {
			t.Errorf("%s still exists after destroy (%v)", name, err)
		}
	}
	if out, _ := exec.Command("kubectl", "--kubeconfig", kc, "get", "namespace", f.ns).CombinedOutput(); !strings.Contains(string(out), "NotFound") {
		t.Errorf("namespace after destroy: %s", out)
	}

	// 9. The sensitive content is in no output, no log (debug level) and no
	// comment; in the releases only inside the recorded Terraform state.
	if strings.Contains(c.printed.String(), f.secret) {
		t.Errorf("the sensitive content appears in the output or logs")
	}
	for _, r := range releases(t, c.backend, "mixed") {
		for i := range r.State.Resources {
			delete(r.State.Resources[i].Extensions, model.StateExtension)
		}
		if strings.Contains(fmt.Sprintf("%+v %+v %s", r.Spec, r.State, r.Message), f.secret) {
			t.Errorf("release %d shows the sensitive content outside the Terraform state", r.Revision)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func latestRelease(t *testing.T, url, project string) *model.Release {
	t.Helper()
	rels := releases(t, url, project)
	if len(rels) == 0 {
		t.Fatalf("no release of %s", project)
	}
	return rels[len(rels)-1]
}

func releases(t *testing.T, url, project string) []*model.Release {
	t.Helper()
	ctx := context.Background()
	s, err := backend.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	revs, err := s.Revisions(ctx, project, "default")
	if err != nil {
		t.Fatal(err)
	}
	var out []*model.Release
	for _, rev := range revs {
		r, err := s.Get(ctx, project, "default", rev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}
