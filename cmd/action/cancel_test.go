package main

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
	root := t.TempDir()
	stack := filepath.Join(root, "dev")
	write(t, filepath.Join(root, "project.yaml"), "name: "+project+"\n")
	write(t, filepath.Join(stack, "stack.yaml"), "name: dev\n")
	var spec strings.Builder
	fmt.Fprintf(&spec, "resources:\n- id: v1:Namespace:%[1]s\n  type: Kubernetes\n  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}\n", ns)
	for i := range 200 {
		fmt.Fprintf(&spec, "- id: v1:ConfigMap:%[1]s:cm-%03[2]d\n  type: Kubernetes\n  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: cm-%03[2]d, namespace: %[1]s}, data: {n: \"%[2]d\"}}\n  dependsOn: [v1:Namespace:%[1]s]\n", ns, i)
	}
	write(t, filepath.Join(stack, "spec.yaml"), spec.String())
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
	live := func() []string {
		out, _ := exec.Command("kubectl", "--kubeconfig", kc, "get", "configmaps", "-n", ns, "-o", "name").Output()
		var ids []string
		for _, l := range strings.Fields(string(out)) {
			if name := strings.TrimPrefix(l, "configmap/"); strings.HasPrefix(name, "cm-") {
				ids = append(ids, "v1:ConfigMap:"+ns+":"+name)
			}
		}
		return ids
	}
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
