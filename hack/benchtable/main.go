// Command benchtable turns the output of `go test -bench` over bench/ into
// the table `make bench` prints: each scenario's figure, the reference
// measured in the same run, their ratio and the target, and whether it was
// met. It copies its input through, so the raw figures stay visible, and
// writes every figure and verdict as JSON.
//
//	go test -run '^$' -bench . ./bench/ | benchtable -json results.json
//
// It exits non-zero when a scenario has no figures (its benchmark failed or
// did not run); a missed target is reported, not hidden, but is no error.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// target is what a row must achieve.
type target struct {
	// kind: "faster" (ref/ours ≥ n), "within" (ours/ref ≤ n), "below"
	// (ours < n), "equal" (ours == n), "same" (ours == ref); "" for a row
	// that informs and has no target.
	kind string
	n    float64
}

func (t target) String() string {
	switch t.kind {
	case "faster":
		return fmt.Sprintf("≥ %g× faster", t.n)
	case "within":
		return fmt.Sprintf("≤ %g× the reference", t.n)
	case "below":
		return fmt.Sprintf("< %g", t.n)
	case "equal":
		return fmt.Sprintf("= %g", t.n)
	case "same":
		return "the same as the reference"
	case "":
		return "—"
	}
	return t.kind
}

// row is one line of the table: a figure of a benchmark against a target.
type row struct {
	Scenario  string `json:"scenario"`
	Benchmark string `json:"benchmark"`
	Ours      string `json:"ours"`
	Reference string `json:"reference,omitempty"`
	// RefBenchmark is the benchmark the reference comes from, when it
	// is another than Benchmark (one size against another).
	RefBenchmark string `json:"referenceBenchmark,omitempty"`
	// RefName says what the reference is, for people.
	RefName string `json:"referenceName,omitempty"`
	Unit    string `json:"unit"`
	target  target
}

