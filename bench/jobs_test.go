package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/kusionpr/kusionpr/executor/kubejob"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/workflow"
)

// BenchmarkJobDispatch hands 50 merges over 20 stacks to two bots'
// Kubernetes executors (each its own client and watch), a fifth of them
// delivered to both, while a stand-in kubelet runs the Jobs' pods two at a
// time with the action binary. Metrics: "created-p50-ms" and
// "created-p99-ms", from a merge's hand-over to its Job seen by a watch;
// "jobs" made (one per merge, whatever the deliveries); "cpu-ms-first" and
// "cpu-ms-rest", the bots' CPU per merge over the first 10 and the other
// 40; "heap-MB-first" and "heap-MB-rest", their live heap after each part.
// The process holds both bots and the kubelet's client; the workers' own
// CPU is in other processes.
func BenchmarkJobDispatch(b *testing.B) {
	const merges, stacks, first = 50, 20, 10
	client := testenv.Client(b)
	bucket := testenv.S3(b).NewBucket(b)
	s := suffix()
	jobs, target := "kpr-bench-jobs-"+s, "kpr-bench-stacks-"+s
	testenv.Namespaces(b, client, jobs, target)
	testenv.RunnerAccount(b, client, jobs, "runner", target)
	testenv.StoreSecret(b, client, jobs, "store")
	root := b.TempDir()
	writeFile(b, filepath.Join(root, "apps/project.yaml"), "name: apps\n")
	for i := range stacks {
		dir := filepath.Join(root, fmt.Sprintf("apps/s%02d", i))
		writeFile(b, filepath.Join(dir, "stack.yaml"), fmt.Sprintf("name: s%02d\n", i))
		writeFile(b, filepath.Join(dir, "spec.yaml"), fmt.Sprintf(`resources:
- id: v1:ConfigMap:%[1]s:s%02[2]d
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: s%02[2]d, namespace: %[1]s}, data: {n: "%[2]d"}}
`, target, i))
	}
	cfg := kubejob.Config{Image: "kusionpr-bench/action:none", Kubeconfig: testenv.Kubeconfig(b), Settings: kubejob.Settings{Namespace: jobs, ServiceAccount: "runner",
		NodeSelector: map[string]string{"kusionpr-test/pool": "stand-in-kubelet"},
		EnvFrom:      []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "store"}}}}}}

	figures := map[string][]float64{}
	for it := range b.N {
		seen := watchJobs(b, jobs)
		kubelet := runPods(b, jobs, testenv.Kubelet{Client: client, Entrypoint: binary(b, "../cmd/action")})
		var bots []*kubejob.Executor
		for range 2 {
			bot, err := kubejob.New(cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			bot.Store = workflow.StoreConfig{Backend: bucket}
			bots = append(bots, bot)
		}
		var (
			wg      sync.WaitGroup
			handed  = make([]time.Time, merges)
			names   = make([]string, merges)
			failed  []string
			mu      sync.Mutex
			cpuMark time.Duration
			heapA   float64
		)
		start := cpuTime(b)
		for m := range merges {
			if m == first {
				wg.Wait()
				cpuMark, heapA = cpuTime(b), liveHeapMB()
			}
			sha := fmt.Sprintf("%040x", 0xbe0c00+m+1000*it)
			tmpl := workflow.Request{Root: root, RecordUnchanged: true, Trigger: "merge",
				Merge:  &workflow.MergeOrder{SHA: sha, MergedAt: time.Now().UTC()},
				Origin: &model.Origin{SHA: sha, PullRequest: m + 1, Actor: "octocat", Command: "merge", Repository: &model.Repository{ID: 77, FullName: "acme/infra"}}}
			dir := filepath.Join(root, fmt.Sprintf("apps/s%02d", m%stacks))
			req, err := tmpl.For(workflow.Apply, dir)
			if err != nil {
				b.Fatal(err)
			}
			names[m] = "kusionpr-" + req.ID()
			deliveries := []*kubejob.Executor{bots[m%2]}
			if m%5 == 0 {
				deliveries = append(deliveries, bots[(m+1)%2])
			}
			handed[m] = time.Now()
			for _, bot := range deliveries {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if r := bot.Run(context.Background(), req); r.Err != nil {
						mu.Lock()
						failed = append(failed, fmt.Sprintf("merge %d: %v", m, r.Err))
						mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
		end, heapB := cpuTime(b), liveHeapMB()
		kubelet.stop()
		if len(failed) > 0 {
			b.Fatalf("%d runs failed, the first: %s", len(failed), failed[0])
		}
		var lat []time.Duration
		for m, name := range names {
			at, ok := seen.at(name)
			if !ok {
				b.Fatalf("the Job of merge %d was never seen", m)
			}
			lat = append(lat, at.Sub(handed[m]))
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		for unit, v := range map[string]float64{
			"created-p50-ms": float64(percentile(lat, 0.50).Microseconds()) / 1000,
			"created-p99-ms": float64(percentile(lat, 0.99).Microseconds()) / 1000,
			"jobs":           float64(seen.count(names)),
			"cpu-ms-first":   float64((cpuMark - start).Milliseconds()) / first,
			"cpu-ms-rest":    float64((end - cpuMark).Milliseconds()) / (merges - first),
			"heap-MB-first":  heapA,
			"heap-MB-rest":   heapB,
		} {
			figures[unit] = append(figures[unit], v)
		}
	}
	// Each figure is the median of the iterations, as the other
	// benchmarks keep theirs.
	for unit, vs := range figures {
		sort.Float64s(vs)
		b.ReportMetric(vs[len(vs)/2], unit)
	}
}

// jobsSeen is when a watch first saw each Job.
type jobsSeen struct {
	mu    sync.Mutex
	first map[string]time.Time
}

func (s *jobsSeen) at(name string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.first[name]
	return t, ok
}

// count is how many Jobs of the requests names were seen: an earlier
// iteration's are not counted.
func (s *jobsSeen) count(names []string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, want := 0, map[string]bool{}
	for _, name := range names {
		want[name] = true
	}
	for name := range s.first {
		if want[name] {
			n++
		}
	}
	return n
}

func watchJobs(b *testing.B, ns string) *jobsSeen {
	seen := &jobsSeen{first: map[string]time.Time{}}
	f := informers.NewSharedInformerFactoryWithOptions(testenv.Client(b), 0, informers.WithNamespace(ns))
	inf := f.Batch().V1().Jobs().Informer()
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if j, ok := obj.(*batchv1.Job); ok {
			seen.mu.Lock()
			if _, ok := seen.first[j.Name]; !ok {
				seen.first[j.Name] = time.Now()
			}
			seen.mu.Unlock()
		}
	}})
	stop := make(chan struct{})
	b.Cleanup(func() { close(stop) })
	f.Start(stop)
	cache.WaitForCacheSync(stop, inf.HasSynced)
	return seen
}

// podRunner runs the Jobs' pods as they come, two at a time.
type podRunner struct{ stop func() }

func runPods(b *testing.B, ns string, k testenv.Kubelet) podRunner {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ran := map[string]bool{}
		slots := make(chan struct{}, 2)
		var wg sync.WaitGroup
		defer wg.Wait()
		for ctx.Err() == nil {
			pods, err := k.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kusionpr"})
			if err == nil {
				for i := range pods.Items {
					pod := &pods.Items[i]
					if ran[pod.Name] || pod.Status.Phase != corev1.PodPending {
						continue
					}
					ran[pod.Name] = true
					slots <- struct{}{}
					wg.Add(1)
					go func() {
						defer func() { <-slots; wg.Done() }()
						k.Run(b, pod)
					}()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return podRunner{stop: func() { cancel(); <-done }}
}

// cpuTime is the CPU this process used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// liveHeapMB is the heap in use after a collection.
func liveHeapMB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}
