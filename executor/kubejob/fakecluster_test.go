package kubejob

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/workflow"
)

// The tests of this file run the executor against client-go's fake
// clientset: the API server's side of a Job (its creation, its status, its
// pods) without a cluster, the worker's part played by the test (it writes
// the result to the store and sets the Job's status as Kubernetes does).
// TestIntegrationJobs runs the real thing under make test.

// fakeCluster is an executor on a fake clientset, with a local release
// store and a checkout holding the stack apps/dev.
type fakeCluster struct {
	t      *testing.T
	client *fake.Clientset
	// watching is closed once the executor's watch of the Jobs is made:
	// the fake's watch, unlike the API server's, starts from now, so a
	// change made between the informer's list and its watch would be lost.
	watching chan struct{}
	x        *Executor
	store    *backend.Store
	url      string
	root     string
}

func newFakeCluster(t *testing.T) *fakeCluster {
	t.Helper()
	root := t.TempDir()
	for p, body := range map[string]string{
		"apps/project.yaml":   "name: apps\n",
		"apps/dev/stack.yaml": "name: dev\n",
		"apps/dev/spec.yaml":  "resources: []\n",
	} {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	url := "file://" + t.TempDir()
	store, err := backend.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	client := fake.NewClientset()
	watching := make(chan struct{})
	var once sync.Once
	client.PrependWatchReactor("jobs", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(a.GetResource(), a.GetNamespace())
		once.Do(func() { close(watching) })
		return true, w, err
	})
	x := &Executor{Client: client, Poll: 50 * time.Millisecond, Store: workflow.StoreConfig{Backend: url},
		Config: Config{Image: "kusionpr/action:test", Settings: Settings{Namespace: "jobs", ServiceAccount: "runner-dev"},
			Workspaces: map[string]Settings{"prod": {ServiceAccount: "runner-prod", TTL: &metav1.Duration{Duration: time.Hour}}}}}
	return &fakeCluster{t: t, client: client, watching: watching, x: x, store: store, url: url, root: root}
}

// request is the apply of a merge's commit of stack in workspace ws.
func (c *fakeCluster) request(stack, ws string) workflow.Request {
	c.t.Helper()
	sha := "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"
	req, err := workflow.Request{Workspace: ws, Root: c.root, Trigger: "merge", RecordUnchanged: true,
		Origin: &model.Origin{SHA: sha, PullRequest: 7, Actor: "octocat", Command: "merge", Repository: &model.Repository{ID: 4242, FullName: "acme/infra"}},
	}.For(workflow.Apply, filepath.Join(c.root, filepath.FromSlash(stack)))
	if err != nil {
		c.t.Fatal(err)
	}
	return req
}

