package deploy_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
)

// TestClusterAccess applies cluster-access.yaml to the test cluster, its
// names prefixed so that runs and checkouts beside it share nothing, and
// runs examples/quickstart through the Kubernetes runtime as its two users,
// each with a token of its own ServiceAccount, as the action and the bot
// would with the kubeconfigs made from them:
//   - kusion-preview previews it: reads every object and server-side
//     dry-runs its apply, the Namespace included; its real apply and delete
//     are refused by the admission policy;
//   - kusion-apply applies it, waits for an object, deletes what it made,
//     and may not delete the Namespace;
//   - neither writes in a namespace that is not bound.
func TestClusterAccess(t *testing.T) {
	testenv.Kubeconfig(t)
	suffix := make([]byte, 3)
	rand.Read(suffix)
	p := "t" + hex.EncodeToString(suffix) + "-"
	rename := strings.NewReplacer("kusion", p+"kusion", "quickstart", p+"quickstart").Replace
	home, target := p+"kusionpr", p+"quickstart"

	b, err := os.ReadFile(accessFile)
	if err != nil {
		t.Fatal(err)
	}
	manifest := rename(string(b))
	t.Cleanup(func() {
		if out, err := kubectl(t, manifest, "delete", "--ignore-not-found", "--wait=false", "-f", "-"); err != nil {
			t.Logf("delete %s: %v\n%s", accessFile, err, out)
		}
	})
	if out, err := kubectl(t, manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply -f %s (renamed): %v\n%s", accessFile, err, out)
	}

	b, err = os.ReadFile("../examples/quickstart/dev/spec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec model.Spec
	if err := yaml.Unmarshal([]byte(rename(string(b))), &spec); err != nil {
		t.Fatal(err)
	}
	user := func(sa string) *kubernetes.Runtime {
		t.Helper()
		rt, err := kubernetes.New(context.Background(), kubernetes.Config{
			Kubeconfig:   testenv.ServiceAccountKubeconfig(t, testenv.Client(t), home, p+sa),
			ReadyTimeout: 30 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	preview, apply := user("kusion-preview"), user("kusion-apply")
	ctx := context.Background()
	byKind := func(kind string) model.Resource {
		for _, r := range spec.Resources {
			if r.Attributes["kind"] == kind {
				return r
			}
		}
		t.Fatalf("examples/quickstart has no %s", kind)
		return model.Resource{}
	}
	configMap := byKind("ConfigMap")

	// Bindings and the admission policy take effect within moments of
	// their creation: until then a preview's real apply may pass, and is
	// undone.
	refused := func(what string, do func() error, undo func(), want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := do()
			if err != nil && strings.Contains(err.Error(), want) {
				return
			}
			if err == nil && undo != nil {
				undo()
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: got %v, want a refusal saying %q", what, err, want)
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	refused("kusion-preview applies a ConfigMap for real",
		func() error { _, err := preview.Apply(ctx, nil, configMap, false); return err },
		func() {
			kubectl(t, "", "-n", target, "delete", "configmap", configMap.Attributes["metadata"].(map[string]any)["name"].(string))
		},
		"may only dry-run")

	// The preview: read and dry-run every object, as the engine does.
	preview.Prefetch(ctx, spec.Resources)
	for _, r := range spec.Resources {
		if _, err := preview.Read(ctx, nil, r); err != nil {
			t.Errorf("kusion-preview reads %s: %v", r.ID, err)
		}
		if _, err := preview.Apply(ctx, nil, r, true); err != nil {
			t.Errorf("kusion-preview dry-runs %s: %v", r.ID, err)
		}
	}

	// The apply, then the delete of what it made.
	for _, r := range spec.Resources {
		if _, err := apply.Apply(ctx, nil, r, false); err != nil {
			t.Errorf("kusion-apply applies %s: %v", r.ID, err)
		}
	}
	if err := apply.Watch(ctx, configMap); err != nil {
		t.Errorf("kusion-apply waits for %s: %v", configMap.ID, err)
	}
	refused("kusion-preview deletes "+configMap.ID, func() error { return preview.Delete(ctx, configMap) }, nil, "may only dry-run")
	for _, r := range spec.Resources {
		if r.Attributes["kind"] == "Namespace" {
			refused("kusion-apply deletes "+r.ID, func() error { return apply.Delete(ctx, r) }, nil, "forbidden")
			continue
		}
		if err := apply.Delete(ctx, r); err != nil {
			t.Errorf("kusion-apply deletes %s: %v", r.ID, err)
		}
	}

	// Outside the namespaces bound: the users' own.
	elsewhere := model.Resource{ID: "v1:ConfigMap:" + home + ":elsewhere", Type: model.Kubernetes,
		Attributes: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "elsewhere", "namespace": home}}}
	for name, rt := range map[string]*kubernetes.Runtime{"kusion-preview": preview, "kusion-apply": apply} {
		refused(name+" dry-runs a ConfigMap in "+home, func() error { _, err := rt.Apply(ctx, nil, elsewhere, true); return err }, nil, "forbidden")
	}
}
