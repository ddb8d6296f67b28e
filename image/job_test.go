package image

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kusionpr/kusionpr/executor/kubejob"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/workflow"
)

// TestJobRunsFromTheImage: the Job the Kubernetes executor makes runs in
// this image as its pod would: the image's entrypoint with the Job's
// arguments, as the Job's non-root user (65532), with only the Job's
// environment and the emptyDir at /tmp writable (the image's own files are
// root's). It applies a stack of a Kubernetes object and a Terraform
// resource, so Terraform's working folders and Kusion's home must live
// under HOME=/tmp, and the executor reports the release.
func TestJobRunsFromTheImage(t *testing.T) {
	b := newBuildah(t)
	client := testenv.Client(t)
	jobs, target, suffix := jobNamespaces(t, client, "image-jobs-", "image-stacks-")
	runJob(t, b, client, jobs, map[string]string{
		"infra/project.yaml":   "name: infra-" + suffix + "\n",
		"infra/dev/stack.yaml": "name: dev\n",
		"infra/dev/spec.yaml": fmt.Sprintf(`resources:
- id: hashicorp:terraform:terraform_data:seed
  type: Terraform
  attributes: {input: seed-%[2]s}
  extensions: {provider: terraform.io/builtin/terraform, resourceType: terraform_data}
- id: v1:ConfigMap:%[1]s:from-terraform
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: from-terraform, namespace: %[1]s}
    data: {seed: $kusion_path.hashicorp:terraform:terraform_data:seed.output}
`, target, suffix),
	}, nil)
	cm, err := client.CoreV1().ConfigMaps(target).Get(context.Background(), "from-terraform", metav1.GetOptions{})
	if err != nil || cm.Data["seed"] != "seed-"+suffix {
		t.Errorf("the ConfigMap the Job applied: %v, %v", cm, err)
	}
}

// TestJobCompilesKCLFromTheImage: a stack in KCL (Kusion's quickstart,
// its kcl.mod naming kam from git and service and network from OCI) is
// applied by a Job of the image, as its non-root user with a read-only
// root: the image's runtime compiles it, confined, its packages fetched
// into the pod's /tmp from the servers the Job's environment allows.
func TestJobCompilesKCLFromTheImage(t *testing.T) {
	b := newBuildah(t)
	client := testenv.Client(t)
	served := testenv.KCLSettings(t)
	jobs, target, suffix := jobNamespaces(t, client, "image-kcljobs-", "image-kcl-")
	// The quickstart's Spec holds its Namespace: the runner may apply it.
	ctx := context.Background()
	name := "kusionpr-test-namespaces-" + suffix
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "create", "patch"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "runner", Namespace: jobs}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	runJob(t, b, client, jobs, map[string]string{
		"apps/project.yaml":       "name: " + target + "\n",
		"apps/default/stack.yaml": "name: default\n",
		"apps/default/kcl.mod":    testenv.KCLQuickstartMod,
		"apps/default/main.k":     testenv.KCLQuickstartMain,
	}, []corev1.EnvVar{{Name: "KUSIONPR_KCL_ALLOW", Value: served.Allow}, {Name: "KUSIONPR_KCL_MIRRORS", Value: served.Mirrors}})
	d, err := client.AppsV1().Deployments(target).Get(context.Background(), target+"-default-quickstart", metav1.GetOptions{})
	if err != nil || d.Spec.Template.Spec.Containers[0].Image != "kusionstack/kusion-quickstart:latest" {
		t.Errorf("the Deployment the Job applied: %v", err)
	}
	if served.Requests() == 0 {
		t.Error("the Job fetched nothing from the package servers")
	}
}

// jobNamespaces makes, with a random suffix, the namespace runJob's Jobs
// run in (its runner ServiceAccount, its store Secret) and the one their
// stack's objects go to.
func jobNamespaces(t *testing.T, client kubernetes.Interface, jobsPrefix, targetPrefix string) (jobs, target, suffix string) {
	t.Helper()
	suffix = fmt.Sprintf("%06x", rand.IntN(1<<24))
	jobs, target = jobsPrefix+suffix, targetPrefix+suffix
	testenv.Namespaces(t, client, jobs, target)
	testenv.RunnerAccount(t, client, jobs, "runner", target)
	testenv.StoreSecret(t, client, jobs, "store")
	return jobs, target, suffix
}

