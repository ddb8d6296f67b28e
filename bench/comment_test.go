package bench

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/policy"
	"github.com/kusionpr/kusionpr/report"
	"github.com/kusionpr/kusionpr/workflow"
)

// The comment scenario: the pull-request comment of one stack whose preview
// has 10,000 Kubernetes objects in 20 namespaces. Target: rendered and split
// in under a second, in a process that peaks under 300 MB.
//
// Metric units: render-s (seconds to render and split, median), peak-MB
// (the child process's VmHWM in MiB, the most of any iteration: the whole
// process, building the preview included), input-MB (Go heap in use once
// the preview is built, before rendering: how much of the peak is the
// input), parts (comments the body was split into).
const (
	commentResources  = 10000
	commentNamespaces = 20
	// commentDir is the stack's folder, as the comment names it.
	commentDir = "apps/shop/prod"

	// renderChildEnv, when set, makes the test binary run renderChild
	// (see TestMain): render and write the parts, as JSON, to the file it
	// names.
	renderChildEnv = "KUSIONPR_BENCH_RENDER_CHILD"
	// renderChildPrefix starts the line the child reports its figures on.
	renderChildPrefix = "kusionpr-render-child: "
)

// renderFigures is what the child measured.
type renderFigures struct {
	RenderNs   int64  `json:"renderNs"`
	PeakKiB    int64  `json:"peakKiB"`
	InputBytes uint64 `json:"inputBytes"`
	Parts      int    `json:"parts"`
}

// BenchmarkCommentRender renders and splits the comment in a fresh process
// each iteration: the benchmark's own process holds the test framework and
// earlier iterations' garbage, so its memory would say nothing about what a
// runner rendering one comment needs.
func BenchmarkCommentRender(b *testing.B) {
	dir := b.TempDir()
	secrets := plantedSecrets()
	var (
		times                    []time.Duration
		peak, input              float64
		parts                    int
		childStdout, childStderr bytes.Buffer
	)
	for n := 0; b.Loop(); n++ {
		out := filepath.Join(dir, fmt.Sprintf("parts-%d.json", n))
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), renderChildEnv+"="+out)
		childStdout.Reset()
		childStderr.Reset()
		cmd.Stdout, cmd.Stderr = &childStdout, &childStderr
		if err := cmd.Run(); err != nil {
			b.Fatalf("render child: %v\n%s%s", err, tail(childStdout.String(), 2000), tail(childStderr.String(), 2000))
		}
		f, err := parseRenderFigures(childStdout.String())
		if err != nil {
			b.Fatalf("render child: %v\n%s", err, tail(childStdout.String(), 2000))
		}
		times = append(times, time.Duration(f.RenderNs))
		peak = max(peak, float64(f.PeakKiB)/1024)
		input = max(input, float64(f.InputBytes)/(1<<20))
		parts = f.Parts
		checkParts(b, out, f.Parts, secrets)
	}
	b.ReportMetric(median(times).Seconds(), "render-s")
	b.ReportMetric(peak, "peak-MB")
	b.ReportMetric(input, "input-MB")
	b.ReportMetric(float64(parts), "parts")
}

func parseRenderFigures(stdout string) (renderFigures, error) {
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), renderChildPrefix); ok {
			var f renderFigures
			if err := json.Unmarshal([]byte(rest), &f); err != nil {
				return f, fmt.Errorf("read figures %q: %w", rest, err)
			}
			return f, nil
		}
	}
	return renderFigures{}, fmt.Errorf("no line starting %q: did the child run renderChild?", renderChildPrefix)
}

// checkParts fails the benchmark when a part is longer than GitHub takes
// or shows a planted secret in any form: as written, base64-encoded (a
// Secret's data), or as the fingerprint the preview holds instead.
func checkParts(b *testing.B, path string, want int, secrets []string) {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatalf("read the child's parts: %v", err)
	}
	var parts []string
	if err := json.Unmarshal(data, &parts); err != nil {
		b.Fatalf("decode the child's parts %s: %v", path, err)
	}
	if len(parts) != want || len(parts) == 0 {
		b.Fatalf("the child reported %d parts and wrote %d", want, len(parts))
	}
	masked := false
	for i, p := range parts {
		masked = masked || strings.Contains(p, model.SensitiveMask)
		if n := utf8.RuneCountInString(p); n > githubapi.MaxCommentLength {
			b.Fatalf("part %d of %d has %d characters, over GitHub's %d", i+1, len(parts), n, githubapi.MaxCommentLength)
		}
		if strings.Contains(p, "sensitive sha256:") {
			b.Fatalf("part %d of %d shows a sensitive value's fingerprint", i+1, len(parts))
		}
		for k, s := range secrets {
			fp := strings.TrimSuffix(strings.TrimPrefix(model.Fingerprint(s), "(sensitive sha256:"), ")")
			for _, form := range []string{s, base64.StdEncoding.EncodeToString([]byte(s)), fp} {
				if strings.Contains(p, form) {
					// The form is not printed: it is, or is derived from, a secret.
					b.Fatalf("part %d of %d shows planted secret %d in some form", i+1, len(parts), k)
				}
			}
		}
	}
	if !masked {
		b.Fatal("no Secret's data reached the comment: the check for planted secrets proved nothing")
	}
}

