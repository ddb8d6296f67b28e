package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
)

// gadgetCRD defines Gadget in group: spec.size (an integer) is required,
// and so is spec.shape, which has a default.
func gadgetCRD(group string) model.Resource {
	return res("apiextensions.k8s.io/v1:CustomResourceDefinition:gadgets."+group, map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object",
					"properties": map[string]any{"spec": map[string]any{"type": "object", "required": []any{"size", "shape"},
						"properties": map[string]any{
							"size":  map[string]any{"type": "integer"},
							"shape": map[string]any{"type": "string", "default": "round"},
							"color": map[string]any{"type": "string"},
						}}}}}}},
		},
	})
}

func gadget(group, ns string, spec map[string]any) model.Resource {
	return res(group+"/v1:Gadget:"+ns+":g", map[string]any{"apiVersion": group + "/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g", "namespace": ns}, "spec": spec})
}

// edit returns r with its attributes changed by f.
func edit(r model.Resource, f func(attrs map[string]any)) model.Resource {
	r = r.DeepCopy()
	f(r.Attributes)
	return r
}

// at returns the map at a dotted path of attrs (list indexes as numbers).
func at(attrs map[string]any, path string) map[string]any {
	var cur any = attrs
	for _, k := range strings.Split(path, ".") {
		if i, err := strconv.Atoi(k); err == nil {
			cur = cur.([]any)[i]
		} else {
			cur = cur.(map[string]any)[k]
		}
	}
	return cur.(map[string]any)
}

// without returns r without the field at a dotted path.
func without(r model.Resource, path string) model.Resource {
	return edit(r, func(a map[string]any) {
		parent, field := "", path
		if i := strings.LastIndex(path, "."); i >= 0 {
			parent, field = path[:i], path[i+1:]
		}
		m := a
		if parent != "" {
			m = at(a, parent)
		}
		delete(m, field)
	})
}

// installCRD applies crd for the test's length and waits until it is served.
func installCRD(t *testing.T, rt *kubernetes.Runtime, crd model.Resource) {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() { _ = rt.Delete(context.Background(), crd) })
	if _, err := rt.Apply(ctx, nil, crd, false); err != nil {
		t.Fatal(err)
	}
	if err := rt.Watch(ctx, crd); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationSchemaCheck dry-runs objects whose namespace does not
