package kubernetes

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/restmapper"

	"github.com/kusionpr/kusionpr/model"
)

// target is where an id lives on the server.
type target struct {
	id         model.KubernetesID
	gvk        schema.GroupVersionKind
	gvr        schema.GroupVersionResource
	namespaced bool
}

// resolve maps an id to its resource with mapper, checking the namespace
// against the kind's scope. A kind the server does not know yields an error
// for which meta.IsNoMatchError holds.
func resolve(mapper meta.RESTMapper, id string) (target, error) {
	kid, err := model.ParseKubernetesID(id)
	if err != nil {
		return target{}, err
	}
	gv, err := schema.ParseGroupVersion(kid.APIVersion)
	if err != nil {
		return target{}, fmt.Errorf("id %q: bad apiVersion: %w", id, err)
	}
	gvk := gv.WithKind(kid.Kind)
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return target{}, err
	}
	t := target{id: kid, gvk: gvk, gvr: m.Resource, namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}
	switch {
	case t.namespaced && kid.Namespace == "":
		return t, fmt.Errorf("id %q: %s is namespaced; want apiVersion:kind:namespace:name", id, kid.Kind)
	case !t.namespaced && kid.Namespace != "":
		return t, fmt.Errorf("id %q: %s is cluster-scoped; want apiVersion:kind:name", id, kid.Kind)
	}
	return t, nil
}

// missTTL is how long a kind found missing right after a rediscovery is
// taken as missing without asking the server again (unless the runtime
// itself established a CRD since). It keeps a preview of many objects of a
// not yet installed CRD from rediscovering once per object.
const missTTL = 2 * time.Second

// discoveryCache wraps the one deferred REST mapper of a Runtime. A miss
// invalidates it once and retries, so a kind installed since the last
// discovery is learned; concurrent misses share one rediscovery.
type discoveryCache struct {
	mapper *restmapper.DeferredDiscoveryRESTMapper

	// mu is held for reading by every lookup and for writing by a
	// rediscovery, so that no lookup runs on a mapper being reset: such a
	// lookup would rediscover again on its own.
	mu      sync.RWMutex
	gen     uint64 // bumped after each rediscovery
	missing map[schema.GroupKind]miss
}

type miss struct {
	gen uint64
	at  time.Time
}

func newDiscoveryCache(m *restmapper.DeferredDiscoveryRESTMapper) *discoveryCache {
	return &discoveryCache{mapper: m, missing: map[schema.GroupKind]miss{}}
}

// resolve maps id, rediscovering at most once when its kind is unknown.
func (d *discoveryCache) resolve(id string) (target, error) {
	d.mu.RLock()
	seen := d.gen
	t, err := resolve(d.mapper, id)
	d.mu.RUnlock()
	if err == nil || !meta.IsNoMatchError(err) {
		return t, err
	}
	return d.rediscover(id, noMatchKind(err), seen)
}

func (d *discoveryCache) rediscover(id string, gk schema.GroupKind, seen uint64) (target, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gen == seen {
		if m, ok := d.missing[gk]; ok && m.gen == d.gen && time.Since(m.at) < missTTL {
			return resolve(d.mapper, id) // recently confirmed missing: no new discovery
		}
		d.mapper.Reset()
		defer func() { d.gen++ }()
	}
	// Either we just reset (the lookup below rediscovers, under d.mu so that
	// others wait for it), or another goroutine rediscovered since our
	// lookup: retry against what it found.
	t, err := resolve(d.mapper, id)
	if meta.IsNoMatchError(err) && d.gen == seen {
		d.missing[gk] = miss{gen: seen + 1, at: time.Now()}
	}
	return t, err
}

// forget drops what is known to be missing (a CRD was just applied or
// established), so the next miss rediscovers.
func (d *discoveryCache) forget() {
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.missing)
}

// knows reports whether discovery serves gk in version, rediscovering once
// (shared with concurrent callers) when the cached answer says no.
func (d *discoveryCache) knows(gk schema.GroupKind, version string) bool {
	d.mu.RLock()
	seen := d.gen
	_, err := d.mapper.RESTMapping(gk, version)
	d.mu.RUnlock()
	if err == nil {
		return true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gen == seen {
		d.mapper.Reset()
		d.gen++
	}
	_, err = d.mapper.RESTMapping(gk, version)
	return err == nil
}
