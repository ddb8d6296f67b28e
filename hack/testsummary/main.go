// Command testsummary reads `go test -json` on its standard input and
// prints what a person reads in `go test`'s own output, as it comes: each
// failed test with its output, build errors, each package's ok or FAIL
// line. It ends with one line, `N passed, N failed, N skipped`, which CI
// reads.
//
//	go test -json ./... | testsummary
//
// While nothing else is printed for 20 s (test binaries compiling, a slow
// package), it prints a line saying how long the run has taken and which
// packages are still running, so a long run never looks stuck: no gap in
// its output reaches 30 s.
//
// It exits 1 when a test failed, a package failed without a failing test
// (it did not build, or its binary crashed or exited outside any test), a
// package never finished, or the input held no results at all. With
// KUSIONPR_REQUIRE_TESTENV set (make test), a skipped test fails the run
// too, named with its reason: there a skip means part of the test
// environment is missing, which is what CI must never pass by.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

func main() {
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()
	ok, err := runTicking(os.Stdin, os.Stdout, os.Getenv("KUSIONPR_REQUIRE_TESTENV") != "", tick.C, time.Now)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// event is one line of `go test -json` (cmd/test2json's TestEvent, plus
// the go command's build-output and build-fail events).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string
	FailedBuild string
}

// pkg is a package whose tests are running.
type pkg struct {
	// running holds the output of each test that started and has not
	// ended; order is the order they started in.
	running map[string]*strings.Builder
	order   []string
	// ended holds the tests that passed, failed or skipped: output
	// attributed to one later belongs to the package, and does not make
	// the test look unfinished.
	ended map[string]bool
	// output is what the package printed outside any test: its ok or
	// FAIL line, a TestMain's prints.
	output strings.Builder
	// failedTests counts its tests that failed, so that a package that
	// failed without one is counted apart.
	failedTests int
}

type skip struct{ pkg, test, reason string }

type summary struct {
	out        io.Writer
	requireEnv bool
	pkgs       map[string]*pkg

	passed, failed, skipped int
	events                  int
	skips                   []skip
	// failures names what failed, for the list before the count line:
	// "pkg TestX", "pkg TestX (did not finish)", "pkg (build failed: ...)",
	// "pkg (failed outside any test: ...)".
	failures []string
	// start and lastPrint time the heartbeat: a line once nothing was
	// printed for quiet.
	now              func() time.Time
	start, lastPrint time.Time
	// lastHeader is the package the last printed block belonged to:
	// packages' events interleave, so a block from another one is
	// introduced with the package's name.
	lastHeader string
}

// quiet is how long the output may stay silent before a heartbeat line,
// checked every tickEvery: a line comes at most 25 s after the last, under
// the 30 s make test promises with room for a loaded machine's delays.
const (
	quiet     = 20 * time.Second
	tickEvery = 5 * time.Second
)

// run reads the events from in and writes the summary to out. ok is
// whether the run passed.
func run(in io.Reader, out io.Writer, requireEnv bool) (ok bool, err error) {
	return runTicking(in, out, requireEnv, nil, time.Now)
}

// runTicking is run with a heartbeat: at each tick, if nothing was printed
// for quiet, a line says the run is still going.
func runTicking(in io.Reader, out io.Writer, requireEnv bool, tick <-chan time.Time, now func() time.Time) (ok bool, err error) {
	s := &summary{out: out, requireEnv: requireEnv, pkgs: map[string]*pkg{}, now: now}
	s.start = now()
	s.lastPrint = s.start
	type read struct {
		line string
		err  error
	}
	lines := make(chan read)
	go func() {
		r := bufio.NewReader(in)
		for {
			line, err := r.ReadString('\n')
			lines <- read{line, err}
			if err != nil {
				return
			}
		}
	}()
	for {
		select {
		case <-tick:
			s.heartbeat()
		case l := <-lines:
			if l.line != "" {
				s.line(l.line)
			}
			if l.err == io.EOF {
				return s.finish(), nil
			}
			if l.err != nil {
				return false, fmt.Errorf("read go test -json: %w", l.err)
			}
		}
	}
}

// heartbeat says the run goes on when nothing was printed for quiet.
func (s *summary) heartbeat() {
	t := s.now()
	if t.Sub(s.lastPrint) < quiet {
		return
	}
	running := make([]string, 0, len(s.pkgs))
	for name := range s.pkgs {
		running = append(running, name)
	}
	sort.Strings(running)
	what := "building test binaries"
	if len(running) > 0 {
		const most = 4
		what = "running " + strings.Join(running[:min(most, len(running))], ", ")
		if len(running) > most {
			what += fmt.Sprintf(" and %d more", len(running)-most)
		}
	}
	s.print(fmt.Sprintf("... %s after %s, %d passed so far\n", what, t.Sub(s.start).Truncate(time.Second), s.passed))
}

