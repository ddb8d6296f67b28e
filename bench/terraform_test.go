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

const terraformResources = 50

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
func BenchmarkApplyTerraform(b *testing.B) {
	tf := testenv.TerraformBinaries(b)[0]
	action := binary(b, "../cmd/action")
	dir := b.TempDir()
	cache := filepath.Join(dir, "terraform-cache")
	env := []string{"CHECKPOINT_DISABLE=1"}

	var spec, hcl strings.Builder
	spec.WriteString("resources:\n")
	for i := range terraformResources {
		fmt.Fprintf(&spec, "- id: hashicorp:terraform:terraform_data:r%02d\n  type: Terraform\n  attributes: {input: value-%02d}\n  extensions: {provider: terraform.io/builtin/terraform, resourceType: terraform_data}\n", i, i)
		fmt.Fprintf(&hcl, "resource \"terraform_data\" \"r%02d\" {\n  input = \"value-%02d\"\n}\n", i, i)
	}
	stack := func(project string) string {
		st := filepath.Join(dir, project, "dev")
		writeFile(b, filepath.Join(dir, project, "project.yaml"), "name: "+project+"\n")
		writeFile(b, filepath.Join(st, "stack.yaml"), "name: dev\n")
		writeFile(b, filepath.Join(st, "spec.yaml"), spec.String())
		return st
	}
	ours := func(project string) command {
		return command{name: action, env: env, args: []string{"apply", "--stack", stack(project), "--yes",
			"--backend", "file://" + filepath.Join(dir, "releases"), "--terraform-binary", tf, "--terraform-cache", cache}}
	}
	root := filepath.Join(dir, "root")
	writeFile(b, filepath.Join(root, "main.tf"), hcl.String())
	reference := func(args ...string) command {
		return command{name: tf, dir: root, env: env, args: args}
	}
	// Warm both: our folders get their init, the root module its own.
	ours("warm").run(b)
	reference("init", "-input=false").run(b)

	c := &contenders{
		names: []string{"ours", "terraform", "planned"},
		run: map[string]func(*testing.B, int) time.Duration{
			"ours": func(b *testing.B, n int) time.Duration {
				return ours(fmt.Sprintf("run%d", n)).run(b)
			},
			"terraform": func(b *testing.B, _ int) time.Duration {
				for _, f := range []string{"terraform.tfstate", "terraform.tfstate.backup"} {
					os.Remove(filepath.Join(root, f))
				}
				return reference("apply", "-auto-approve", "-input=false").run(b)
			},
			"planned": func(b *testing.B, _ int) time.Duration {
				for _, f := range []string{"terraform.tfstate", "terraform.tfstate.backup"} {
					os.Remove(filepath.Join(root, f))
				}
				return reference("plan", "-out=tfplan", "-input=false").run(b) +
					reference("show", "-json", "tfplan").run(b) +
					reference("apply", "-input=false", "tfplan").run(b)
			},
		},
	}
	c.measure(b)
}
