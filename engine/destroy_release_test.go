package engine_test

import (
	"context"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
)

// TestDestroyReleaseRecordsWhatItDestroyed: a destroy's release has, as
// Kusion's CreateDestroyRelease writes it, the destroyed resources (the
// prior state's) as its spec, with the prior spec's secret store and
// context, so `kusion release show` of it lists what went; its state is
// empty.
func TestDestroyReleaseRecordsWhatItDestroyed(t *testing.T) {
	ctx := context.Background()
	e, _, store := setup(t)
	st := stack(res("a", map[string]any{"size": 1}), res("b", map[string]any{"size": 2}, id("a")))
	st.Spec.Context = map[string]any{"kubernetes": map[string]any{"kubeconfig": "/etc/k"}}
	st.Spec.SecretStore = map[string]any{"provider": map[string]any{"aws": map[string]any{"region": "us-east-1"}}}
	if _, err := e.Apply(ctx, st, engine.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Destroy(ctx, st, engine.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	rel, err := store.Latest(ctx, "p", "w")
	if err != nil || rel == nil || rel.Revision != 2 {
		t.Fatalf("latest release %+v, %v; want the destroy's, 2", rel, err)
	}
	if rel.Spec == nil || len(rel.Spec.Resources) != 2 || rel.Spec.Resources[0].ID != id("a") || rel.Spec.Resources[1].ID != id("b") ||
		rel.Spec.Resources[1].Attributes["size"] != 2.0 && rel.Spec.Resources[1].Attributes["size"] != 2 {
		t.Errorf("destroy release spec %+v, want the two destroyed resources with their attributes", rel.Spec)
	}
	if rel.Spec != nil && (rel.Spec.Context["kubernetes"] == nil || rel.Spec.SecretStore["provider"] == nil) {
		t.Errorf("destroy release spec: context %v, secret store %v; want the prior release's", rel.Spec.Context, rel.Spec.SecretStore)
	}
	for _, r := range rel.Spec.Resources {
		if _, ok := r.Extensions[model.StateExtension]; ok {
			t.Errorf("%s: the spec carries the runtime's private state", r.ID)
		}
	}
	if len(rel.State.Resources) != 0 {
		t.Errorf("destroy release state holds %d resources, want none", len(rel.State.Resources))
	}
}
