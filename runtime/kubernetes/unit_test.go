package kubernetes

import (
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/restmapper"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kusionpr/kusionpr/model"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]any
		want map[string]any
	}{
		{"nil", nil, nil},
		{
			name: "server fields dropped",
			in: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{
					"name": "c", "namespace": "ns", "uid": "u", "resourceVersion": "7", "generation": int64(2),
					"creationTimestamp": "2024-01-01T00:00:00Z", "selfLink": "/x",
					"managedFields": []any{map[string]any{"manager": "kusionpr"}},
					"labels":        map[string]any{"a": "b"},
					"annotations":   map[string]any{LastAppliedAnnotation: "{}", "keep": "me"},
				},
				"data":   map[string]any{"k": "v"},
				"status": map[string]any{"phase": "x"},
			},
			want: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{
					"name": "c", "namespace": "ns",
					"labels":      map[string]any{"a": "b"},
					"annotations": map[string]any{"keep": "me"},
				},
				"data": map[string]any{"k": "v"},
			},
		},
		{
			name: "emptied annotations removed",
			in: map[string]any{"kind": "X", "metadata": map[string]any{
				"name": "x", "annotations": map[string]any{LastAppliedAnnotation: "{}"}}},
			want: map[string]any{"kind": "X", "metadata": map[string]any{"name": "x"}},
		},
		{
			name: "no metadata",
			in:   map[string]any{"kind": "X", "status": map[string]any{}},
			want: map[string]any{"kind": "X"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before any
			if tt.in != nil {
				before = model.DeepCopyValue(tt.in)
			}
			got := Normalize(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Normalize = %#v\nwant %#v", got, tt.want)
			}
			if tt.in != nil && !reflect.DeepEqual(before, tt.in) {
				t.Errorf("Normalize mutated its input")
			}
		})
	}
}

func staticMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	return m
}

func TestResolve(t *testing.T) {
	tests := []struct {
		id      string
		wantGVR schema.GroupVersionResource
		wantErr string
		noMatch bool
	}{
		{id: "v1:ConfigMap:ns:cfg", wantGVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}},
		{id: "apps/v1:Deployment:ns:web", wantGVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}},
		{id: "v1:Namespace:ns", wantGVR: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}},
		{id: "v1:ConfigMap", wantErr: "malformed Kubernetes id"},
		{id: "v1:ConfigMap::cfg", wantErr: "part 3 is empty"},
		{id: "a/b/c:ConfigMap:ns:cfg", wantErr: "bad apiVersion"},
		{id: "v1:ConfigMap:cfg", wantErr: "is namespaced"},
		{id: "v1:Namespace:x:ns", wantErr: "is cluster-scoped"},
		{id: "example.com/v1:Widget:ns:w", wantErr: "no matches for kind", noMatch: true},
		{id: "apps/v2:Deployment:ns:web", wantErr: "no matches for kind", noMatch: true},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			got, err := resolve(staticMapper(), tt.id)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if meta.IsNoMatchError(err) != tt.noMatch {
					t.Errorf("IsNoMatchError = %v, want %v", !tt.noMatch, tt.noMatch)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.gvr != tt.wantGVR {
				t.Errorf("gvr = %v, want %v", got.gvr, tt.wantGVR)
			}
		})
	}
}

