package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// jobsSetup is the cluster side of a bot whose stacks run as Jobs: a
// namespace for the Jobs; the bot's own ServiceAccount there, which may
// manage Jobs and read their pods and nothing else; the workspace's
// ServiceAccount the Jobs run as, which may change the stack's namespace;
// the store's credentials in a Secret.
type jobsSetup struct {
	client     kubernetes.Interface
	ns         string
	botAccount string
}

// withJobs makes the world's bot run its stacks as Jobs, with no
// kubeconfig of its own for the stacks.
func withJobs(setup *jobsSetup) worldOption {
	return func(w *world) {
		t := w.t
		ctx := context.Background()
		client := testenv.Client(t)
		jobs := w.ns + "-jobs"
		*setup = jobsSetup{client: client, ns: jobs, botAccount: "kusionpr-bot"}
		testenv.Namespaces(t, client, jobs)
		// The stack's namespace is the world's, deleted by it; made now
		// for the runner's role in it.
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().ServiceAccounts(jobs).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "kusionpr-bot"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.RunnerAccount(t, client, jobs, "runner", w.ns)
		testenv.StoreSecret(t, client, jobs, "store")
		must := func(_ any, err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		// The bot: what deploy/kubernetes/jobs.yaml gives it, nothing more.
		must(client.RbacV1().Roles(jobs).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "kusionpr-bot"}, Rules: shippedJobsRole(t).Rules}, metav1.CreateOptions{}))
		must(client.RbacV1().RoleBindings(jobs).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kusionpr-bot"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kusionpr-bot", Namespace: jobs}},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "kusionpr-bot"}}, metav1.CreateOptions{}))
		// The workspace's runner may also touch the stack's namespace
		// itself, which its spec declares (a cluster-wide object).
		must(client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: jobs + "-namespaces"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{w.ns}, Verbs: []string{"get", "patch", "update"}},
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list", "watch", "create"}},
		}}, metav1.CreateOptions{}))
		must(client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: jobs + "-namespaces"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "runner", Namespace: jobs}},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: jobs + "-namespaces"}}, metav1.CreateOptions{}))
		t.Cleanup(func() {
			client.RbacV1().ClusterRoleBindings().Delete(context.Background(), jobs+"-namespaces", metav1.DeleteOptions{})
			client.RbacV1().ClusterRoles().Delete(context.Background(), jobs+"-namespaces", metav1.DeleteOptions{})
		})
		config := map[string]any{"kubernetesJobs": map[string]any{
			"image":          "kusionpr-test/action:none",
			"kubeconfig":     testenv.ServiceAccountKubeconfig(t, client, jobs, "kusionpr-bot"),
			"namespace":      jobs,
			"serviceAccount": "runner",
			// No node has it: the test's stand-in kubelet runs the pods.
			"nodeSelector": map[string]string{"kusionpr-test/pool": "stand-in-kubelet"},
			"envFrom":      []any{map[string]any{"secretRef": map[string]any{"name": "store"}}},
		}}
		raw, _ := json.Marshal(config)
		path := filepath.Join(t.TempDir(), "bot.yaml")
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		// The bot keeps no way to the stacks' cluster.
		var env []string
		for _, kv := range w.env {
			if !strings.HasPrefix(kv, "KUBECONFIG=") {
				env = append(env, kv)
			}
		}
		w.env = append(env, "KUSIONPR_EXECUTOR=kubernetes", "KUSIONPR_CONFIG="+path, "KUBERNETES_SERVICE_HOST=")
	}
}