// rows are the scenarios of issue "Benchmarks", in the order they are read.
func rows() []row {
	const (
		kube  = "preview 1,000 Kubernetes objects in 10 namespaces, 10% changed"
		kapp  = "apply the same 1,000 from empty"
		jobs  = "50 merges over 20 stacks as Kubernetes Jobs, two bots (a fifth delivered to both): from hand-over to the Job made"
		drift = "drift scan of 100 applied stacks of 20 objects each, 5 changed by hand"
		tput  = "100 merges over 50 stacks delivered within a minute, alternately to two bots on one store: from delivery to the release's end"
	)
	return []row{
		{Scenario: kube, Benchmark: "BenchmarkPreviewKubernetes", Ours: "ours-s", Reference: "kubectl-s", RefName: "kubectl diff --server-side", Unit: "s", target: target{"faster", 5}},
		{Scenario: kube, Benchmark: "BenchmarkPreviewKubernetes", Ours: "ours-s", Reference: "loop-s", RefName: "minimal Go loop of parallel dry-run applies", Unit: "s", target: target{"within", 1.3}},
		{Scenario: kapp, Benchmark: "BenchmarkApplyKubernetes", Ours: "ours-s", Reference: "kubectl-s", RefName: "kubectl apply --server-side", Unit: "s", target: target{"faster", 5}},
		{Scenario: kapp, Benchmark: "BenchmarkApplyKubernetes", Ours: "ours-s", Reference: "loop-s", RefName: "minimal Go loop of parallel applies, checking nothing", Unit: "s"},
		{Scenario: kapp, Benchmark: "BenchmarkApplyKubernetes", Ours: "ours-s", Reference: "checked-s", RefName: "the minimal loop's dry runs, then its applies: checking every object before changing any, as ours does", Unit: "s", target: target{"within", 1.3}},
		{Scenario: "apply 50 terraform_data resources", Benchmark: "BenchmarkApplyTerraform", Ours: "ours-s", Reference: "planned-s", RefName: "terraform plan -out, show -json, apply of the saved plan: showing the plan first", Unit: "s", target: target{"within", 1.3}},
		{Scenario: "apply 50 terraform_data resources", Benchmark: "BenchmarkApplyTerraform", Ours: "ours-s", Reference: "terraform-s", RefName: "terraform apply of one root module, no plan shown first", Unit: "s"},
		{Scenario: "apply 200 terraform_data resources", Benchmark: "BenchmarkApplyTerraform200", Ours: "ours-s", Reference: "planned-s", RefName: "terraform plan -out, show -json, apply of the saved plan: showing the plan first", Unit: "s", target: target{"within", 1.3}},
		{Scenario: "apply 200 terraform_data resources", Benchmark: "BenchmarkApplyTerraform200", Ours: "ours-s", Reference: "terraform-s", RefName: "terraform apply of one root module, no plan shown first", Unit: "s"},
		{Scenario: "destroy the 50 terraform_data resources", Benchmark: "BenchmarkDestroyTerraform", Ours: "ours-s", Reference: "terraform-s", RefName: "terraform destroy of one root module", Unit: "s"},
		{Scenario: "render and split the comment of a 10,000-resource preview", Benchmark: "BenchmarkCommentRender", Ours: "render-s", Unit: "s", target: target{"below", 1}},
		{Scenario: "… its peak memory", Benchmark: "BenchmarkCommentRender", Ours: "peak-MB", Unit: "MB", target: target{"below", 300}},
		{Scenario: "webhook acknowledgement, 200 signed requests/s for 10 s while applies run", Benchmark: "BenchmarkWebhookAck", Ours: "p99-ms", Unit: "ms (p99)", target: target{"below", 20}},
		{Scenario: "… requests lost", Benchmark: "BenchmarkWebhookAck", Ours: "lost-req", Unit: "requests", target: target{"equal", 0}},
		{Scenario: jobs, Benchmark: "BenchmarkJobDispatch", Ours: "created-p50-ms", Unit: "ms (p50)"},
		{Scenario: "… p99", Benchmark: "BenchmarkJobDispatch", Ours: "created-p99-ms", Unit: "ms (p99)"},
		{Scenario: "… Jobs made for the 60 deliveries of the 50 merges", Benchmark: "BenchmarkJobDispatch", Ours: "jobs", Unit: "Jobs", target: target{"equal", 50}},
		{Scenario: "… the bots' CPU per merge, merges 11 to 50", Benchmark: "BenchmarkJobDispatch", Ours: "cpu-ms-rest", Reference: "cpu-ms-first", RefName: "merges 1 to 10", Unit: "ms", target: target{"within", 1.3}},
		{Scenario: "… their live heap after 50 merges", Benchmark: "BenchmarkJobDispatch", Ours: "heap-MB-rest", Reference: "heap-MB-first", RefName: "after 10; the Jobs stay cached until their TTL", Unit: "MB", target: target{"within", 1.5}},
		{Scenario: drift, Benchmark: "BenchmarkDriftScan", Ours: "ours-s", Reference: "kubectl-s", RefName: "kubectl get of every object of the three kinds: the least any scan reads", Unit: "s"},
		{Scenario: "… GitHub requests of the first scan keeping the issues (5 opened)", Benchmark: "BenchmarkDriftScan", Ours: "requests-first", Unit: "requests", target: target{"equal", 6}},
		{Scenario: "… of the next scan (nothing new to say)", Benchmark: "BenchmarkDriftScan", Ours: "requests-again", Unit: "requests", target: target{"equal", 1}},
		{Scenario: "policy: 10 Rego rules judging the 1,000-object preview, 10% changed (one Eval, the input's conversion included)", Benchmark: "BenchmarkPolicyEval", Ours: "eval-ms", Reference: "json-ms", RefName: "writing the same preview as preview -o json", Unit: "ms"},
		{Scenario: "policy: the same, in the sandbox the bot and the action evaluate in (a child process, the rules compiled again, the input as JSON)", Benchmark: "BenchmarkPolicyEval", Ours: "sandbox-ms", Reference: "json-ms", RefName: "writing the same preview as preview -o json", Unit: "ms"},
		{Scenario: tput, Benchmark: "BenchmarkMergeThroughput", Ours: "p50-ms", Unit: "ms (p50)"},
		{Scenario: "… p99", Benchmark: "BenchmarkMergeThroughput", Ours: "p99-ms", Unit: "ms (p99)"},
		{Scenario: "… merges applied exactly once", Benchmark: "BenchmarkMergeThroughput", Ours: "applied", Unit: "merges", target: target{"equal", 100}},
		{Scenario: "… older merges applied after a newer one", Benchmark: "BenchmarkMergeThroughput", Ours: "late", Unit: "stacks", target: target{"equal", 0}},
		{Scenario: "… the two bots' CPU for the 100 merges", Benchmark: "BenchmarkMergeThroughput", Ours: "cpu-s", Unit: "s"},
		{Scenario: "… a bot's peak resident memory", Benchmark: "BenchmarkMergeThroughput", Ours: "rss-MB", Unit: "MB"},
		{Scenario: "compile a three-stack KCL project in Kusion's shape, warm (kcl.mod read, its four packages found in the cache, the confined runtime started)", Benchmark: "BenchmarkCompileKCL", Ours: "ours-s", Reference: "kcl-s", RefName: "kcl-lib's exec_program on the same stacks, packages and options in a started Python process, its calls alone timed", Unit: "s", target: target{"within", 1.3}},
		{Scenario: "… cold: an empty cache (four packages fetched from git and OCI), the confined runtime started and ended", Benchmark: "BenchmarkCompileKCLCold", Ours: "ours-s", Reference: "kcl-s", RefName: "a Python process of kcl-lib compiling the same stacks, packages on disk, start to end", Unit: "s"},
		{Scenario: "… requests to the package servers of a cold compile", Benchmark: "BenchmarkCompileKCLCold", Ours: "fetched", Unit: "requests"},
		{Scenario: "latest revision among 1,000 releases on MinIO", Benchmark: "BenchmarkLatestRelease", Ours: "requests@1000", Reference: "requests@10", RefName: "the same among 10 releases", Unit: "requests", target: target{"same", 0}},
		{Scenario: "latest revision among 1,000 releases on PostgreSQL", Benchmark: "BenchmarkLatestReleasePostgres", Ours: "latest-ms", Reference: "latest-ms@10", RefName: "the same among 10 releases", Unit: "ms", target: target{"within", 1.5}},
		{Scenario: "latest revision among 1,000 releases on PostgreSQL", Benchmark: "BenchmarkLatestReleasePostgres", Ours: "latest-ms", RefBenchmark: "BenchmarkLatestRelease", Reference: "latest-ms", RefName: "the same on MinIO, through the request-counting proxy", Unit: "ms"},
		{Scenario: "what runs now, among 1,000 releases, from PostgreSQL", Benchmark: "BenchmarkLatestReleasePostgres", Ours: "running-ms", RefBenchmark: "BenchmarkLatestRelease", Reference: "latest-ms", RefName: "one workspace's latest release on MinIO: what an object store pays per workspace to answer it", Unit: "ms"},
		{Scenario: "a workspace's newest 20 releases across projects, among 1,000, from PostgreSQL", Benchmark: "BenchmarkLatestReleasePostgres", Ours: "workspace-ms", Unit: "ms"},
		{Scenario: tput + ", on PostgreSQL", Benchmark: "BenchmarkMergeThroughputPostgres", Ours: "p50-ms", RefBenchmark: "BenchmarkMergeThroughput", Reference: "p50-ms", RefName: "the same on MinIO", Unit: "ms (p50)"},
		{Scenario: "… p99", Benchmark: "BenchmarkMergeThroughputPostgres", Ours: "p99-ms", RefBenchmark: "BenchmarkMergeThroughput", Reference: "p99-ms", RefName: "the same on MinIO", Unit: "ms (p99)"},
		{Scenario: "… merges applied exactly once", Benchmark: "BenchmarkMergeThroughputPostgres", Ours: "applied", Unit: "merges", target: target{"equal", 100}},
		{Scenario: "… older merges applied after a newer one", Benchmark: "BenchmarkMergeThroughputPostgres", Ours: "late", Unit: "stacks", target: target{"equal", 0}},
		{Scenario: "… the two bots' CPU for the 100 merges", Benchmark: "BenchmarkMergeThroughputPostgres", Ours: "cpu-s", RefBenchmark: "BenchmarkMergeThroughput", Reference: "cpu-s", RefName: "the same on MinIO", Unit: "s"},
	}
}

