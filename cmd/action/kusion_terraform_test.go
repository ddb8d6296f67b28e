package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// The ids of the terraform_data objects Kusion created, as its releases
// record them (testdata/kusion-terraform-data).
var kusionObjects = map[string]string{
	"hashicorp:terraform:terraform_data:seed":     "5f0f3c0e-6c1a-2b7e-93d4-1e8a0c2b7f41",
	"hashicorp:terraform:terraform_data:settings": "a3d91b62-0f4e-7c85-d2a1-6b9e4f0c3d27",
	"hashicorp:terraform:terraform_data:marker":   "c7e2f4a8-91b3-4d06-5e8f-2a7c9b1d0e63",
}

// TestKusionTerraformReleasesContinue: a release directory holding the
// releases Kusion v0.15 wrote for a terraform_data stack (its first apply
// succeeded, its second failed in preview; no Terraform state recorded,
// only the values of `terraform show -json`) is continued by the action,
// with terraform and tofu: the preview of the same spec says unchanged, an
// apply writes revision 3 keeping Kusion's objects, an apply of a changed
// input writes revision 4 changing that object in place, and the files
// Kusion wrote, and then ours, stay byte for byte as they were.
func TestKusionTerraformReleasesContinue(t *testing.T) {
	for _, bin := range testenv.TerraformBinaries(t) {
		t.Run(filepath.Base(bin), func(t *testing.T) { testKusionTerraformReleasesContinue(t, bin) })
	}
}

func testKusionTerraformReleasesContinue(t *testing.T, bin string) {
	src := filepath.Join("testdata", "kusion-terraform-data")
	root, store := t.TempDir(), t.TempDir()
	copyTree(t, filepath.Join(src, "project"), root)
	copyTree(t, filepath.Join(src, "store"), store)
	stack := filepath.Join(root, "dev")
	folder := filepath.Join(store, "releases", "tfdata", "dev")
	c := &cli{t: t, backend: "file://" + store, extra: []string{"--workspace", "dev",
		"--terraform-binary", bin, "--terraform-cache", filepath.Join(t.TempDir(), "cache"), "--log-level", "debug"}}
	const seedID = "hashicorp:terraform:terraform_data:seed"

	written := map[string][]byte{}
	keep := func(names ...string) {
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join(folder, n))
			if err != nil {
				t.Fatal(err)
			}
			written[n] = b
		}
	}
	untouched := func(step string) {
		t.Helper()
		for n, want := range written {
			if got, err := os.ReadFile(filepath.Join(folder, n)); err != nil || string(got) != string(want) {
				t.Errorf("%s: %s changed (%v):\n%s", step, n, err, got)
			}
		}
	}
	// release reads a revision the action wrote and checks it continued
	// Kusion's objects.
	release := func(step string, rev uint64) *model.Release {
		t.Helper()
		ctx := context.Background()
		s, err := backend.Open(ctx, c.backend)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		r, err := s.Get(ctx, "tfdata", "dev", rev)
		if err != nil {
			t.Fatalf("%s: revision %d: %v", step, rev, err)
		}
		if r.Phase != model.PhaseSucceeded || r.State == nil || len(r.State.Resources) != len(kusionObjects) {
			t.Fatalf("%s: revision %d is %s with %+v, want succeeded with the three objects", step, rev, r.Phase, r.State)
		}
		for _, res := range r.State.Resources {
			if got := res.Attributes["id"]; got != kusionObjects[res.ID] {
				t.Errorf("%s: revision %d records %s with id %v, want Kusion's object %s", step, rev, res.ID, got, kusionObjects[res.ID])
			}
			if s, _ := res.Extensions[model.StateExtension].(string); s == "" {
				t.Errorf("%s: revision %d records no Terraform state for %s", step, rev, res.ID)
			}
		}
		return r
	}
	preview := func(step string, want map[string]string) {
		t.Helper()
		p := c.preview(stack)
		for id, object := range kusionObjects {
			st := p.ChangeSteps[id]
			if st.Action != want[id] || st.Error != "" {
				t.Errorf("%s: %s is %q (%s), want %s", step, id, st.Action, st.Error, want[id])
			}
			if st.From == nil || st.From.Attributes["id"] != object {
				t.Errorf("%s: %s is read as %+v, want Kusion's object %s", step, id, st.From, object)
			}
		}
		if len(p.ChangeSteps) != len(kusionObjects) {
			t.Errorf("%s: %d steps, want %d: %v", step, len(p.ChangeSteps), len(kusionObjects), p.StepKeys)
		}
	}
	apply := func(step string) {
		t.Helper()
		if _, errOut, code := c.run("apply", "--stack", stack, "--yes"); code != 0 {
			t.Fatalf("%s: apply exited %d: %s", step, code, errOut)
		}
	}
	allUnchanged := map[string]string{}
	for id := range kusionObjects {
		allUnchanged[id] = "UnChanged"
	}

	keep("1.yaml", "2.yaml", ".metadata.yml")
	// 1. Kusion's spec, previewed against Kusion's releases: nothing to do,
	// nothing written, the index included.
	preview("preview of Kusion's releases", allUnchanged)
	untouched("preview")
	delete(written, ".metadata.yml") // the apply records its release in it

	// 2. Apply: Kusion's last release failed, so the apply records one,
	// revision 3, with Kusion's objects and now their Terraform state.
	apply("apply")
	release("apply", 3)
	untouched("apply")
	keep("3.yaml")

	// 3. A changed input: an update of that object in place, revision 4.
	spec := filepath.Join(stack, "spec.yaml")
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "input: seed-one") {
		t.Fatalf("spec.yaml has no seed input to change:\n%s", b)
	}
	write(t, spec, strings.Replace(string(b), "input: seed-one", "input: seed-two", 1))
	changed := map[string]string{}
	for id := range kusionObjects {
		changed[id] = "UnChanged"
	}
	changed[seedID] = "Update"
	preview("preview of a changed input", changed)
	apply("apply of a changed input")
	r := release("apply of a changed input", 4)
	for _, res := range r.State.Resources {
		if res.ID == seedID && res.Attributes["output"] != "seed-two" {
			t.Errorf("revision 4: %s output = %v, want seed-two", seedID, res.Attributes["output"])
		}
	}
	untouched("apply of a changed input")

	// 4. And nothing more to do.
	preview("preview after", allUnchanged)
	untouched("preview after")
}