// TestMain runs renderChild instead of the tests when BenchmarkCommentRender
// started this binary as its measured process. It is not a test of its own:
// one that skipped outside the benchmark would fail make test, where a skip
// means a missing environment.
func TestMain(m *testing.M) {
	// BenchmarkPolicyEval's sandbox, as the bot's main serves it.
	policy.ServeIfSandbox()
	if out := os.Getenv(renderChildEnv); out != "" {
		if err := renderChild(out); err != nil {
			fmt.Fprintln(os.Stderr, "render child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// renderChild is BenchmarkCommentRender's measured process: it renders and
// splits the comment, writes the parts to out and prints its figures.
func renderChild(out string) error {
	r, err := report.New()
	if err != nil {
		return err
	}
	p, err := largePreview()
	if err != nil {
		return fmt.Errorf("build the preview: %w", err)
	}
	// The preview is the input, not the work: the heap it takes is reported
	// apart, measured once the garbage of building it is collected.
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)

	start := time.Now()
	key := fmt.Sprintf("preview stack=%s workspace=default", commentDir)
	// MaxDetail as workflow.Change sets it for 10 comments.
	body, err := r.Comment(p, nil, report.CommentOptions{Marker: githubapi.Marker(key, 1), Location: commentDir, MaxDetail: workflow.MaxShown(10)})
	if err != nil {
		return fmt.Errorf("render the comment: %w", err)
	}
	// The options of the pull-request workflow (workflow.Change.stack), with
	// its default of 10 comments per stack.
	parts := report.Split(body, report.SplitOptions{
		Limit:    githubapi.MaxCommentLength,
		MaxParts: 10,
		Header: func(i, n int) string {
			return githubapi.Marker(key, i) + fmt.Sprintf("\n*Stack `%s`, continued (%d of %d)*\n\n", commentDir, i, n)
		},
		Footer:    func(i, n int) string { return fmt.Sprintf("\n\n*Continued in the next comment (%d of %d).*", i+1, n) },
		Truncated: "\n\n> [!NOTE]\n> This preview is too long for comments: the rest is in the workflow run's job summary.",
	})
	took := time.Since(start)
	peak, err := peakResidentKiB()
	if err != nil {
		return err
	}
	runtime.KeepAlive(p)

	data, err := json.Marshal(parts)
	if err != nil {
		return fmt.Errorf("encode the parts: %w", err)
	}
	if err := os.WriteFile(out, data, 0o600); err != nil {
		return fmt.Errorf("write the parts: %w", err)
	}
	f, err := json.Marshal(renderFigures{RenderNs: took.Nanoseconds(), PeakKiB: peak, InputBytes: ms.HeapInuse, Parts: len(parts)})
	if err != nil {
		return fmt.Errorf("encode the figures: %w", err)
	}
	fmt.Println(renderChildPrefix + string(f))
	return nil
}

// peakResidentKiB is the most memory this process has held resident, from
// /proc/self/status's VmHWM (in kB, which the kernel means as KiB).
func peakResidentKiB() (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read peak memory: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read peak memory from %q: %w", line, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("read peak memory: /proc/self/status has no VmHWM")
}

// The preview's make-up, by position i: of every 20 objects 4 are created,
// 2 updated, 13 unchanged and 1 deleted; every fourth update also drifted.
// Objects are ConfigMaps, Services and Deployments in turn, except that 4
// of every 100 are Secrets, one in each action.
func commentAction(i int) engine.Action {
	switch r := i % 20; {
	case r < 4:
		return engine.Create
	case r < 6:
		return engine.Update
	case r < 19:
		return engine.UnChanged
	}
	return engine.Delete
}

func isSecret(i int) bool {
	switch i % 100 {
	case 2, 5, 47, 99:
		return true
	}
	return false
}

// secretValue is the password in Secret i at revision rev: text that must
// never reach a comment.
func secretValue(i, rev int) string {
	return fmt.Sprintf("pw-%05d-r%d-Qx7vLm2Tz9", i, rev)
}

// plantedSecrets lists every secretValue the preview was built from.
func plantedSecrets() []string {
	var out []string
	for i := range commentResources {
		if isSecret(i) {
			out = append(out, secretValue(i, 1), secretValue(i, 2))
		}
	}
	return out
}

// component is the shop's service object i belongs to.
func component(i int) string {
	names := [...]string{"checkout", "cart", "search", "catalog", "payments", "orders", "accounts", "shipping"}
	return names[i%len(names)]
}

// largePreview builds the preview as the engine would have: the live
// object (From) and the server's dry-run answer (To) as separate trees,
// both passed through model.Public (which fingerprints Secret data), with
// field changes computed by engine.Diff. Deletions come last, as the
// engine walks them after the rest.
func largePreview() (*engine.Preview, error) {
	p := &engine.Preview{
		Project: "shop", Workspace: "prod", Stack: "prod", PriorRevision: 41,
		ChangeSteps: make(map[string]*engine.Step, commentResources),
	}
	var deletes []string
	for i := range commentResources {
		kind := [...]string{"ConfigMap", "Service", "Deployment"}[i%3]
		if isSecret(i) {
			kind = "Secret"
		}
		ns := fmt.Sprintf("team-%02d", i/(commentResources/commentNamespaces))
		name := fmt.Sprintf("%s-%04d", component(i), i)
		api := "v1"
		if kind == "Deployment" {
			api = "apps/v1"
		}
		id := api + ":" + kind + ":" + ns + ":" + name
		obj := func(rev int, live bool) *model.Resource {
			r := model.Public(model.Resource{ID: id, Type: model.Kubernetes, Attributes: kubeAttrs(kind, ns, name, i, rev, live)})
			return &r
		}
		st := &engine.Step{ID: id, Action: commentAction(i)}
		var err error
		switch st.Action {
		case engine.Create:
			st.To = obj(1, true)
		case engine.UnChanged:
			st.From, st.To = obj(1, true), obj(1, true)
		case engine.Delete:
			st.From = obj(1, true)
		case engine.Update:
			st.From, st.To = obj(1, true), obj(2, true)
			if (i/20)%4 == 0 {
				// Someone changed the live object by hand: the drift is
				// that change, and the apply takes it back.
				prior := obj(1, true)
				drift(st.From.Attributes)
				if st.Drift, err = engine.Diff(prior.Attributes, st.From.Attributes); err != nil {
					return nil, fmt.Errorf("build preview: drift of %s: %w", id, err)
				}
			}
			if st.Changes, err = engine.Diff(st.From.Attributes, st.To.Attributes); err != nil {
				return nil, fmt.Errorf("build preview: changes of %s: %w", id, err)
			}
			from, to := obj(1, false), obj(2, false)
			if st.SpecChanges, err = engine.Diff(from.Attributes, to.Attributes); err != nil {
				return nil, fmt.Errorf("build preview: spec changes of %s: %w", id, err)
			}
		}
		p.ChangeSteps[id] = st
		if st.Action == engine.Delete {
			deletes = append(deletes, id)
		} else {
			p.StepKeys = append(p.StepKeys, id)
		}
	}
	p.StepKeys = append(p.StepKeys, deletes...)
	return p, nil
}

// drift changes what people change by hand: a Deployment scaled, a
// ConfigMap's log level raised, a Service or Secret relabelled.
func drift(attrs map[string]any) {
	switch attrs["kind"] {
	case "Deployment":
		attrs["spec"].(map[string]any)["replicas"] = int64(6)
	case "ConfigMap":
		attrs["data"].(map[string]any)["LOG_LEVEL"] = "debug"
	default:
		attrs["metadata"].(map[string]any)["labels"].(map[string]any)["debug"] = "true"
	}
}

// kubeAttrs is one object at revision rev (the image tag, the config and
// the password change between revisions): as its spec writes it, or, with
// live, as the API server returns it, defaults filled in.
func kubeAttrs(kind, ns, name string, i, rev int, live bool) map[string]any {
	version := fmt.Sprintf("1.%d.%d", 4+rev, i%7)
	labels := func() map[string]any {
		return map[string]any{
			"app.kubernetes.io/name":       name,
			"app.kubernetes.io/part-of":    "shop",
			"app.kubernetes.io/managed-by": "kusion",
			"team":                         ns,
		}
	}
	md := map[string]any{"name": name, "namespace": ns, "labels": labels()}
	md["labels"].(map[string]any)["app.kubernetes.io/version"] = version
	obj := map[string]any{"kind": kind, "metadata": md}
	switch kind {
	case "ConfigMap":
		obj["apiVersion"] = "v1"
		obj["data"] = map[string]any{
			"LOG_LEVEL":     "info",
			"FEATURE_FLAGS": "search-v2,one-click-checkout,recommendations",
			"application.yaml": fmt.Sprintf("server:\n  port: 8080\n  shutdownGracePeriod: 20s\ncache:\n  ttl: %ds\n  size: 10000\n"+
				"upstreams:\n  catalog: http://catalog.%s.svc.cluster.local:80\n  payments: http://payments.%s.svc.cluster.local:80\n"+
				"tracing:\n  endpoint: http://otel-collector.observability.svc.cluster.local:4317\n  sampleRate: 0.05\n", 30*rev, ns, ns),
		}
	case "Secret":
		obj["apiVersion"] = "v1"
		obj["type"] = "Opaque"
		obj["data"] = map[string]any{
			"username": base64.StdEncoding.EncodeToString([]byte("svc-" + name)),
			"password": base64.StdEncoding.EncodeToString([]byte(secretValue(i, rev))),
		}
	case "Service":
		obj["apiVersion"] = "v1"
		spec := map[string]any{
			"selector": map[string]any{"app.kubernetes.io/name": name},
			"ports":    []any{map[string]any{"name": "http", "port": int64(80), "targetPort": int64(8080 + rev - 1)}},
		}
		if live {
			ip := fmt.Sprintf("10.96.%d.%d", i/250, i%250+2)
			spec["type"] = "ClusterIP"
			spec["clusterIP"] = ip
			spec["clusterIPs"] = []any{ip}
			spec["internalTrafficPolicy"] = "Cluster"
			spec["ipFamilies"] = []any{"IPv4"}
			spec["ipFamilyPolicy"] = "SingleStack"
			spec["sessionAffinity"] = "None"
			spec["ports"].([]any)[0].(map[string]any)["protocol"] = "TCP"
		}
		obj["spec"] = spec
	case "Deployment":
		obj["apiVersion"] = "apps/v1"
		probe := func(path string) map[string]any {
			p := map[string]any{"httpGet": map[string]any{"path": path, "port": int64(8080)}, "periodSeconds": int64(10)}
			if live {
				p["httpGet"].(map[string]any)["scheme"] = "HTTP"
				p["timeoutSeconds"] = int64(1)
				p["successThreshold"] = int64(1)
				p["failureThreshold"] = int64(3)
			}
			return p
		}
		container := map[string]any{
			"name":  "app",
			"image": fmt.Sprintf("registry.example.com/shop/%s:%s", component(i), version),
			"ports": []any{map[string]any{"name": "http", "containerPort": int64(8080)}},
			"env": []any{
				map[string]any{"name": "VERSION", "value": version},
				map[string]any{"name": "LOG_LEVEL", "value": "info"},
				map[string]any{"name": "CONFIG_PATH", "value": "/etc/app/application.yaml"},
			},
			"resources": map[string]any{
				"limits":   map[string]any{"cpu": "500m", "memory": "512Mi"},
				"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
			},
			"readinessProbe": probe("/readyz"),
			"livenessProbe":  probe("/healthz"),
			"volumeMounts":   []any{map[string]any{"name": "config", "mountPath": "/etc/app", "readOnly": true}},
		}
		podSpec := map[string]any{
			"containers": []any{container},
			"volumes":    []any{map[string]any{"name": "config", "configMap": map[string]any{"name": name + "-config"}}},
		}
		spec := map[string]any{
			"replicas": int64(3),
			"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels()},
				"spec":     podSpec,
			},
		}
		if live {
			md["annotations"] = map[string]any{"deployment.kubernetes.io/revision": strconv.Itoa(rev + 2)}
			container["imagePullPolicy"] = "IfNotPresent"
			container["terminationMessagePath"] = "/dev/termination-log"
			container["terminationMessagePolicy"] = "File"
			container["ports"].([]any)[0].(map[string]any)["protocol"] = "TCP"
			podSpec["dnsPolicy"] = "ClusterFirst"
			podSpec["restartPolicy"] = "Always"
			podSpec["schedulerName"] = "default-scheduler"
			podSpec["securityContext"] = map[string]any{}
			podSpec["terminationGracePeriodSeconds"] = int64(30)
			podSpec["volumes"].([]any)[0].(map[string]any)["configMap"].(map[string]any)["defaultMode"] = int64(420)
			spec["progressDeadlineSeconds"] = int64(600)
			spec["revisionHistoryLimit"] = int64(10)
			spec["strategy"] = map[string]any{
				"type":          "RollingUpdate",
				"rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"},
			}
		}
		obj["spec"] = spec
	}
	return obj
}
