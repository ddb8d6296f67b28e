package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// BenchmarkApplyTerraform applies 50 terraform_data resources from nothing:
// ours (a spec of 50 Terraform resources, planned and applied as one batch,
// with a state per resource kept in the release) against one `terraform
// apply` of a root module holding the same 50, and against what a tool that
// shows the plan before applying it must do at the least, as Atlantis does:
// `terraform plan -out`, `terraform show -json` of it, `terraform apply` of
// the saved plan ("planned-s"). All are timed
// warm, as a runner with a cache runs them: our working folders and the
// reference's are initialised once, untimed, and every timed run starts
// with no state.
func BenchmarkApplyTerraform(b *testing.B) { applyTerraform(b, 50) }

// BenchmarkApplyTerraform200 is the same with 200 resources: what grows
// with the stack (the plan's JSON, the state split into one per resource,
// the release) shows here.
func BenchmarkApplyTerraform200(b *testing.B) { applyTerraform(b, 200) }

func applyTerraform(b *testing.B, resources int) {
	w := newTerraformWorld(b, resources)
	c := &contenders{
		names: []string{"ours", "terraform", "planned"},
		run: map[string]func(*testing.B, int) time.Duration{
			"ours": func(b *testing.B, n int) time.Duration {
				return w.ours(b, "apply", fmt.Sprintf("run%d", n)).run(b)
			},
			"terraform": func(b *testing.B, _ int) time.Duration {
				w.forget()
				return w.reference("apply", "-auto-approve", "-input=false").run(b)
			},
			"planned": func(b *testing.B, _ int) time.Duration {
				w.forget()
				return w.reference("plan", "-out=tfplan", "-input=false").run(b) +
					w.reference("show", "-json", "tfplan").run(b) +
					w.reference("apply", "-input=false", "tfplan").run(b)
			},
		},
	}
	c.measure(b)
}

// BenchmarkDestroyTerraform destroys the 50 again: ours (the stack's
// destroy, one Terraform run for the resources asked together) against one
// `terraform destroy` of the root module. Each timed run starts from an
// untimed apply of its own.
func BenchmarkDestroyTerraform(b *testing.B) {
	w := newTerraformWorld(b, 50)
	c := &contenders{
		names: []string{"ours", "terraform"},
		run: map[string]func(*testing.B, int) time.Duration{
			"ours": func(b *testing.B, n int) time.Duration {
				project := fmt.Sprintf("run%d", n)
				w.ours(b, "apply", project).run(b)
				return w.ours(b, "destroy", project).run(b)
			},
			"terraform": func(b *testing.B, _ int) time.Duration {
				w.forget()
				w.reference("apply", "-auto-approve", "-input=false").run(b)
				return w.reference("destroy", "-auto-approve", "-input=false").run(b)
			},
		},
	}
	c.measure(b)
}

// terraformWorld is a spec of terraform_data resources for our action, and
// a root module of the same for Terraform, both initialised once,
// untimed, as a runner with a cache has them.
type terraformWorld struct {
	dir, root, tf, action, cache string
	spec                         string
}

func newTerraformWorld(b *testing.B, resources int) *terraformWorld {
	w := &terraformWorld{tf: testenv.TerraformBinaries(b)[0], action: binary(b, "../cmd/action"), dir: b.TempDir()}
	w.cache = filepath.Join(w.dir, "terraform-cache")
	w.root = filepath.Join(w.dir, "root")
	var spec, hcl strings.Builder
	spec.WriteString("resources:\n")
	for i := range resources {
		fmt.Fprintf(&spec, "- id: hashicorp:terraform:terraform_data:r%03d\n  type: Terraform\n  attributes: {input: value-%03d}\n  extensions: {provider: terraform.io/builtin/terraform, resourceType: terraform_data}\n", i, i)
		fmt.Fprintf(&hcl, "resource \"terraform_data\" \"r%03d\" {\n  input = \"value-%03d\"\n}\n", i, i)
	}
	w.spec = spec.String()
	writeFile(b, filepath.Join(w.root, "main.tf"), hcl.String())
	w.ours(b, "apply", "warm").run(b)
	w.ours(b, "destroy", "warm").run(b)
	w.reference("init", "-input=false").run(b)
	return w
}

// ours is our action's apply or destroy of the stack of project, written
// the first time it is asked for.
func (w *terraformWorld) ours(b *testing.B, verb, project string) command {
	st := filepath.Join(w.dir, project, "dev")
	if _, err := os.Stat(st); err != nil {
		writeFile(b, filepath.Join(w.dir, project, "project.yaml"), "name: "+project+"\n")
		writeFile(b, filepath.Join(st, "stack.yaml"), "name: dev\n")
		writeFile(b, filepath.Join(st, "spec.yaml"), w.spec)
	}
	return command{name: w.action, env: terraformEnv, args: []string{verb, "--stack", st, "--yes",
		"--backend", "file://" + filepath.Join(w.dir, "releases"), "--terraform-binary", w.tf, "--terraform-cache", w.cache}}
}

func (w *terraformWorld) reference(args ...string) command {
	return command{name: w.tf, dir: w.root, env: terraformEnv, args: args}
}

// forget removes the root module's state: the next run starts from nothing.
func (w *terraformWorld) forget() {
	for _, f := range []string{"terraform.tfstate", "terraform.tfstate.backup"} {
		os.Remove(filepath.Join(w.root, f))
	}
}

var terraformEnv = []string{"CHECKPOINT_DISABLE=1"}
