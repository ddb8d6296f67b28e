// Package kubernetes is the Kubernetes runtime: it reads, applies (server-side
// apply, previewed by server-side dry-run), deletes and waits for the objects
// of Kubernetes resources, through one dynamic client and one cached discovery.
//
// A resource's id is apiVersion:kind:namespace:name (apiVersion:kind:name for
// cluster-scoped kinds) and its attributes are the whole object. Every object
// returned is normalised (Normalize) and redacted (model.Redact): a Secret's
// data never leaves the runtime, in results, errors or logs.
package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/kusionpr/kusionpr/model"
)

// Runtime reads and changes Kubernetes objects. It is safe for concurrent use.
type Runtime struct {
	cfg       Config
	log       *slog.Logger
	dynamic   dynamic.Interface
	discovery *discoveryCache
	// fetched holds what Prefetch listed, until Read takes it.
	fetched prefetched
	// warns holds the Warning events progress lines and timeout errors name.
	warns warnings
	// schemas checks the objects a dry run cannot (checkWithoutNamespace).
	schemas *openAPISchemas
	// cluster is how the cluster is reached, as errors of reaching it
	// say (ReachError).
	cluster ClusterRef
}

// New connects lazily: no request is made until the first operation.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	cfg = cfg.withDefaults()
	rc, cluster, err := cfg.resolve()
	if err != nil {
		return nil, fmt.Errorf("kubernetes runtime: %w", err)
	}
	r, err := newFromREST(rc, cfg)
	if err != nil {
		return nil, err
	}
	r.cluster = cluster
	return r, nil
}

func newFromREST(rc *rest.Config, cfg Config) (*Runtime, error) {
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes runtime: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(rc, hc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes runtime: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(rc, hc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes runtime: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	return &Runtime{cfg: cfg, log: cfg.Logger, dynamic: dyn, discovery: newDiscoveryCache(mapper), schemas: newOpenAPISchemas(dc.OpenAPIV3())}, nil
}

func (r *Runtime) client(t target) dynamic.ResourceInterface {
	if t.namespaced {
		return r.dynamic.Resource(t.gvr).Namespace(t.id.Namespace)
	}
	return r.dynamic.Resource(t.gvr)
}

// Read returns the live object, or nil when it does not exist or its kind is
// not (yet) served.
func (r *Runtime) Read(ctx context.Context, prior *model.Resource, res model.Resource) (*model.Resource, error) {
	if obj, ok := r.fetched.take(res.ID); ok {
		if obj == nil {
			return nil, nil
		}
		return result(res, obj), nil
	}
	obj, err := r.get(ctx, res.ID)
	if err != nil {
		return nil, r.reach(fmt.Errorf("read %s: %w", res.ID, err))
	}
	if obj == nil {
		return nil, nil
	}
	return result(res, obj), nil
}

// get returns the raw live object, nil if absent (or its kind unknown).
func (r *Runtime) get(ctx context.Context, id string) (map[string]any, error) {
	t, err := r.discovery.resolve(id)
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	u, err := r.client(t).Get(ctx, t.id.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, scrubError(err, nil)
	}
	return u.Object, nil
}

// Apply server-side applies desired (with Force per Config) and returns the
// server's answer. With dryRun the server computes the result (defaults,
// webhooks included) and persists nothing. A dry run whose namespace or kind
// does not exist yet fails like the apply would: only the engine knows
// whether the same apply creates them first, or the spec is simply wrong.
// Such an error says what it awaits (engine.Unplannable); an object whose
// namespace is missing is first checked against the API server's schema
// (checkWithoutNamespace), and fails with what is wrong with it, if
// anything.
func (r *Runtime) Apply(ctx context.Context, prior *model.Resource, desired model.Resource, dryRun bool) (*model.Resource, error) {
	verb := "apply"
	if dryRun {
		verb = "dry-run apply"
	}
	obj, err := r.apply(ctx, desired, dryRun)
	if err != nil {
		return nil, r.reach(fmt.Errorf("%s %s: %w", verb, desired.ID, err))
	}
	return result(desired, obj), nil
}

func (r *Runtime) apply(ctx context.Context, desired model.Resource, dryRun bool) (map[string]any, error) {
	t, err := r.discovery.resolve(desired.ID)
	if err != nil {
		if dryRun && meta.IsNoMatchError(err) {
			return nil, kindNotServed(err)
		}
		return nil, err
	}
	obj, err := applyBody(t, desired.Attributes)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", scrubError(err, desired.Attributes))
	}
	opts := metav1.PatchOptions{FieldManager: r.cfg.FieldManager, Force: &r.cfg.ForceConflicts}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	start := time.Now()
	u, err := r.client(t).Patch(ctx, t.id.Name, types.ApplyPatchType, body, opts)
	if err != nil {
		err = scrubError(err, desired.Attributes)
		if dryRun && namespaceMissing(err, t) {
			return nil, r.checkWithoutNamespace(t, obj, err)
		}
		return nil, err
	}
	r.log.Debug("applied", "id", desired.ID, "dryRun", dryRun, "took", time.Since(start))
	if !dryRun && t.gvk.Group == "apiextensions.k8s.io" && t.gvk.Kind == "CustomResourceDefinition" {
		r.discovery.forget()
	}
	return u.Object, nil
}

// applyBody is the object sent to the server: desired without server-owned
// fields, with apiVersion, kind, name and namespace from the id where absent
// and checked against it where present.
func applyBody(t target, attrs map[string]any) (map[string]any, error) {
	obj := Normalize(attrs)
	if obj == nil {
		obj = map[string]any{}
	}
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		if obj["metadata"] != nil {
			return nil, errors.New("attributes: metadata is not an object")
		}
		md = map[string]any{}
		obj["metadata"] = md
	}
	fields := []struct {
		m     map[string]any
		key   string
		want  string
		label string
	}{
		{obj, "apiVersion", t.id.APIVersion, "apiVersion"},
		{obj, "kind", t.id.Kind, "kind"},
		{md, "name", t.id.Name, "metadata.name"},
		{md, "namespace", t.id.Namespace, "metadata.namespace"},
	}
	for _, f := range fields {
		v, present := f.m[f.key]
		s, _ := v.(string)
		switch {
		case !present || v == nil || s == "":
			if f.want != "" {
				f.m[f.key] = f.want
			} else {
				delete(f.m, f.key)
			}
		case s != f.want:
			return nil, fmt.Errorf("attributes: %s is %q but the id says %q", f.label, s, f.want)
		}
	}
	return obj, nil
}

