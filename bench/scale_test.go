package bench

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// BenchmarkScaleKubernetes takes a stack of 1,000, 5,000 and 10,000
// objects (ConfigMaps, Services, Deployments and Secrets, a quarter each,
// 200 or 100 a namespace) through its life with the action, as a user's
// workflow runs it: preview, apply (without waiting for readiness, as
// kubectl does not wait), preview again, preview a change to 1% of it,
// destroy. The same life with kubectl (`diff --server-side`, `apply
// --server-side`, `delete`) is the reference. Ours runs every iteration,
// in fresh namespaces; kubectl, which takes minutes at 10,000, runs in the
// first only. Each size reports seconds per step, microseconds per object
// (comparing sizes shows whether the time grows with the objects alone)
// and each tool's peak resident memory.
func BenchmarkScaleKubernetes(b *testing.B) {
	kc := testenv.Kubeconfig(b)
	action := binary(b, "../cmd/action")
	// The objects, and the namespaces they are spread over.
	for _, size := range []struct{ objects, namespaces int }{{1000, 10}, {5000, 25}, {10000, 50}} {
		b.Run(fmt.Sprintf("objects=%d", size.objects), func(b *testing.B) {
			scale(b, kc, action, size.objects, size.namespaces)
		})
	}
}

func scale(b *testing.B, kc, action string, total, nss int) {
	dir, run := b.TempDir(), suffix()
	env := []string{"KUBECONFIG=" + kc}
	ours, theirs := map[string][]time.Duration{}, map[string]time.Duration{}
	var peak, kubectlPeak int64
	for n := 0; b.Loop(); n++ {
		prefix := fmt.Sprintf("bs%s-%d", run, n)
		createNamespaces(b, kc, prefix, nss)
		stack, _ := kubeStack(b, dir, prefix, scaleObjects(prefix, total, nss, false))
		backend := "file://" + filepath.Join(dir, prefix+"-releases")
		act := func(verb string, args ...string) command {
			return command{name: action, env: env, peak: &peak,
				args: append([]string{verb, "--stack", stack, "--backend", backend}, args...)}
		}
		preview := act("preview", "-o", "json")
		ours["preview-empty"] = append(ours["preview-empty"], preview.run(b))
		ours["apply"] = append(ours["apply"], act("apply", "--yes", "--no-watch").run(b))
		ours["preview-same"] = append(ours["preview-same"], preview.run(b))
		if n == 0 {
			checkPreview(b, act("preview", "-o", "json"), 0, total)
		}
		kubeStack(b, dir, prefix, scaleObjects(prefix, total, nss, true))
		ours["preview-changed"] = append(ours["preview-changed"], preview.run(b))
		if n == 0 {
			checkPreview(b, act("preview", "-o", "json"), total/100, total)
		}
		ours["destroy"] = append(ours["destroy"], act("destroy", "--yes").run(b))
		deleteNamespaces(b, kc, prefix, nss)

		if n == 0 {
			theirs = kubectlLife(b, kc, dir, fmt.Sprintf("bs%s-k", run), total, nss, &kubectlPeak)
		}
	}
	// One stack's life, in the order it was timed.
	for _, step := range []string{"preview-empty", "apply", "preview-same", "preview-changed", "destroy"} {
		ds := ours[step]
		m := median(ds)
		b.ReportMetric(m.Seconds(), step+"-s")
		b.ReportMetric(slices.Min(ds).Seconds(), step+"-min-s")
		b.ReportMetric(slices.Max(ds).Seconds(), step+"-max-s")
		b.ReportMetric(float64(m.Microseconds())/float64(total), step+"-us")
		b.ReportMetric(theirs[step].Seconds(), "kubectl-"+step+"-s")
	}
	b.ReportMetric(float64(peak)/1e6, "peak-MB")
	b.ReportMetric(float64(kubectlPeak)/1e6, "kubectl-peak-MB")
}

// kubectlLife is the reference: the same life with kubectl, once.
func kubectlLife(b *testing.B, kc, dir, prefix string, total, nss int, peak *int64) map[string]time.Duration {
	b.Helper()
	createNamespaces(b, kc, prefix, nss)
	defer deleteNamespaces(b, kc, prefix, nss)
	_, manifests := kubeStack(b, dir, prefix, scaleObjects(prefix, total, nss, false))
	kubectl := func(ok func(int) bool, args ...string) command {
		return command{name: "kubectl", args: append([]string{"--kubeconfig", kc}, args...), ok: ok, peak: peak}
	}
	differs := func(code int) bool { return code == 1 }
	same := func(code int) bool { return code == 0 }
	diff := func(ok func(int) bool) command {
		return kubectl(ok, "diff", "--server-side", "--force-conflicts", "-f", manifests)
	}
	t := map[string]time.Duration{}
	t["preview-empty"] = diff(differs).run(b)
	t["apply"] = kubectl(nil, "apply", "--server-side", "-f", manifests).run(b)
	t["preview-same"] = diff(same).run(b)
	kubeStack(b, dir, prefix, scaleObjects(prefix, total, nss, true))
	t["preview-changed"] = diff(differs).run(b)
	t["destroy"] = kubectl(nil, "delete", "--wait=false", "-f", manifests).run(b)
	return t
}

// scaleObjects is a stack of total objects over nss namespaces
// <prefix>-0 ...: ConfigMaps, Services, Deployments and Secrets in turn;
// changed alters every hundredth (1%).
func scaleObjects(prefix string, total, nss int, changed bool) []map[string]any {
	out := make([]map[string]any, 0, total)
	per := total / nss
	for n := range nss {
		ns := fmt.Sprintf("%s-%d", prefix, n)
		for i := range per {
			version := "v1"
			if changed && (n*per+i)%100 == 0 {
				version = "v2"
			}
			out = append(out, object(i%4, ns, fmt.Sprintf("app-%04d", i), version))
		}
	}
	return out
}

// checkPreview makes sure a preview timed is a real one: updates
// objects to update and the rest unchanged.
func checkPreview(b *testing.B, preview command, updates, total int) {
	b.Helper()
	cmd := exec.Command(preview.name, preview.args...)
	cmd.Env = append(cmd.Environ(), preview.env...)
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("preview: %v", err)
	}
	var p struct {
		ChangeSteps map[string]struct{ Action string } `json:"changeSteps"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		b.Fatal(err)
	}
	count := map[string]int{}
	for _, s := range p.ChangeSteps {
		count[s.Action]++
	}
	if count["Update"] != updates || count["UnChanged"] != total-updates {
		b.Fatalf("the preview found %v, want %d updates and %d unchanged", count, updates, total-updates)
	}
}
