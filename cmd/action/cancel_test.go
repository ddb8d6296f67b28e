package main

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// TestCancel: action cancel, from another process's point of view (the
// store alone), stops an apply of 200 ConfigMaps part way: the apply sees
// the request at its next heartbeat, finishes what is in flight, applies
// nothing more and ends its release failed, saying who cancelled; that
// release lists exactly the objects live. The next apply finishes the
// rest. A cancel with nothing running says so.
func TestCancel(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	t.Setenv("KUBECONFIG", kc)
	suffix := fmt.Sprintf("%06x", rand.IntN(1<<24))
	ns, project := "cancel-"+suffix, "cancel-"+suffix
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", ns, "--ignore-not-found", "--wait=false").Run()
	})
	stack := manyConfigMaps(t, ns, project, 200)
	store := "file://" + filepath.Join(t.TempDir(), "releases")
	// A 5 s lease: the runner looks for a cancel every second.
	apply := &cli{t: t, kubeconfig: kc, backend: store, extra: []string{"--lease", "5s", "--parallelism", "2"}}
	other := &cli{t: t, backend: store}

	_, errOut, code := other.run("cancel", "--stack", stack)
	if code != 1 || !strings.Contains(errOut, "nothing is running on "+project+"/default: it has no release: nothing to cancel") {
		t.Errorf("cancel before any release: exit %d, %q", code, errOut)
	}

	type result struct {
		errOut string
		code   int
	}
	done := make(chan result, 1)
	go func() {
		_, errOut, code := apply.run("apply", "--stack", stack, "--yes")
		done <- result{errOut, code}
	}()
	live := func() []string { return liveConfigMaps(t, kc, ns) }
	deadline := time.Now().Add(2 * time.Minute)
	for len(live()) < 20 {
		if time.Now().After(deadline) {
			t.Fatal("the apply did not get to 20 ConfigMaps")
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, errOut, code := other.run("cancel", "--stack", stack, "--reason", "wrong namespace")
	asked := time.Now()
	if code != 0 || !strings.Contains(out, "Release 1 of "+project+"/default (applying since ") || !strings.Contains(out, "cancelled by ") {
		t.Fatalf("cancel: exit %d\n%s%s", code, out, errOut)
	}
	r := <-done
	t.Logf("the apply ended %s after the cancel was asked (heartbeat 1s)", time.Since(asked).Round(10*time.Millisecond))
	if r.code == 0 || !strings.Contains(r.errOut, "cancelled by ") || !strings.Contains(r.errOut, "wrong namespace") {
		t.Errorf("the cancelled apply: exit %d, %q", r.code, r.errOut)
	}
	rel := latestRelease(t, store, project)
	if rel.Phase != model.PhaseFailed || !strings.HasPrefix(rel.Message, "cancelled by ") {
		t.Errorf("release 1: %s, %q; want failed, cancelled", rel.Phase, rel.Message)
	}
	var recorded []string
	for _, res := range rel.State.Resources {
		if strings.HasPrefix(res.ID, "v1:ConfigMap:") {
			recorded = append(recorded, res.ID)
		}
	}
	now := live()
	slices.Sort(recorded)
	slices.Sort(now)
	if len(now) >= 200 || !slices.Equal(recorded, now) {
		t.Errorf("%d ConfigMaps live, %d recorded by the cancelled release; want the same set, fewer than 200", len(now), len(recorded))
	}

	if _, errOut, code := apply.run("apply", "--stack", stack, "--yes"); code != 0 {
		t.Fatalf("the next apply exited %d: %s", code, errOut)
	}
	if n := len(live()); n != 200 {
		t.Errorf("after the next apply %d ConfigMaps, want 200", n)
	}
	if _, errOut, code := other.run("cancel", "--stack", stack); code != 1 || !strings.Contains(errOut, "the latest release, 2, is succeeded") {
		t.Errorf("cancel of an idle stack: exit %d, %q", code, errOut)
	}
}

// manyConfigMaps writes a stack of a Namespace and n ConfigMaps in it.
func manyConfigMaps(t *testing.T, ns, project string, n int) string {
	t.Helper()
	root := t.TempDir()
	stack := filepath.Join(root, "dev")
	write(t, filepath.Join(root, "project.yaml"), "name: "+project+"\n")
	write(t, filepath.Join(stack, "stack.yaml"), "name: dev\n")
	var spec strings.Builder
	fmt.Fprintf(&spec, "resources:\n- id: v1:Namespace:%[1]s\n  type: Kubernetes\n  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}\n", ns)
	for i := range n {
		fmt.Fprintf(&spec, "- id: v1:ConfigMap:%[1]s:cm-%03[2]d\n  type: Kubernetes\n  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: cm-%03[2]d, namespace: %[1]s}, data: {n: \"%[2]d\"}}\n  dependsOn: [v1:Namespace:%[1]s]\n", ns, i)
	}
	write(t, filepath.Join(stack, "spec.yaml"), spec.String())
	return stack
}

// liveConfigMaps are the ids of the cm-* ConfigMaps in ns.
func liveConfigMaps(t *testing.T, kc, ns string) []string {
	out, _ := exec.Command("kubectl", "--kubeconfig", kc, "get", "configmaps", "-n", ns, "-o", "name").Output()
	var ids []string
	for _, l := range strings.Fields(string(out)) {
		if name := strings.TrimPrefix(l, "configmap/"); strings.HasPrefix(name, "cm-") {
			ids = append(ids, "v1:ConfigMap:"+ns+":"+name)
		}
	}
	slices.Sort(ids)
	return ids
}

// TestSignalStopsTheApply: the first SIGTERM to a running apply (a
// deleted Job's pod, a cancelled workflow run) stops it as a cancel does:
// what is in flight finishes, nothing more starts, and the release ends
// failed, cancelled by SIGTERM, listing exactly the objects live.
func TestSignalStopsTheApply(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	suffix := fmt.Sprintf("%06x", rand.IntN(1<<24))
	ns, project := "sigterm-"+suffix, "sigterm-"+suffix
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", ns, "--ignore-not-found", "--wait=false").Run()
	})
	stack := manyConfigMaps(t, ns, project, 200)
	store := "file://" + filepath.Join(t.TempDir(), "releases")
	cmd := exec.Command(actionBinary(t), "apply", "--stack", stack, "--yes", "--backend", store, "--parallelism", "2")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "KUBECONFIG=" + kc}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for len(liveConfigMaps(t, kc, ns)) < 20 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the apply did not get to 20 ConfigMaps:\n%s", errb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Errorf("the stopped apply exited 0:\n%s", errb.String())
	}
	rel := latestRelease(t, store, project)
	if rel.Phase != model.PhaseFailed || !strings.HasPrefix(rel.Message, "cancelled by SIGTERM at ") {
		t.Fatalf("the release: %s %q\n%s", rel.Phase, rel.Message, errb.String())
	}
	var recorded []string
	for _, r := range rel.State.Resources {
		if strings.HasPrefix(r.ID, "v1:ConfigMap:") {
			recorded = append(recorded, r.ID)
		}
	}
	slices.Sort(recorded)
	if live := liveConfigMaps(t, kc, ns); len(live) >= 200 || !slices.Equal(recorded, live) {
		t.Errorf("%d ConfigMaps live, %d recorded; want the same set, fewer than 200", len(live), len(recorded))
	}
}