// scaleRows are the rows of BenchmarkScaleKubernetes (make bench-scale):
// each step at each size against kubectl, then how the time per object at
// 10,000 compares with that at 1,000, and the peak memory.
func scaleRows() []row {
	steps := []struct{ metric, name, kubectl string }{
		{"preview-empty", "preview, nothing applied", "kubectl diff --server-side"},
		{"apply", "apply from empty", "kubectl apply --server-side"},
		{"preview-same", "preview, nothing changed", "kubectl diff --server-side"},
		{"preview-changed", "preview, 1% changed", "kubectl diff --server-side"},
		{"destroy", "destroy", "kubectl delete"},
	}
	sizes := []struct{ n, label string }{{"1000", "1,000"}, {"5000", "5,000"}, {"10000", "10,000"}}
	var out []row
	for _, st := range steps {
		for _, sz := range sizes {
			out = append(out, row{Scenario: st.name + ", " + sz.label + " objects", Benchmark: "BenchmarkScaleKubernetes/objects=" + sz.n,
				Ours: st.metric + "-s", Reference: "kubectl-" + st.metric + "-s", RefName: st.kubectl + ", one run", Unit: "s"})
		}
	}
	for _, st := range steps {
		out = append(out, row{Scenario: st.name + ": time per object at 10,000", Benchmark: "BenchmarkScaleKubernetes/objects=10000",
			Ours: st.metric + "-us", RefBenchmark: "BenchmarkScaleKubernetes/objects=1000", Reference: st.metric + "-us",
			RefName: "at 1,000", Unit: "µs", target: target{"within", 1.3}})
	}
	for _, sz := range sizes {
		r := row{Scenario: "peak resident memory of one command, " + sz.label + " objects", Benchmark: "BenchmarkScaleKubernetes/objects=" + sz.n,
			Ours: "peak-MB", Reference: "kubectl-peak-MB", RefName: "kubectl's", Unit: "MB"}
		if sz.n == "10000" {
			r.target = target{"below", 1000}
		}
		out = append(out, r)
	}
	return out
}

