package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// TestKusionWorkspacesInBot: the bot, on its MinIO store holding a
// Kusion user's workspaces written as Kusion v0.15 writes them, previews
// and applies a generated stack with the store's workspace dev. The pull
// request adds workspaces/dev.yaml to the repository with other settings
// and its own kubeconfig path (an attack on the operator's workspace):
// the preview says the file is not used and that the change edits it, and
// neither the preview nor the apply after the merge uses it. The release
// and the deployment are filed under dev.
func TestKusionWorkspacesInBot(t *testing.T) {
	w := newWorld(t, func(w *world) {
		testenv.WriteKusionFiles(t, w.backend, testenv.KusionWorkspaceFiles(t, []string{"dev"}, map[string]*testenv.KusionWorkspace{"dev": {
			Modules: map[string]*testenv.KusionModuleConfig{"service": {
				Path: "oci://ghcr.io/kusionstack/service", Version: "0.2.0",
				Configs: testenv.KusionConfigs{Default: map[string]any{"replicas": 2, "labels": map[string]any{"owner": "platform-store"}}},
			}},
		}}))
		os.Remove(filepath.Join(w.tree, "apps/web/dev/spec.yaml"))
		for name, body := range map[string]string{
			// The project is named after the test's namespace, which it
			// generates into.
			"apps/web/project.yaml":   "name: " + w.ns + "\n",
			"apps/web/dev/stack.yaml": "name: dev\nworkspace: dev\n",
			"apps/web/dev/main.yaml":  "web:\n  workload:\n    _type: service.Service\n    containers:\n      web:\n        image: ghcr.io/acme/web:1.0.0\n",
			"apps/web/workspaces/dev.yaml": "modules:\n  service:\n    configs:\n      default:\n        replicas: 7\n        labels: {owner: pull-request}\n" +
				"context:\n  KUBECONFIG_PATH: /tmp/pull-request-kubeconfig\n",
		} {
			os.MkdirAll(filepath.Dir(filepath.Join(w.tree, name)), 0o755)
			if err := os.WriteFile(filepath.Join(w.tree, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	const number, head, merge = 81, "8181818181818181818181818181818181818181", "8282828282828282828282828282828282828282"
	w.pullRequest(number, head)
	w.gh.SetPullFiles(w.owner, w.repo, number, []githubfake.PullFile{
		{Filename: "apps/web/dev/main.yaml", Status: "added"}, {Filename: "apps/web/workspaces/dev.yaml", Status: "added"},
	})

	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "someone", "/kusion preview"))
	w.waitFor("the preview", func() bool { return w.commentsContaining(number, "Preview of stack") == 1 })
	storeLine := "Workspace `dev`: the release store's, `" + backend.Location(w.backend) + "/workspaces/dev.yaml`."
	var preview string
	for _, c := range w.gh.Comments(w.owner, w.repo, number) {
		if strings.Contains(c.Body, "Preview of stack") {
			preview = c.Body
		}
	}
	for _, want := range []string{storeLine, "replicas: 2\n", "owner: platform-store\n",
		"> `apps/web/workspaces/dev.yaml` is not used: the release store holds workspace `dev`",
		"> This change edits `apps/web/workspaces/dev.yaml`, of workspace `dev`."} {
		if !strings.Contains(preview, want) {
			t.Errorf("the bot's preview lacks %q:\n%s", want, preview)
		}
	}
	for _, bad := range []string{"replicas: 7", "pull-request-kubeconfig", "owner: pull-request"} {
		if strings.Contains(preview, bad) {
			t.Errorf("the pull request's workspace file was used: the preview shows %q", bad)
		}
	}

	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)
	githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge))
	w.waitFor("the apply's comment", func() bool { return w.commentsContaining(number, "Applied stack") == 1 })
	if w.commentsContaining(number, storeLine) != 2 {
		t.Errorf("the apply's comment does not name the workspace used: %+v", w.gh.Comments(w.owner, w.repo, number))
	}
	out, err := exec.Command("kubectl", "--kubeconfig", testenv.Kubeconfig(t), "-n", w.ns, "get", "deployment", w.ns+"-dev-web",
		"-o", "jsonpath={.spec.replicas}/{.metadata.labels.owner}").CombinedOutput()
	if got := strings.TrimSpace(string(out)); err != nil || got != "2/platform-store" {
		t.Errorf("replicas/owner = %q (%v), want the store's workspace's 2/platform-store", got, err)
	}
	rel, err := w.store().Latest(context.Background(), w.ns, "dev")
	if err != nil || rel == nil || rel.Workspace != "dev" {
		t.Fatalf("latest release of %s/dev: %+v, %v", w.ns, rel, err)
	}
	if deps := w.gh.Deployments(w.owner, w.repo); len(deps) != 1 || deps[0].Environment != "kusion/"+w.ns+"/dev" {
		t.Errorf("deployments %+v, want one to kusion/%s/dev", deps, w.ns)
	}
}
