package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/kusionpr/kusionpr/bench
cpu: Intel(R) Xeon(R) Processor
BenchmarkPreviewKubernetes-2   	       1	8463077138 ns/op	         5.762 kubectl-s	         1.579 loop-s	         1.121 ours-s
BenchmarkApplyKubernetes-2     	       3	51708337315 ns/op	         3.400 checked-s	        27.73 kubectl-s	        26.10 kubectl-min-s	        29.90 kubectl-max-s	         2.684 loop-s	         4.849 ours-s	         4.700 ours-min-s	         5.200 ours-max-s
BenchmarkLatestRelease-2       	       1	         1 ns/op	         3.000 requests@10	         3.000 requests@1000
--- FAIL: BenchmarkWebhookAck
PASS
`

func TestParseAndJudge(t *testing.T) {
	var echo bytes.Buffer
	results, failed, cpu, err := parse(strings.NewReader(sample), &echo)
	if err != nil {
		t.Fatal(err)
	}
	if echo.String() != sample {
		t.Error("the input is not copied through")
	}
	if cpu != "Intel(R) Xeon(R) Processor" || len(failed) != 1 || failed[0] != "BenchmarkWebhookAck" {
		t.Errorf("cpu %q, failed %v", cpu, failed)
	}
	if got := results["BenchmarkApplyKubernetes"].Metrics["ours-s"]; got != 4.849 {
		t.Errorf("ours-s = %v", got)
	}
	byKey := map[string]verdict{}
	for _, r := range rows() {
		v := judge(r, results)
		byKey[r.Benchmark+"/"+r.Ours+"/"+r.Reference] = v
	}
	tests := []struct {
		key       string
		met, none bool
	}{
		{key: "BenchmarkPreviewKubernetes/ours-s/kubectl-s", met: true}, // 5.14× faster than kubectl
		{key: "BenchmarkPreviewKubernetes/ours-s/loop-s", met: true},    // 0.71 of the loop
		{key: "BenchmarkApplyKubernetes/ours-s/loop-s", met: true},      // 1.81 of the loop checking nothing: no target
		{key: "BenchmarkApplyKubernetes/ours-s/checked-s", met: false},  // 1.43 of the loop checking as ours does
		{key: "BenchmarkLatestRelease/requests@1000/requests@10", met: true},
		{key: "BenchmarkWebhookAck/p99-ms/", none: true},
	}
	for _, tt := range tests {
		v, ok := byKey[tt.key]
		if !ok {
			t.Fatalf("no row %s", tt.key)
		}
		if (v.Value == nil) != tt.none || v.Met != tt.met {
			t.Errorf("%s: value %v met %v; want none=%v met=%v", tt.key, v.Value, v.Met, tt.none, tt.met)
		}
	}
	var out bytes.Buffer
	table(&out, []verdict{byKey["BenchmarkPreviewKubernetes/ours-s/kubectl-s"], byKey["BenchmarkWebhookAck/p99-ms/"], byKey["BenchmarkApplyKubernetes/ours-s/kubectl-s"]})
	for _, want := range []string{"| 1.121 s | 5.762 s (kubectl diff --server-side) | 0.19 (5.1× faster) | ≥ 5× faster | yes |", "no figure",
		"| 4.849 s (4.700–5.200) | 27.7 s (26.1–29.9) (kubectl apply --server-side) | 0.17 (5.7× faster) |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// TestScaleRows: a row judging one size against another reads its
// reference from the other size's benchmark.
func TestScaleRows(t *testing.T) {
	const out = `BenchmarkScaleKubernetes/objects=1000-2  1  1 ns/op  1.000 apply-s  1000 apply-us  30.00 kubectl-apply-s  150.0 peak-MB
BenchmarkScaleKubernetes/objects=10000-2  1  1 ns/op  14.00 apply-s  1400 apply-us  300.0 kubectl-apply-s  1200 peak-MB  500.0 kubectl-peak-MB
`
	results, _, _, err := parse(strings.NewReader(out), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]verdict{}
	for _, r := range scaleRows() {
		got[r.Scenario] = judge(r, results)
	}
	tests := []struct {
		scenario string
		ratio    float64
		met      bool
	}{
		{"apply from empty: time per object at 10,000", 1.4, false},
		{"apply from empty, 10,000 objects", 14.0 / 300, true},
		{"peak resident memory of one command, 10,000 objects", 1200.0 / 500, false},
	}
	for _, tt := range tests {
		v := got[tt.scenario]
		if v.Value == nil || v.Met != tt.met {
			t.Errorf("%s: value %v met %v, want met %v", tt.scenario, v.Value, v.Met, tt.met)
		}
		if v.Ratio != nil && math.Abs(*v.Ratio-tt.ratio) > 1e-9 {
			t.Errorf("%s: ratio %v, want %v", tt.scenario, *v.Ratio, tt.ratio)
		}
	}
}
