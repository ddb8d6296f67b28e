package testenv

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubelet stands in for the node of pods a test keeps off the cluster's
// simulated node (whose kwok would complete them at once, unrun): it runs
// a pod's one container as a process of the test, as the kubelet would run
// it, and writes the pod's status as the kubelet would.
//
// The process gets the container's arguments; the container's environment
// with its Secret and ConfigMap references resolved; and, for the pod's
// ServiceAccount token a container would find mounted, a kubeconfig with a
// token of that ServiceAccount (KUBECONFIG), so that it can do exactly what
// the pod's ServiceAccount may. The status is Succeeded or Failed by the
// exit code, with the log's tail as the termination message
// (FallbackToLogsOnError).
type Kubelet struct {
	Client kubernetes.Interface
	// Entrypoint is the image's entrypoint, built for the test.
	Entrypoint string
	// Start, if set, makes the container's process instead: the image
	// itself run with env and args (the Entrypoint is then unused). env's
	// HOME, TMPDIR and KUBECONFIG are paths of this machine under home,
	// the folder to mount as the container's /tmp.
	Start func(t testing.TB, home string, args, env []string) *exec.Cmd
}

// Run runs pod as said above and returns the exit code and the log.
func (k Kubelet) Run(t testing.TB, pod *corev1.Pod) (int, string) {
	t.Helper()
	ctx := context.Background()
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("pod %s has %d containers; the stand-in kubelet runs one", pod.Name, len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, from := range c.EnvFrom {
		switch {
		case from.SecretRef != nil:
			s, err := k.Client.CoreV1().Secrets(pod.Namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for name, v := range s.Data {
				env = append(env, from.Prefix+name+"="+string(v))
			}
		case from.ConfigMapRef != nil:
			cm, err := k.Client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for name, v := range cm.Data {
				env = append(env, from.Prefix+name+"="+v)
			}
		}
	}
	home := t.TempDir()
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			s, err := k.Client.CoreV1().Secrets(pod.Namespace).Get(ctx, e.ValueFrom.SecretKeyRef.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			v = string(s.Data[e.ValueFrom.SecretKeyRef.Key])
		}
		if e.Name == "HOME" {
			// The container's own /tmp is an emptyDir: here, a folder of
			// the test's.
			v = home
		}
		env = append(env, e.Name+"="+v)
	}
	kc := filepath.Join(home, "serviceaccount.kubeconfig")
	if err := os.Rename(k.serviceAccountKubeconfig(t, pod), kc); err != nil {
		t.Fatal(err)
	}
	env = append(env, "TMPDIR="+home, "KUBECONFIG="+kc)

	var cmd *exec.Cmd
	if k.Start != nil {
		cmd = k.Start(t, home, c.Args, env)
	} else {
		cmd = exec.Command(k.Entrypoint, c.Args...)
		cmd.Env = env
	}
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	code := 0
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run pod %s: %v", pod.Name, err)
		}
		code = ee.ExitCode()
	}
	k.Finish(t, pod, code, log.String())
	return code, log.String()
}

// serviceAccountKubeconfig is what the pod's mounted token gives: the API
// server, as its ServiceAccount.
func (k Kubelet) serviceAccountKubeconfig(t testing.TB, pod *corev1.Pod) string {
	t.Helper()
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	return ServiceAccountKubeconfig(t, k.Client, pod.Namespace, sa)
}

// ServiceAccountKubeconfig writes a kubeconfig reaching the test cluster
// as the ServiceAccount ns/sa, with a token good for ten minutes.
func ServiceAccountKubeconfig(t testing.TB, client kubernetes.Interface, ns, sa string) string {
	t.Helper()
	exp := int64(600)
	tr, err := client.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of ServiceAccount %s/%s: %v", ns, sa, err)
	}
	cfg, err := clientcmd.LoadFromFile(Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{"sa": {Token: tr.Status.Token}}
	cfg.Contexts = map[string]*clientcmdapi.Context{"sa": {Cluster: cur.Cluster, AuthInfo: "sa", Namespace: ns}}
	cfg.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), sa+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// Finish writes the pod's end as the kubelet does, with the container's
// terminated state: Succeeded for code 0, else Failed. Alone, it is a
// container that died without running its command to the end (killed for
// its memory, its node lost).
func (k Kubelet) Finish(t testing.TB, pod *corev1.Pod, code int, log string) {
	t.Helper()
	ctx := context.Background()
	now := metav1.NewTime(time.Now())
	phase := corev1.PodSucceeded
	if code != 0 {
		phase = corev1.PodFailed
	}
	msg := ""
	if code != 0 && pod.Spec.Containers[0].TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		msg = logTail(log, 80, 2048)
	}
	for range 5 {
		cur, err := k.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Status.Phase = phase
		cur.Status.StartTime = &now
		cur.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: int32(code), Reason: map[bool]string{true: "Completed", false: "Error"}[code == 0],
				Message: msg, StartedAt: now, FinishedAt: now,
			}},
		}}
		if _, err = k.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err == nil {
			return
		}
		t.Logf("status of pod %s: %v; trying again", pod.Name, err)
	}
	t.Fatalf("could not write the status of pod %s", pod.Name)
}

// logTail is the kubelet's termination message from a log: its last lines
// within a byte budget.
func logTail(log string, lines, bytes int) string {
	ls := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	s := strings.Join(ls, "\n")
	if len(s) > bytes {
		s = s[len(s)-bytes:]
	}
	return s
}

// JobPod waits for the pod of the Job name to be made, and returns it.
func JobPod(t testing.TB, client kubernetes.Interface, ns, job string) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		pods, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) > 0 {
			return &pods.Items[0]
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the Job %s/%s made no pod within a minute", ns, job)
	return nil
}

// RunnerAccount makes the ServiceAccount sa in ns, allowed to change (the
// "edit" role) what the namespaces targets hold: a workspace's Jobs'
// identity.
func RunnerAccount(t testing.TB, client kubernetes.Interface, ns, sa string, targets ...string) {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, target := range targets {
		if _, err := client.RbacV1().RoleBindings(target).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + sa},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// StoreSecret makes the Secret name in ns holding the test S3 server's
// credentials as the AWS SDK reads them from the environment: what a Job
// gets by envFrom.
func StoreSecret(t testing.TB, client kubernetes.Interface, ns, name string) {
	t.Helper()
	if _, err := client.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{
		"AWS_ACCESS_KEY_ID": os.Getenv("KUSIONPR_TEST_S3_ACCESS_KEY"), "AWS_SECRET_ACCESS_KEY": os.Getenv("KUSIONPR_TEST_S3_SECRET_KEY"), "AWS_REGION": "us-east-1",
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Namespaces makes the namespaces names, deleted when the test ends.
func Namespaces(t testing.TB, client kubernetes.Interface, names ...string) {
	t.Helper()
	for _, ns := range names {
		if _, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	}
}

// Client is a client of the test cluster as its administrator.
func Client(t testing.TB) kubernetes.Interface {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(rc)
}
