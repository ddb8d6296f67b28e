package workflow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
)

// memRuntime keeps objects in memory; an id in fail fails its apply.
type memRuntime struct {
	mu      sync.Mutex
	objects map[string]model.Resource
	fail    map[string]bool
}

func (m *memRuntime) Read(_ context.Context, _ *model.Resource, r model.Resource) (*model.Resource, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.objects[r.ID]; ok {
		return &o, nil
	}
	return nil, nil
}

func (m *memRuntime) Apply(_ context.Context, _ *model.Resource, r model.Resource, dryRun bool) (*model.Resource, error) {
	if m.fail[r.ID] && !dryRun {
		return nil, fmt.Errorf("apply %s: refused by the server", r.ID)
	}
	if !dryRun {
		m.mu.Lock()
		m.objects[r.ID] = r
		m.mu.Unlock()
	}
	return &r, nil
}

func (m *memRuntime) Delete(_ context.Context, r model.Resource) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, r.ID)
	return nil
}

func (m *memRuntime) Watch(context.Context, model.Resource) error { return nil }

type memRuntimes struct{ rt *memRuntime }

func (f memRuntimes) Runtimes(context.Context, RuntimeTarget) (map[model.ResourceType]engine.Driver, error) {
	return map[model.ResourceType]engine.Driver{model.Kubernetes: engine.Built(f.rt)}, nil
}

// deployingGitHub is a refusingGitHub that records deployments.
type deployingGitHub struct {
	refusingGitHub
	deployMu    sync.Mutex
	deployments map[int64]string   // id → environment
	statuses    map[int64][]string // id → "state: description"
	// refuse answers as GitHub does a token without deployments: write.
	refuse bool
}

func (g *deployingGitHub) CreateDeployment(_ context.Context, sha, env, _ string) (int64, error) {
	if g.refuse {
		return 0, errors.New("POST https://api.github.com/repos/o/r/deployments: 403 Resource not accessible by integration")
	}
	g.deployMu.Lock()
	defer g.deployMu.Unlock()
	id := int64(len(g.deployments) + 1)
	g.deployments[id] = env + "@" + sha
	return id, nil
}

func (g *deployingGitHub) SetDeploymentStatus(_ context.Context, id int64, state, desc, _ string) error {
	g.deployMu.Lock()
	defer g.deployMu.Unlock()
	g.statuses[id] = append(g.statuses[id], state+": "+desc)
	return nil
}

