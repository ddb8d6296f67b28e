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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	bucket := testenv.S3(t).NewBucket(t)
	suffix := fmt.Sprintf("%06x", rand.IntN(1<<24))
	jobs, target := "image-jobs-"+suffix, "image-stacks-"+suffix
	testenv.Namespaces(t, client, jobs, target)
	testenv.RunnerAccount(t, client, jobs, "runner", target)
	testenv.StoreSecret(t, client, jobs, "store")

	root := t.TempDir()
	for p, body := range map[string]string{
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
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	x := &kubejob.Executor{Client: client, Poll: time.Second, Config: kubejob.Config{Image: b.image, Settings: kubejob.Settings{
		Namespace: jobs, ServiceAccount: "runner",
		NodeSelector: map[string]string{"kusionpr-test/pool": "stand-in-kubelet"},
		EnvFrom:      []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "store"}}}},
	}}}
	sha := fmt.Sprintf("%040x", rand.Uint64())
	opts := workflow.Options{Backend: bucket, CheckoutRoot: root, RecordUnchanged: true, Trigger: "merge",
		Merge:  &workflow.MergeOrder{SHA: sha, MergedAt: time.Now().UTC()},
		Origin: &model.Origin{SHA: sha, PullRequest: 9, Actor: "octocat", Command: "merge", Repository: &model.Repository{ID: 99, FullName: "acme/infra"}}}
	done := make(chan *workflow.StackResult, 1)
	go func() {
		done <- x.RunStack(context.Background(), workflow.Apply, filepath.Join(root, "infra/dev"), opts)
	}()

	req, err := workflow.NewRequest(workflow.Apply, filepath.Join(root, "infra/dev"), opts)
	if err != nil {
		t.Fatal(err)
	}
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
	code, log := kubelet.Run(t, pod)
	t.Logf("the Job's container, run in the image as %s:\n%s", user, log)
	if code != 0 {
		t.Fatalf("the Job's container exited %d:\n%s", code, log)
	}
	var r *workflow.StackResult
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the executor did not return within two minutes")
	}
	if r.Err != nil || r.Release == nil || r.Release.Phase != model.PhaseSucceeded {
		t.Fatalf("the run as the bot sees it: %v, %+v\nthe container's log:\n%s", r.Err, r.Release, log)
	}
	cm, err := client.CoreV1().ConfigMaps(target).Get(context.Background(), "from-terraform", metav1.GetOptions{})
	if err != nil || cm.Data["seed"] != "seed-"+suffix {
		t.Errorf("the ConfigMap the Job applied: %v, %v", cm, err)
	}
}
