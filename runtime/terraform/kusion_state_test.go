package terraform

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// kusionExtensions are a terraform_data's extensions in a spec Kusion v0.15
// can apply: its Terraform runtime requires extensions.provider (it writes
// required_providers from it and reads the provider back from the lock
// file, where the built-in provider never is), so a terraform_data names a
// real provider, which Terraform installs and leaves unused.
var kusionExtensions = map[string]any{
	"provider":     "registry.terraform.io/hashicorp/local/1.4.0",
	"resourceType": "terraform_data",
}

// ourExtensions are the same resource's in a spec written for us.
var ourExtensions = map[string]any{"provider": "terraform.io/builtin/terraform"}

// TestIntegrationContinueKusionRecordedState: a terraform_data recorded as
// Kusion's Terraform runtime records it after apply (attributes: the values
// of `terraform show -json`, where input, output and triggers_replace, of
// Terraform's dynamic type, are bare values; extensions: the spec's; no
// recorded state) is read, planned and applied from those attributes alone:
// the object is the recorded one (same id), a plan changes nothing, and an
// apply keeps it. With terraform and tofu; string, object, number, list and
// null inputs; Kusion's extensions and ours.
func TestIntegrationContinueKusionRecordedState(t *testing.T) {
	cases := []struct {
		name  string
		ext   map[string]any
		input any
		// triggers is triggers_replace; nil leaves it out of the spec.
		triggers any
	}{
		{"string input, Kusion's extensions", kusionExtensions, "seed-one", nil},
		{"object input with a list, triggers_replace", kusionExtensions, map[string]any{"a": "x", "n": []any{float64(1), float64(2)}, "empty": map[string]any{}}, "t1"},
		{"number input, list triggers_replace", kusionExtensions, float64(42), []any{"a", float64(1), true}},
		{"no input", kusionExtensions, nil, map[string]any{"rev": "3", "none": nil}},
		{"string input, our extensions", ourExtensions, "seed-two", nil},
	}
	for _, bin := range testenv.TerraformBinaries(t) {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			rt, err := New(Config{Binary: bin, CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			type pair struct{ prior, spec model.Resource }
			pairs := make([]pair, len(cases))
			for i, c := range cases {
				id := "hashicorp:terraform:terraform_data:kusion" + string(rune('a'+i))
				spec := model.Resource{ID: id, Type: model.Terraform, Attributes: map[string]any{}, Extensions: model.DeepCopyValue(c.ext).(map[string]any)}
				if c.input != nil {
					spec.Attributes["input"] = model.DeepCopyValue(c.input)
				}
				if c.triggers != nil {
					spec.Attributes["triggers_replace"] = model.DeepCopyValue(c.triggers)
				}
				// As `terraform show -json` shows it and Kusion records it.
				prior := model.Resource{ID: id, Type: model.Terraform, Attributes: map[string]any{
					"id":               "0b7c4a2e-1f53-4d6a-9c3e-5a8b7d6e4f3" + string(rune('0'+i)),
					"input":            model.DeepCopyValue(c.input),
					"output":           model.DeepCopyValue(c.input),
					"triggers_replace": model.DeepCopyValue(c.triggers),
				}, Extensions: model.DeepCopyValue(c.ext).(map[string]any)}
				pairs[i] = pair{prior, spec}
			}
			// Each step runs the cases at once, as the engine does: one batch.
			each := func(step string, fn func(p pair) (*model.Resource, error)) []*model.Resource {
				t.Helper()
				got := make([]*model.Resource, len(pairs))
				var wg sync.WaitGroup
				for i, p := range pairs {
					wg.Go(func() {
						r, err := fn(p)
						if err != nil {
							t.Errorf("%s %s (%s): %v", step, p.spec.ID, cases[i].name, err)
						}
						got[i] = r
					})
				}
				wg.Wait()
				if t.Failed() {
					t.FailNow()
				}
				return got
			}
			same := func(step string, got []*model.Resource) {
				t.Helper()
				for i, r := range got {
					if r == nil {
						t.Errorf("%s (%s): nothing, want the recorded object", step, cases[i].name)
						continue
					}
					if r.Extensions[model.ReplacePathsExtension] != nil {
						t.Errorf("%s (%s): replaces it (%v)", step, cases[i].name, r.Extensions[model.ReplacePathsExtension])
					}
					// (An apply's numbers are json.Number, a plan's float64.)
					if !jsonEqual(r.Attributes, pairs[i].prior.Attributes) {
						t.Errorf("%s (%s):\n got %v\nwant %v", step, cases[i].name, r.Attributes, pairs[i].prior.Attributes)
					}
				}
			}
			same("read", each("read", func(p pair) (*model.Resource, error) { return rt.Read(ctx, &p.prior, p.spec) }))
			same("plan", each("plan", func(p pair) (*model.Resource, error) { return rt.Apply(ctx, &p.prior, p.spec, true) }))
			applied := each("apply", func(p pair) (*model.Resource, error) { return rt.Apply(ctx, &p.prior, p.spec, false) })
			same("apply", applied)
			for i, r := range applied {
				if s, _ := r.Extensions[model.StateExtension].(string); s == "" {
					t.Errorf("apply (%s): no state recorded", cases[i].name)
				}
			}
		})
	}
}
