package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The streams in testdata are real `go test -json` runs (Go 1.26) of the
// module in testdata/rec, one package each, and all.json of the whole
// module (its packages' events interleave):
//
//	cd testdata/rec && go test -json ./pass > ../pass.json
//	go test -json -timeout 2s ./timeout > ../timeout.json
//	go test -json -timeout 5s ./... > ../all.json

var countLine = regexp.MustCompile(`^\d+ passed, \d+ failed, \d+ skipped$`)

func TestSummary(t *testing.T) {
	for _, tc := range []struct {
		name       string
		input      string
		requireEnv bool
		ok         bool
		count      string
		want       []string
		notWant    []string
	}{
		{name: "passing tests print only their package's ok line", input: stream(t, "pass"), ok: true,
			count:   "4 passed, 0 failed, 0 skipped",
			want:    []string{"ok  \texample.com/rec/pass\t"},
			notWant: []string{"quiet when it passes", "=== RUN", "--- PASS"}},
		{name: "a failed test and subtest show their output and fail the run", input: stream(t, "fail"),
			count: "2 passed, 3 failed, 0 skipped",
			want: []string{"    fail_test.go:8: before the failure\n    fail_test.go:9: want 1, got 2\n--- FAIL: TestBad",
				"fail_test.go:14: subtest broke\n--- FAIL: TestSub/broken", "FAIL\texample.com/rec/fail\t",
				"failed:\n    example.com/rec/fail TestBad\n    example.com/rec/fail TestSub/broken\n    example.com/rec/fail TestSub\n"},
			notWant: []string{"TestGood", "TestSub/ok", "=== RUN"}},
		{name: "skips are counted and pass without the test environment required", input: stream(t, "skip"), ok: true,
			count:   "2 passed, 0 failed, 2 skipped",
			notWant: []string{"KUSIONPR_TEST_KUBECONFIG is not set", "no S3"}},
		{name: "a skip fails the run when the test environment is required, naming the test and its reason", input: stream(t, "skip"), requireEnv: true,
			count: "2 passed, 0 failed, 2 skipped",
			want: []string{"    example.com/rec/skip TestNeedsCluster: skip_test.go:8: KUSIONPR_TEST_KUBECONFIG is not set\n",
				"    example.com/rec/skip TestSubSkips/store: skip_test.go:12: no S3\n"}},
		{name: "a passing run with the environment required and nothing skipped passes", input: stream(t, "pass"), requireEnv: true, ok: true,
			count: "4 passed, 0 failed, 0 skipped"},
		{name: "a build failure shows the compiler's error and fails the run", input: stream(t, "build"),
			count: "0 passed, 1 failed, 0 skipped",
			want: []string{`build/build_test.go:6:14: cannot use "not a number" (untyped string constant) as int value`,
				"FAIL\texample.com/rec/build [build failed]", "    example.com/rec/build (build failed: "}},
		{name: "a vet failure during go test fails the run", input: stream(t, "vet"),
			count: "0 passed, 1 failed, 0 skipped",
			want:  []string{`fmt.Printf format %d has arg "not a number" of wrong type string`, "example.com/rec/vet (build failed: "}},
		{name: "a panic in a test shows its trace and fails the run", input: stream(t, "panic"),
			count: "1 passed, 1 failed, 0 skipped",
			want:  []string{"panic_test.go:8: about to panic", "panic: assignment to entry in nil map", "panic/panic_test.go:10", "FAIL\texample.com/rec/panic\t"}},
		{name: "a panic outside any test fails the test that was running", input: stream(t, "gopanic"),
			count: "1 passed, 1 failed, 0 skipped",
			want:  []string{"panic: background worker crashed", "gopanic/gopanic_test.go:11", "    example.com/rec/gopanic TestWaits (did not finish)\n"}},
		{name: "a timeout fails the test it stopped", input: stream(t, "timeout"),
			count: "1 passed, 1 failed, 0 skipped",
			want:  []string{"timeout_test.go:11: waiting forever", "panic: test timed out after 2s", "TestHangs (did not finish)"}},
		{name: "a package that fails with no failing test counts as a failure and shows its output", input: stream(t, "exit"),
			count: "0 passed, 1 failed, 0 skipped",
			want:  []string{"setup failed: no database", "example.com/rec/exit (failed outside any test: see its output above)"}},
		{name: "a package without tests passes", input: stream(t, "nofiles"), ok: true,
			count: "0 passed, 0 failed, 0 skipped",
			want:  []string{"?   \texample.com/rec/nofiles\t[no test files]"}},
		{name: "packages interleaved: every failure is shown and counted once", input: stream(t, "all"),
			count: "13 passed, 12 failed, 2 skipped",
			want: []string{"ok  \texample.com/rec/pass\t", "ok  \texample.com/rec/skip\t", "want 1, got 2", "background worker crashed",
				"test timed out after 5s", "right failed", "alone1 failed", "setup failed: no database", "[build failed]", "wrong type string"},
			notWant: []string{"quiet when it passes", "left line", "alone2", "=== RUN"}},
		{name: "a stream that stops inside a package fails the run", input: firstLines(t, "pass", 8),
			count: "1 passed, 1 failed, 0 skipped",
			want:  []string{"example.com/rec/pass (did not finish: the input ended first)"}},
		{name: "no events at all fails the run", input: "",
			count: "0 passed, 0 failed, 0 skipped",
			want:  []string{"no test results in the input"}},
		{name: "lines that are not events are shown as they are", input: "go: downloading example.com/x v1.0.0\n" + stream(t, "pass"), ok: true,
			count: "4 passed, 0 failed, 0 skipped",
			want:  []string{"go: downloading example.com/x v1.0.0\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			ok, err := run(strings.NewReader(tc.input), &out, tc.requireEnv)
			if err != nil {
				t.Fatal(err)
			}
			got := out.String()
			if ok != tc.ok {
				t.Errorf("ok = %v, want %v; output:\n%s", ok, tc.ok, got)
			}
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			if last := lines[len(lines)-1]; last != tc.count {
				t.Errorf("last line %q, want %q; output:\n%s", last, tc.count, got)
			}
			n := 0
			for _, l := range lines {
				if countLine.MatchString(l) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d count lines, want exactly one; output:\n%s", n, got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q; output:\n%s", w, got)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("output shows %q; output:\n%s", w, got)
				}
			}
		})
	}
}