// job waits for the Job of req, and the executor's watch, and returns it.
func (c *fakeCluster) job(req workflow.Request) *batchv1.Job {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	select {
	case <-c.watching:
	case <-time.After(10 * time.Second):
		c.t.Fatal("the executor never watched the Jobs")
	}
	for {
		j, err := c.client.BatchV1().Jobs("jobs").Get(context.Background(), jobName(req.ID()), metav1.GetOptions{})
		if err == nil {
			return j
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no Job of the request: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// result leaves res, a result of req, where the worker leaves it.
func (c *fakeCluster) result(req workflow.Request, run *workflow.StackResult) {
	c.t.Helper()
	data, err := workflow.NewRequestResult(req, c.root, run).Encode()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.store.PutWork(context.Background(), req.ID(), workflow.ResultFile, data); err != nil {
		c.t.Fatal(err)
	}
}

// end sets the Job's status as Kubernetes does when it ends: complete, or
// failed for reason.
func (c *fakeCluster) end(j *batchv1.Job, failed bool, reason, message string) {
	c.t.Helper()
	cond := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}
	if failed {
		cond = batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason, Message: message}
	}
	j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobSuspended, Status: corev1.ConditionFalse}, cond)
	if _, err := c.client.BatchV1().Jobs(j.Namespace).UpdateStatus(context.Background(), j, metav1.UpdateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// pod makes the Job's pod, its container ended as terminated says.
func (c *fakeCluster) pod(j *batchv1.Job, terminated *corev1.ContainerStateTerminated) {
	c.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: j.Name + "-abcde", Namespace: j.Namespace,
		Labels: map[string]string{"batch.kubernetes.io/job-name": j.Name}, CreationTimestamp: metav1.Now()},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: container, State: corev1.ContainerState{Terminated: terminated}}}}}
	if _, err := c.client.CoreV1().Pods(j.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// TestJobOutcomes: how the end of a request's Job reaches the pull
// request: its result as an in-process run's; a failure, a timeout, a Job
// gone or one that left no result, each said so with the end of its log; a
// result that is another request's refused; a wait stopped leaving the Job
// to the next run.
func TestJobOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name string
		// worker plays the Job: it may leave a result and end the Job.
		worker    func(c *fakeCluster, req workflow.Request, j *batchv1.Job)
		cancel    bool   // the bot stops waiting once the Job exists
		wantErr   string // a substring of the run's error; "" for none
		wantSkip  string
		elsewhere bool // another bot took the report first
	}{
		{name: "its result", worker: func(c *fakeCluster, req workflow.Request, j *batchv1.Job) {
			c.result(req, &workflow.StackResult{Workspace: "dev", Skipped: "nothing to apply"})
			c.end(j, false, "", "")
		}, wantSkip: "nothing to apply"},
		{name: "its run's own failure", worker: func(c *fakeCluster, req workflow.Request, j *batchv1.Job) {
			c.result(req, &workflow.StackResult{Workspace: "dev", Err: errors.New("terraform apply: provider refused")})
			c.end(j, false, "", "")
		}, wantErr: "terraform apply: provider refused"},
		{name: "the result written just after the Job ended", worker: func(c *fakeCluster, req workflow.Request, j *batchv1.Job) {
			c.end(j, false, "", "")
			time.Sleep(200 * time.Millisecond)
			c.result(req, &workflow.StackResult{Workspace: "dev", Skipped: "late"})
		}, wantSkip: "late"},
		{name: "failed, with the kubelet's termination message", worker: func(c *fakeCluster, req workflow.Request, j *batchv1.Job) {
			c.pod(j, &corev1.ContainerStateTerminated{ExitCode: 137, Message: "reading the checkout\nKilled"})
			c.end(j, true, "BackoffLimitExceeded", "Job has reached the specified backoff limit")
		}, wantErr: "failed (BackoffLimitExceeded: Job has reached the specified backoff limit) and left no result; the end of its log:\nreading the checkout\nKilled"},
		{name: "failed, with its exit code alone", worker: func(c *fakeCluster, req workflow.Request, j *batchv1.Job) {
			c.pod(j, &corev1.ContainerStateTerminated{ExitCode: 2})
			c.end(j, true, "BackoffLimitExceeded", "")
		}, wantErr: "the end of its log:\nexit code 2"},
		{name: "failed, its log from the logs API", worker: func(c *fakeCluster, req workflow.Request, j *batchv1.Job) {
			c.pod(j, nil)
			c.end(j, true, "PodFailurePolicy", "")
		}, wantErr: "the end of its log:\nfake logs"},
		{name: "failed before any pod", worker: func(c *fakeCluster, req workflow.Request, j *batchv1.Job) {
			c.end(j, true, "BackoffLimitExceeded", "")
		}, wantErr: "left no result"},
		{name: "past its timeout", worker: func(c *fakeCluster, req workflow.Request, j *batchv1.Job) {
			c.end(j, true, batchv1.JobReasonDeadlineExceeded, "Job was active longer than specified deadline")
		}, wantErr: "timed out: it ran past its timeout of 1h0m0s (kubernetesJobs timeout) and left no result"},
		{name: "gone without a result", worker: func(c *fakeCluster, req workflow.Request, j *batchv1.Job) {
			if err := c.client.BatchV1().Jobs(j.Namespace).Delete(context.Background(), j.Name, metav1.DeleteOptions{}); err != nil {
				c.t.Error(err)
			}
		}, wantErr: "is gone and left no result"},
		{name: "gone, its result left", worker: func(c *fakeCluster, req workflow.Request, j *batchv1.Job) {
			c.result(req, &workflow.StackResult{Workspace: "dev", Skipped: "done before its TTL passed"})
			if err := c.client.BatchV1().Jobs(j.Namespace).Delete(context.Background(), j.Name, metav1.DeleteOptions{}); err != nil {
				c.t.Error(err)
			}
		}, wantSkip: "done before its TTL passed"},
		{name: "complete without a result", worker: func(c *fakeCluster, req workflow.Request, j *batchv1.Job) {
			c.end(j, false, "", "")
		}, wantErr: "completed but left no result"},
		{name: "another request's result", worker: func(c *fakeCluster, req workflow.Request, j *batchv1.Job) {
			other := req
			other.Stack = "apps/prod"
			res := workflow.NewRequestResult(other, c.root, &workflow.StackResult{})
			data, _ := res.Encode()
			if err := c.store.PutWork(context.Background(), req.ID(), workflow.ResultFile, data); err != nil {
				c.t.Error(err)
			}
			c.end(j, false, "", "")
		}, wantErr: "names request"},
		{name: "reported by another bot first", worker: func(c *fakeCluster, req workflow.Request, j *batchv1.Job) {
			if err := c.store.PutWork(context.Background(), req.ID(), workflow.ReportFile, []byte("other-host 1")); err != nil {
				c.t.Error(err)
			}
			c.result(req, &workflow.StackResult{Workspace: "dev", Skipped: "x"})
			c.end(j, false, "", "")
		}, wantSkip: "x", elsewhere: true},
		{name: "the bot stops waiting", cancel: true, wantErr: "it goes on, and the next run of this request adopts it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster(t)
			req := c.request("apps/dev", "dev")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan *workflow.StackResult, 1)
			go func() { done <- c.x.Run(ctx, req) }()
			j := c.job(req)
			if tc.cancel {
				cancel()
			} else {
				tc.worker(c, req, j)
			}
			var run *workflow.StackResult
			select {
			case run = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the executor did not return")
			}
			switch {
			case tc.wantErr == "" && run.Err != nil:
				t.Fatalf("the run failed: %v", run.Err)
			case tc.wantErr != "" && (run.Err == nil || !strings.Contains(run.Err.Error(), tc.wantErr)):
				t.Fatalf("the run's error %v, want one saying %q", run.Err, tc.wantErr)
			}
			if run.Skipped != tc.wantSkip {
				t.Errorf("skipped %q, want %q", run.Skipped, tc.wantSkip)
			}
			if (run.ReportedElsewhere != "") != tc.elsewhere {
				t.Errorf("reported elsewhere: %q", run.ReportedElsewhere)
			}
			if tc.wantErr == "" && (run.Stack == nil || run.Store == "") {
				t.Errorf("the run does not name its stack and store: %+v", run)
			}
		})
	}
}

