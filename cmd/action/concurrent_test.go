package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// Two applies of one stack at once: the revision slot lets exactly one
// proceed; the other is told who holds the stack, and nothing is overwritten.
func TestConcurrentAppliesOneProceeds(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	t.Setenv("KUBECONFIG", kc)
	root := t.TempDir()
	ns := fmt.Sprintf("race-%06x", rand.IntN(1<<24))
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", ns, "--ignore-not-found", "--wait=false").Run()
	})
	write(t, filepath.Join(root, "project.yaml"), "name: race\n")
	write(t, filepath.Join(root, "dev", "stack.yaml"), "name: dev\n")
	// The Deployment's readiness wait keeps the first apply holding the stack
	// for seconds, so the second one meets a running release.
	write(t, filepath.Join(root, "dev", "spec.yaml"), fmt.Sprintf(`resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}
- id: apps/v1:Deployment:%[1]s:app
  type: Kubernetes
  attributes:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: app, namespace: %[1]s}
    spec:
      replicas: 1
      selector: {matchLabels: {app: app}}
      template:
        metadata: {labels: {app: app}}
        spec: {containers: [{name: app, image: busybox}]}
`, ns))
	dir := filepath.Join(t.TempDir(), "store")
	c := &cli{t: t, kubeconfig: kc, backend: "file://" + dir}

	type outcome struct {
		stderr string
		code   int
	}
	var wg sync.WaitGroup
	results := make([]outcome, 2)
	start := make(chan struct{})
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errOut, code := c.run("apply", "--stack", filepath.Join(root, "dev"), "--yes")
			results[i] = outcome{errOut, code}
		}()
	}
	close(start)
	wg.Wait()

	var won, lost []outcome
	for _, r := range results {
		if r.code == 0 {
			won = append(won, r)
		} else {
			lost = append(lost, r)
		}
	}
	if len(won) != 1 || len(lost) != 1 {
		t.Fatalf("want exactly one apply to proceed; exit codes %d and %d\n%s\n%s", results[0].code, results[1].code, results[0].stderr, results[1].stderr)
	}
	msg := lost[0].stderr
	for _, want := range []string{`project "race" workspace "default" is held by revision 1 (applying), started `, " by ", "wait for it to end or unlock it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the losing apply's error lacks %q:\n%s", want, msg)
		}
	}

	// A later apply takes the next revision; revisions stay contiguous. It
	// has nothing to change, so it writes a release only when asked.
	if _, errOut, code := c.run("apply", "--stack", filepath.Join(root, "dev"), "--yes", "--record-unchanged"); code != 0 {
		t.Fatalf("third apply exited %d: %s", code, errOut)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "releases", "race", "default"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if got := strings.Join(names, " "); got != ".metadata.yml 1.yaml 2.yaml" {
		t.Errorf("release files = %s, want .metadata.yml 1.yaml 2.yaml", got)
	}
	for _, n := range []string{"1.yaml", "2.yaml"} {
		b, _ := os.ReadFile(filepath.Join(dir, "releases", "race", "default", n))
		if want := "revision: " + strings.TrimSuffix(n, ".yaml"); !strings.Contains(string(b), want) || !strings.Contains(string(b), "phase: succeeded") {
			t.Errorf("%s: want %q and phase succeeded:\n%s", n, want, b)
		}
	}
}
