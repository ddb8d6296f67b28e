package kubejob

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/workflow"
)

// jobsWorld is a cluster with a namespace for Jobs, two ServiceAccounts
// each allowed to change one namespace of stacks (dev's and prod's), the
// store's credentials in a Secret, a checkout, and the stand-in kubelet
// that runs the Jobs' pods (kept off kwok's node by a node selector no
// node has).
type jobsWorld struct {
	t                   *testing.T
	client              kubernetes.Interface
	kubelet             testenv.Kubelet
	jobs, devNS, prodNS string
	backend             string
	store               *backend.Store
	root                string
	cfg                 Config
	commits             int
}

func newJobsWorld(t *testing.T) *jobsWorld {
	client := testenv.Client(t)
	bucket := testenv.S3(t).NewBucket(t) // the bot's side reads the store with the credentials it sets
	suffix := fmt.Sprintf("%06x", rand.IntN(1<<24))
	w := &jobsWorld{t: t, client: client, kubelet: testenv.Kubelet{Client: client, Entrypoint: testenv.Binary(t, "../../cmd/action")},
		jobs: "kpr-jobs-" + suffix, devNS: "kpr-jobs-dev-" + suffix, prodNS: "kpr-jobs-prod-" + suffix, backend: bucket, root: t.TempDir()}
	ctx := context.Background()
	testenv.Namespaces(t, client, w.jobs, w.devNS, w.prodNS)
	testenv.RunnerAccount(t, client, w.jobs, "runner-dev", w.devNS)
	testenv.RunnerAccount(t, client, w.jobs, "runner-prod", w.prodNS)
	testenv.StoreSecret(t, client, w.jobs, "store")
	var err error
	if w.store, err = backend.Open(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.store.Close() })

	w.write("apps/project.yaml", "name: apps\n")
	w.stack("apps/dev", w.devNS)
	w.stack("apps/sneaky", w.prodNS)
	w.cfg = Config{Image: "kusionpr-test/action:none", Settings: Settings{
		Namespace: w.jobs, ServiceAccount: "runner-dev",
		NodeSelector: map[string]string{"kusionpr-test/pool": "stand-in-kubelet-" + suffix},
		EnvFrom:      []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "store"}}}},
	}, Workspaces: map[string]Settings{"prod": {ServiceAccount: "runner-prod"}}}
	return w
}

