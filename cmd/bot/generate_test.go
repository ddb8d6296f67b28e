package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// TestMergeAppliesGeneratedStack: a stack given as AppConfigurations is
// generated with its workspace (workspaces/dev.yaml, found by the stack's
// name) before the bot applies it on merge; the release is kept under that
// workspace, and a kubernetesNamespace extension puts every object in the
// namespace it names.
func TestMergeAppliesGeneratedStack(t *testing.T) {
	w := newWorld(t)
	const sessionKey = "merge-session-key-never-shown"
	os.Remove(filepath.Join(w.tree, "apps/web/dev/spec.yaml"))
	write := func(path, content string) {
		t.Helper()
		p := filepath.Join(w.tree, path)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("apps/web/dev/stack.yaml", "name: dev\nextensions:\n  - kind: kubernetesNamespace\n    kubernetesNamespace:\n      namespace: "+w.ns+"\n")
	write("apps/web/dev/main.yaml", `web:
  workload:
    _type: service.Service
    containers:
      web:
        image: nginx:1.27
        env:
          SESSION: secret://session/key
    secrets:
      session:
        type: opaque
        data:
          key: `+sessionKey+`
  accessories:
    network:
      _type: network.Network
      ports: [{port: 80}]
`)
	write("apps/web/workspaces/dev.yaml", "modules:\n  service:\n    configs:\n      default:\n        replicas: 2\n")

	const number, head, merge = 31, "cccccccccccccccccccccccccccccccccccccccc", "dddddddddddddddddddddddddddddddddddddddd"
	w.pullRequest(number, head)
	w.gh.SetPullFiles(w.owner, w.repo, number, []githubfake.PullFile{{Filename: "apps/web/dev/main.yaml", Status: "added"}})
	w.mergeApplied(number, merge)

	s := w.store()
	rel, err := s.Latest(context.Background(), "web", "dev")
	if err != nil || rel == nil {
		t.Fatalf("no release of workspace dev: %v", err)
	}
	deployment := "apps/v1:Deployment:" + w.ns + ":web-dev-web"
	var ids []string
	for _, r := range rel.Spec.Resources {
		ids = append(ids, r.ID)
	}
	for _, want := range []string{"v1:Namespace:" + w.ns, "v1:Secret:" + w.ns + ":session", deployment, "v1:Service:" + w.ns + ":web-dev-web-private"} {
		if !strings.Contains(strings.Join(ids, " "), want) {
			t.Errorf("the release's spec lacks %s: %v", want, ids)
		}
	}
	out, err := exec.Command("kubectl", "--kubeconfig", os.Getenv("KUSIONPR_TEST_KUBECONFIG"), "-n", w.ns,
		"get", "deployment,service", "-o", "name").CombinedOutput()
	if got := string(out); err != nil || !strings.Contains(got, "deployment.apps/web-dev-web\n") || !strings.Contains(got, "service/web-dev-web-private\n") {
		t.Errorf("cluster holds (%v):\n%s", err, got)
	}

	seen := w.logs()
	for _, c := range w.gh.Comments(w.owner, w.repo, number) {
		seen += c.Body
	}
	if strings.Contains(seen, sessionKey) {
		t.Error("the Secret's value appears in a comment or the bot's log")
	}
}
