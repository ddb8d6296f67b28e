package bench

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// The Kubernetes scenarios' stack: 1,000 objects in 10 namespaces, a third
// each ConfigMaps, Services and Deployments (replicas 0: the scenarios
// measure applying objects, not the controllers' work after it).
const (
	namespaces   = 10
	perNamespace = 100
	parallelism  = "10"
)

// objects returns the stack's objects in namespaces <prefix>-0 ... -9;
// changed alters every tenth one, as a pull request changing 10% would.
func objects(prefix string, changed bool) []map[string]any {
	var out []map[string]any
	for n := range namespaces {
		ns := fmt.Sprintf("%s-%d", prefix, n)
		for i := range perNamespace {
			version := "v1"
			if changed && i%10 == 0 {
				version = "v2"
			}
			out = append(out, object(i%3, ns, fmt.Sprintf("app-%03d", i), version))
		}
	}
	return out
}

// object is one object of a benchmark's stack: kind 0 a ConfigMap, 1 a
// Service, 2 a Deployment (replicas 0), 3 a Secret; version is what a
// change alters.
func object(kind int, ns, name, version string) map[string]any {
	labels := map[string]any{"app": name, "tier": "bench"}
	var obj map[string]any
	switch kind {
	case 0:
		obj = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{
			"version": version, "log-level": "info", "feature-flags": "search,checkout", "greeting": "hello from " + name,
		}}
	case 1:
		obj = map[string]any{"apiVersion": "v1", "kind": "Service", "spec": map[string]any{
			"selector": labels,
			"ports":    []any{map[string]any{"name": "http-" + version, "port": 80, "targetPort": 8080}},
		}}
	case 2:
		obj = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{
			"replicas": 0,
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "app", "image": "nginx:1.27",
					"env":   []any{map[string]any{"name": "VERSION", "value": version}},
					"ports": []any{map[string]any{"containerPort": 8080}},
				}}},
			},
		}}
	default:
		obj = map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "data": map[string]any{
			"password": base64.StdEncoding.EncodeToString([]byte("s3cret-" + name + "-" + version)),
			"username": base64.StdEncoding.EncodeToString([]byte(name)),
		}}
	}
	obj["metadata"] = map[string]any{"name": name, "namespace": ns, "labels": labels}
	return obj
}

// kubeStack writes the objects as our stack (a spec) and as manifests for
// kubectl and the minimal loop; it returns the stack folder and the
// manifests file.
func kubeStack(b *testing.B, dir, project string, objs []map[string]any) (stack, manifests string) {
	b.Helper()
	var spec, docs strings.Builder
	spec.WriteString("resources:\n")
	for _, o := range objs {
		md := o["metadata"].(map[string]any)
		id := fmt.Sprintf("%s:%s:%s:%s", o["apiVersion"], o["kind"], md["namespace"], md["name"])
		attrs, err := json.Marshal(o)
		if err != nil {
			b.Fatal(err)
		}
		// JSON is YAML: one line per resource keeps a 1,000-resource spec
		// quick to write and to read.
		fmt.Fprintf(&spec, "- {id: %q, type: Kubernetes, attributes: %s}\n", id, attrs)
		y, err := yaml.Marshal(o)
		if err != nil {
			b.Fatal(err)
		}
		docs.WriteString("---\n")
		docs.Write(y)
	}
	stack = filepath.Join(dir, project, "dev")
	writeFile(b, filepath.Join(dir, project, "project.yaml"), "name: "+project+"\n")
	writeFile(b, filepath.Join(stack, "stack.yaml"), "name: dev\n")
	writeFile(b, filepath.Join(stack, "spec.yaml"), spec.String())
	manifests = filepath.Join(dir, project+".yaml")
	writeFile(b, manifests, docs.String())
	return stack, manifests
}

func createNamespaces(b *testing.B, kubeconfig, prefix string, count int) {
	b.Helper()
	var docs strings.Builder
	for n := range count {
		fmt.Fprintf(&docs, "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s-%d}\n", prefix, n)
	}
	cmd := exec.Command("kubectl", "--kubeconfig", kubeconfig, "create", "-f", "-")
	cmd.Stdin = strings.NewReader(docs.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("creating namespaces %s-*: %v\n%s", prefix, err, out)
	}
}

// deleteNamespaces deletes a namespace set and waits until it is gone, so
// that the namespace controller's work does not land in the next timing.
func deleteNamespaces(b *testing.B, kubeconfig, prefix string, count int) {
	b.Helper()
	var names []string
	for n := range count {
		names = append(names, fmt.Sprintf("%s-%d", prefix, n))
	}
	args := append([]string{"--kubeconfig", kubeconfig, "delete", "namespace", "--ignore-not-found", "--timeout=5m"}, names...)
	if out, err := exec.Command("kubectl", args...).CombinedOutput(); err != nil {
		b.Logf("deleting %s-*: %v\n%s", prefix, err, out)
	}
}

