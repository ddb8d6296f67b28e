package terraform

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

func TestIntegrationImport(t *testing.T) {
	for _, bin := range testenv.TerraformBinaries(t) {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			ctx := context.Background()
			rt, err := New(Config{Binary: bin, CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			const when = "2024-02-29T12:00:00Z"
			res := model.Resource{ID: "hashicorp:time:time_static:adopted", Type: model.Terraform,
				Attributes: map[string]any{"rfc3339": when, "triggers": map[string]any{}},
				Extensions: map[string]any{"provider": "registry.terraform.io/hashicorp/time/0.14.2", model.ImportIDExtension: when}}

			cur, err := rt.Read(ctx, nil, res)
			if err != nil {
				t.Fatal(err)
			}
			if cur == nil || cur.Attributes["rfc3339"] != when {
				t.Fatalf("Read with an import id = %+v, want the imported object at %s", cur, when)
			}
			planned, err := rt.Apply(ctx, nil, res, true)
			if err != nil {
				t.Fatal(err)
			}
			if planned.Extensions[model.ReplacePathsExtension] != nil {
				t.Errorf("plan of the import replaces it: %v", planned.Extensions[model.ReplacePathsExtension])
			}
			applied, err := rt.Apply(ctx, nil, res, false)
			if err != nil {
				t.Fatal(err)
			}
			if applied.Attributes["rfc3339"] != when || applied.Extensions[model.StateExtension] == nil {
				t.Fatalf("Apply of an import = %+v, want the imported object with its state", applied.Attributes)
			}
			// (time_static replaces an import unless the spec repeats its
			// rfc3339 and triggers: a plan shows that as a replacement.)
			// From the recorded state, the import id no longer matters.
			again, err := rt.Apply(ctx, applied, res, true)
			if err != nil {
				t.Fatal(err)
			}
			if again.Attributes["rfc3339"] != when || again.Extensions[model.ReplacePathsExtension] != nil {
				t.Errorf("plan after the import = %+v, want no change", again.Attributes)
			}
			if err := rt.Delete(ctx, *applied); err != nil {
				t.Fatal(err)
			}
		})
	}
}