// result is one benchmark's figures.
type result struct {
	Name    string             `json:"name"`
	Metrics map[string]float64 `json:"metrics"`
}

// parse reads Go's benchmark output: "BenchmarkX-2  1  123 ns/op  4.5 ours-s ...".
// Failures ("--- FAIL: BenchmarkX") are collected apart.
func parse(r io.Reader, echo io.Writer) (results map[string]result, failed []string, cpu string, err error) {
	results = map[string]result{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if echo != nil {
			fmt.Fprintln(echo, line)
		}
		if after, ok := strings.CutPrefix(line, "cpu: "); ok {
			cpu = strings.TrimSpace(after)
		}
		if after, ok := strings.CutPrefix(strings.TrimSpace(line), "--- FAIL: "); ok {
			failed = append(failed, strings.Fields(after)[0])
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue
		}
		name := fields[0]
		if i := strings.LastIndex(name, "-"); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		res := result{Name: name, Metrics: map[string]float64{}}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, nil, "", fmt.Errorf("reading %q: %w", line, err)
			}
			res.Metrics[fields[i+1]] = v
		}
		results[name] = res
	}
	return results, failed, cpu, sc.Err()
}

// verdict is a row with its figures.
type verdict struct {
	row
	Value    *float64 `json:"value"`
	RefValue *float64 `json:"referenceValue,omitempty"`
	// Spread and RefSpread are the lowest and highest of the iterations
	// whose median Value and RefValue are, when the benchmark reports them.
	Spread    *[2]float64 `json:"spread,omitempty"`
	RefSpread *[2]float64 `json:"referenceSpread,omitempty"`
	// Ratio is ours ÷ reference.
	Ratio  *float64 `json:"ratio,omitempty"`
	Target string   `json:"target"`
	Met    bool     `json:"met"`
}

func judge(r row, results map[string]result) verdict {
	v := verdict{row: r, Target: r.target.String()}
	res, ok := results[r.Benchmark]
	if !ok {
		return v
	}
	ours, ok := res.Metrics[r.Ours]
	if !ok {
		return v
	}
	v.Value = &ours
	v.Spread = spread(res, r.Ours)
	var ref float64
	if r.Reference != "" {
		refRes := res
		if r.RefBenchmark != "" {
			if refRes, ok = results[r.RefBenchmark]; !ok {
				return v
			}
		}
		x, ok := refRes.Metrics[r.Reference]
		if !ok {
			return v
		}
		ref = x
		v.RefValue = &ref
		v.RefSpread = spread(refRes, r.Reference)
		if ref != 0 {
			ratio := ours / ref
			v.Ratio = &ratio
		}
	}
	switch r.target.kind {
	case "faster":
		v.Met = ours > 0 && ref/ours >= r.target.n
	case "within":
		v.Met = v.Ratio != nil && *v.Ratio <= r.target.n
	case "below":
		v.Met = ours < r.target.n
	case "equal":
		v.Met = ours == r.target.n
	case "same":
		v.Met = ours == ref
	case "":
		v.Met = true // nothing to meet
	}
	return v
}