// Delete deletes the object (background propagation) and waits, up to the
// ready timeout, until it is gone: finalizers ran, a namespace emptied. An
// object that does not exist, or whose kind is not served, is deleted.
func (r *Runtime) Delete(ctx context.Context, res model.Resource) error {
	if err := r.delete(ctx, res.ID); err != nil {
		return r.reach(fmt.Errorf("delete %s: %w", res.ID, err))
	}
	return nil
}

func (r *Runtime) delete(ctx context.Context, id string) error {
	t, err := r.discovery.resolve(id)
	if meta.IsNoMatchError(err) {
		return nil
	}
	if err != nil {
		return err
	}
	bg := metav1.DeletePropagationBackground
	err = r.client(t).Delete(ctx, t.id.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return scrubError(err, nil)
	}
	r.log.Debug("delete requested", "id", id)
	return r.poll(ctx, waitFor{id: id, gone: true}, func() (bool, string, map[string]any, error) {
		u, err := r.client(t).Get(ctx, t.id.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil, nil
		}
		if err != nil {
			return false, "", nil, scrubError(err, nil)
		}
		why := "still present"
		if f := u.GetFinalizers(); len(f) > 0 {
			why += " (finalizers: " + strings.Join(f, ", ") + ")"
		}
		return false, why, u.Object, nil
	})
}

// Watch waits until the object is ready (see ready), the context ends or the
// ready timeout passes. A CRD is ready once Established and served by
// discovery, so objects of it can be applied right after.
func (r *Runtime) Watch(ctx context.Context, res model.Resource) error {
	if err := r.watch(ctx, res.ID); err != nil {
		return r.reach(fmt.Errorf("watch %s: %w", res.ID, err))
	}
	return nil
}

