package terraform_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/kusionpr/kusionpr/connect"
	"github.com/kusionpr/kusionpr/engine/runtimetest"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/runtime/terraform"
)

// TestIntegrationConformance runs the runtime suite with terraform and
// tofu, through the driver the binaries give the engine (its capabilities
// included), on hashicorp/local's local_file from the environment's provider
// mirror: an object whose absence a refresh sees, as a cloud's would be.
func TestIntegrationConformance(t *testing.T) {
	for _, bin := range testenv.TerraformBinaries(t) {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			files := t.TempDir()
			var n atomic.Int64
			file := func(attrs map[string]any) model.Resource {
				name := fmt.Sprintf("f%d", n.Add(1))
				attrs["filename"] = filepath.Join(files, name+".txt")
				return model.Resource{ID: "hashicorp:local:local_file:" + name, Type: model.Terraform, Attributes: attrs,
					Extensions: map[string]any{"provider": "registry.terraform.io/hashicorp/local/1.4.0"}}
			}
			object := func(*testing.T) model.Resource {
				return file(map[string]any{"content": fmt.Sprintf("file %d", n.Load()+1)})
			}
			runtimetest.RunConformance(t, runtimetest.Harness{
				Driver: connect.Terraform(terraform.Config{Binary: bin, CacheDir: t.TempDir()}),
				Object: object,
				Update: func(r model.Resource) model.Resource {
					u := r.DeepCopy()
					u.Attributes["content"] = u.Attributes["content"].(string) + ", updated"
					return u
				},
				Invalid: func(t *testing.T) model.Resource {
					r := object(t)
					r.Attributes["no_such_argument"] = true
					return r
				},
				Exists: func(t *testing.T, r model.Resource) bool {
					_, err := os.Stat(r.Attributes["filename"].(string))
					if err != nil && !errors.Is(err, fs.ErrNotExist) {
						t.Fatal(err)
					}
					return err == nil
				},
				Secret: func(*testing.T) (model.Resource, string) {
					secret := fmt.Sprintf("conform-secret-%d-%s", os.Getpid(), filepath.Base(bin))
					return file(map[string]any{"sensitive_content": secret}), secret
				},
			})
		})
	}
}
