// Command minimal is the benchmarks' floor for Kubernetes: the least a tool
// can do to preview or apply a set of manifests, one server-side apply
// (dry-run or not) per object, in parallel, through client-go's dynamic
// client, with nothing else: no reads, no graph, no diff, no record.
//
//	minimal -kubeconfig K -f manifests.yaml [-parallelism 10] [-dry-run]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig")
	file := flag.String("f", "", "multi-document YAML")
	parallelism := flag.Int("parallelism", 10, "requests at once")
	dryRun := flag.Bool("dry-run", false, "server-side dry run")
	flag.Parse()
	if err := run(*kubeconfig, *file, *parallelism, *dryRun); err != nil {
		fmt.Fprintln(os.Stderr, "minimal:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, file string, parallelism int, dryRun bool) error {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	// The same client-side limits as the tool under test, so that only
	// the work per object differs.
	rc.QPS = -1 // no client-side throttle: the server's own flow control is the limit
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var objs []*unstructured.Unstructured
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return err
		}
		objs = append(objs, u)
	}
	opts := metav1.PatchOptions{FieldManager: "minimal", Force: ptr(true)}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	work := make(chan *unstructured.Unstructured)
	errs := make(chan error, len(objs))
	var wg sync.WaitGroup
	for range parallelism {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range work {
				gvk := u.GroupVersionKind()
				m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil {
					errs <- err
					continue
				}
				body, err := json.Marshal(u.Object)
				if err != nil {
					errs <- err
					continue
				}
				_, err = dyn.Resource(m.Resource).Namespace(u.GetNamespace()).Patch(context.Background(), u.GetName(), types.ApplyPatchType, body, opts)
				if err != nil {
					errs <- fmt.Errorf("%s %s/%s: %w", gvk.Kind, u.GetNamespace(), u.GetName(), err)
				}
			}
		}()
	}
	for _, u := range objs {
		work <- u
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
