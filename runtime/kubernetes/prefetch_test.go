package kubernetes_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/runtime/kubernetes"
)

// pathRecorder records the path of every request.
type pathRecorder struct {
	next  http.RoundTripper
	mu    sync.Mutex
	paths []string
}

func (p *pathRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	p.mu.Lock()
	p.paths = append(p.paths, req.Method+" "+req.URL.Path)
	p.mu.Unlock()
	return p.next.RoundTrip(req)
}

func (p *pathRecorder) since(n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.paths[n:]...)
}

func (p *pathRecorder) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.paths)
}

// TestIntegrationPrefetch: after Prefetch, reads of a kind the stack holds
// many of in a namespace come from one LIST, equal to what a GET returns
// (Secret data redacted all the same), absent objects included; a kind
// with few objects is read one by one; each prefetched answer serves one
// read only.
func TestIntegrationPrefetch(t *testing.T) {
	t.Parallel()
	rec := &pathRecorder{}
	rt := newRuntime(t, func(c *kubernetes.Config) {
		c.WrapTransport = func(next http.RoundTripper) http.RoundTripper { rec.next = next; return rec }
	})
	plain := newRuntime(t, nil)
	ctx := context.Background()
	ns := namespace(t, "kpr-prefetch")
	if _, err := rt.Apply(ctx, nil, nsRes(ns), false); err != nil {
		t.Fatal(err)
	}
	var many, few []model.Resource
	for i := range 5 {
		many = append(many, configMap(ns, fmt.Sprintf("cm%d", i), map[string]any{"i": fmt.Sprint(i)}))
		many = append(many, res(fmt.Sprintf("v1:Secret:%s:s%d", ns, i), map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": fmt.Sprintf("s%d", i), "namespace": ns}, "stringData": map[string]any{"token": "prefetch-secret-value"}}))
	}
	for i := range 2 {
		few = append(few, res(fmt.Sprintf("v1:ServiceAccount:%s:sa%d", ns, i), map[string]any{"apiVersion": "v1", "kind": "ServiceAccount",
			"metadata": map[string]any{"name": fmt.Sprintf("sa%d", i), "namespace": ns}}))
	}
	for _, r := range append(append([]model.Resource(nil), many...), few...) {
		if _, err := rt.Apply(ctx, nil, r, false); err != nil {
			t.Fatal(err)
		}
	}
	absent := configMap(ns, "not-there", nil)
	all := append(append(append([]model.Resource(nil), many...), few...), absent)

	start := rec.count()
	rt.Prefetch(ctx, all)
	lists := rec.since(start)
	if len(lists) != 2 || !strings.HasSuffix(lists[0], "/namespaces/"+ns+"/configmaps") && !strings.HasSuffix(lists[0], "/namespaces/"+ns+"/secrets") {
		t.Fatalf("prefetch made %q, want one LIST of configmaps and one of secrets", lists)
	}

	start = rec.count()
	for _, r := range append(append([]model.Resource(nil), many...), absent) {
		got, err := rt.Read(ctx, nil, r)
		if err != nil {
			t.Fatal(err)
		}
		want, err := plain.Read(ctx, nil, r)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s from the LIST:\n%v\nfrom a GET:\n%v", r.ID, got, want)
		}
		if got != nil && strings.Contains(fmt.Sprint(got.Attributes), "prefetch-secret-value") {
			t.Errorf("%s: a Secret's value came out of the runtime", r.ID)
		}
	}
	if reqs := rec.since(start); len(reqs) != 0 {
		t.Errorf("reads of prefetched objects made requests: %q", reqs)
	}

	start = rec.count()
	for _, r := range few {
		if _, err := rt.Read(ctx, nil, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rt.Read(ctx, nil, many[0]); err != nil {
		t.Fatal(err)
	}
	if reqs := rec.since(start); len(reqs) != len(few)+1 {
		t.Errorf("reads of a kind with few objects, and a second read, made %q; want a GET each", reqs)
	}
}
