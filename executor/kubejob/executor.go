package kubejob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8swait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/workflow"
)

// Executor runs each stack's request as a Job. It is a
// workflow.StackRunner: the workflow reports what it returns as it reports
// a stack run in process.
type Executor struct {
	Client kubernetes.Interface
	Config Config
	// Store is the release store the workers share with the bot: they
	// take their checkout from it and leave their result in it.
	Store workflow.StoreConfig
	// OpenStore, if set, opens it in place of Store.Open.
	OpenStore func(ctx context.Context) (*backend.Store, string, error)
	// Log takes the executor's own lines (default: the run's logger).
	Log *slog.Logger
	// Poll is how often a wait looks again without news from the watch
	// (default 5s): a missed event costs at most this.
	Poll time.Duration

	mu       sync.Mutex
	watchers map[string]*watcher // by namespace
	opened   *backend.Store
	where    string
}

// store is the release store, opened once for the executor's life: a
// store's client (its connections, its certificates) is not worth making
// again for every stack.
func (x *Executor) store(ctx context.Context) (*backend.Store, string, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.opened != nil {
		return x.opened, x.where, nil
	}
	open := x.OpenStore
	if open == nil {
		open = x.Store.Open
	}
	store, where, err := open(ctx)
	if err != nil {
		return nil, "", err
	}
	x.opened, x.where = store, where
	return store, where, nil
}

// Run runs the request as a Job, or adopts the Job another bot (or this
// one, before a restart) made for the same request, and waits for its
// result.
func (x *Executor) Run(ctx context.Context, req workflow.Request) *workflow.StackResult {
	// The stack's workspace picks the Job's settings.
	run := workflow.HandOver(req)
	if run.Err != nil {
		return run
	}
	st := run.Stack
	s := x.Config.For(run.Workspace, req.Offline && req.Command == workflow.Preview)
	log := req.Log
	if x.Log != nil {
		log = x.Log
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("request", req.ID(), "job", s.namespace()+"/"+jobName(req.ID()))

	store, where, err := x.store(ctx)
	if err != nil {
		run.Err = err
		return run
	}
	run.Store = where
	if err := workflow.PutCheckout(ctx, store, req, req.Root); err != nil {
		run.Err = err
		return run
	}
	job, err := newJob(x.Config.Image, s, req, x.Store)
	if err != nil {
		run.Err = err
		return run
	}
	w, err := x.watcher(s.namespace())
	if err != nil {
		run.Err = fmt.Errorf("watch the Jobs of namespace %s: %w", s.namespace(), err)
		return run
	}
	switch _, err := x.Client.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{FieldManager: managedBy}); {
	case apierrors.IsAlreadyExists(err):
		log.Info("adopting the Job made before for this request")
	case err != nil:
		run.Err = fmt.Errorf("create Job %s/%s: %w", job.Namespace, job.Name, err)
		return run
	default:
		log.Info("Job created", "workspace", run.Workspace, "serviceAccount", s.ServiceAccount)
	}
	res, err := x.wait(ctx, w, store, req, job, s, log)
	if err != nil {
		run.Err = err
		return run
	}
	var release *model.Release
	if res.Revision > 0 {
		if release, err = store.Get(ctx, res.Project, res.Workspace, res.Revision); err != nil {
			run.Err = fmt.Errorf("read the release the Job %s wrote: %w", job.Name, err)
			return run
		}
	}
	out := res.StackResult(release)
	out.Store = where
	if out.Stack == nil {
		out.Stack = st
	}
	// Every bot waiting for the request (a redelivery, a recovery pass,
	// another replica) has the result now; one reports it.
	host, _ := os.Hostname()
	switch err := store.PutWork(ctx, req.ID(), workflow.ReportFile, fmt.Appendf(nil, "%s %d %s", host, os.Getpid(), time.Now().UTC().Format(time.RFC3339Nano))); {
	case errors.Is(err, backend.ErrWorkExists):
		out.ReportedElsewhere = "another bot took the result of " + req.ID() + " first and reports it"
	case err != nil:
		log.Warn("could not take the report of the result; reporting it all the same", "error", err)
	}
	return out
}