func (w *jobsWorld) write(p, body string) {
	w.t.Helper()
	full := filepath.Join(w.root, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// stack writes a stack of one ConfigMap in ns.
func (w *jobsWorld) stack(dir, ns string) {
	w.write(dir+"/stack.yaml", "name: "+filepath.Base(dir)+"\n")
	w.write(dir+"/spec.yaml", fmt.Sprintf(`resources:
- id: v1:ConfigMap:%[1]s:settings
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: settings, namespace: %[1]s}
    data: {from: job}
`, ns))
}

// options are a merge's apply of a new commit, for workspace ws.
func (w *jobsWorld) options(ws string) workflow.Request {
	w.commits++
	sha := fmt.Sprintf("%040x", 0xc0ffee00+w.commits)
	return workflow.Request{Workspace: ws, Root: w.root, Trigger: "merge", RecordUnchanged: true,
		Merge:  &workflow.MergeOrder{SHA: sha, MergedAt: time.Now().UTC()},
		Origin: &model.Origin{SHA: sha, PullRequest: 7, Actor: "octocat", Command: "merge", Repository: &model.Repository{ID: 4242, FullName: "acme/infra"}}}
}

// executor is a bot's executor, with a client of its own.
func (w *jobsWorld) executor() *Executor {
	return &Executor{Client: testenv.Client(w.t), Config: w.cfg, Poll: 500 * time.Millisecond, Store: workflow.StoreConfig{Backend: w.backend}}
}

// run runs the request in the background, returning where its result comes.
func (w *jobsWorld) run(ctx context.Context, x *Executor, dir string, opts workflow.Request) <-chan *workflow.StackResult {
	out := make(chan *workflow.StackResult, 1)
	req := w.request(dir, opts)
	go func() { out <- x.Run(ctx, req) }()
	return out
}

// request is the apply of the stack in dir, with opts.
func (w *jobsWorld) request(dir string, opts workflow.Request) workflow.Request {
	w.t.Helper()
	req, err := opts.For(workflow.Apply, filepath.Join(w.root, dir))
	if err != nil {
		w.t.Fatal(err)
	}
	return req
}

func (w *jobsWorld) jobName(dir string, opts workflow.Request) string {
	return jobName(w.request(dir, opts).ID())
}

func (w *jobsWorld) job(name string) *batchv1.Job {
	w.t.Helper()
	j, err := w.client.BatchV1().Jobs(w.jobs).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return j
}

func wait(t *testing.T, c <-chan *workflow.StackResult) *workflow.StackResult {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(2 * time.Minute):
		t.Fatal("the executor did not return within two minutes")
		return nil
	}
}

// TestIntegrationJobs: a stack's apply runs as a Job of the workspace's
// ServiceAccount, whose container (run here by the stand-in kubelet, with
// the pod's arguments, environment and ServiceAccount) applies the stack;
// the executor reports it as an in-process run would be. Twenty triggers
// of one request from two bots make one Job; a bot that stopped waiting
// leaves the Job to the next, which adopts it; a Job whose
// ServiceAccount may not change the stack's namespace, one that dies
// without a result, and one past its timeout are reported with why.
func TestIntegrationJobs(t *testing.T) {
	w := newJobsWorld(t)
	ctx := context.Background()

	t.Run("a Job of the workspace's ServiceAccount applies the stack", func(t *testing.T) {
		opts := w.options("dev")
		res := w.run(ctx, w.executor(), "apps/dev", opts)
		name := w.jobName("apps/dev", opts)
		pod := testenv.JobPod(t, w.client, w.jobs, name)
		job := w.job(name)
		spec := job.Spec.Template.Spec
		c := spec.Containers[0]
		if c.Image != w.cfg.Image || len(c.Args) < 3 || c.Args[0] != "execute" || c.Args[1] != "--request" || spec.ServiceAccountName != "runner-dev" ||
			*job.Spec.BackoffLimit != 0 || spec.RestartPolicy != corev1.RestartPolicyNever || spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot {
			t.Errorf("the Job's spec: image %q, args %q, ServiceAccount %q, backoff %d, restart %s", c.Image, c.Args, spec.ServiceAccountName, *job.Spec.BackoffLimit, spec.RestartPolicy)
		}
		raw, _ := json.Marshal(job)
		if secret := os.Getenv("AWS_SECRET_ACCESS_KEY"); strings.Contains(string(raw), secret) {
			t.Error("the store's secret key is written in the Job: it must come from the Secret")
		}
		code, log := w.kubelet.Run(t, pod)
		if code != 0 {
			t.Fatalf("the worker exited %d:\n%s", code, log)
		}
		r := wait(t, res)
		if r.Err != nil || r.Release == nil || r.Release.Phase != model.PhaseSucceeded || r.Preview == nil || r.Preview.ChangeSteps["v1:ConfigMap:"+w.devNS+":settings"] == nil {
			t.Fatalf("the run as the bot sees it: err %v, release %+v, preview %+v", r.Err, r.Release, r.Preview)
		}
		if o := r.Release.Origin; o == nil || o.SHA != opts.Origin.SHA || o.Actor != "octocat" {
			t.Errorf("the release does not record the merge: %+v", r.Release.Origin)
		}
		cm, err := w.client.CoreV1().ConfigMaps(w.devNS).Get(ctx, "settings", metav1.GetOptions{})
		if err != nil || cm.Data["from"] != "job" {
			t.Errorf("the ConfigMap the Job applied: %v, %v", cm, err)
		}
	})

	t.Run("twenty triggers from two bots make one Job", func(t *testing.T) {
		opts := w.options("dev")
		bots := []*Executor{w.executor(), w.executor()}
		var results []<-chan *workflow.StackResult
		for i := range 20 {
			results = append(results, w.run(ctx, bots[i%2], "apps/dev", opts))
		}
		name := w.jobName("apps/dev", opts)
		pod := testenv.JobPod(t, w.client, w.jobs, name)
		time.Sleep(time.Second) // every trigger has had its go at creating the Job
		jobs, err := w.client.BatchV1().Jobs(w.jobs).List(ctx, metav1.ListOptions{LabelSelector: labelRequest + "=" + strings.TrimPrefix(name, "kusionpr-")})
		if err != nil || len(jobs.Items) != 1 {
			t.Fatalf("Jobs of the request: %d, %v; want one", len(jobs.Items), err)
		}
		if code, log := w.kubelet.Run(t, pod); code != 0 {
			t.Fatalf("the worker exited %d:\n%s", code, log)
		}
		var revision uint64
		reporters := 0
		for i, c := range results {
			r := wait(t, c)
			if r.Err != nil || r.Release == nil {
				t.Fatalf("trigger %d: %v", i, r.Err)
			}
			if revision == 0 {
				revision = r.Release.Revision
			}
			if r.Release.Revision != revision {
				t.Errorf("trigger %d has release %d, another %d", i, r.Release.Revision, revision)
			}
			if r.ReportedElsewhere == "" {
				reporters++
			}
		}
		if reporters != 1 {
			t.Errorf("%d triggers report the result, want one", reporters)
		}
	})

	t.Run("a bot that stopped waiting leaves the Job to the next", func(t *testing.T) {
		opts := w.options("dev")
		stopped, stop := context.WithCancel(ctx)
		first := w.run(stopped, w.executor(), "apps/dev", opts)
		name := w.jobName("apps/dev", opts)
		pod := testenv.JobPod(t, w.client, w.jobs, name)
		stop()
		if r := wait(t, first); r.Err == nil || !strings.Contains(r.Err.Error(), "adopts it") {
			t.Fatalf("the stopped bot's run: %v", r.Err)
		}
		uid := w.job(name).UID
		next := w.run(ctx, w.executor(), "apps/dev", opts)
		time.Sleep(time.Second)
		if w.job(name).UID != uid {
			t.Fatal("the next bot made the Job again")
		}
		if code, log := w.kubelet.Run(t, pod); code != 0 {
			t.Fatalf("the worker exited %d:\n%s", code, log)
		}
		if r := wait(t, next); r.Err != nil || r.Release == nil || r.Release.Phase != model.PhaseSucceeded {
			t.Fatalf("the adopting bot's run: %v, %+v", r.Err, r.Release)
		}
	})

	t.Run("a Job whose ServiceAccount may not change the stack's namespace fails", func(t *testing.T) {
		opts := w.options("dev") // dev's ServiceAccount, a spec in prod's namespace
		res := w.run(ctx, w.executor(), "apps/sneaky", opts)
		pod := testenv.JobPod(t, w.client, w.jobs, w.jobName("apps/sneaky", opts))
		if code, log := w.kubelet.Run(t, pod); code == 0 {
			t.Fatalf("dev's ServiceAccount applied in prod's namespace:\n%s", log)
		}
		r := wait(t, res)
		t.Logf("reported: %v", r.Err)
		if r.Err == nil || !strings.Contains(r.Err.Error(), "forbidden") {
			t.Fatalf("the run: %v; want it refused as forbidden", r.Err)
		}
		if _, err := w.client.CoreV1().ConfigMaps(w.prodNS).Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the ConfigMap is in prod's namespace: %v", err)
		}
	})

	t.Run("a Job that dies without a result is reported with its log", func(t *testing.T) {
		opts := w.options("dev")
		res := w.run(ctx, w.executor(), "apps/dev", opts)
		pod := testenv.JobPod(t, w.client, w.jobs, w.jobName("apps/dev", opts))
		w.kubelet.Finish(t, pod, 137, "reading the checkout\nKilled")
		r := wait(t, res)
		t.Logf("reported: %v", r.Err)
		if r.Err == nil || !strings.Contains(r.Err.Error(), "left no result") || !strings.Contains(r.Err.Error(), "Killed") {
			t.Fatalf("the run: %v; want it to say the Job left no result, with the log's end", r.Err)
		}
	})

	t.Run("a Job past its timeout is reported as such", func(t *testing.T) {
		w.cfg.Workspaces["slow"] = Settings{Timeout: &metav1.Duration{Duration: 2 * time.Second}}
		defer delete(w.cfg.Workspaces, "slow")
		opts := w.options("slow")
		r := wait(t, w.run(ctx, w.executor(), "apps/dev", opts))
		t.Logf("reported: %v", r.Err)
		if r.Err == nil || !strings.Contains(r.Err.Error(), "timed out") {
			t.Fatalf("the run: %v; want it timed out", r.Err)
		}
	})
}
