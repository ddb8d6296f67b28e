package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// TestDerivedSensitiveValueMasked: a terraform_data whose input is
// sensitive (the spec says so) copies it into output, which Terraform does
// not mark sensitive; a spec attribute may hold the same value too. Through
// preview (JSON and the markdown of a comment), apply and the preview after
// it, with terraform and tofu, the value is in no output, no log (debug
// level) and no release outside the recorded Terraform state, and output
// shows as masked.
func TestDerivedSensitiveValueMasked(t *testing.T) {
	for _, bin := range testenv.TerraformBinaries(t) {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			secret := fmt.Sprintf("derived-%06x-s3cret", rand.IntN(1<<24))
			const id = "hashicorp:terraform:terraform_data:sealed"
			root := t.TempDir()
			stack := filepath.Join(root, "dev")
			write(t, filepath.Join(root, "project.yaml"), "name: sealed\n")
			write(t, filepath.Join(stack, "stack.yaml"), "name: dev\n")
			write(t, filepath.Join(stack, "spec.yaml"), fmt.Sprintf(`resources:
- id: %s
  type: Terraform
  attributes:
    input: %q
    triggers_replace: %q
  extensions:
    provider: terraform.io/builtin/terraform
    kusionpr.io/sensitive-paths: [input]
`, id, secret, secret))
			releasesDir := filepath.Join(t.TempDir(), "releases")
			c := &cli{t: t, backend: "file://" + releasesDir,
				extra: []string{"--terraform-binary", bin, "--terraform-cache", filepath.Join(t.TempDir(), "cache"), "--log-level", "debug"}}

			p := c.preview(stack)
			if got := actions(p)[id]; got != "Create" {
				t.Fatalf("first preview: %s is %q, want Create (%s)", id, got, p.ChangeSteps[id].Error)
			}
			c.run("preview", "--stack", stack, "-o", "markdown")
			if _, errOut, code := c.run("apply", "--stack", stack, "--yes"); code != 0 {
				t.Fatalf("apply exited %d: %s", code, errOut)
			}
			p = c.preview(stack)
			st := p.ChangeSteps[id]
			if st.Action != "UnChanged" || st.From == nil {
				t.Fatalf("preview after apply: %s is %q (%s), want UnChanged with the object", id, st.Action, st.Error)
			}
			if out := fmt.Sprint(st.From.Attributes["output"]); out != model.SensitiveMask {
				t.Errorf("preview after apply: output = %q, want %q", out, model.SensitiveMask)
			}
			c.run("preview", "--stack", stack, "-o", "markdown")

			if strings.Contains(c.printed.String(), secret) {
				t.Errorf("the sensitive value appears in the output or the logs:\n%s", c.printed.String())
			}
			rels := releases(t, c.backend, "sealed")
			if len(rels) == 0 {
				t.Fatal("no release written")
			}
			for _, r := range rels {
				for i := range r.State.Resources {
					if s, _ := r.State.Resources[i].Extensions[model.StateExtension].(string); !strings.Contains(s, secret) {
						t.Errorf("release %d: the recorded Terraform state does not hold the value (the test would prove nothing)", r.Revision)
					}
					delete(r.State.Resources[i].Extensions, model.StateExtension)
				}
				if s := fmt.Sprintf("%+v %+v %s", r.Spec, r.State, r.Message); strings.Contains(s, secret) {
					t.Errorf("release %d shows the sensitive value outside the Terraform state: %s", r.Revision, s)
				}
			}
		})
	}
}
