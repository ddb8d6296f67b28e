package kubernetes_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
)

var _ engine.Runtime = (*kubernetes.Runtime)(nil)

// kubeconfig is the test cluster's: without it the test skips, or fails
// under KUSIONPR_REQUIRE_TESTENV (make test), like every integration test.
func kubeconfig(t *testing.T) string {
	t.Helper()
	return testenv.Kubeconfig(t)
}

// testConfig reaches the test cluster as the tests' runtimes do.
func testConfig(t *testing.T) kubernetes.Config {
	t.Helper()
	return kubernetes.Config{Kubeconfig: kubeconfig(t), ForceConflicts: true, ReadyTimeout: 90 * time.Second}
}

func newRuntime(t *testing.T, mod func(*kubernetes.Config)) *kubernetes.Runtime {
	t.Helper()
	cfg := testConfig(t)
	if mod != nil {
		mod(&cfg)
	}
	rt, err := kubernetes.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// client is the tests' own view of the cluster, independent of the runtime.
func client(t *testing.T) clientset.Interface {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return clientset.NewForConfigOrDie(rc)
}

func suffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// namespace returns a fresh namespace name, deleted (without waiting) after the test.
func namespace(t *testing.T, prefix string) string {
	ns := prefix + "-" + suffix()
	t.Cleanup(func() {
		_ = client(t).CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	return ns
}

func res(id string, attrs map[string]any) model.Resource {
	return model.Resource{ID: id, Type: model.Kubernetes, Attributes: attrs}
}

func nsRes(ns string) model.Resource {
	return res("v1:Namespace:"+ns, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}})
}

func configMap(ns, name string, data map[string]any) model.Resource {
	return res("v1:ConfigMap:"+ns+":"+name, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns}, "data": data})
}