func (s *summary) line(line string) {
	var e event
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
		// Not an event (the go command's own messages, when its stderr is
		// merged in): shown as it is.
		s.print(line)
		return
	}
	s.events++
	switch e.Action {
	case "build-output":
		s.print(e.Output)
		// The compiler names the package itself; what follows from a
		// package gets its own header again.
		s.lastHeader = ""
		return
	case "build-fail":
		return
	}
	p := s.pkgs[e.Package]
	if p == nil {
		p = &pkg{running: map[string]*strings.Builder{}, ended: map[string]bool{}}
		s.pkgs[e.Package] = p
	}
	if e.Test == "" {
		s.packageEvent(e, p)
		return
	}
	if p.ended[e.Test] {
		if e.Action == "output" {
			p.output.WriteString(e.Output)
		}
		return
	}
	b := p.running[e.Test]
	if b == nil {
		b = &strings.Builder{}
		p.running[e.Test] = b
		p.order = append(p.order, e.Test)
	}
	switch e.Action {
	case "output":
		b.WriteString(e.Output)
	case "pass":
		s.passed++
		p.end(e.Test)
	case "skip":
		s.skipped++
		s.skips = append(s.skips, skip{e.Package, e.Test, skipReason(b.String())})
		p.end(e.Test)
	case "fail":
		s.failed++
		p.failedTests++
		s.failures = append(s.failures, e.Package+" "+e.Test)
		s.block(e.Package, b.String())
		p.end(e.Test)
	}
}

func (s *summary) packageEvent(e event, p *pkg) {
	switch e.Action {
	case "output":
		p.output.WriteString(e.Output)
		return
	case "pass", "skip":
		// Only the summary line: the rest (PASS, "no tests to run") says
		// nothing a person needs.
		for _, l := range lines(p.output.String()) {
			if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "? ") {
				s.print(l)
			}
		}
	case "fail":
		// Tests still running when the package failed were stopped by
		// what failed it: a panic, a timeout, an os.Exit. They failed.
		for _, name := range p.order {
			if b, ok := p.running[name]; ok {
				s.failed++
				p.failedTests++
				s.failures = append(s.failures, e.Package+" "+name+" (did not finish)")
				s.block(e.Package, b.String())
			}
		}
		switch {
		case e.FailedBuild != "":
			s.failed++
			s.failures = append(s.failures, e.Package+" (build failed: "+e.FailedBuild+")")
		case p.failedTests == 0:
			s.failed++
			s.failures = append(s.failures, e.Package+" (failed outside any test: see its output above)")
		}
		s.block(e.Package, p.output.String())
	default:
		return
	}
	delete(s.pkgs, e.Package)
}

// finish prints what ended badly and the count line, and says whether
// the run passed.
func (s *summary) finish() bool {
	unfinished := make([]string, 0, len(s.pkgs))
	for name := range s.pkgs {
		unfinished = append(unfinished, name)
	}
	sort.Strings(unfinished)
	for _, name := range unfinished {
		// The stream ended inside the package: go test was stopped.
		p := s.pkgs[name]
		for _, t := range p.order {
			if b, ok := p.running[t]; ok {
				s.block(name, b.String())
			}
		}
		s.block(name, p.output.String())
		s.failed++
		s.failures = append(s.failures, name+" (did not finish: the input ended first)")
	}
	ok := s.failed == 0 && s.events > 0
	if s.events == 0 {
		s.print("no test results in the input: did go test run with -json?\n")
	}
	if len(s.failures) > 0 {
		s.print("\nfailed:\n")
		for _, f := range s.failures {
			s.print("    " + f + "\n")
		}
	}
	if s.requireEnv && len(s.skips) > 0 {
		ok = false
		s.print("\nskipped, with KUSIONPR_REQUIRE_TESTENV set (a skip there means part of the test environment is missing):\n")
		for _, k := range s.skips {
			s.print(fmt.Sprintf("    %s %s: %s\n", k.pkg, k.test, k.reason))
		}
	}
	s.print(fmt.Sprintf("%d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped))
	return ok
}

func (p *pkg) end(test string) {
	delete(p.running, test)
	p.ended[test] = true
}

// block prints a test's or a package's output as go test shows it: without
// the === RUN, PAUSE, CONT and NAME lines that only -json and -v write.
func (s *summary) block(pkgName, text string) {
	var kept []string
	for _, l := range lines(text) {
		if isFraming(l) {
			continue
		}
		kept = append(kept, l)
	}
	if len(kept) == 0 {
		return
	}
	if s.lastHeader != pkgName {
		s.print("# " + pkgName + "\n")
		s.lastHeader = pkgName
	}
	for _, l := range kept {
		s.print(l)
	}
}

func (s *summary) print(text string) {
	if text == "" {
		return
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	io.WriteString(s.out, text)
	if s.now != nil {
		s.lastPrint = s.now()
	}
}

// lines splits text after each newline, keeping it.
func lines(text string) []string {
	if text == "" {
		return nil
	}
	ls := strings.SplitAfter(text, "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

func isFraming(l string) bool {
	for _, p := range []string{"=== RUN ", "=== PAUSE ", "=== CONT ", "=== NAME "} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// skipReason is what a skipped test said, on one line.
func skipReason(output string) string {
	var said []string
	for _, l := range lines(output) {
		l = strings.TrimSpace(l)
		if l == "" || isFraming(l) || strings.HasPrefix(l, "--- SKIP: ") {
			continue
		}
		said = append(said, l)
	}
	if len(said) == 0 {
		return "(no reason given)"
	}
	return strings.Join(said, " ")
}