// wait waits for the Job's end and returns the result it left. A Job gone
// (its TTL passed) is judged by its result alone.
func (x *Executor) wait(ctx context.Context, w *watcher, store *backend.Store, req workflow.Request, job *batchv1.Job, s Settings, log *slog.Logger) (workflow.RequestResult, error) {
	news := w.subscribe(job.Name)
	defer w.unsubscribe(job.Name, news)
	poll := x.Poll
	if poll <= 0 {
		poll = 5 * time.Second
	}
	// The watch wakes the wait when the Job changes; the poll is for what
	// a watch may miss. wait's own loops have no such wake-up, so its
	// timer paces this one.
	tick := k8swait.Backoff{Duration: poll}.Timer()
	defer tick.Stop()
	for {
		cur, err := w.get(ctx, job.Namespace, job.Name)
		if err != nil {
			return workflow.RequestResult{}, err
		}
		var st state
		if cur != nil {
			st = jobState(cur)
		}
		if cur == nil || st.done {
			res, ok, err := result(ctx, store, req)
			switch {
			case err != nil:
				return res, err
			case ok:
				log.Info("the Job's result is in", "state", st.String())
				return res, nil
			case cur == nil:
				return res, fmt.Errorf("the Job %s/%s is gone and left no result", job.Namespace, job.Name)
			case st.failed && st.reason == batchv1.JobReasonDeadlineExceeded:
				return res, fmt.Errorf("the Job %s/%s timed out: it ran past its timeout of %s (kubernetesJobs timeout) and left no result%s",
					job.Namespace, job.Name, s.timeout(), x.tail(ctx, job))
			case st.failed:
				return res, fmt.Errorf("the Job %s/%s %s and left no result%s", job.Namespace, job.Name, st, x.tail(ctx, job))
			}
			// Complete, and the result not seen yet: the worker writes it
			// before it exits, so look once more after a pause.
			if res, ok, err = resultAfter(ctx, store, req, time.Second); ok || err != nil {
				return res, err
			}
			return res, fmt.Errorf("the Job %s/%s completed but left no result%s", job.Namespace, job.Name, x.tail(ctx, job))
		}
		select {
		case <-ctx.Done():
			return workflow.RequestResult{}, fmt.Errorf("stopped waiting for the Job %s/%s (%w): it goes on, and the next run of this request adopts it", job.Namespace, job.Name, ctx.Err())
		case <-news:
		case <-tick.C():
			tick.Next()
		}
	}
}

func result(ctx context.Context, store *backend.Store, req workflow.Request) (workflow.RequestResult, bool, error) {
	data, err := store.Work(ctx, req.ID(), workflow.ResultFile, 0)
	if errors.Is(err, backend.ErrNoWork) {
		return workflow.RequestResult{}, false, nil
	}
	if err != nil {
		return workflow.RequestResult{}, false, err
	}
	res, err := workflow.DecodeRequestResult(req, data)
	return res, err == nil, err
}

func resultAfter(ctx context.Context, store *backend.Store, req workflow.Request, d time.Duration) (workflow.RequestResult, bool, error) {
	select {
	case <-ctx.Done():
		return workflow.RequestResult{}, false, ctx.Err()
	case <-time.After(d):
	}
	return result(ctx, store, req)
}

// maxTail bounds the log lines a failure shows.
const maxTail = 4 << 10

// tail is the end of the Job's log, for a failure: the termination
// message the kubelet keeps in the pod's status (the log's tail, as the
// container fails), else the logs API's last lines.
func (x *Executor) tail(ctx context.Context, job *batchv1.Job) string {
	pods, err := x.Client.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job.Name})
	if err != nil || len(pods.Items) == 0 {
		return ""
	}
	sort.Slice(pods.Items, func(i, j int) bool {
		return pods.Items[i].CreationTimestamp.After(pods.Items[j].CreationTimestamp.Time)
	})
	pod := pods.Items[0]
	var text string
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container && cs.State.Terminated != nil {
			text = cs.State.Terminated.Message
			if text == "" && cs.State.Terminated.ExitCode != 0 {
				text = fmt.Sprintf("exit code %d", cs.State.Terminated.ExitCode)
			}
		}
	}
	if text == "" {
		lines, limit := int64(20), int64(maxTail)
		if rc, err := x.Client.CoreV1().Pods(job.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: container, TailLines: &lines, LimitBytes: &limit}).Stream(ctx); err == nil {
			b, _ := io.ReadAll(io.LimitReader(rc, maxTail))
			rc.Close()
			text = string(b)
		}
	}
	text = strings.TrimSpace(text)
	if len(text) > maxTail {
		text = "…" + text[len(text)-maxTail:]
	}
	if text == "" {
		return ""
	}
	return "; the end of its log:\n" + model.MaskFingerprints(text)
}