func (r *Runtime) watch(ctx context.Context, id string) error {
	if _, err := model.ParseKubernetesID(id); err != nil {
		return err
	}
	err := r.poll(ctx, waitFor{id: id}, func() (bool, string, map[string]any, error) {
		obj, err := r.get(ctx, id)
		if err != nil {
			return false, "", nil, err
		}
		ok, why, failed := ready(obj)
		if failed != nil || !ok {
			return false, why, obj, failed
		}
		if gk, version, isCRD := crdServes(obj); isCRD {
			r.discovery.forget()
			if !r.discovery.knows(gk, version) {
				return false, "established but not yet served by discovery", obj, nil
			}
		}
		return true, "", nil, nil
	})
	if err == nil {
		r.log.Debug("ready", "id", id)
	}
	return err
}

// crdServes returns the kind a CRD defines and its storage version.
func crdServes(obj map[string]any) (schema.GroupKind, string, bool) {
	if str(obj, "apiVersion") != "apiextensions.k8s.io/v1" || str(obj, "kind") != "CustomResourceDefinition" {
		return schema.GroupKind{}, "", false
	}
	gk := schema.GroupKind{Group: str(obj, "spec", "group"), Kind: str(obj, "spec", "names", "kind")}
	versions, _ := get(obj, "spec", "versions").([]any)
	version := ""
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if served, _ := m["served"].(bool); served {
			version = str(m, "name")
			if storage, _ := m["storage"].(bool); storage {
				break
			}
		}
	}
	return gk, version, true
}

// waitFor is what a poll waits for: the object id to be ready, or gone.
type waitFor struct {
	id   string
	gone bool
}

// poll calls check every 250ms (backing off to 1s) until it reports done or
// an error, the context ends, or the ready timeout passes. check returns
// why it is not done and the live object, whose Warning events progress
// lines and the timeout error name. Progress hears of the wait when it
// starts, when the reason changes and every ProgressInterval. The timeout
// error reads "not ready after 5m: <last reason> (last warning: <event>)".
func (r *Runtime) poll(ctx context.Context, w waitFor, check func() (bool, string, map[string]any, error)) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(parent, r.cfg.ReadyTimeout)
	defer cancel()
	start := time.Now()
	interval := 250 * time.Millisecond
	var (
		last    string
		lastObj map[string]any
		told    string
		toldAt  time.Time
	)
	for {
		done, why, obj, err := check()
		if done {
			return nil
		}
		if err != nil && ctx.Err() == nil {
			return err
		}
		if why != "" {
			last = oneLine(why)
		}
		if obj != nil {
			lastObj = obj
		}
		if r.cfg.Progress != nil && err == nil && last != "" && ctx.Err() == nil &&
			(toldAt.IsZero() || last != told || time.Since(toldAt) >= r.cfg.ProgressInterval) {
			told, toldAt = last, time.Now()
			r.cfg.Progress.Waiting(ctx, Waiting{ID: w.id, Gone: w.gone, Reason: last,
				Warning: r.warning(ctx, lastObj, start, r.cfg.ProgressInterval/2), Waited: time.Since(start), Timeout: r.cfg.ReadyTimeout})
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			if last == "" {
				last = "no answer"
			}
			if parent.Err() != nil {
				return fmt.Errorf("%s: %w", last, parent.Err())
			}
			what := "not ready after"
			if w.gone {
				what = "not gone after"
			}
			msg := fmt.Sprintf("%s %s: %s", what, shortDuration(r.cfg.ReadyTimeout), last)
			// The timeout's own context is over; the events get a few
			// seconds of the caller's. A list a second old is news enough
			// for the last word on this object.
			ectx, ecancel := context.WithTimeout(parent, 5*time.Second)
			if warn := r.warning(ectx, lastObj, start, min(time.Second, r.cfg.ProgressInterval/2)); warn != "" {
				msg += " (last warning: " + warn + ")"
			}
			ecancel()
			return errors.New(msg)
		case <-t.C:
		}
		if interval < time.Second {
			interval = min(interval*2, time.Second)
		}
	}
}

// shortDuration prints 5m rather than 5m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// result is the resource as returned to the engine: the server's object,
// normalised and redacted, under the caller's id, dependencies and extensions.
func result(res model.Resource, obj map[string]any) *model.Resource {
	out := model.Resource{
		ID:         res.ID,
		Type:       model.Kubernetes,
		Attributes: Normalize(obj),
		DependsOn:  append([]string(nil), res.DependsOn...),
		Extensions: res.Extensions,
	}
	if len(out.DependsOn) == 0 {
		out.DependsOn = nil
	}
	red := model.Redact(out)
	return &red
}