// BenchmarkPreviewKubernetes previews a 1,000-object stack with 10% of it
// changed since its release: ours (the action's preview, three-way: spec,
// release, live) against `kubectl diff --server-side` of the same
// manifests, and against the minimal loop of server-side dry-run applies.
func BenchmarkPreviewKubernetes(b *testing.B) {
	kc := testenv.Kubeconfig(b)
	action, minimal := binary(b, "../cmd/action"), binary(b, "./testdata/minimal")
	dir, prefix := b.TempDir(), "bp-"+suffix()
	backend := "file://" + filepath.Join(dir, "releases")
	createNamespaces(b, kc, prefix, namespaces)
	b.Cleanup(func() { deleteNamespaces(b, kc, prefix, namespaces) })
	env := []string{"KUBECONFIG=" + kc}

	stack, _ := kubeStack(b, dir, prefix, objects(prefix, false))
	command{name: action, args: []string{"apply", "--stack", stack, "--backend", backend, "--yes", "--no-watch"}, env: env}.run(b)
	stack, manifests := kubeStack(b, dir, prefix, objects(prefix, true))

	ours := command{name: action, args: []string{"preview", "--stack", stack, "--backend", backend, "-o", "json", "--parallelism", parallelism}, env: env}
	c := &contenders{
		names: []string{"ours", "kubectl", "loop"},
		run: map[string]func(*testing.B, int) time.Duration{
			"ours": func(b *testing.B, _ int) time.Duration { return ours.run(b) },
			"kubectl": func(b *testing.B, _ int) time.Duration {
				return command{name: "kubectl", args: []string{"--kubeconfig", kc, "diff", "--server-side", "--force-conflicts", "-f", manifests},
					ok: func(code int) bool { return code == 0 || code == 1 }}.run(b)
			},
			"loop": func(b *testing.B, _ int) time.Duration {
				return command{name: minimal, args: []string{"-kubeconfig", kc, "-f", manifests, "-dry-run", "-parallelism", parallelism}}.run(b)
			},
		},
	}
	c.measure(b)
	checkPreview(b, command{name: action, args: []string{"preview", "--stack", stack, "--backend", backend, "-o", "json"}, env: env}, namespaces*perNamespace/10, namespaces*perNamespace)
}

// BenchmarkApplyKubernetes applies the 1,000-object stack into empty
// namespaces (each of ours and the loops twice an iteration): ours (the action's apply: plan by dry-run, apply, record the
// release; without waiting for readiness, as kubectl does not wait) against
// `kubectl apply --server-side`, against the minimal loop of server-side
// applies, and against the least any tool that checks every object before
// changing any must do: the minimal loop's dry runs, then its applies
// ("checked-s").
func BenchmarkApplyKubernetes(b *testing.B) {
	kc := testenv.Kubeconfig(b)
	action, minimal := binary(b, "../cmd/action"), binary(b, "./testdata/minimal")
	dir, run := b.TempDir(), suffix()
	backend := "file://" + filepath.Join(dir, "releases")
	env := []string{"KUBECONFIG=" + kc}
	type target struct{ stack, manifests, prefix string }
	targets := map[string]target{}
	var last string
	b.Cleanup(func() {
		if last != "" {
			deleteNamespaces(b, kc, last, namespaces)
		}
	})
	c := &contenders{
		names: []string{"ours", "kubectl", "loop", "checked"},
		// Twice an iteration: the API server's pace varies from one run to
		// the next by more than the margin ours and the checked loop are
		// compared within; kubectl takes half a minute a run.
		repeat: map[string]int{"ours": 2, "loop": 2, "checked": 2},
		setup: func(b *testing.B, name string, n int) {
			if last != "" {
				deleteNamespaces(b, kc, last, namespaces)
			}
			prefix := fmt.Sprintf("ba%s-%s%d", run, name[:1], n)
			createNamespaces(b, kc, prefix, namespaces)
			stack, manifests := kubeStack(b, dir, prefix, objects(prefix, false))
			targets[name] = target{stack, manifests, prefix}
			last = prefix
		},
		run: map[string]func(*testing.B, int) time.Duration{
			"ours": func(b *testing.B, _ int) time.Duration {
				return command{name: action, args: []string{"apply", "--stack", targets["ours"].stack, "--backend", backend, "--yes", "--no-watch", "--parallelism", parallelism}, env: env}.run(b)
			},
			"kubectl": func(b *testing.B, _ int) time.Duration {
				return command{name: "kubectl", args: []string{"--kubeconfig", kc, "apply", "--server-side", "-f", targets["kubectl"].manifests}}.run(b)
			},
			"loop": func(b *testing.B, _ int) time.Duration {
				return command{name: minimal, args: []string{"-kubeconfig", kc, "-f", targets["loop"].manifests, "-parallelism", parallelism}}.run(b)
			},
			"checked": func(b *testing.B, _ int) time.Duration {
				m := targets["checked"].manifests
				return command{name: minimal, args: []string{"-kubeconfig", kc, "-f", m, "-dry-run", "-parallelism", parallelism}}.run(b) +
					command{name: minimal, args: []string{"-kubeconfig", kc, "-f", m, "-parallelism", parallelism}}.run(b)
			},
		},
	}
	c.measure(b)
}