// TestDeploymentsRecorded: each stack's apply or destroy is a deployment
// of the commit in kusion/<project>/<workspace>, in progress while it runs
// and then as it ended: success with what changed, failure when it changed
// something and failed, error when it failed before, inactive when skipped
// or, after its success, destroyed. A preview, or a run told not to,
// records none.
func TestDeploymentsRecorded(t *testing.T) {
	const sha = "2222222222222222222222222222222222222222"
	cm := func(name string) string {
		return fmt.Sprintf("- {id: 'v1:ConfigMap:ns:%[1]s', type: Kubernetes, attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: %[1]s, namespace: ns}}}\n", name)
	}
	for _, tc := range []struct {
		name        string
		cmd         Command
		spec        string // "" deletes the stack
		fail        bool
		skip        string
		off         bool
		refused     bool
		want        []string // the statuses, each "state: description" up to its first colon's text
		noneWanted  bool
		environment string
	}{
		{name: "an apply", cmd: Apply, spec: "resources:\n" + cm("a"), want: []string{"in_progress: apply of apps/dev by octocat", "success: release 1: 1 created, 0 updated, 0 deleted"}},
		{name: "an apply that fails", cmd: Apply, spec: "resources:\n" + cm("a"), fail: true, want: []string{"in_progress", "failure: apply dev: "}},
		{name: "an apply refused before it ran", cmd: Apply, spec: "resources: [", want: []string{"in_progress", "error: "}},
		{name: "an apply skipped", cmd: Apply, spec: "resources:\n" + cm("a"), skip: "release 1 applied this merge already", want: []string{"in_progress", "inactive: not run: release 1 applied this merge already"}},
		{name: "a stack's destroy", cmd: Apply, spec: "", want: []string{"in_progress: destroy of apps/dev by octocat", "success: release 2: 0 created, 0 updated, 1 deleted", "inactive: destroyed: "}},
		{name: "a preview", cmd: Preview, spec: "resources:\n" + cm("a"), noneWanted: true},
		{name: "deployments off", cmd: Apply, spec: "resources:\n" + cm("a"), off: true, noneWanted: true},
		{name: "a token that may not deploy", cmd: Apply, spec: "resources:\n" + cm("a"), refused: true, noneWanted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			write := func(p, body string) {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, p), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("apps/project.yaml", "name: apps\n")
			write("apps/dev/stack.yaml", "name: dev\n")
			write("apps/dev/spec.yaml", "resources:\n"+cm("a"))
			rt := &memRuntime{objects: map[string]model.Resource{}, fail: map[string]bool{}}
			store := "file://" + t.TempDir()
			r, err := report.New()
			if err != nil {
				t.Fatal(err)
			}
			runner := &Runner{Runtimes: memRuntimes{rt}, Store: StoreConfig{Backend: store}}
			req := Request{Workspace: "dev", Root: root, RecordUnchanged: true,
				Origin: &model.Origin{SHA: sha, Actor: "octocat", Repository: &model.Repository{ID: 1, FullName: "o/r"}}}
			if tc.spec == "" || tc.skip != "" {
				// Applied first: then its folder deleted, the merge destroys
				// it; or the merge, applied already, is skipped.
				first, err := req.For(Apply, filepath.Join(root, "apps/dev"))
				if err != nil {
					t.Fatal(err)
				}
				if run := runner.Run(context.Background(), first); run.Err != nil {
					t.Fatal(run.Err)
				}
			}
			switch {
			case tc.spec == "":
				os.RemoveAll(filepath.Join(root, "apps/dev"))
			case tc.skip != "":
				req.Merge = &MergeOrder{SHA: sha}
			default:
				write("apps/dev/spec.yaml", tc.spec)
			}
			rt.fail["v1:ConfigMap:ns:a"] = tc.fail
			status := "modified"
			if tc.spec == "" {
				status = "removed"
			}
			gh := &deployingGitHub{refusingGitHub: refusingGitHub{files: []githubapi.File{{Path: "apps/dev/spec.yaml", Status: status}, {Path: "apps/dev/stack.yaml", Status: status}},
				comments: map[string]string{}, checks: map[string]githubapi.Check{}},
				deployments: map[int64]string{}, statuses: map[int64][]string{}, refuse: tc.refused}
			c := &Change{Root: root, Number: 5, SHA: sha, Command: tc.cmd, GitHub: gh, Renderer: r, Deployments: !tc.off,
				Runner: runner, Request: req}
			out, err := c.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if tc.refused && (out.Failed || rt.objects["v1:ConfigMap:ns:a"].ID == "") {
				t.Errorf("a refused deployment failed the apply: failed %v, objects %v", out.Failed, rt.objects)
			}
			if tc.noneWanted {
				if len(gh.deployments) != 0 {
					t.Fatalf("deployments %v, want none", gh.deployments)
				}
				return
			}
			if len(gh.deployments) != 1 || gh.deployments[1] != "kusion/apps/dev@"+sha {
				t.Fatalf("deployments %v, want one of kusion/apps/dev at the commit", gh.deployments)
			}
			got := gh.statuses[1]
			t.Logf("statuses: %q", got)
			if len(got) != len(tc.want) || slices.ContainsFunc(tc.want, func(w string) bool {
				i := slices.Index(tc.want, w)
				return !strings.HasPrefix(got[i], w)
			}) {
				t.Errorf("statuses %q, want %q", got, tc.want)
			}
		})
	}
}