// exist. The API server refuses a wrong type or an unknown field before it
// looks for the namespace (its typed conversion for server-side apply),
// and then stops: a missing required field is found by the runtime, in the
// schema the server publishes. Either way the error names the field's path
// as the server words it and awaits nothing; a valid object gets an error
// that awaits the namespace (engine.Unplannable) and says what was not
// checked. A custom resource is checked against its CRD's schema; one whose
// CRD is not installed yet awaits that CRD, unchecked.
func TestIntegrationSchemaCheck(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	ctx := context.Background()
	ns := "kpr-nons-" + suffix()
	served, unserved := "kpr"+suffix()+".example.com", "kpr"+suffix()+".example.com"
	installCRD(t, rt, gadgetCRD(served))
	web := deployment(ns, "web", 2, nil)
	binding := res("rbac.authorization.k8s.io/v1:RoleBinding:"+ns+":view", map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": "view", "namespace": ns},
		"roleRef":  map[string]any{"kind": "ClusterRole", "name": "view"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "default", "namespace": ns}},
	})
	validGadget := gadget(served, ns, map[string]any{"size": 2, "shape": "square"})

	tests := []struct {
		name string
		r    model.Resource
		// want is in the error of an object refused by the server's
		// typed conversion (by "server") or by the schema check; "" for
		// one both accept, whose error awaits the namespace.
		want, by string
		// notChecked, for an accepted object: what its error says was
		// not checked (default: all but the schema).
		notChecked string
		// awaits, for an accepted object: the resource its error awaits
		// (default: the namespace).
		awaits model.Resource
	}{
		{name: "valid object", r: web},
		{name: "wrong type", r: edit(web, func(a map[string]any) { at(a, "spec")["replicas"] = "two" }),
			want: ".spec.replicas: expected numeric (int or float), got string", by: "server"},
		{name: "unknown field", r: edit(web, func(a map[string]any) { at(a, "spec")["replica"] = 2 }),
			want: ".spec.replica: field not declared in schema", by: "server"},
		{name: "unknown field deep in a list", r: edit(web, func(a map[string]any) { at(a, "spec.template.spec.containers.0")["imag"] = "x" }),
			want: `.spec.template.spec.containers[name="web"].imag: field not declared in schema`, by: "server"},
		{name: "missing required field", r: without(web, "spec.template.spec.containers.0.name"),
			want: ".spec.template.spec.containers[0].name: Required value"},
		{name: "missing required field of a field's type", r: without(web, "spec.selector"),
			want: ".spec.selector: Required value"},
		{name: "every missing field at once", r: without(without(web, "spec.selector"), "spec.template.spec.containers.0.name"),
			want: ".spec.selector: Required value; .spec.template.spec.containers[0].name: Required value"},
		{name: "required by the schema, defaulted by the server", r: binding},
		{name: "custom resource", r: validGadget},
		{name: "custom resource, wrong type", r: gadget(served, ns, map[string]any{"size": "one", "shape": "square"}),
			want: ".spec.size: expected numeric (int or float), got string", by: "server"},
		{name: "custom resource, missing required field", r: gadget(served, ns, map[string]any{"shape": "square"}),
			want: ".spec.size: Required value"},
		{name: "custom resource, required field with a default", r: gadget(served, ns, map[string]any{"size": 1})},
		{name: "custom resource, unknown field", r: gadget(served, ns, map[string]any{"size": 1, "colour": "red"}),
			want: ".spec.colour: field not declared in schema", by: "server"},
		{name: "custom resource whose CRD the apply creates", r: gadget(unserved, ns, map[string]any{"size": "not checked"}),
			notChecked: kubernetes.NotCheckedNewKind, awaits: gadgetCRD(unserved)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rt.Apply(ctx, nil, tc.r, true)
			if err == nil {
				t.Fatalf("the dry run of %s in a namespace that does not exist succeeded", tc.r.ID)
			}
			if !strings.HasPrefix(err.Error(), "dry-run apply "+tc.r.ID+": ") {
				t.Errorf("error %q does not start with the dry run and the resource", err)
			}
			var u engine.Unplannable
			awaited := errors.As(err, &u)
			if tc.want != "" {
				who := "the API server's schema refuses it"
				if tc.by == "server" {
					who = "failed to create typed patch object"
				}
				if awaited || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), who) {
					t.Errorf("error %q (awaits something: %v), want %q naming %q", err, awaited, who, tc.want)
				}
				return
			}
			if !awaited {
				t.Fatalf("error %q awaits nothing; want it to await what the apply creates first", err)
			}
			if tc.notChecked == "" {
				tc.notChecked = kubernetes.NotCheckedNewNamespace
				tc.awaits = nsRes(ns)
				if !strings.Contains(err.Error(), `namespaces "`+ns+`" not found`) {
					t.Errorf("error %q does not say the namespace is missing", err)
				}
			}
			if u.NotChecked() != tc.notChecked {
				t.Errorf("not checked %q, want %q", u.NotChecked(), tc.notChecked)
			}
			if !u.Awaits(tc.awaits) {
				t.Errorf("error %q does not await %s", err, tc.awaits.ID)
			}
			for _, other := range []model.Resource{nsRes(ns + "x"), gadgetCRD("other.example.com"), configMap(ns, "cfg", nil)} {
				if u.Awaits(other) {
					t.Errorf("error %q awaits %s too", err, other.ID)
				}
			}
		})
	}
}