// TestJobSpec: the Job of a request is named after it (the same in every
// bot), runs the worker with the request and the store's address only (and
// the bot's lease, where it has one of its own: the worker beats and looks
// for a cancel as often as the bot expects), as the workspace's
// ServiceAccount, unprivileged, once, within its timeout, and says in its
// labels and annotations what it is for. The checkout is in the store for
// the worker before the Job exists.
func TestJobSpec(t *testing.T) {
	for _, tc := range []struct {
		ws, wantSA string
		wantTTL    int32
	}{
		{"dev", "runner-dev", 86400},
		{"prod", "runner-prod", 3600},
	} {
		t.Run(tc.ws, func(t *testing.T) {
			c := newFakeCluster(t)
			if tc.ws == "prod" {
				c.x.Store.Lease = 40 * time.Second
			}
			req := c.request("apps/dev", tc.ws)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan *workflow.StackResult, 1)
			go func() { done <- c.x.Run(ctx, req) }()
			j := c.job(req)
			cancel()
			<-done
			if there, err := c.store.HasWork(context.Background(), req.CheckoutID(), workflow.CheckoutFile); err != nil || !there {
				t.Errorf("the checkout is not in the store: %v, %v", there, err)
			}
			spec := j.Spec.Template.Spec
			ct := spec.Containers[0]
			i := slices.Index(ct.Args, "--backend")
			if j.Name != "kusionpr-"+req.ID() || j.Namespace != "jobs" || spec.ServiceAccountName != tc.wantSA || ct.Image != "kusionpr/action:test" ||
				len(ct.Args) < 4 || ct.Args[0] != "execute" || ct.Args[1] != "--request" || i < 0 || ct.Args[i+1] != c.url {
				t.Errorf("Job %s/%s: ServiceAccount %s, image %s, args %q", j.Namespace, j.Name, spec.ServiceAccountName, ct.Image, ct.Args)
			}
			lease := slices.Index(ct.Args, "--lease")
			if (c.x.Store.Lease == 0) != (lease < 0) || (lease >= 0 && ct.Args[lease+1] != "40s") {
				t.Errorf("args %q with the bot's lease %s", ct.Args, c.x.Store.Lease)
			}
			if *j.Spec.BackoffLimit != 0 || *j.Spec.ActiveDeadlineSeconds != 3600 || *j.Spec.TTLSecondsAfterFinished != tc.wantTTL || spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("backoff %d, deadline %d s, TTL %d s, restart %s", *j.Spec.BackoffLimit, *j.Spec.ActiveDeadlineSeconds, *j.Spec.TTLSecondsAfterFinished, spec.RestartPolicy)
			}
			if sc := ct.SecurityContext; !*spec.SecurityContext.RunAsNonRoot || *spec.SecurityContext.RunAsUser == 0 || *sc.AllowPrivilegeEscalation ||
				!*sc.ReadOnlyRootFilesystem || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
				t.Errorf("the pod may do more than it needs: %+v, %+v", spec.SecurityContext, sc)
			}
			if ct.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
				t.Errorf("termination message policy %s: a failure would not show its log", ct.TerminationMessagePolicy)
			}
			want := map[string]string{labelManagedBy: managedBy, labelRequest: req.ID(), labelCommand: "apply"}
			for k, v := range want {
				if j.Labels[k] != v || j.Spec.Template.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, j.Labels[k], v)
				}
			}
			for k, v := range map[string]string{"kusionpr.io/stack": "apps/dev", "kusionpr.io/commit": req.Commit, "kusionpr.io/actor": "octocat",
				"kusionpr.io/repository": "acme/infra", "kusionpr.io/pull-request": "7"} {
				if j.Annotations[k] != v {
					t.Errorf("annotation %s = %q, want %q", k, j.Annotations[k], v)
				}
			}
		})
	}
}

