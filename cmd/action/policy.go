package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kusionpr/kusionpr/policy"
	"github.com/kusionpr/kusionpr/settings"
)

const policyUsage = `usage: action policy test [--dir DIR] [-o text|json]

Runs the Rego unit tests (test_* rules, as opa test does) of every .rego
file under --dir, with the restrictions the policies run under in a
preview: no network, no files, no environment, 5s per test. Prints each
test; the exit code is 1 when a test fails or errors, or the folder does
not parse or compile, and 2 on a mistake in the command.
`

// policyCommand runs "action policy SUBCOMMAND".
func policyCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "error: action policy needs a subcommand\n\n%s", policyUsage)
		return 2
	}
	switch args[0] {
	case "test":
		return policyTest(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, policyUsage)
		return 0
	}
	fmt.Fprintf(stderr, "error: unknown policy subcommand %q\n\n%s", args[0], policyUsage)
	return 2
}

// policyTestSettings are policy test's flags.
type policyTestSettings struct {
	Dir    string `setting:"policy-test-dir"`
	Output string `setting:"policy-test-output"`
}

// parsePolicyTest reads policy test's flags: --help prints its usage and
// flags (exit 0), a mistake the error and its usage (exit 2).
func parsePolicyTest(args []string, stdout, stderr io.Writer) (s policyTestSettings, code int, ok bool) {
	fs := flag.NewFlagSet("policy test", flag.ContinueOnError)
	cl := settings.Flags(fs, "policy test", os.Getenv)
	var msg strings.Builder
	fs.SetOutput(&msg)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(stdout, "%s\nflags:\n", policyUsage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return s, 0, false
	case err != nil:
		fmt.Fprintf(stderr, "error: %v\n\n%s", err, policyUsage)
		return s, 2, false
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "error: unexpected argument %q\n\n%s", fs.Arg(0), policyUsage)
		return s, 2, false
	}
	code, ok = fill(cl, &s, stderr)
	return s, code, ok
}

func policyTest(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	s, code, ok := parsePolicyTest(args, stdout, stderr)
	if !ok {
		return code
	}
	info, err := os.Stat(s.Dir)
	if err != nil || !info.IsDir() {
		fmt.Fprintf(stderr, "error: --dir %s: not a folder\n", s.Dir)
		return 1
	}
	rep, err := policy.Test(ctx, os.DirFS(s.Dir))
	if err != nil {
		if s.Output == "json" {
			writePolicyJSON(stdout, map[string]string{"error": err.Error()})
		}
		fmt.Fprintf(stderr, "error: %s: %v\n", s.Dir, err)
		return 1
	}
	if s.Output == "json" {
		if err := writePolicyJSON(stdout, rep); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
	} else {
		writePolicyTests(stdout, rep)
	}
	if rep.Failed+rep.Errored > 0 {
		return 1
	}
	return 0
}

func writePolicyJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writePolicyTests prints a line per test, as opa test -v does, and what
// went wrong below a failing one.
func writePolicyTests(w io.Writer, rep policy.TestReport) {
	for _, r := range rep.Results {
		fmt.Fprintf(w, "%-5s %s.%s (%s)\n", strings.ToUpper(r.Status), r.Package, r.Name, r.Location)
		if r.Message != "" {
			for _, line := range strings.Split(r.Message, "\n") {
				fmt.Fprintf(w, "      %s\n", line)
			}
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed, %d errored, %d skipped\n", rep.Passed, rep.Failed, rep.Errored, rep.Skipped)
}
