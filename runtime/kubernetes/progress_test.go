package kubernetes

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

func event(name, typ, kind, objName, uid, reason, msg string, at time.Time) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Event", "type": typ, "reason": reason, "message": msg,
		"metadata":       map[string]any{"name": name, "namespace": "ns"},
		"involvedObject": map[string]any{"kind": kind, "name": objName, "namespace": "ns", "uid": uid},
		"lastTimestamp":  at.UTC().Format(time.RFC3339)}
}

func TestLatestWarning(t *testing.T) {
	start := time.Now()
	old := start.Add(-time.Hour)
	pvc := map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": "data", "namespace": "ns", "uid": "pvc-uid"}}
	web := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "ns", "uid": "web-uid"}}
	db := map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": map[string]any{"name": "db", "namespace": "ns", "uid": "db-uid"}}
	events := []map[string]any{
		event("e1", "Warning", "PersistentVolumeClaim", "data", "pvc-uid", "ProvisioningFailed", `storageclass.storage.k8s.io "fast" not found`, start.Add(time.Second)),
		event("e2", "Warning", "PersistentVolumeClaim", "data", "pvc-uid", "Old", "an hour ago", old),
		event("e3", "Normal", "PersistentVolumeClaim", "data", "pvc-uid", "ExternalProvisioning", "normal, not a warning", start.Add(2*time.Second)),
		event("e4", "Warning", "Pod", "web-7d9f8b6c4-x2x9z", "pod-uid", "FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu.", start.Add(time.Second)),
		event("e5", "Warning", "ReplicaSet", "web-7d9f8b6c4", "rs-uid", "FailedCreate", "exceeded quota", start.Add(3*time.Second)),
		event("e6", "Warning", "Pod", "web-api-7d9f8b6c4-abcde", "other", "FailedScheduling", "another deployment's pod", start.Add(9*time.Second)),
		event("e7", "Warning", "Pod", "db-0", "db-pod", "FailedMount", "line one\n::error::line two", start.Add(time.Second)),
		event("e8", "Normal", "PersistentVolumeClaim", "cache", "cache-uid", "FailedBinding", "no persistent volumes available for this claim and no storage class is set", start.Add(time.Second)),
	}
	tests := []struct {
		name string
		obj  map[string]any
		want string
	}{
		{"own event, newest warning within the window", pvc, `ProvisioningFailed: storageclass.storage.k8s.io "fast" not found`},
		{"a deployment's replica set and pods, not a like-named deployment's", web, "FailedCreate: exceeded quota"},
		{"a statefulset's pod, on one line", db, "FailedMount: line one ::error::line two"},
		{"a Normal event that says something failed", map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": "cache", "namespace": "ns", "uid": "cache-uid"}},
			"FailedBinding: no persistent volumes available for this claim and no storage class is set"},
		{"nothing about it", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "data", "namespace": "ns", "uid": "cm"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := latestWarning(events, tt.obj, start.Add(-warningsWindow)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                  "plain",
		"a\nb\r\n\tc":            "a b c",
		"x\x1b[31mred\x00":       "x [31mred",
		strings.Repeat("é", 400): strings.Repeat("é", maxLine-1) + "…",
	} {
		if got := oneLine(in); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWaitingString(t *testing.T) {
	tests := []struct {
		w    Waiting
		want string
	}{
		{Waiting{ID: "apps/v1:Deployment:ns:web", Reason: "1/2 replicas available", Waited: 12400 * time.Millisecond, Timeout: 5 * time.Minute},
			"Waiting for apps/v1:Deployment:ns:web (12s of 5m): 1/2 replicas available"},
		{Waiting{ID: "v1:PersistentVolumeClaim:ns:data", Reason: "Pending, not yet bound to a volume", Warning: "ProvisioningFailed: no class", Waited: 3 * time.Second, Timeout: 90 * time.Second},
			"Waiting for v1:PersistentVolumeClaim:ns:data (3s of 1m30s): Pending, not yet bound to a volume; last warning: ProvisioningFailed: no class"},
		{Waiting{ID: "v1:Namespace:old", Gone: true, Reason: "still present (finalizers: kubernetes)", Waited: time.Second, Timeout: 3 * time.Second},
			"Waiting for deleted v1:Namespace:old (1s of 3s): still present (finalizers: kubernetes)"},
	}
	for _, tt := range tests {
		if got := tt.w.String(); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}

type recorder struct {
	mu    sync.Mutex
	lines []Waiting
}

func (r *recorder) Waiting(_ context.Context, w Waiting) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, w)
}

// fakeRuntime is a Runtime over an in-memory dynamic client holding objs.
func fakeRuntime(cfg Config, objs ...map[string]any) (*Runtime, *dynamicfake.FakeDynamicClient) {
	var ros []k8sruntime.Object
	for _, o := range objs {
		ros = append(ros, &unstructured.Unstructured{Object: o})
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(),
		map[schema.GroupVersionResource]string{eventsGVR: "EventList"}, ros...)
	cfg = cfg.withDefaults()
	return &Runtime{cfg: cfg, log: slog.New(slog.DiscardHandler), dynamic: dyn}, dyn
}

func eventLists(dyn *dynamicfake.FakeDynamicClient) int {
	n := 0
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "list" && a.GetResource() == eventsGVR {
			n++
		}
	}
	return n
}

// A wait tells of the object when it starts, when its reason changes and
// when the interval has passed; with the latest warning about it; and the
// timeout error names the timeout, the last reason and that warning.
func TestPollProgress(t *testing.T) {
	pvc := map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": "data", "namespace": "ns", "uid": "pvc-uid"}}
	warn := event("e1", "Warning", "PersistentVolumeClaim", "data", "pvc-uid", "ProvisioningFailed", `storageclass.storage.k8s.io "fast" not found`, time.Now())
	reasons := func(rs ...string) func() (bool, string, map[string]any, error) {
		i := 0
		return func() (bool, string, map[string]any, error) {
			r := rs[min(i, len(rs)-1)]
			i++
			return false, r, pvc, nil
		}
	}

	t.Run("once per reason within the interval; events read only for a line", func(t *testing.T) {
		rec := &recorder{}
		rt, dyn := fakeRuntime(Config{ReadyTimeout: 3 * time.Second, ProgressInterval: time.Hour, Progress: rec}, warn)
		check := reasons("Pending", "Pending", "Lost")
		checks := 0
		err := rt.poll(context.Background(), waitFor{id: "v1:PersistentVolumeClaim:ns:data"}, func() (bool, string, map[string]any, error) {
			checks++
			return check()
		})
		if err == nil {
			t.Fatal("no timeout")
		}
		want := `not ready after 3s: Lost (last warning: ProvisioningFailed: storageclass.storage.k8s.io "fast" not found)`
		if err.Error() != want {
			t.Errorf("error %q\nwant  %q", err, want)
		}
		if len(rec.lines) != 2 || rec.lines[0].Reason != "Pending" || rec.lines[1].Reason != "Lost" {
			t.Fatalf("lines %+v, want one for Pending and one for Lost", rec.lines)
		}
		for _, l := range rec.lines {
			if l.ID != "v1:PersistentVolumeClaim:ns:data" || l.Gone || l.Timeout != 3*time.Second ||
				l.Warning != `ProvisioningFailed: storageclass.storage.k8s.io "fast" not found` {
				t.Errorf("line %+v", l)
			}
		}
		// One list of the claim's events per line and one for the error,
		// none for the checks in between.
		if n := eventLists(dyn); n != 3 || checks <= 3 {
			t.Errorf("%d event lists for %d checks, want 3", n, checks)
		}
	})

	t.Run("workloads in a namespace share its list of warnings", func(t *testing.T) {
		rec := &recorder{}
		podWarn := event("e2", "Warning", "Pod", "web-7d9f8b6c4-x2x9z", "pod-uid", "FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu.", time.Now())
		rt, dyn := fakeRuntime(Config{ProgressInterval: time.Hour, Progress: rec}, podWarn)
		for _, name := range []string{"web", "api"} {
			d := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": name, "namespace": "ns", "uid": name + "-uid"}}
			n := 0
			err := rt.poll(context.Background(), waitFor{id: "apps/v1:Deployment:ns:" + name}, func() (bool, string, map[string]any, error) {
				n++
				return n > 1, "0/1 replicas available", d, nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if len(rec.lines) != 2 || rec.lines[0].Warning != "FailedScheduling: 0/1 nodes are available: 1 Insufficient cpu." || rec.lines[1].Warning != "" {
			t.Errorf("lines %+v, want web's with its pod's warning, api's without", rec.lines)
		}
		wide := 0
		for _, a := range dyn.Actions() {
			if l, ok := a.(k8stesting.ListAction); ok && l.GetListRestrictions().Fields.String() == "type=Warning" {
				wide++
			}
		}
		if wide != 1 || eventLists(dyn) != 3 {
			t.Errorf("%d namespace-wide lists of %d, want 1 of 3 (one per object, one shared)", wide, eventLists(dyn))
		}
	})

	t.Run("again every interval while the reason stays", func(t *testing.T) {
		rec := &recorder{}
		rt, _ := fakeRuntime(Config{ReadyTimeout: 1500 * time.Millisecond, ProgressInterval: time.Nanosecond, Progress: rec})
		calls := 0
		err := rt.poll(context.Background(), waitFor{id: "v1:PersistentVolumeClaim:ns:data"}, func() (bool, string, map[string]any, error) {
			calls++
			return false, "Pending", pvc, nil
		})
		if err == nil || err.Error() != "not ready after 1.5s: Pending" {
			t.Errorf("error %v", err)
		}
		if calls < 2 || len(rec.lines) != calls {
			t.Errorf("%d lines for %d checks, want one each", len(rec.lines), calls)
		}
	})

	t.Run("done at once says nothing", func(t *testing.T) {
		rec := &recorder{}
		rt, dyn := fakeRuntime(Config{Progress: rec}, warn)
		if err := rt.poll(context.Background(), waitFor{id: "x"}, func() (bool, string, map[string]any, error) { return true, "", nil, nil }); err != nil {
			t.Fatal(err)
		}
		if len(rec.lines) != 0 || eventLists(dyn) != 0 {
			t.Errorf("lines %+v, %d event lists", rec.lines, eventLists(dyn))
		}
	})

	t.Run("deletion", func(t *testing.T) {
		rec := &recorder{}
		rt, _ := fakeRuntime(Config{ReadyTimeout: 300 * time.Millisecond, Progress: rec})
		ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "old"}}
		err := rt.poll(context.Background(), waitFor{id: "v1:Namespace:old", gone: true}, func() (bool, string, map[string]any, error) {
			return false, "still present (finalizers: kubernetes)", ns, nil
		})
		if err == nil || err.Error() != "not gone after 300ms: still present (finalizers: kubernetes)" {
			t.Errorf("error %v", err)
		}
		if len(rec.lines) == 0 || !rec.lines[0].Gone || rec.lines[0].String() != "Waiting for deleted v1:Namespace:old (0s of 300ms): still present (finalizers: kubernetes)" {
			t.Errorf("lines %+v", rec.lines)
		}
	})
}
