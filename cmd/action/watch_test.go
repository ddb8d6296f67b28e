package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// TestTimeoutFlag: a readiness timeout that is not a positive duration is
// refused before anything runs, naming the flag.
func TestTimeoutFlag(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  string
	}{
		{"0s", "error: --timeout: 0s is not a positive duration: want one such as 90s or 10m (default 5m)"},
		{"-30s", "error: --timeout: -30s is not a positive duration"},
		{"soon", `invalid value "soon" for flag -timeout`},
		{"300", `invalid value "300" for flag -timeout`},
	} {
		t.Run(tc.value, func(t *testing.T) {
			_, stderr, code := runBinary(t, "apply", "--stack", t.TempDir(), "--yes", "--timeout", tc.value)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr does not say %q:\n%s", tc.want, stderr)
			}
		})
	}
	stdout, _, code := runBinary(t, "apply", "--help")
	if code != 0 || !strings.Contains(stdout, "-timeout duration") || !strings.Contains(stdout, "(default 5m0s)") {
		t.Errorf("apply --help (exit %d) does not list --timeout with its default:\n%s", code, stdout)
	}
}

// TestWatchProgress applies, with the real binary on the test cluster, a
// stack whose volume claim never binds (its storage class does not exist,
// as on a cluster without a provisioner) beside a ConfigMap: before the
// timeout, standard error names the claim and why it waits; the error names
// the claim, the timeout and what it lacked; the ConfigMap, ready at once,
// is never listed; standard output stays the JSON document.
func TestWatchProgress(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	suffix := fmt.Sprintf("%06x", rand.IntN(1<<24))
	ns, class := "watch-"+suffix, "none-"+suffix
	root := t.TempDir()
	stack := filepath.Join(root, "dev")
	write(t, filepath.Join(root, "project.yaml"), "name: watch\n")
	write(t, filepath.Join(stack, "stack.yaml"), "name: dev\n")
	write(t, filepath.Join(stack, "spec.yaml"), fmt.Sprintf(`resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}
- id: v1:ConfigMap:%[1]s:settings
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: %[1]s}, data: {mode: one}}
- id: v1:PersistentVolumeClaim:%[1]s:data
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: data, namespace: %[1]s}
    spec:
      storageClassName: %[2]s
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`, ns, class))
	t.Cleanup(func() {
		_ = exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", ns, "--wait=false").Run()
	})

	cmd := exec.Command(actionBinary(t), "apply", "--stack", stack, "--yes", "-o", "json",
		"--backend", "file://"+filepath.Join(root, ".releases"), "--timeout", "4s")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "KUBECONFIG=" + kc}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("apply: %v, want exit 1\n%s", err, errOut.String())
	}
	stderr := errOut.String()
	t.Logf("stderr:\n%s", stderr)

	pvc := "v1:PersistentVolumeClaim:" + ns + ":data"
	progress := "Waiting for " + pvc + " ("
	errLine := "watch " + pvc + ": not ready after 4s: Pending, not yet bound to a volume"
	p, e := strings.Index(stderr, progress), strings.Index(stderr, errLine)
	switch {
	case p < 0:
		t.Errorf("no progress line for the claim (%q)", progress)
	case e < 0:
		t.Errorf("the error does not name the claim, the timeout and its reason (%q)", errLine)
	case p > e:
		t.Errorf("the progress line comes after the error")
	}
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, progress) && !strings.Contains(line, "of 4s): Pending, not yet bound to a volume") {
			t.Errorf("progress line without the timeout or the reason: %s", line)
		}
		if strings.HasPrefix(line, "Waiting for") && !strings.HasPrefix(line, progress) {
			t.Errorf("a ready object listed as waited for: %s", line)
		}
	}
	// The volume controller's warning names the missing class, in the
	// error (read again at the timeout) if not yet in a progress line.
	if want := fmt.Sprintf(`(last warning: ProvisioningFailed: storageclass.storage.k8s.io %q not found)`, class); !strings.Contains(stderr, want) {
		t.Errorf("the error does not give the volume controller's warning %s", want)
	}
	if !strings.Contains(stderr, ": failed, saved in") {
		t.Errorf("the release is not reported failed")
	}
	var doc map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc["changeSteps"] == nil {
		t.Errorf("stdout is not the JSON preview (%v):\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "Waiting for") {
		t.Errorf("progress went to stdout")
	}
	// The objects stay as applied.
	if got := kubectl(t, kc, "-n", ns, "get", "pvc", "data", "-o", "jsonpath={.status.phase}"); got != "Pending" {
		t.Errorf("the claim is %q after the timeout, want it left Pending", got)
	}
}
