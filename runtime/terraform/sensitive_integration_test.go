package terraform

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// TestIntegrationDerivedSensitiveMasked: Terraform marks what the schema
// and the configuration make sensitive, never a value a provider copies
// from it: terraform_data's output is its input, unmarked. A value equal to
// a sensitive value of the same resource is masked too, in what Read and
// Apply (planned and applied) return, with terraform and tofu: whether the
// input is sensitive because the spec says so or because Terraform's own
// marks in the recorded state (sensitive_attributes, the plan's
// before_sensitive) say so.
func TestIntegrationDerivedSensitiveMasked(t *testing.T) {
	for _, bin := range testenv.TerraformBinaries(t) {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			ctx := context.Background()
			rt, err := New(Config{Binary: bin, CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			secret := fmt.Sprintf("derived-secret-%d-%s", os.Getpid(), filepath.Base(bin))
			// noSecret checks a returned resource as people would see it
			// (the recorded Terraform state aside), and that output shows
			// as masked rather than missing.
			noSecret := func(step string, r *model.Resource, wantOutput bool) {
				t.Helper()
				if r == nil {
					t.Fatalf("%s: no object", step)
				}
				pub := model.Public(*r)
				if s := fmt.Sprintf("%v %v", pub.Attributes, pub.Extensions); strings.Contains(s, secret) {
					t.Errorf("%s shows the sensitive value: %s", step, s)
				}
				if out, _ := r.Attributes["output"].(string); wantOutput && !model.IsFingerprint(out) {
					t.Errorf("%s: output = %v, want it masked", step, r.Attributes["output"])
				}
			}

			t.Run("declared in the spec", func(t *testing.T) {
				res := model.Resource{ID: "hashicorp:terraform:terraform_data:declared", Type: model.Terraform,
					Attributes: map[string]any{"input": secret, "triggers_replace": secret},
					Extensions: map[string]any{"provider": builtinProvider, model.SensitivePathsExtension: []any{"input"}}}
				paths, err := rt.SensitivePaths(ctx, res)
				if err != nil {
					t.Fatal(err)
				}
				if !contains(paths, "triggers_replace") {
					t.Errorf("SensitivePaths of a spec whose triggers_replace is its sensitive input = %v, want triggers_replace among them", paths)
				}
				planned, err := rt.Apply(ctx, nil, res, true)
				if err != nil {
					t.Fatal(err)
				}
				noSecret("plan", planned, false)
				applied, err := rt.Apply(ctx, nil, res, false)
				if err != nil {
					t.Fatal(err)
				}
				noSecret("apply", applied, true)
				read, err := rt.Read(ctx, applied, res)
				if err != nil {
					t.Fatal(err)
				}
				noSecret("read", read, true)
				again, err := rt.Apply(ctx, applied, res, true)
				if err != nil {
					t.Fatal(err)
				}
				noSecret("plan again", again, true)
				if err := rt.Delete(ctx, *applied); err != nil {
					t.Fatal(err)
				}
			})

			t.Run("marked by Terraform", func(t *testing.T) {
				// A state Terraform wrote for input = sensitive(...): its
				// sensitive_attributes mark input, not output.
				dir := t.TempDir()
				write := func(name, content string) {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				write("main.tf", fmt.Sprintf("resource \"terraform_data\" \"marked\" {\n  input = sensitive(%q)\n}\n", secret))
				for _, args := range [][]string{{"init", "-no-color"}, {"apply", "-auto-approve", "-no-color"}} {
					cmd := exec.Command(bin, append([]string{"-chdir=" + dir}, args...)...)
					cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("%s %s: %v\n%s", bin, args[0], err, out)
					}
				}
				state, err := os.ReadFile(filepath.Join(dir, "terraform.tfstate"))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(state), `"sensitive_attributes"`) || !strings.Contains(string(state), `"input"`) {
					t.Fatalf("the state marks nothing sensitive:\n%s", state)
				}
				res := model.Resource{ID: "hashicorp:terraform:terraform_data:marked", Type: model.Terraform,
					Attributes: map[string]any{"input": secret}, Extensions: map[string]any{"provider": builtinProvider}}
				prior := res.DeepCopy()
				prior.Extensions[model.StateExtension] = string(state)
				read, err := rt.Read(ctx, &prior, res)
				if err != nil {
					t.Fatal(err)
				}
				noSecret("read", read, true)
				planned, err := rt.Apply(ctx, &prior, res, true)
				if err != nil {
					t.Fatal(err)
				}
				noSecret("plan", planned, true)
			})
		})
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