func deployment(ns, name string, replicas int, extraPodSpec map[string]any) model.Resource {
	// kwok deletes a pod only once its grace period (30s by default) has passed.
	pod := map[string]any{"terminationGracePeriodSeconds": 1, "containers": []any{map[string]any{"name": "web", "image": "nginx:1.27"}}}
	for k, v := range extraPodSpec {
		pod[k] = v
	}
	return res("apps/v1:Deployment:"+ns+":"+name, map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}}, "spec": pod},
		},
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestIntegrationLifecycle(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	kc := client(t)
	ctx := context.Background()
	ns := namespace(t, "kpr-life")

	// Dry runs before the namespace exists: nothing is created; the namespaced
	// object's dry run fails naming the missing namespace.
	got, err := rt.Apply(ctx, nil, nsRes(ns), true)
	if err != nil {
		t.Fatal(err)
	}
	if got.Attributes["metadata"].(map[string]any)["name"] != ns {
		t.Errorf("dry-run namespace: %v", got.Attributes)
	}
	if _, err := kc.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("dry run created the namespace (err %v)", err)
	}
	cm := configMap(ns, "cfg", map[string]any{"a": "1"})
	if _, err = rt.Apply(ctx, nil, cm, true); err == nil || !strings.Contains(err.Error(), `namespaces "`+ns+`" not found`) {
		t.Fatalf("dry-run in a missing namespace: error %v, want one naming the namespace", err)
	}

	// Apply for real.
	if _, err := rt.Apply(ctx, nil, nsRes(ns), false); err != nil {
		t.Fatal(err)
	}
	if err := rt.Watch(ctx, nsRes(ns)); err != nil {
		t.Fatal(err)
	}

	// Dry run of an absent object in an existing namespace: the server's answer, nothing created.
	got, err = rt.Apply(ctx, nil, cm, true)
	if err != nil {
		t.Fatal(err)
	}
	if md := got.Attributes["metadata"].(map[string]any); md["name"] != "cfg" || md["uid"] != nil || md["managedFields"] != nil {
		t.Errorf("dry-run metadata not normalised: %v", md)
	}
	if r, err := rt.Read(ctx, nil, cm); err != nil || r != nil {
		t.Fatalf("dry run created the ConfigMap: %v %v", r, err)
	}

	applied, err := rt.Apply(ctx, nil, cm, false)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(applied.Attributes, cm.Attributes) {
		t.Errorf("applied ConfigMap:\n got %v\nwant %v", applied.Attributes, cm.Attributes)
	}
	read, err := rt.Read(ctx, nil, cm)
	if err != nil || read == nil {
		t.Fatalf("read: %v %v", read, err)
	}
	dry, err := rt.Apply(ctx, &cm, cm, true)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(dry.Attributes, read.Attributes) {
		t.Errorf("dry run of an unchanged object differs from Read:\n dry %v\nread %v", dry.Attributes, read.Attributes)
	}

	// A Secret: its data never comes back in the clear.
	plain, encPlain, strPlain := "hunter2-password", base64.StdEncoding.EncodeToString([]byte("hunter2-password")), "string-data-token"
	secret := res("v1:Secret:"+ns+":db", map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "db", "namespace": ns},
		"data":       map[string]any{"password": encPlain},
		"stringData": map[string]any{"token": strPlain}})
	var secretResults []*model.Resource
	for _, dryRun := range []bool{true, false, true} {
		r, err := rt.Apply(ctx, nil, secret, dryRun)
		if err != nil {
			t.Fatal(err)
		}
		secretResults = append(secretResults, r)
	}
	r, err := rt.Read(ctx, nil, secret)
	if err != nil {
		t.Fatal(err)
	}
	secretResults = append(secretResults, r)
	for i, r := range secretResults {
		s := mustJSON(r)
		for _, leak := range []string{plain, encPlain, strPlain, base64.StdEncoding.EncodeToString([]byte(strPlain))} {
			if strings.Contains(s, leak) {
				t.Errorf("secret result %d leaks %q: %s", i, leak, s)
			}
		}
	}
	data := secretResults[3].Attributes["data"].(map[string]any)
	if data["password"] != model.Fingerprint(plain) || data["token"] != model.Fingerprint(strPlain) {
		t.Errorf("secret data not fingerprinted as expected: %v", data)
	}

	// A Service: server defaults show in the answer.
	svc := res("v1:Service:"+ns+":web", map[string]any{"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "web", "namespace": ns},
		"spec":     map[string]any{"selector": map[string]any{"app": "web"}, "ports": []any{map[string]any{"port": 80}}}})
	got, err = rt.Apply(ctx, nil, svc, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.Attributes["spec"].(map[string]any)["clusterIP"] == nil {
		t.Errorf("service without clusterIP: %v", got.Attributes["spec"])
	}
	if err := rt.Watch(ctx, svc); err != nil {
		t.Fatal(err)
	}

	// A Deployment becomes Available on the kwok node.
	dep := deployment(ns, "web", 2, nil)
	got, err = rt.Apply(ctx, nil, dep, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.Attributes["status"] != nil {
		t.Error("status not dropped")
	}
	if got.Attributes["spec"].(map[string]any)["strategy"] == nil {
		t.Errorf("server defaults missing: %v", got.Attributes["spec"])
	}
	start := time.Now()
	if err := rt.Watch(ctx, dep); err != nil {
		t.Fatal(err)
	}
	t.Logf("Deployment ready after %v", time.Since(start).Round(time.Millisecond))
	d, err := kc.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil || d.Status.AvailableReplicas != 2 {
		t.Fatalf("Watch returned before Available: %v %+v", err, d.Status)
	}

	// Delete is idempotent and waits until the object is gone.
	for i := 0; i < 2; i++ {
		if err := rt.Delete(ctx, cm); err != nil {
			t.Fatalf("delete %d: %v", i, err)
		}
	}
	if r, err := rt.Read(ctx, nil, cm); err != nil || r != nil {
		t.Fatalf("read after delete: %v %v", r, err)
	}
	for _, r := range []model.Resource{dep, svc, secret} {
		if err := rt.Delete(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	start = time.Now()
	if err := rt.Delete(ctx, nsRes(ns)); err != nil {
		t.Fatal(err)
	}
	t.Logf("Namespace gone after %v", time.Since(start).Round(time.Millisecond))
	if _, err := kc.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace still there after Delete: %v", err)
	}
	if err := rt.Delete(ctx, nsRes(ns)); err != nil {
		t.Fatal(err)
	}
}

func TestIntegrationCRD(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	ctx := context.Background()
	ns := namespace(t, "kpr-crd")
	group := "kpr" + suffix() + ".example.com"
	crd := res("apiextensions.k8s.io/v1:CustomResourceDefinition:widgets."+group, map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object",
					"properties": map[string]any{"spec": map[string]any{"type": "object",
						"properties": map[string]any{"size": map[string]any{"type": "integer", "default": 3}, "color": map[string]any{"type": "string"}}}}}}}},
		},
	})
	t.Cleanup(func() { _ = rt.Delete(context.Background(), crd) })
	widget := res(group+"/v1:Widget:"+ns+":w", map[string]any{"apiVersion": group + "/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": ns}, "spec": map[string]any{"color": "blue"}})

	// Before the CRD: Read is nil, a dry run says the kind is unknown, Delete succeeds.
	if r, err := rt.Read(ctx, nil, widget); err != nil || r != nil {
		t.Fatalf("read before CRD: %v %v", r, err)
	}
	if r, err := rt.Apply(ctx, nil, widget, true); err == nil || !strings.Contains(err.Error(), "dry-run apply "+widget.ID+": ") || !strings.Contains(err.Error(), `no matches for kind "Widget"`) {
		t.Fatalf("dry run before CRD: %v, error %v; want an unknown-kind error naming the resource", r, err)
	}
	if err := rt.Delete(ctx, widget); err != nil {
		t.Fatal(err)
	}

	for _, r := range []model.Resource{nsRes(ns), crd} {
		if _, err := rt.Apply(ctx, nil, r, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.Watch(ctx, crd); err != nil {
		t.Fatal(err)
	}
	got, err := rt.Apply(ctx, nil, widget, false)
	if err != nil {
		t.Fatalf("apply right after the CRD: %v", err)
	}
	if size := got.Attributes["spec"].(map[string]any)["size"]; fmt.Sprint(size) != "3" {
		t.Errorf("schema default not applied: %v", got.Attributes)
	}
	if r, err := rt.Read(ctx, nil, widget); err != nil || r == nil {
		t.Fatalf("read widget: %v %v", r, err)
	}
	if err := rt.Watch(ctx, widget); err != nil {
		t.Fatal(err)
	}
	if err := rt.Delete(ctx, widget); err != nil {
		t.Fatal(err)
	}
	if err := rt.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	if r, err := rt.Read(ctx, nil, widget); err != nil || r != nil {
		t.Fatalf("read after the CRD is gone: %v %v", r, err)
	}
}

func TestIntegrationMissing(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	ctx := context.Background()
	for _, r := range []model.Resource{
		configMap("default", "kpr-absent-"+suffix(), nil),
		configMap("kpr-no-such-ns-"+suffix(), "x", nil),
		res("nothere.example.com/v1:Gadget:default:g", nil),
		res("v1:Namespace:kpr-absent-"+suffix(), nil),
	} {
		t.Run(r.ID, func(t *testing.T) {
			got, err := rt.Read(ctx, nil, r)
			if err != nil || got != nil {
				t.Errorf("Read = %v, %v; want nil, nil", got, err)
			}
			if err := rt.Delete(ctx, r); err != nil {
				t.Errorf("Delete = %v", err)
			}
		})
	}
	for _, tc := range []struct{ id, want string }{
		{"v1:ConfigMap:cfg", "is namespaced"},
		{"v1:Namespace:x:y", "is cluster-scoped"},
		{"bad", "malformed"},
	} {
		_, err := rt.Read(ctx, nil, res(tc.id, nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "read "+tc.id+": ") {
			t.Errorf("Read(%s) = %v, want %q", tc.id, err, tc.want)
		}
	}
}

func TestIntegrationWatchTimeout(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, func(c *kubernetes.Config) { c.ReadyTimeout = 3 * time.Second })
	ctx := context.Background()
	ns := namespace(t, "kpr-timeout")
	dep := deployment(ns, "stuck", 2, map[string]any{"nodeSelector": map[string]any{"no-such": "node"}})
	for _, r := range []model.Resource{nsRes(ns), dep} {
		if _, err := rt.Apply(ctx, nil, r, false); err != nil {
			t.Fatal(err)
		}
	}
	// The controllers and the scheduler get to the Deployment in their
	// own time, slower on a busy machine: the wait under test starts once
	// the scheduler has said why its pods do not run, so the 3 s it is
	// given are its own.
	kc := client(t)
	for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		evs, err := kc.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedScheduling"})
		if err == nil && len(evs.Items) > 0 {
			break
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("the scheduler said nothing of the pods in 2m: %v", err)
		}
	}
	err := rt.Watch(ctx, dep)
	// The scheduler's warning about the Deployment's pods says why.
	want := "watch apps/v1:Deployment:" + ns + ":stuck: not ready after 3s: 0/2 replicas available (last warning: FailedScheduling: 0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err = %v\nwant %s...", err, want)
	}
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if err := rt.Watch(cctx, dep); err == nil || !strings.Contains(err.Error(), "context deadline exceeded") {
		t.Fatalf("err = %v, want the caller's deadline", err)
	}
}