// TestMergeAppliesThroughAJob: with the Kubernetes executor, a merge's
// apply runs as a Job of the workspace's ServiceAccount, and the bot,
// which may not read the stack's namespace and holds no kubeconfig for it,
// reports the result on the pull request. The Job holds neither the App's
// key nor the webhook secret nor the store's secret key.
func TestMergeAppliesThroughAJob(t *testing.T) {
	var jobs jobsSetup
	w := newWorld(t, withJobs(&jobs))
	const number, head, merge = 31, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "cccccccccccccccccccccccccccccccccccccccc"
	w.pullRequest(number, head)
	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)
	if d := githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge)); d.Status != http.StatusAccepted {
		t.Fatalf("merge delivery answered %d: %s", d.Status, d.Body)
	}

	var job *batchv1.Job
	w.waitFor("the apply's Job", func() bool {
		list, err := jobs.client.BatchV1().Jobs(jobs.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			return false
		}
		job = &list.Items[0]
		return true
	})
	if sa := job.Spec.Template.Spec.ServiceAccountName; sa != "runner" {
		t.Errorf("the Job runs as %q, want the workspace's runner", sa)
	}
	raw, _ := json.Marshal(job)
	key := ""
	for _, kv := range w.env {
		if v, ok := strings.CutPrefix(kv, "KUSIONPR_APP_PRIVATE_KEY_PATH="); ok {
			b, err := os.ReadFile(v)
			if err != nil {
				t.Fatal(err)
			}
			key = strings.Split(strings.TrimSpace(string(b)), "\n")[1]
		}
	}
	for what, s := range map[string]string{"the App's key": key, "the webhook secret": secret, "the store's secret key": os.Getenv("AWS_SECRET_ACCESS_KEY")} {
		if s == "" || strings.Contains(string(raw), s) {
			t.Errorf("%s is in the Job (or unknown to the test)", what)
		}
	}
	review, err := jobs.client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + jobs.ns + ":" + jobs.botAccount,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: w.ns, Verb: "get", Resource: "configmaps"},
	}}, metav1.CreateOptions{})
	if err != nil || review.Status.Allowed {
		t.Fatalf("the bot's identity may read the stack's namespace (%v): the test proves nothing", err)
	}

	pod := testenv.JobPod(t, jobs.client, jobs.ns, job.Name)
	kubelet := testenv.Kubelet{Client: jobs.client, Entrypoint: testenv.Binary(t, "../action")}
	if code, log := kubelet.Run(t, pod); code != 0 {
		t.Fatalf("the Job's worker exited %d:\n%s", code, log)
	}
	w.waitFor("the apply's comment", func() bool { return w.commentsContaining(number, "Applied stack") == 1 })
	if w.commentsContaining(number, "release 1 succeeded") != 1 {
		t.Errorf("comment: %+v", w.gh.Comments(w.owner, w.repo, number))
	}
	if got := kubectlGet(t, w.ns); got != "bot" {
		t.Errorf("the ConfigMap holds %q, want the merge's value", got)
	}
	if !strings.Contains(w.logs(), "Job created") {
		t.Errorf("the bot's log does not say it made the Job:\n%s", w.logs())
	}
	b := w.metrics()
	for _, want := range []string{
		`kusionpr_executor_dispatched_total{executor="kubernetes"} 1`,
		`kusionpr_executor_results_total{executor="kubernetes",result="succeeded"} 1`,
		`kusionpr_executor_running{executor="kubernetes"} 0`,
		`kusionpr_executor_start_seconds_count{executor="kubernetes"} 1`,
	} {
		if !strings.Contains(b, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestJobAdoptedAfterRestart: a bot killed while its Job runs leaves the
// Job to the next bot, whose recovery pass finds the merge undone and
// waits for that very Job; a redelivery to another replica makes no second
// Job; the result is reported once.
func TestJobAdoptedAfterRestart(t *testing.T) {
	var jobs jobsSetup
	w := newWorld(t, withJobs(&jobs))
	const number, head, merge = 32, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "dddddddddddddddddddddddddddddddddddddddd"
	w.pullRequest(number, head)
	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)
	if d := githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge)); d.Status != http.StatusAccepted {
		t.Fatalf("merge delivery answered %d: %s", d.Status, d.Body)
	}
	listJobs := func() []batchv1.Job {
		list, err := jobs.client.BatchV1().Jobs(jobs.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	w.waitFor("the apply's Job", func() bool { return len(listJobs()) > 0 })
	w.bots[0].proc.Process.Kill() // SIGKILL: the Job runs on without it
	w.bots[0].proc.Wait()

	next := w.start() // its recovery pass finds the merge not applied
	other := w.start()
	// Taken, or coalesced with the merge its own recovery pass queued.
	if d := githubfake.Deliver(t, other.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge)); d.Status/100 != 2 {
		t.Fatalf("the redelivery answered %d: %s", d.Status, d.Body)
	}
	w.waitFor("both bots to wait for the Job", func() bool {
		return strings.Contains(next.logs.String(), "adopting the Job") && strings.Contains(other.logs.String(), "adopting the Job")
	})
	if n := len(listJobs()); n != 1 {
		t.Fatalf("%d Jobs for one merge, want one", n)
	}
	job := listJobs()[0]
	pod := testenv.JobPod(t, jobs.client, jobs.ns, job.Name)
	kubelet := testenv.Kubelet{Client: jobs.client, Entrypoint: testenv.Binary(t, "../action")}
	if code, log := kubelet.Run(t, pod); code != 0 {
		t.Fatalf("the Job's worker exited %d:\n%s", code, log)
	}
	w.waitFor("the apply's comment", func() bool { return w.commentsContaining(number, "Applied stack") == 1 })
	time.Sleep(time.Second) // the other bot reports too: in the same comment
	if n := w.commentsContaining(number, "Applied stack"); n != 1 {
		t.Errorf("%d comments report the apply, want one", n)
	}
	if revs, _ := w.store().Revisions(context.Background(), "web", "default"); len(revs) != 1 {
		t.Errorf("revisions %v: the merge was applied more than once", revs)
	}
}

// shippedJobsRole is the bot's Role of deploy/kubernetes/jobs.yaml.
func shippedJobsRole(t *testing.T) rbacv1.Role {
	t.Helper()
	b, err := os.ReadFile("../../deploy/kubernetes/jobs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var r rbacv1.Role
		if err := yaml.Unmarshal([]byte(doc), &r); err != nil {
			t.Fatal(err)
		}
		if r.Kind == "Role" {
			return r
		}
	}
	t.Fatal("deploy/kubernetes/jobs.yaml has no Role")
	return rbacv1.Role{}
}