// watcher follows the Jobs of one namespace (ours only, by label) through
// one informer shared by every wait.
type watcher struct {
	client kubernetes.Interface
	lister batchlisters.JobLister
	synced cache.InformerSynced

	mu   sync.Mutex
	subs map[string][]chan struct{}
}

func (x *Executor) watcher(ns string) (*watcher, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if w, ok := x.watchers[ns]; ok {
		return w, nil
	}
	f := informers.NewSharedInformerFactoryWithOptions(x.Client, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = labelManagedBy + "=" + managedBy }))
	inf := f.Batch().V1().Jobs()
	w := &watcher{client: x.Client, lister: inf.Lister(), synced: inf.Informer().HasSynced, subs: map[string][]chan struct{}{}}
	notify := func(obj any) {
		if j, ok := obj.(*batchv1.Job); ok {
			w.notify(j.Name)
		} else if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			if j, ok := d.Obj.(*batchv1.Job); ok {
				w.notify(j.Name)
			}
		}
	}
	// A wait reads a Job's name and status only; a day of finished Jobs
	// (their TTL) stays cached, so the rest is not kept.
	if err := inf.Informer().SetTransform(func(obj any) (any, error) {
		if j, ok := obj.(*batchv1.Job); ok {
			j.ManagedFields, j.Annotations, j.Spec = nil, nil, batchv1.JobSpec{}
		}
		return obj, nil
	}); err != nil {
		return nil, err
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify, UpdateFunc: func(_, obj any) { notify(obj) }, DeleteFunc: notify,
	}); err != nil {
		return nil, err
	}
	// The informer lives as long as the executor: every wait in the
	// namespace shares its one watch.
	f.Start(make(chan struct{}))
	if x.watchers == nil {
		x.watchers = map[string]*watcher{}
	}
	x.watchers[ns] = w
	return w, nil
}

func (w *watcher) subscribe(name string) chan struct{} {
	c := make(chan struct{}, 1)
	w.mu.Lock()
	w.subs[name] = append(w.subs[name], c)
	w.mu.Unlock()
	return c
}

func (w *watcher) unsubscribe(name string, c chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	subs := w.subs[name]
	for i, s := range subs {
		if s == c {
			w.subs[name] = append(subs[:i], subs[i+1:]...)
			break
		}
	}
	if len(w.subs[name]) == 0 {
		delete(w.subs, name)
	}
}

func (w *watcher) notify(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.subs[name] {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// get is the Job as the watch last saw it, nil when it does not exist;
// before the watch has caught up, the API server is asked.
func (w *watcher) get(ctx context.Context, ns, name string) (*batchv1.Job, error) {
	if w.synced() {
		j, err := w.lister.Jobs(ns).Get(name)
		if err == nil {
			return j, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	j, err := w.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read Job %s/%s: %w", ns, name, err)
	}
	return j, nil
}

// New is the executor of c, reaching the Jobs' cluster through
// c.Kubeconfig, else the bot pod's ServiceAccount.
func New(c Config, log *slog.Logger) (*Executor, error) {
	var rc *rest.Config
	var err error
	if c.Kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetesJobs: the cluster the Jobs run in: %w", err)
	}
	rc.UserAgent = "kusionpr-bot"
	// client-go's default (5 requests a second) would queue a burst of
	// merges behind each other for seconds; the API server's own priority
	// and fairness protects it.
	rc.QPS, rc.Burst = 50, 100
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetesJobs: %w", err)
	}
	return &Executor{Client: client, Config: c, Log: log}, nil
}