func TestIntegrationDeleteWaits(t *testing.T) {
	t.Parallel()
	progress := &waits{}
	rt := newRuntime(t, func(c *kubernetes.Config) { c.ReadyTimeout, c.Progress = 2*time.Second, progress })
	ctx := context.Background()
	ns := namespace(t, "kpr-del")
	held := configMap(ns, "held", nil)
	held.Attributes["metadata"].(map[string]any)["finalizers"] = []any{"example.com/hold"}
	for _, r := range []model.Resource{nsRes(ns), held} {
		if _, err := rt.Apply(ctx, nil, r, false); err != nil {
			t.Fatal(err)
		}
	}
	err := rt.Delete(ctx, held)
	want := "delete v1:ConfigMap:" + ns + ":held: not gone after 2s: still present (finalizers: example.com/hold)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if lines := progress.of("v1:ConfigMap:" + ns + ":held"); len(lines) == 0 ||
		!strings.HasPrefix(lines[0], "Waiting for deleted v1:ConfigMap:"+ns+":held (0s of 2s): still present (finalizers: example.com/hold)") {
		t.Errorf("progress of the deletion: %q", lines)
	}
	// Namespace deletion waits for its contents; the second Delete of a
	// terminating namespace is accepted too.
	for i := 0; i < 2; i++ {
		if err := rt.Delete(ctx, nsRes(ns)); err == nil || !strings.Contains(err.Error(), "not gone after 2s") {
			t.Fatalf("delete namespace %d: %v", i, err)
		}
	}
	// Releasing the finalizer lets both go.
	held.Attributes["metadata"].(map[string]any)["finalizers"] = []any{}
	if _, err := rt.Apply(ctx, nil, held, false); err != nil {
		t.Fatal(err)
	}
	long := newRuntime(t, nil)
	if err := long.Delete(ctx, held); err != nil {
		t.Fatal(err)
	}
	if err := long.Delete(ctx, nsRes(ns)); err != nil {
		t.Fatal(err)
	}
}