// runJob applies the one stack of files (path: content) through the
// Kubernetes executor, its Job's pod run in the image by a stand-in
// kubelet, and fails unless the release succeeded. env is added to the
// Job's.
func runJob(t *testing.T, b buildah, client kubernetes.Interface, jobs string, files map[string]string, env []corev1.EnvVar) {
	t.Helper()
	r, log := runJobWith(t, b, client, jobs, files, env, jobOptions{})
	if r.Err != nil || r.Release == nil || r.Release.Phase != model.PhaseSucceeded {
		t.Fatalf("the run as the bot sees it: %v, %+v\nthe container's log:\n%s", r.Err, r.Release, log)
	}
}

// jobOptions vary runJobWith's run.
type jobOptions struct {
	// lease is the bot's release lease (0: the store's default).
	lease time.Duration
	// during, if set, runs beside the Job's container, with the store's URL.
	during func(store string)
}

// runJobWith is runJob, returning the run as the bot sees it and the
// container's log whatever they say.
func runJobWith(t *testing.T, b buildah, client kubernetes.Interface, jobs string, files map[string]string, env []corev1.EnvVar, o jobOptions) (*workflow.StackResult, string) {
	t.Helper()
	bucket := testenv.S3(t).NewBucket(t)
	root := t.TempDir()
	var stack string
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if filepath.Base(p) == "stack.yaml" {
			stack = filepath.Join(root, filepath.Dir(p))
		}
	}
	x := &kubejob.Executor{Client: client, Poll: time.Second, Config: kubejob.Config{Image: b.image, Settings: kubejob.Settings{
		Namespace: jobs, ServiceAccount: "runner",
		NodeSelector: map[string]string{"kusionpr-test/pool": "stand-in-kubelet"},
		EnvFrom:      []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "store"}}}},
		Env:          env,
	}}, Store: workflow.StoreConfig{Backend: bucket, Lease: o.lease}}
	sha := fmt.Sprintf("%040x", rand.Uint64())
	tmpl := workflow.Request{Root: root, RecordUnchanged: true, Trigger: "merge",
		Merge:  &workflow.MergeOrder{SHA: sha, MergedAt: time.Now().UTC()},
		Origin: &model.Origin{SHA: sha, PullRequest: 9, Actor: "octocat", Command: "merge", Repository: &model.Repository{ID: 99, FullName: "acme/infra"}}}
	req, err := tmpl.For(workflow.Apply, stack)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *workflow.StackResult, 1)
	go func() {
		done <- x.Run(context.Background(), req)
	}()

	pod := testenv.JobPod(t, client, jobs, "kusionpr-"+req.ID())
	c := pod.Spec.Containers[0]
	sc := pod.Spec.SecurityContext
	if c.Image != b.image || sc == nil || sc.RunAsUser == nil || c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Fatalf("the pod: image %q, pod security %+v, container security %+v", c.Image, sc, c.SecurityContext)
	}
	entrypoint := b.config(t).Entrypoint
	user := fmt.Sprintf("%d:%d", *sc.RunAsUser, *sc.RunAsGroup)
	kubelet := testenv.Kubelet{Client: client, Start: func(tb testing.TB, home string, args, env []string) *exec.Cmd {
		// The emptyDir is the user's: the pod's fsGroup makes it so.
		if err := filepath.Walk(home, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Chmod(p, 0o777)
		}); err != nil {
			tb.Fatal(err)
		}
		run := []string{"run", "--isolation", "chroot", "--user", user, "-v", home + ":/tmp"}
		for _, kv := range env {
			name, v, _ := strings.Cut(kv, "=")
			switch name {
			case "PATH":
				continue // the image's own
			case "HOME", "TMPDIR":
				v = "/tmp"
			case "KUBECONFIG":
				v = "/tmp/" + filepath.Base(v)
			}
			run = append(run, "-e", name+"="+v)
		}
		run = append(append(append(run, b.container(t), "--"), entrypoint...), args...)
		return b.command(context.Background(), run...)
	}}
	if o.during != nil {
		go o.during(bucket)
	}
	code, log := kubelet.Run(t, pod)
	t.Logf("the Job's container, run in the image as %s, exited %d:\n%s", user, code, log)
	var r *workflow.StackResult
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the executor did not return within two minutes")
	}
	return r, log
}
