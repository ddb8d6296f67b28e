package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/connect"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/workflow"
)

// The drift scenario: 100 stacks of 20 objects each (ConfigMaps, Services
// and Deployments, as the preview scenario's), applied, then 5 of them
// changed by hand.
const (
	driftStacks   = 100
	driftPerStack = 20
	driftChanged  = 5
)

// driftRepository writes the 100 stacks under dir, each its own project,
// its objects in one of the 10 namespaces.
func driftRepository(b *testing.B, dir, prefix string) []string {
	b.Helper()
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	var stacks []string
	for s := range driftStacks {
		ns := fmt.Sprintf("%s-%d", prefix, s%namespaces)
		var spec strings.Builder
		spec.WriteString("resources:\n")
		for i := range driftPerStack {
			name := fmt.Sprintf("s%03d-%02d", s, i)
			labels := map[string]any{"app": name, "tier": prefix}
			var obj map[string]any
			switch i % 3 {
			case 0:
				obj = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"version": "v1", "greeting": "hello from " + name}}
			case 1:
				obj = map[string]any{"apiVersion": "v1", "kind": "Service", "spec": map[string]any{
					"selector": labels, "ports": []any{map[string]any{"name": "http", "port": 80, "targetPort": 8080}}}}
			default:
				obj = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{
					"replicas": 0, "selector": map[string]any{"matchLabels": labels},
					"template": map[string]any{"metadata": map[string]any{"labels": labels},
						"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.27"}}}}}}
			}
			obj["metadata"] = map[string]any{"name": name, "namespace": ns, "labels": labels}
			attrs, err := json.Marshal(obj)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(&spec, "- {id: %q, type: Kubernetes, attributes: %s}\n", fmt.Sprintf("%s:%s:%s:%s", obj["apiVersion"], obj["kind"], ns, name), attrs)
		}
		project := fmt.Sprintf("apps/p%03d", s)
		writeFile(b, filepath.Join(dir, project, "project.yaml"), fmt.Sprintf("name: %s-p%03d\n", prefix, s))
		writeFile(b, filepath.Join(dir, project, "dev", "stack.yaml"), "name: dev\n")
		writeFile(b, filepath.Join(dir, project, "dev", "spec.yaml"), spec.String())
		stacks = append(stacks, filepath.Join(dir, project, "dev"))
	}
	return stacks
}

// BenchmarkDriftScan scans 100 applied stacks of 20 objects each, 5 of
// them changed by hand, for drift: ours (action drift over the
// repository, 4 stacks at once) against what any scan must at least read,
// one kubectl get of every object of the three kinds across the cluster.
// Then the scan's GitHub requests, as the bot and the action make them
// with issues: the first scan (the issues opened) and the next (nothing
// new to say).
func BenchmarkDriftScan(b *testing.B) {
	kc := testenv.Kubeconfig(b)
	action := binary(b, "../cmd/action")
	dir, prefix := b.TempDir(), "bd-"+suffix()
	backend := "file://" + filepath.Join(b.TempDir(), "releases")
	createNamespaces(b, kc, prefix, namespaces)
	b.Cleanup(func() { deleteNamespaces(b, kc, prefix, namespaces) })
	env := []string{"KUBECONFIG=" + kc}
	stacks := driftRepository(b, dir, prefix)

	// Applied, four at a time.
	var wg sync.WaitGroup
	work := make(chan string)
	for range 4 {
		wg.Go(func() {
			for st := range work {
				command{name: action, args: []string{"apply", "--stack", st, "--backend", backend, "--yes", "--no-watch"}, env: env}.run(b)
			}
		})
	}
	for _, st := range stacks {
		work <- st
	}
	close(work)
	wg.Wait()
	for s := 0; s < driftStacks; s += driftStacks / driftChanged {
		kubectl(b, kc, "-n", fmt.Sprintf("%s-%d", prefix, s%namespaces), "patch", "configmap", fmt.Sprintf("s%03d-00", s), "--type=merge", "-p", `{"data":{"version":"by-hand"}}`)
	}

	ours := command{name: action, args: []string{"drift", "--root", dir, "--backend", backend, "-o", "json", "--max-parallel", "4"}, env: env,
		ok: func(code int) bool { return code == 2 }}
	c := &contenders{
		names: []string{"ours", "kubectl"},
		run: map[string]func(*testing.B, int) time.Duration{
			"ours": func(b *testing.B, _ int) time.Duration { return ours.run(b) },
			"kubectl": func(b *testing.B, _ int) time.Duration {
				return command{name: "kubectl", args: []string{"--kubeconfig", kc, "get", "configmaps,services,deployments", "-A", "-l", "tier=" + prefix, "-o", "json"}}.run(b)
			},
		},
	}
	c.measure(b)
	checkDrift(b, action, dir, backend, env)

	// The GitHub requests of a scan keeping the issues, counted on the fake.
	b.Setenv("KUBECONFIG", kc)
	gh := githubfake.New(b)
	client, err := githubapi.New("ghs_token", gh.URL, "octo", "infra", nil)
	if err != nil {
		b.Fatal(err)
	}
	scan := &workflow.DriftScan{Runner: &workflow.Runner{Runtimes: connect.Factory{}, Store: workflow.StoreConfig{Backend: backend}},
		Request: workflow.Request{Root: dir}, Root: dir, MaxParallel: 4}
	requests := func() int {
		before := len(gh.Calls())
		found, err := scan.Run(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := (&workflow.DriftIssues{GitHub: client}).Publish(b.Context(), found); err != nil {
			b.Fatal(err)
		}
		return len(gh.Calls()) - before
	}
	first, again := requests(), requests()
	if n := len(gh.Issues("octo", "infra")); n != driftChanged {
		b.Fatalf("%d issues, want one per drifted stack (%d)", n, driftChanged)
	}
	b.ReportMetric(float64(first), "requests-first")
	b.ReportMetric(float64(again), "requests-again")
}

// checkDrift makes sure the scan timed is a real one: every stack
// compared, exactly the 5 changed by hand drifted, in one field each.
func checkDrift(b *testing.B, action, dir, backend string, env []string) {
	b.Helper()
	cmd := exec.Command(action, "drift", "--root", dir, "--backend", backend, "-o", "json")
	cmd.Env = append(os.Environ(), env...)
	out, _ := cmd.Output()
	var scan struct {
		Stacks []struct {
			Status       string `json:"status"`
			DriftSummary struct{ Resources, Fields int }
		} `json:"stacks"`
	}
	if err := json.Unmarshal(out, &scan); err != nil {
		b.Fatalf("drift -o json: %v\n%s", err, tail(string(out), 2000))
	}
	count := map[string]int{}
	fields := 0
	for _, st := range scan.Stacks {
		count[st.Status]++
		fields += st.DriftSummary.Fields
	}
	if count["drifted"] != driftChanged || count["in-sync"] != driftStacks-driftChanged || fields != driftChanged {
		b.Fatalf("the scan found %v with %d fields drifted, want %d drifted (one field each), the rest in sync", count, fields, driftChanged)
	}
}