// TestJobCreation: a Job made before for the request (another bot's, or
// this one's before a restart) is adopted, not made again; the API
// server's refusal to make one, and a request whose stack cannot be read,
// fail the run with no Job made.
func TestJobCreation(t *testing.T) {
	t.Run("adopted", func(t *testing.T) {
		c := newFakeCluster(t)
		req := c.request("apps/dev", "dev")
		s := c.x.Config.For("dev", false)
		before, err := newJob(c.x.Config.Image, s, req, workflow.StoreConfig{Backend: c.url})
		if err != nil {
			t.Fatal(err)
		}
		before.UID = "the-first"
		if _, err := c.client.BatchV1().Jobs("jobs").Create(context.Background(), before, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		done := make(chan *workflow.StackResult, 1)
		go func() { done <- c.x.Run(context.Background(), req) }()
		c.result(req, &workflow.StackResult{Workspace: "dev", Skipped: "adopted"})
		j := c.job(req)
		c.end(j, false, "", "")
		run := <-done
		if run.Err != nil || run.Skipped != "adopted" || j.UID != "the-first" {
			t.Errorf("the adopting run: %v, skipped %q, Job %s", run.Err, run.Skipped, j.UID)
		}
	})
	for _, tc := range []struct {
		name, stack string
		refuse      bool
		wantErr     string
	}{
		{name: "refused by the API server", stack: "apps/dev", refuse: true, wantErr: `create Job jobs/kusionpr-`},
		{name: "a stack that cannot be read", stack: "apps/gone", wantErr: "apps/gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster(t)
			if tc.refuse {
				c.client.PrependReactor("create", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "x", errors.New("the bot may not make Jobs here"))
				})
			}
			req := workflow.Request{Root: c.root, Stack: tc.stack, Command: workflow.Apply, Commit: "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00",
				Origin: &model.Origin{Repository: &model.Repository{ID: 1, FullName: "acme/infra"}}}
			run := c.x.Run(context.Background(), req)
			if run.Err == nil || !strings.Contains(run.Err.Error(), tc.wantErr) {
				t.Errorf("the run's error %v, want one saying %q", run.Err, tc.wantErr)
			}
			if jobs, err := c.client.BatchV1().Jobs("jobs").List(context.Background(), metav1.ListOptions{}); err != nil || len(jobs.Items) != 0 {
				t.Errorf("Jobs %d, %v; want none", len(jobs.Items), err)
			}
		})
	}
}

// TestNew: the executor reaches the Jobs' cluster through the kubeconfig
// the operator names, else the bot pod's ServiceAccount; outside a pod
// without a kubeconfig it says which setting is missing.
func TestNew(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	for _, tc := range []struct {
		name, kubeconfig, wantErr string
	}{
		{"a kubeconfig", kubeconfig, ""},
		{"a kubeconfig that is not there", filepath.Join(t.TempDir(), "none"), "kubernetesJobs: the cluster the Jobs run in"},
		{"no kubeconfig, not in a pod", "", "kubernetesJobs: the cluster the Jobs run in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := New(Config{Image: "i", Kubeconfig: tc.kubeconfig}, nil)
			if tc.wantErr == "" {
				if err != nil || x.Client == nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("New: %v, want an error saying %q", err, tc.wantErr)
			}
		})
	}
}