func TestApplyBody(t *testing.T) {
	tgt := func(id string) target {
		tg, err := resolve(staticMapper(), id)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	tests := []struct {
		name    string
		id      string
		attrs   map[string]any
		want    map[string]any
		wantErr string
	}{
		{
			name:  "filled from id",
			id:    "v1:ConfigMap:ns:cfg",
			attrs: map[string]any{"data": map[string]any{"a": "b"}, "status": map[string]any{}},
			want: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "cfg", "namespace": "ns"}, "data": map[string]any{"a": "b"}},
		},
		{
			name:  "server fields stripped",
			id:    "v1:Namespace:ns",
			attrs: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns", "resourceVersion": "3", "managedFields": []any{}}},
			want:  map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns"}},
		},
		{name: "name mismatch", id: "v1:ConfigMap:ns:cfg", attrs: map[string]any{"metadata": map[string]any{"name": "other"}}, wantErr: `metadata.name is "other"`},
		{name: "kind mismatch", id: "v1:ConfigMap:ns:cfg", attrs: map[string]any{"kind": "Secret"}, wantErr: `kind is "Secret"`},
		{name: "namespace mismatch", id: "v1:ConfigMap:ns:cfg", attrs: map[string]any{"metadata": map[string]any{"namespace": "b"}}, wantErr: "metadata.namespace"},
		{name: "bad metadata", id: "v1:ConfigMap:ns:cfg", attrs: map[string]any{"metadata": "x"}, wantErr: "not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := applyBody(tgt(tt.id), tt.attrs)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func cond(typ, status, reason, msg string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg}
}

func TestReady(t *testing.T) {
	deploy := func(gen, observed, replicas, updated, available, total int64, conds ...any) map[string]any {
		d := map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "generation": gen},
			"status": map[string]any{"observedGeneration": observed, "updatedReplicas": updated,
				"availableReplicas": available, "replicas": total, "conditions": conds},
		}
		if replicas >= 0 {
			d["spec"] = map[string]any{"replicas": replicas}
		}
		return d
	}
	tests := []struct {
		name      string
		obj       map[string]any
		ready     bool
		reason    string
		failedMsg string
	}{
		{name: "missing", obj: nil, reason: "not found"},
		{name: "configmap exists", obj: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}, ready: true},
		{name: "being deleted", obj: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"deletionTimestamp": "x"}}, reason: "being deleted"},

		{name: "deployment available", obj: deploy(2, 2, 2, 2, 2, 2), ready: true},
		{name: "deployment default replicas", obj: deploy(1, 1, -1, 1, 1, 1), ready: true},
		{name: "deployment default replicas none", obj: deploy(1, 1, -1, 0, 0, 0), reason: "0/1 replicas updated"},
		{name: "deployment generation not observed", obj: deploy(3, 2, 2, 2, 2, 2), reason: "generation 3 not yet observed"},
		{name: "deployment partly available", obj: deploy(1, 1, 2, 2, 1, 2), reason: "1/2 replicas available"},
		{name: "deployment old replicas", obj: deploy(1, 1, 2, 2, 2, 3), reason: "1 old replicas pending termination"},
		{name: "deployment scaled to zero", obj: deploy(1, 1, 0, 0, 0, 0), ready: true},
		{name: "deployment deadline", obj: deploy(1, 1, 2, 1, 1, 2, cond("Progressing", "False", "ProgressDeadlineExceeded", "ReplicaSet web-1 has timed out")), failedMsg: "timed out"},
		{name: "deployment float numbers", obj: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"generation": 1.0}, "spec": map[string]any{"replicas": 2.0},
			"status": map[string]any{"observedGeneration": 1.0, "updatedReplicas": 2.0, "availableReplicas": 2.0, "replicas": 2.0}}, ready: true},
		{name: "extensions deployment is generic", obj: map[string]any{"apiVersion": "extensions/v1beta1", "kind": "Deployment"}, ready: true},

		{name: "statefulset ready", obj: map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": map[string]any{"replicas": int64(3)},
			"status": map[string]any{"readyReplicas": int64(3), "currentRevision": "r1", "updateRevision": "r1"}}, ready: true},
		{name: "statefulset not ready", obj: map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": map[string]any{"replicas": int64(3)},
			"status": map[string]any{"readyReplicas": int64(2), "currentRevision": "r1", "updateRevision": "r1"}}, reason: "2/3 replicas ready"},
		{name: "statefulset rolling", obj: map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet",
			"status": map[string]any{"readyReplicas": int64(1), "currentRevision": "r1", "updateRevision": "r2"}}, reason: "revision r2 not yet rolled out"},
		{name: "statefulset on delete", obj: map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": map[string]any{"updateStrategy": map[string]any{"type": "OnDelete"}},
			"status": map[string]any{"readyReplicas": int64(1), "currentRevision": "r1", "updateRevision": "r2"}}, ready: true},

		{name: "daemonset ready", obj: map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": map[string]any{"generation": int64(1)},
			"status": map[string]any{"observedGeneration": int64(1), "desiredNumberScheduled": int64(2), "updatedNumberScheduled": int64(2), "numberAvailable": int64(2)}}, ready: true},
		{name: "daemonset unavailable", obj: map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": map[string]any{"generation": int64(1)},
			"status": map[string]any{"observedGeneration": int64(1), "desiredNumberScheduled": int64(2), "updatedNumberScheduled": int64(2), "numberAvailable": int64(1)}}, reason: "1/2 pods available"},
		{name: "daemonset unobserved", obj: map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": map[string]any{"generation": int64(2)},
			"status": map[string]any{"observedGeneration": int64(1)}}, reason: "generation 2 not yet observed"},

		{name: "job complete", obj: map[string]any{"apiVersion": "batch/v1", "kind": "Job", "status": map[string]any{"conditions": []any{cond("Complete", "True", "", "")}}}, ready: true},
		{name: "job running", obj: map[string]any{"apiVersion": "batch/v1", "kind": "Job", "status": map[string]any{"active": int64(1)}}, reason: "not complete"},
		{name: "job failed", obj: map[string]any{"apiVersion": "batch/v1", "kind": "Job", "status": map[string]any{"conditions": []any{cond("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")}}}, failedMsg: "backoff limit"},

		{name: "service clusterip", obj: map[string]any{"apiVersion": "v1", "kind": "Service", "spec": map[string]any{"type": "ClusterIP"}}, ready: true},
		{name: "service lb pending", obj: map[string]any{"apiVersion": "v1", "kind": "Service", "spec": map[string]any{"type": "LoadBalancer"}, "status": map[string]any{"loadBalancer": map[string]any{}}}, reason: "no ingress"},
		{name: "service lb ready", obj: map[string]any{"apiVersion": "v1", "kind": "Service", "spec": map[string]any{"type": "LoadBalancer"},
			"status": map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "1.2.3.4"}}}}}, ready: true},

		{name: "pvc pending", obj: map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": map[string]any{"phase": "Pending"}}, reason: "Pending, not yet bound to a volume"},
		{name: "pvc no status", obj: map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim"}, reason: "unknown, not yet bound to a volume"},
		{name: "pvc bound", obj: map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": map[string]any{"phase": "Bound"}}, ready: true},

		{name: "pod ready", obj: map[string]any{"apiVersion": "v1", "kind": "Pod", "status": map[string]any{"phase": "Running", "conditions": []any{cond("Ready", "True", "", "")}}}, ready: true},
		{name: "pod succeeded", obj: map[string]any{"apiVersion": "v1", "kind": "Pod", "status": map[string]any{"phase": "Succeeded"}}, ready: true},
		{name: "pod unschedulable", obj: map[string]any{"apiVersion": "v1", "kind": "Pod", "status": map[string]any{"phase": "Pending",
			"conditions": []any{cond("PodScheduled", "False", "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.")}}}, reason: "not scheduled: 0/1 nodes are available: 1 Insufficient cpu."},
		{name: "pod image pull", obj: map[string]any{"apiVersion": "v1", "kind": "Pod", "status": map[string]any{"phase": "Pending",
			"conditions": []any{cond("PodScheduled", "True", "", ""), cond("Ready", "False", "ContainersNotReady", "")},
			"containerStatuses": []any{
				map[string]any{"name": "sidecar", "state": map[string]any{"running": map[string]any{}}},
				map[string]any{"name": "web", "state": map[string]any{"waiting": map[string]any{"reason": "ImagePullBackOff", "message": "Back-off pulling image \"nginx:nope\""}}},
			}}}, reason: `container web waiting: ImagePullBackOff: Back-off pulling image "nginx:nope"`},
		{name: "pod init container first", obj: map[string]any{"apiVersion": "v1", "kind": "Pod", "status": map[string]any{"phase": "Pending",
			"initContainerStatuses": []any{map[string]any{"name": "migrate", "state": map[string]any{"waiting": map[string]any{"reason": "CrashLoopBackOff"}}}},
			"containerStatuses":     []any{map[string]any{"name": "web", "state": map[string]any{"waiting": map[string]any{"reason": "PodInitializing"}}}},
		}}, reason: "container migrate waiting: CrashLoopBackOff"},
		{name: "pod running not ready", obj: map[string]any{"apiVersion": "v1", "kind": "Pod", "status": map[string]any{"phase": "Running", "conditions": []any{cond("Ready", "False", "", "")}}}, reason: "Running, not Ready"},
		{name: "pod failed", obj: map[string]any{"apiVersion": "v1", "kind": "Pod", "status": map[string]any{"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}}, failedMsg: "pod failed: The node was low on resource: memory."},

		{name: "generic ready true", obj: map[string]any{"apiVersion": "example.com/v1", "kind": "Database",
			"status": map[string]any{"conditions": []any{cond("Ready", "True", "", "")}}}, ready: true},
		{name: "generic ready false", obj: map[string]any{"apiVersion": "example.com/v1", "kind": "Database",
			"status": map[string]any{"conditions": []any{cond("Ready", "False", "Provisioning", "creating the primary")}}}, reason: "Ready is False: Provisioning: creating the primary"},
		{name: "generic ready wins over available", obj: map[string]any{"apiVersion": "example.com/v1", "kind": "Database",
			"status": map[string]any{"conditions": []any{cond("Available", "True", "", ""), cond("Ready", "Unknown", "", "")}}}, reason: "Ready is Unknown"},
		{name: "generic available false", obj: map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
			"status": map[string]any{"conditions": []any{cond("Available", "False", "MissingEndpoints", "endpoints for service/metrics-server in kube-system have no addresses")}}},
			reason: "Available is False: MissingEndpoints: endpoints for service/metrics-server in kube-system have no addresses"},
		{name: "generic stale condition", obj: map[string]any{"apiVersion": "example.com/v1", "kind": "Database", "metadata": map[string]any{"generation": int64(2)},
			"status": map[string]any{"observedGeneration": int64(1), "conditions": []any{cond("Ready", "True", "", "")}}}, reason: "generation 2 not yet observed"},
		{name: "generic without conditions", obj: map[string]any{"apiVersion": "example.com/v1", "kind": "Database", "status": map[string]any{"phase": "Whatever"}}, ready: true},

		{name: "crd established", obj: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"status": map[string]any{"conditions": []any{cond("NamesAccepted", "True", "", ""), cond("Established", "True", "", "")}}}, ready: true},
		{name: "crd not established", obj: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"}, reason: "not Established"},
		{name: "crd names conflict", obj: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"status": map[string]any{"conditions": []any{cond("NamesAccepted", "False", "", "plural in use")}}}, reason: "names not accepted: plural in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, reason, failed := ready(tt.obj)
			if tt.failedMsg != "" {
				if failed == nil || !strings.Contains(failed.Error(), tt.failedMsg) {
					t.Fatalf("failed = %v, want %q", failed, tt.failedMsg)
				}
				return
			}
			if failed != nil {
				t.Fatalf("unexpected failure %v", failed)
			}
			if ok != tt.ready || !strings.Contains(reason, tt.reason) {
				t.Errorf("ready = %v %q, want %v %q", ok, reason, tt.ready, tt.reason)
			}
		})
	}
}

func TestScrubError(t *testing.T) {
	secret := map[string]any{"kind": "Secret",
		"data":       map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("hunter22")), "short": base64.StdEncoding.EncodeToString([]byte("x"))},
		"stringData": map[string]any{"token": "s3cr3t-token"}}
	status := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "db", nil)
	status.ErrStatus.Message = `Secret "db" is invalid: data[password]: Invalid value: "hunter22" (aHVudGVyMjI=): s3cr3t-token`
	status.ErrStatus.Details.Causes = []metav1.StatusCause{{Message: "Invalid value: hunter22", Field: "data[password]"}}

	tests := []struct {
		name  string
		err   error
		obj   map[string]any
		check func(t *testing.T, got error)
	}{
		{"nil", nil, secret, func(t *testing.T, got error) {
			if got != nil {
				t.Fatal(got)
			}
		}},
		{"not a secret keeps error", status, map[string]any{"kind": "ConfigMap"}, func(t *testing.T, got error) {
			if got != error(status) {
				t.Fatalf("changed: %v", got)
			}
		}},
		{"status error scrubbed", status, secret, func(t *testing.T, got error) {
			for _, s := range []string{"hunter22", "aHVudGVyMjI=", "s3cr3t-token"} {
				if strings.Contains(got.Error(), s) || strings.Contains(fmt.Sprint(apierrors.ReasonForError(got), got), s) {
					t.Errorf("%q leaked: %v", s, got)
				}
				var se apierrors.APIStatus
				if errors.As(got, &se) && strings.Contains(fmt.Sprint(se.Status().Details), s) {
					t.Errorf("%q leaked in details", s)
				}
			}
			if !apierrors.IsInvalid(got) {
				t.Errorf("reason lost: %v", got)
			}
			if !strings.Contains(got.Error(), "data[password]") {
				t.Errorf("field name lost: %v", got)
			}
		}},
		{"plain error scrubbed", errors.New("cannot decode hunter22"), secret, func(t *testing.T, got error) {
			if strings.Contains(got.Error(), "hunter22") {
				t.Errorf("leaked: %v", got)
			}
		}},
		{"clean error unchanged", errors.New("boom"), secret, func(t *testing.T, got error) {
			if got.Error() != "boom" {
				t.Errorf("got %v", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, scrubError(tt.err, tt.obj)) })
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{5 * time.Minute: "5m", 90 * time.Second: "1m30s", time.Hour: "1h", 2 * time.Second: "2s", 1500 * time.Millisecond: "1.5s"} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	d := Config{}.withDefaults()
	if d.FieldManager != "kusionpr" || d.ReadyTimeout != 5*time.Minute || d.QPS >= 0 || d.Logger == nil {
		t.Errorf("defaults %+v (want no client-side rate limit: a negative QPS)", d)
	}
	if l := (Config{QPS: 50}).withDefaults(); l.QPS != 50 || l.Burst != 100 {
		t.Errorf("QPS 50 gives %v/%v, want 50/100", l.QPS, l.Burst)
	}
	if _, err := (Config{KubeconfigContent: "{not yaml"}).withDefaults().restConfig(); err == nil {
		t.Error("bad content accepted")
	}
	content := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://content:1'}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
	rc, err := (Config{KubeconfigContent: content, Kubeconfig: "/does/not/exist"}).withDefaults().restConfig()
	if err != nil || rc.Host != "https://content:1" || rc.QPS >= 0 {
		t.Errorf("content did not win: %v %+v", err, rc)
	}
}

// fakeCache is a discoveryCache over an in-memory discovery whose calls are counted.
func fakeCache() (*discoveryCache, *fakediscovery.FakeDiscovery) {
	fd := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	fd.Resources = []*metav1.APIResourceList{{
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap", Namespaced: true}},
	}}
	return newDiscoveryCache(restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(fd))), fd
}