// TestParallelOutputStaysWithItsTest: parallel tests' lines arrive
// interleaved; each failed test's lines are printed together, and a passed
// test's not at all.
func TestParallelOutputStaysWithItsTest(t *testing.T) {
	var out strings.Builder
	if _, err := run(strings.NewReader(stream(t, "parallel")), &out, false); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, block := range []string{
		"    parallel_test.go:13: right line 0\n    parallel_test.go:13: right line 1\n    parallel_test.go:13: right line 2\n    parallel_test.go:17: right failed\n--- FAIL: TestParallel/right (0.06s)\n",
		"    parallel_test.go:26: alone1 0\n    parallel_test.go:26: alone1 1\n    parallel_test.go:26: alone1 2\n    parallel_test.go:29: alone1 failed\n--- FAIL: TestAlone1 (0.05s)\n",
	} {
		if !strings.Contains(got, block) {
			t.Errorf("output lacks the block\n%s\noutput:\n%s", block, got)
		}
	}
	for _, passed := range []string{"left line", "alone2"} {
		if strings.Contains(got, passed) {
			t.Errorf("output shows %q of a test that passed:\n%s", passed, got)
		}
	}
}

// TestPrintsAsItComes: a failure is on the screen when its test ends, not
// when the whole run does.
func TestPrintsAsItComes(t *testing.T) {
	var out strings.Builder
	s := &summary{out: &out, pkgs: map[string]*pkg{}}
	for _, e := range strings.SplitAfter(stream(t, "fail"), "\n") {
		s.line(e)
		if strings.Contains(e, `"Action":"fail","Package":"example.com/rec/fail","Test":"TestBad"`) {
			break
		}
	}
	if got := out.String(); !strings.Contains(got, "fail_test.go:9: want 1, got 2\n--- FAIL: TestBad (0.00s)\n") {
		t.Errorf("TestBad's failure is not shown once it ended; so far:\n%s", got)
	}
}

func stream(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func firstLines(t *testing.T, name string, n int) string {
	t.Helper()
	return strings.Join(strings.SplitAfter(stream(t, name), "\n")[:n], "")
}

// TestHeartbeat: 20 s without output (test binaries compiling, a slow
// package) gets a line naming what is still running; output keeps it away.
func TestHeartbeat(t *testing.T) {
	var out strings.Builder
	clock := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	s := &summary{out: &out, pkgs: map[string]*pkg{}, now: func() time.Time { return clock }}
	s.start, s.lastPrint = clock, clock

	steps := []struct {
		name    string
		event   string // fed before the tick, if any
		advance time.Duration
		want    string // "" for no line
	}{
		{name: "quiet for less than 20 s", advance: 15 * time.Second},
		{name: "nothing started yet", advance: 5 * time.Second, want: "... building test binaries after 20s, 0 passed so far\n"},
		{name: "quiet again, not yet for 20 s", advance: 15 * time.Second},
		{name: "a package started", event: `{"Action":"start","Package":"example.com/slow"}`, advance: 10 * time.Second,
			want: "... running example.com/slow after 45s, 0 passed so far\n"},
		{name: "its test passed, printing nothing", event: `{"Action":"pass","Package":"example.com/slow","Test":"TestA"}`, advance: 25 * time.Second,
			want: "... running example.com/slow after 1m10s, 1 passed so far\n"},
		{name: "the package ended, printing its ok line", event: `{"Action":"output","Package":"example.com/slow","Output":"ok  \texample.com/slow\t1.0s\n"}` + "\n" + `{"Action":"pass","Package":"example.com/slow"}`,
			advance: 5 * time.Second, want: "ok  \texample.com/slow\t1.0s\n"},
	}
	for _, st := range steps {
		out.Reset()
		for _, e := range strings.Split(st.event, "\n") {
			if e != "" {
				s.line(e + "\n")
			}
		}
		clock = clock.Add(st.advance)
		s.heartbeat()
		if got := out.String(); got != st.want {
			t.Errorf("%s: printed %q, want %q", st.name, got, st.want)
		}
	}
}
