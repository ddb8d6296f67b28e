package kubernetes

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kusionpr/kusionpr/model"
)

// Bulk reads: a preview reads every object of a stack. One LIST of a kind
// in a namespace answers for all the stack holds there, where a GET per
// object costs a request each: 1,000 objects in 10 namespaces of 3 kinds
// are 30 requests instead of 1,000.
const (
	// listThreshold is how many objects of one kind in one namespace make a
	// LIST worth it: a LIST also returns the objects the stack does not
	// hold, so for a few a GET each is cheaper.
	listThreshold = 4
	// listPage bounds one LIST response; the rest follows by continue token.
	listPage = 500
	// listsAtOnce bounds concurrent LISTs.
	listsAtOnce = 8
	// fetchedFor is how long a prefetched object may answer a Read: a
	// preview's reads follow its prefetch at once.
	fetchedFor = 2 * time.Minute
)

// fetched is what a LIST found for one object: the object, or nil if the
// LIST showed it absent.
type fetched struct {
	obj map[string]any
	at  time.Time
}

// prefetched holds LIST results until Read takes them.
type prefetched struct {
	mu   sync.Mutex
	objs map[string]fetched
}

// take returns and forgets what a LIST found for id: it answers one Read,
// later reads ask the server.
func (p *prefetched) take(id string) (map[string]any, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.objs[id]
	if !ok {
		return nil, false
	}
	delete(p.objs, id)
	if time.Since(f.at) > fetchedFor {
		return nil, false
	}
	return f.obj, true
}

func (p *prefetched) put(found map[string]fetched) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.objs == nil {
		p.objs = map[string]fetched{}
	}
	for id, f := range found {
		p.objs[id] = f
	}
}

// Prefetch lists, for each kind and namespace holding at least
// listThreshold of rs, every object of that kind there, so that Read of
// those resources needs no request. Failures are not errors: Read asks the
// server for anything not fetched.
func (r *Runtime) Prefetch(ctx context.Context, rs []model.Resource) {
	type group struct {
		t   target
		ids []string
	}
	groups := map[string]*group{}
	for _, res := range rs {
		t, err := r.discovery.resolve(res.ID)
		if err != nil {
			// An unknown kind (a CRD this stack creates): Read finds out.
			continue
		}
		key := t.gvr.String() + "|" + t.id.Namespace
		g := groups[key]
		if g == nil {
			g = &group{t: t}
			groups[key] = g
		}
		g.ids = append(g.ids, res.ID)
	}
	var lists errgroup.Group
	lists.SetLimit(listsAtOnce)
	for _, g := range groups {
		if len(g.ids) < listThreshold {
			continue
		}
		lists.Go(func() error {
			found, err := r.list(ctx, g.t.gvr, g.t.id.Namespace)
			if err != nil {
				// Not the prefetch's error: each Read then asks alone.
				r.log.Debug("prefetch failed; reading one by one", "resource", g.t.gvr.String(), "namespace", g.t.id.Namespace, "error", scrubError(err, nil))
				return nil
			}
			now := time.Now()
			out := make(map[string]fetched, len(g.ids))
			for _, id := range g.ids {
				k, _ := model.ParseKubernetesID(id)
				out[id] = fetched{obj: found[k.Name], at: now}
			}
			r.fetched.put(out)
			return nil
		})
	}
	lists.Wait()
}

// list returns every object of a resource in a namespace ("" for a
// cluster-scoped one) by name.
func (r *Runtime) list(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (map[string]map[string]any, error) {
	var c dynamic.ResourceInterface = r.dynamic.Resource(gvr)
	if namespace != "" {
		c = r.dynamic.Resource(gvr).Namespace(namespace)
	}
	out := map[string]map[string]any{}
	opts := metav1.ListOptions{Limit: listPage}
	for {
		l, err := c.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			out[l.Items[i].GetName()] = withKind(l.Items[i].Object, l.GetAPIVersion(), l.GetKind())
		}
		if l.GetContinue() == "" {
			return out, nil
		}
		opts.Continue = l.GetContinue()
	}
}

// withKind fills in the apiVersion and kind a LIST may leave off its
// items (the list's kind is <Kind>List).
func withKind(obj map[string]any, apiVersion, listKind string) map[string]any {
	if _, ok := obj["apiVersion"]; !ok && apiVersion != "" {
		obj["apiVersion"] = apiVersion
	}
	if _, ok := obj["kind"]; !ok && len(listKind) > len("List") {
		obj["kind"] = listKind[:len(listKind)-len("List")]
	}
	return obj
}