func discoveries(fd *fakediscovery.FakeDiscovery) int {
	n := 0
	for _, a := range fd.Actions() {
		if a.GetResource().Resource == "group" {
			n++
		}
	}
	return n
}

func TestDiscoveryCacheCoalescesMisses(t *testing.T) {
	d, fd := fakeCache()
	if _, err := d.resolve("v1:ConfigMap:ns:a"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if _, err := d.resolve(fmt.Sprintf("v1:ConfigMap:ns:c%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := discoveries(fd); n != 1 {
		t.Fatalf("%d discoveries for known kinds, want 1", n)
	}

	// Many goroutines missing the same kind at once: one rediscovery.
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := d.resolve("example.com/v1:Widget:ns:w"); !meta.IsNoMatchError(err) {
				t.Errorf("err = %v, want no match", err)
			}
		}()
	}
	wg.Wait()
	if n := discoveries(fd); n != 2 {
		t.Fatalf("%d discoveries after concurrent misses, want 2", n)
	}

	// The kind appears (a CRD was installed): the runtime forgets the miss
	// and the next lookup learns it.
	fd.Resources = append(fd.Resources, &metav1.APIResourceList{
		GroupVersion: "example.com/v1",
		APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Namespaced: true}},
	})
	d.forget()
	tg, err := d.resolve("example.com/v1:Widget:ns:w")
	if err != nil {
		t.Fatal(err)
	}
	if tg.gvr.Resource != "widgets" {
		t.Errorf("gvr %v", tg.gvr)
	}
	if n := discoveries(fd); n != 3 {
		t.Fatalf("%d discoveries, want 3", n)
	}
	if !d.knows(schema.GroupKind{Group: "example.com", Kind: "Widget"}, "v1") {
		t.Error("knows(Widget) = false")
	}
	if n := discoveries(fd); n != 3 {
		t.Fatalf("%d discoveries after knows of a known kind, want 3", n)
	}
}