// spread is the lowest and highest iteration of the metric (ours-s:
// ours-min-s and ours-max-s), nil when the benchmark reports none.
func spread(res result, metric string) *[2]float64 {
	i := strings.LastIndex(metric, "-")
	if i < 0 {
		return nil
	}
	lo, okLo := res.Metrics[metric[:i]+"-min"+metric[i:]]
	hi, okHi := res.Metrics[metric[:i]+"-max"+metric[i:]]
	if !okLo || !okHi {
		return nil
	}
	return &[2]float64{lo, hi}
}

// withSpread is a figure with its spread, "0.725 s (0.701–0.760)".
func withSpread(v *float64, unit string, s *[2]float64) string {
	out := number(v) + " " + unit
	if s != nil {
		lo, hi := s[0], s[1]
		out += " (" + number(&lo) + "–" + number(&hi) + ")"
	}
	return out
}

func number(v *float64) string {
	if v == nil {
		return "—"
	}
	x := *v
	switch {
	case x == math.Trunc(x) && math.Abs(x) < 1e6:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case math.Abs(x) >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	default:
		return strconv.FormatFloat(x, 'f', 3, 64)
	}
}

func ratioText(v verdict) string {
	if v.Ratio == nil {
		return "—"
	}
	if v.target.kind == "faster" && *v.Ratio > 0 {
		return fmt.Sprintf("%.2f (%.1f× faster)", *v.Ratio, 1 / *v.Ratio)
	}
	return fmt.Sprintf("%.2f", *v.Ratio)
}

// table writes the verdicts as a Markdown table.
func table(w io.Writer, vs []verdict) {
	fmt.Fprintln(w, "| scenario | ours (lowest–highest) | reference (lowest–highest) | ours ÷ reference, medians | target | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, v := range vs {
		ref := "—"
		if v.Reference != "" {
			ref = withSpread(v.RefValue, v.Unit, v.RefSpread) + " (" + v.RefName + ")"
		}
		met := "no"
		switch {
		case v.Value == nil:
			met = "no figure"
		case v.target.kind == "":
			met = "—"
		case v.Met:
			met = "yes"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", v.Scenario, withSpread(v.Value, v.Unit, v.Spread), ref, ratioText(v), v.Target, met)
	}
}

type report struct {
	Date       time.Time         `json:"date"`
	Machine    map[string]string `json:"machine"`
	Verdicts   []verdict         `json:"verdicts"`
	Benchmarks []result          `json:"benchmarks"`
	Failed     []string          `json:"failed,omitempty"`
}

func main() {
	jsonPath := flag.String("json", "", "also write the figures and verdicts as JSON here")
	set := flag.String("rows", "main", "the table to print: main (make bench) or scale (make bench-scale)")
	flag.Parse()
	rowsOf := map[string]func() []row{"main": rows, "scale": scaleRows}[*set]
	if rowsOf == nil {
		fmt.Fprintf(os.Stderr, "benchtable: -rows %q: want main or scale\n", *set)
		os.Exit(2)
	}
	results, failed, cpu, err := parse(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	rep := report{Date: time.Now().UTC(), Failed: failed,
		Machine: map[string]string{"cpu": cpu, "cores": strconv.Itoa(runtime.NumCPU()), "os": runtime.GOOS + "/" + runtime.GOARCH, "go": runtime.Version()}}
	missing := 0
	for _, r := range rowsOf() {
		v := judge(r, results)
		if v.Value == nil {
			missing++
		}
		rep.Verdicts = append(rep.Verdicts, v)
	}
	for _, r := range rowsOf() {
		if res, ok := results[r.Benchmark]; ok && !contains(rep.Benchmarks, r.Benchmark) {
			rep.Benchmarks = append(rep.Benchmarks, res)
		}
	}
	fmt.Printf("\nMeasured %s on %s (%s cores, %s, %s).\n\n", rep.Date.Format("2006-01-02"), cpu, rep.Machine["cores"], rep.Machine["os"], rep.Machine["go"])
	table(os.Stdout, rep.Verdicts)
	if *jsonPath != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(*jsonPath, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtable:", err)
			os.Exit(1)
		}
	}
	if missing > 0 || len(failed) > 0 {
		fmt.Fprintf(os.Stderr, "benchtable: %d figure(s) missing; failed: %v\n", missing, failed)
		os.Exit(1)
	}
}

func contains(rs []result, name string) bool {
	for _, r := range rs {
		if r.Name == name {
			return true
		}
	}
	return false
}
