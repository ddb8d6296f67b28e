package workflow

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
)

// offlineRuntimes runs every stack on the offline runtime, whatever the
// options say: enough for a preview that finds things to create.
type offlineRuntimes struct{}

func (offlineRuntimes) Runtimes(context.Context, RuntimeTarget) (map[model.ResourceType]engine.Driver, error) {
	return map[model.ResourceType]engine.Driver{model.Kubernetes: engine.Built(offline{})}, nil
}

// TestApplyButtonOffered: a preview's check run offers the Apply button
// for a stack with changes, and the overview for the run, only when the
// run offers it (the bot) and the pull request could be applied: never for
// a fork's, an unchanged stack, or an apply's report.
func TestApplyButtonOffered(t *testing.T) {
	root := t.TempDir()
	for p, body := range map[string]string{
		"apps/project.yaml":         "name: apps\n",
		"apps/changed/stack.yaml":   "name: changed\n",
		"apps/changed/spec.yaml":    "resources:\n- {id: 'v1:ConfigMap:ns:c', type: Kubernetes, attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns}}}\n",
		"apps/unchanged/stack.yaml": "name: unchanged\n",
		"apps/unchanged/spec.yaml":  "resources: []\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := report.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name              string
		offer, fork       bool
		cmd               Command
		changed, overview bool // whether each offers the button
	}{
		{name: "the bot's preview", offer: true, cmd: Preview, changed: true, overview: true},
		{name: "a fork's preview", offer: true, fork: true, cmd: Preview},
		{name: "the action's preview", cmd: Preview},
		{name: "an apply's report", offer: true, cmd: Apply},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := &refusingGitHub{files: []githubapi.File{{Path: "apps/changed/spec.yaml", Status: "modified"}, {Path: "apps/unchanged/spec.yaml", Status: "modified"}},
				comments: map[string]string{}, checks: map[string]githubapi.Check{}}
			c := &Change{Root: root, Number: 3, SHA: "1111111111111111111111111111111111111111", Command: tc.cmd, GitHub: gh, Renderer: r, ApplyAction: tc.offer,
				Runner: &Runner{Runtimes: offlineRuntimes{}, Store: StoreConfig{Backend: "file://" + t.TempDir()}}, Request: Request{Workspace: "default", Offline: tc.fork, DryRun: tc.cmd == Apply}}
			if _, err := c.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			kind := c.kind()
			for name, want := range map[string]bool{"kusion/" + kind + ": apps/changed": tc.changed, "kusion/" + kind + ": apps/unchanged": false, "kusion/" + kind: tc.overview} {
				ck, ok := gh.checks[name]
				if !ok {
					t.Fatalf("no check run %s among %v", name, gh.checks)
				}
				if got := len(ck.Actions) == 1 && ck.Actions[0].Identifier == ApplyActionID; got != want {
					t.Errorf("%s offers %+v; want the Apply button: %v", name, ck.Actions, want)
				}
			}
		})
	}
}