func TestIntegrationConflicts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "kpr-conflict")
	other := newRuntime(t, func(c *kubernetes.Config) { c.FieldManager = "someone-else" })
	polite := newRuntime(t, func(c *kubernetes.Config) { c.ForceConflicts = false })
	forceful := newRuntime(t, nil)
	if _, err := other.Apply(ctx, nil, nsRes(ns), false); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Apply(ctx, nil, configMap(ns, "c", map[string]any{"k": "theirs"}), false); err != nil {
		t.Fatal(err)
	}
	mine := configMap(ns, "c", map[string]any{"k": "ours"})
	_, err := polite.Apply(ctx, nil, mine, false)
	if !apierrors.IsConflict(err) || !strings.HasPrefix(err.Error(), "apply v1:ConfigMap:"+ns+":c: ") {
		t.Fatalf("err = %v, want a wrapped conflict", err)
	}
	got, err := forceful.Apply(ctx, nil, mine, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.Attributes["data"].(map[string]any)["k"] != "ours" {
		t.Errorf("force did not take the field: %v", got.Attributes)
	}
}

// isDiscovery reports whether an API path is a discovery document.
func isDiscovery(path string) bool {
	p := strings.Split(strings.Trim(path, "/"), "/")
	switch p[0] {
	case "api":
		return len(p) <= 2
	case "apis":
		return len(p) <= 3
	}
	return false
}