// TestIntegrationSchemaAgreesWithServer removes, one at a time, fields the
// published schemas mark required from objects of the kinds stacks hold,
// and asks both the API server (a dry run in a namespace that exists) and
// the schema check (in one that does not) about the result: they agree,
// the fields the server fills in (serverFills) included. The one
// disagreement is on purpose: the server does not check a StatefulSet's
// pod template, whose pods it will refuse, and the schema check does.
func TestIntegrationSchemaAgreesWithServer(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, nil)
	ctx := context.Background()
	existing, missing := namespace(t, "kpr-agree"), "kpr-nons-"+suffix()
	if _, err := client(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: existing}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	object := func(ns, apiVersion, kind string, body map[string]any) model.Resource {
		attrs := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": "x", "namespace": ns}}
		for k, v := range body {
			attrs[k] = v
		}
		return res(apiVersion+":"+kind+":"+ns+":x", model.DeepCopyValue(attrs).(map[string]any))
	}
	podSpec := map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx",
		"ports": []any{map[string]any{"containerPort": 80}}, "env": []any{map[string]any{"name": "A", "value": "b"}}}}}
	jobPodSpec := map[string]any{"restartPolicy": "Never", "containers": []any{map[string]any{"name": "c", "image": "nginx"}}}
	template := map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x"}},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}
	selector := map[string]any{"matchLabels": map[string]any{"app": "x"}}
	kinds := []struct {
		apiVersion, kind string
		body             map[string]any
		// remove are the fields taken away one at a time.
		remove []string
	}{
		{"apps/v1", "Deployment", map[string]any{"spec": map[string]any{"selector": selector,
			"template": map[string]any{"metadata": template["metadata"], "spec": podSpec}}},
			[]string{"spec.selector", "spec.template.spec.containers", "spec.template.spec.containers.0.name",
				"spec.template.spec.containers.0.ports.0.containerPort", "spec.template.spec.containers.0.env.0.name"}},
		{"apps/v1", "StatefulSet", map[string]any{"spec": map[string]any{"serviceName": "x", "selector": selector, "template": template}},
			[]string{"spec.serviceName", "spec.selector"}},
		{"batch/v1", "CronJob", map[string]any{"spec": map[string]any{"schedule": "* * * * *",
			"jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": jobPodSpec}}}}},
			[]string{"spec.schedule", "spec.jobTemplate.spec.template.spec.containers.0.name"}},
		{"v1", "Service", map[string]any{"spec": map[string]any{"selector": map[string]any{"app": "x"},
			"ports": []any{map[string]any{"port": 80, "targetPort": 8080}}}},
			[]string{"spec.ports.0.port"}},
		{"rbac.authorization.k8s.io/v1", "RoleBinding", map[string]any{
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "default", "namespace": "default"}}},
			[]string{"roleRef.apiGroup", "roleRef.name", "subjects.0.name"}},
		{"rbac.authorization.k8s.io/v1", "Role", map[string]any{
			"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"get"}}}},
			[]string{"rules.0.verbs"}},
		{"networking.k8s.io/v1", "NetworkPolicy", map[string]any{"spec": map[string]any{"podSelector": selector,
			"ingress": []any{map[string]any{"from": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/8"}}}}}}},
			[]string{"spec.podSelector", "spec.ingress.0.from.0.ipBlock.cidr"}},
		{"networking.k8s.io/v1", "Ingress", map[string]any{"spec": map[string]any{"rules": []any{map[string]any{"host": "a.example.com",
			"http": map[string]any{"paths": []any{map[string]any{"path": "/", "pathType": "Prefix",
				"backend": map[string]any{"service": map[string]any{"name": "x", "port": map[string]any{"number": 80}}}}}}}}}},
			[]string{"spec.rules.0.http.paths.0.pathType", "spec.rules.0.http.paths.0.backend.service.name"}},
		{"autoscaling/v2", "HorizontalPodAutoscaler", map[string]any{"spec": map[string]any{"maxReplicas": 3,
			"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}}},
			[]string{"spec.scaleTargetRef.name", "spec.maxReplicas"}},
	}
	refused := func(r model.Resource, where string) (bool, string) {
		_, err := rt.Apply(ctx, nil, r, true)
		if err == nil {
			return false, ""
		}
		var u engine.Unplannable
		if where == missing && errors.As(err, &u) {
			return false, err.Error()
		}
		return true, err.Error()
	}
	for _, k := range kinds {
		for _, field := range append([]string{""}, k.remove...) {
			t.Run(k.kind+"/"+field, func(t *testing.T) {
				there, here := object(existing, k.apiVersion, k.kind, k.body), object(missing, k.apiVersion, k.kind, k.body)
				if field != "" {
					there, here = without(there, field), without(here, field)
				}
				server, serverSays := refused(there, existing)
				schema, schemaSays := refused(here, missing)
				if server != schema {
					t.Errorf("without %q: the server refuses it: %v (%s); the schema check: %v (%s)", field, server, serverSays, schema, schemaSays)
				}
			})
		}
	}

	// The server does not check a StatefulSet's pod template; its pods
	// would be refused, the StatefulSet never ready.
	ss := kinds[1]
	there := without(object(existing, ss.apiVersion, ss.kind, ss.body), "spec.template.spec.containers.0.name")
	here := without(object(missing, ss.apiVersion, ss.kind, ss.body), "spec.template.spec.containers.0.name")
	if server, says := refused(there, existing); server {
		t.Logf("the server now refuses a StatefulSet with a nameless container (%s): the schema check agrees", says)
	}
	if schema, says := refused(here, missing); !schema || !strings.Contains(says, ".spec.template.spec.containers[0].name: Required value") {
		t.Errorf("the schema check of a StatefulSet with a nameless container: refused %v (%s)", schema, says)
	}
}

// TestIntegrationSchemaFetchedOnce dry-runs a hundred objects of three
// kinds in a namespace that does not exist, ten at a time, as a preview of
// a new app's stack does: the schemas come in three requests (the list of
// documents, then core/v1's and apps/v1's), whatever the number of objects.
func TestIntegrationSchemaFetchedOnce(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	fetched := map[string]int{}
	ct := &countingTransport{}
	rt := newRuntime(t, func(c *kubernetes.Config) {
		c.WrapTransport = func(next http.RoundTripper) http.RoundTripper {
			ct.next = roundTripFunc(func(req *http.Request) (*http.Response, error) {
				if strings.HasPrefix(req.URL.Path, "/openapi/") {
					mu.Lock()
					fetched[req.URL.Path]++
					mu.Unlock()
				}
				return next.RoundTrip(req)
			})
			return ct
		}
	})
	ns := "kpr-nons-" + suffix()
	objs := make([]model.Resource, 0, 99)
	for i := range 33 {
		name := fmt.Sprintf("app-%02d", i)
		objs = append(objs, configMap(ns, name, map[string]any{"a": "b"}), deployment(ns, name, 1, nil),
			res("v1:Service:"+ns+":"+name, map[string]any{"apiVersion": "v1", "kind": "Service",
				"metadata": map[string]any{"name": name, "namespace": ns},
				"spec":     map[string]any{"selector": map[string]any{"app": name}, "ports": []any{map[string]any{"port": 80}}}}))
	}
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 10)
	for _, r := range objs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var u engine.Unplannable
			if _, err := rt.Apply(context.Background(), nil, r, true); !errors.As(err, &u) {
				t.Errorf("dry run of %s: %v, want an error awaiting the namespace", r.ID, err)
			}
		})
	}
	wg.Wait()
	t.Logf("99 dry runs in a namespace that does not exist: %v, %d requests in all; OpenAPI: %v", time.Since(start).Round(time.Millisecond), ct.total.Load(), fetched)
	want := map[string]int{"/openapi/v3": 1, "/openapi/v3/api/v1": 1, "/openapi/v3/apis/apps/v1": 1}
	if !maps.Equal(fetched, want) {
		t.Errorf("OpenAPI requests %v, want %v", fetched, want)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
