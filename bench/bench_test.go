// Package bench measures the tool against what users would otherwise run
// and against what the machine allows, in one run on one machine: every
// benchmark times our figure and its reference in the same iterations,
// interleaved, and reports both through b.ReportMetric. `make bench` runs
// them on the real test environment and hack/benchtable turns Go's output
// into the table (ours, reference, ratio, target) and JSON.
//
// Metric units (what hack/benchtable reads): "<who>-s" for seconds per
// iteration (ours-s, kubectl-s, loop-s, terraform-s), and scenario-specific
// ones documented where they are reported.
package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// binary builds the Go package at pkg (a path relative to this folder,
// such as ../cmd/action) once per benchmark run and returns the
// executable.
func binary(b *testing.B, pkg string) string {
	b.Helper()
	return testenv.Binary(b, pkg)
}

// command is one timed process.
type command struct {
	name string
	args []string
	env  []string
	dir  string
	// ok says which exit codes are success (kubectl diff exits 1 when it
	// finds differences); nil means 0 only.
	ok func(code int) bool
	// peak, if set, is raised to the process's peak resident memory in
	// bytes when it is higher.
	peak *int64
}

// run runs c and returns how long it took, failing the benchmark if it
// fails.
func (c command) run(b *testing.B) time.Duration {
	b.Helper()
	cmd := exec.CommandContext(context.Background(), c.name, c.args...)
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Dir = c.dir
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if c.peak != nil && cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			// Linux gives ru_maxrss in KiB.
			*c.peak = max(*c.peak, int64(ru.Maxrss)*1024)
		}
	}
	code := 0
	if ee, isExit := err.(*exec.ExitError); isExit {
		code = ee.ExitCode()
	} else if err != nil {
		b.Fatalf("%s: %v", c.name, err)
	}
	if ok := c.ok; (ok == nil && code != 0) || (ok != nil && !ok(code)) {
		b.Fatalf("%s %s exited %d:\n%s", filepath.Base(c.name), strings.Join(c.args, " "), code, tail(stderr.String(), 2000))
	}
	return took
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// contenders are timed in the same iterations, their order rotated each
// time so that none always runs on a cluster warmed (or tired) by another.
type contenders struct {
	names []string
	// setup, if set, runs before a contender's turn in iteration n (a
	// fresh namespace set, say); only the contender's own run is timed.
	setup func(b *testing.B, name string, n int)
	run   map[string]func(b *testing.B, n int) time.Duration
	// repeat, if set, runs a contender that many times an iteration
	// (default once): more samples of the quick ones, whose medians a
	// target compares, without more turns of a slow reference. n counts
	// a contender's runs then, not the iterations.
	repeat map[string]int
	times  map[string][]time.Duration
}

func (c *contenders) measure(b *testing.B) {
	b.Helper()
	if c.times == nil {
		c.times = map[string][]time.Duration{}
	}
	// b.Loop runs the body once, however many iterations -benchtime asks
	// for, so the expensive setup before measure is done once.
	for n := 0; b.Loop(); n++ {
		for i := range c.names {
			name := c.names[(i+n)%len(c.names)]
			times := max(1, c.repeat[name])
			for r := range times {
				k := n*times + r
				if c.setup != nil {
					c.setup(b, name, k)
				}
				c.times[name] = append(c.times[name], c.run[name](b, k))
			}
		}
	}
	for _, name := range c.names {
		b.ReportMetric(median(c.times[name]).Seconds(), name+"-s")
		// The spread says how far one run may be from the median: a
		// target met by the median alone, with a wide spread, may not
		// hold on the next machine.
		lo, hi := slices.Min(c.times[name]), slices.Max(c.times[name])
		b.ReportMetric(lo.Seconds(), name+"-min-s")
		b.ReportMetric(hi.Seconds(), name+"-max-s")
	}
}

// median of the iterations: one slow outlier (a garbage collection in the
// API server) does not move it.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func writeFile(b *testing.B, path, content string) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
}

func kubectl(b *testing.B, kubeconfig string, args ...string) string {
	b.Helper()
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		b.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, tail(string(out), 2000))
	}
	return string(out)
}

func suffix() string {
	return fmt.Sprintf("%06x", time.Now().UnixNano()&0xffffff)
}