type countingTransport struct {
	next             http.RoundTripper
	discovery, total atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.total.Add(1)
	if req.Method == http.MethodGet && isDiscovery(req.URL.Path) {
		c.discovery.Add(1)
	}
	return c.next.RoundTrip(req)
}

func TestIntegrationDiscoveryOnce(t *testing.T) {
	t.Parallel()
	ct := &countingTransport{}
	rt := newRuntime(t, func(c *kubernetes.Config) {
		c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { ct.next = rt; return ct }
	})
	ctx := context.Background()
	ns := namespace(t, "kpr-disc")
	if _, err := rt.Apply(ctx, nil, nsRes(ns), false); err != nil {
		t.Fatal(err)
	}
	first := ct.discovery.Load()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	sem := make(chan struct{}, 10)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			_, err := rt.Apply(ctx, nil, configMap(ns, fmt.Sprintf("c%02d", i), map[string]any{"i": fmt.Sprint(i)}), i%2 == 0)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("51 applies: %d discovery requests of %d in all; 50 applies in %v", ct.discovery.Load(), ct.total.Load(), time.Since(start).Round(time.Millisecond))
	if first == 0 || first > 3 {
		t.Errorf("first apply made %d discovery requests, want one discovery (1-3 requests)", first)
	}
	if n := ct.discovery.Load(); n != first {
		t.Errorf("discovery requests grew from %d to %d over 50 applies", first, n)
	}

	// Twenty concurrent reads of an unknown kind share one rediscovery.
	before := ct.discovery.Load()
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r, err := rt.Read(ctx, nil, res("nothere.example.com/v1:Gadget:"+ns+":g", nil)); err != nil || r != nil {
				t.Errorf("read: %v %v", r, err)
			}
		}()
	}
	wg.Wait()
	if n := ct.discovery.Load() - before; n != first {
		t.Errorf("20 concurrent misses made %d discovery requests, want one rediscovery (%d)", n, first)
	}
}

// waits records the progress lines of waits, per object.
type waits struct {
	mu    sync.Mutex
	lines map[string][]string
}

func (w *waits) Waiting(_ context.Context, p kubernetes.Waiting) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lines == nil {
		w.lines = map[string][]string{}
	}
	w.lines[p.ID] = append(w.lines[p.ID], p.String())
}

func (w *waits) of(id string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines[id]...)
}

