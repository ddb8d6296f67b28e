package kubernetes_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kusionpr/kusionpr/connect"
	"github.com/kusionpr/kusionpr/engine/runtimetest"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
)

// TestIntegrationConformance runs the runtime suite against the test
// cluster, with the driver the binaries give the engine (its capabilities
// included): ConfigMaps in a namespace of their own, a Deployment no node
// can run, a Secret, and a namespace with an object in it.
func TestIntegrationConformance(t *testing.T) {
	t.Parallel()
	waits := &firstWait{}
	cfg := testConfig(t)
	cfg.Progress = waits
	kc := client(t)
	ns := namespace(t, "kpr-conform")
	if _, err := kc.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	inNamespace := func(r model.Resource) model.Resource {
		r.DependsOn = []string{nsRes(ns).ID}
		return r
	}
	var n atomic.Int64
	object := func(*testing.T) model.Resource {
		i := n.Add(1)
		return inNamespace(configMap(ns, fmt.Sprintf("cfg%d", i), map[string]any{"n": fmt.Sprint(i)}))
	}
	runtimetest.RunConformance(t, runtimetest.Harness{
		Driver: connect.Kubernetes(cfg),
		Object: object,
		Update: func(r model.Resource) model.Resource {
			u := r.DeepCopy()
			u.Attributes["data"].(map[string]any)["updated"] = "yes"
			return u
		},
		Invalid: func(t *testing.T) model.Resource {
			r := object(t)
			r.Attributes["data"] = map[string]any{"n": map[string]any{"not": "a string"}}
			return r
		},
		Exists: func(t *testing.T, r model.Resource) bool {
			k, err := model.ParseKubernetesID(r.ID)
			if err != nil {
				t.Fatal(err)
			}
			ctx, get := context.Background(), metav1.GetOptions{}
			switch k.Kind {
			case "ConfigMap":
				_, err = kc.CoreV1().ConfigMaps(k.Namespace).Get(ctx, k.Name, get)
			case "Namespace":
				_, err = kc.CoreV1().Namespaces().Get(ctx, k.Name, get)
			default:
				t.Fatalf("no look at a %s", k.Kind)
			}
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			return err == nil
		},
		Dependent: func(t *testing.T) (model.Resource, model.Resource) {
			other := namespace(t, "kpr-conform-dep")
			inside := configMap(other, "inside", map[string]any{"a": "1"})
			inside.DependsOn = []string{nsRes(other).ID}
			return nsRes(other), inside
		},
		NotReady: func(t *testing.T) (model.Resource, <-chan struct{}) {
			d := inNamespace(deployment(ns, fmt.Sprintf("stuck%d", n.Add(1)), 1, map[string]any{"nodeSelector": map[string]any{"no-such": "node"}}))
			return d, waits.of(d.ID)
		},
		Secret: func(*testing.T) (model.Resource, string) {
			secret := "conform-secret-" + suffix()
			name := fmt.Sprintf("secret%d", n.Add(1))
			return inNamespace(res("v1:Secret:"+ns+":"+name, map[string]any{"apiVersion": "v1", "kind": "Secret",
				"metadata": map[string]any{"name": name, "namespace": ns}, "stringData": map[string]any{"token": secret}})), secret
		},
		Touch: func(t *testing.T, r model.Resource) {
			k, _ := model.ParseKubernetesID(r.ID)
			patch := []byte(`{"metadata":{"labels":{"touched-by":"someone-else"}}}`)
			if _, err := kc.CoreV1().ConfigMaps(k.Namespace).Patch(context.Background(), k.Name, types.MergePatchType, patch,
				metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// firstWait tells when a wait for an object to be ready has found it not
// ready.
type firstWait struct {
	mu      sync.Mutex
	waiting map[string]chan struct{}
}

func (f *firstWait) of(id string) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.waiting == nil {
		f.waiting = map[string]chan struct{}{}
	}
	c := make(chan struct{})
	f.waiting[id] = c
	return c
}

func (f *firstWait) Waiting(_ context.Context, w kubernetes.Waiting) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.waiting[w.ID]; ok && !w.Gone {
		close(c)
		delete(f.waiting, w.ID)
	}
}