// TestIntegrationWatchProgress waits on the test cluster for a Deployment
// that becomes ready and a volume claim that never binds (its storage class
// does not exist): each wait tells what it lacks while it lasts, the claim's
// with the volume controller's warning; the Deployment's ends when it is
// ready; the claim's error names the timeout, the reason and the warning.
func TestIntegrationWatchProgress(t *testing.T) {
	t.Parallel()
	progress := &waits{}
	interval := func(timeout time.Duration) func(*kubernetes.Config) {
		return func(c *kubernetes.Config) {
			c.ReadyTimeout, c.Progress, c.ProgressInterval = timeout, progress, 200*time.Millisecond
		}
	}
	// The claim's wait is long enough for the volume controller's warning
	// to come while it lasts, on a loaded machine too.
	rt, short := newRuntime(t, interval(90*time.Second)), newRuntime(t, interval(6*time.Second))
	ctx := context.Background()
	ns := namespace(t, "kpr-progress")
	class := "none-" + suffix()
	dep := deployment(ns, "web", 1, nil)
	// Available only once its pod has been ready 2s: a wait that lasts.
	dep.Attributes["spec"].(map[string]any)["minReadySeconds"] = 2
	pvc := res("v1:PersistentVolumeClaim:"+ns+":data", map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
		"metadata": map[string]any{"name": "data", "namespace": ns},
		"spec": map[string]any{"storageClassName": class, "accessModes": []any{"ReadWriteOnce"},
			"resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}}})
	cm := configMap(ns, "settings", map[string]any{"a": "b"})
	for _, r := range []model.Resource{nsRes(ns), dep, pvc, cm} {
		if _, err := rt.Apply(ctx, nil, r, false); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var depErr, pvcErr, cmErr error
	wg.Add(3)
	go func() { defer wg.Done(); depErr = rt.Watch(ctx, dep) }()
	go func() { defer wg.Done(); pvcErr = short.Watch(ctx, pvc) }()
	go func() { defer wg.Done(); cmErr = rt.Watch(ctx, cm) }()
	wg.Wait()

	t.Logf("progress:\n%s\n%s", strings.Join(progress.of(dep.ID), "\n"), strings.Join(progress.of(pvc.ID), "\n"))
	if depErr != nil || cmErr != nil {
		t.Fatalf("watch: %v, %v", depErr, cmErr)
	}
	lines := progress.of(dep.ID)
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "Waiting for "+dep.ID+" (0s of 1m30s): ") {
		t.Errorf("no line when the Deployment's wait began: %q", lines)
	}
	for _, l := range lines {
		if !strings.Contains(l, "replicas") && !strings.Contains(l, "not yet observed") {
			t.Errorf("a Deployment's line that does not say what it lacks: %s", l)
		}
	}
	if lines := progress.of(cm.ID); len(lines) != 0 {
		t.Errorf("a ConfigMap, ready at once, was reported waited for: %q", lines)
	}

	lines = progress.of(pvc.ID)
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "Waiting for "+pvc.ID+" (0s of 6s): Pending, not yet bound to a volume") {
		t.Errorf("no line when the claim's wait began: %q", lines)
	}
	warning := fmt.Sprintf(`ProvisioningFailed: storageclass.storage.k8s.io %q not found`, class)
	want := "watch " + pvc.ID + ": not ready after 6s: Pending, not yet bound to a volume (last warning: " + warning + ")"
	if pvcErr == nil || pvcErr.Error() != want {
		t.Errorf("err = %v\nwant %s", pvcErr, want)
	}
	// Once the warning came, the next line gives it: the lines after the
	// first that has it all do. (When it came is the controller's business:
	// on a loaded machine, seconds into the wait.)
	given := slices.IndexFunc(lines, func(l string) bool { return strings.HasSuffix(l, "; last warning: "+warning) })
	if given < 0 {
		t.Errorf("no line of the claim's gives the warning: %q", lines)
	}
	for _, l := range lines[max(given, 0):] {
		if !strings.HasSuffix(l, "; last warning: "+warning) {
			t.Errorf("a line after the warning came that does not give it: %s", l)
		}
	}
}
