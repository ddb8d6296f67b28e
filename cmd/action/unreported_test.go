package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sethvargo/go-githubactions"

	"github.com/kusionpr/kusionpr/workflow"
)

// TestStepErrorNamesUnreportedStacks: a stack GitHub took neither the
// comment nor the check run of is named in the step's error, and the
// step fails.
func TestStepErrorNamesUnreportedStacks(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"} {
		p := filepath.Join(dir, f)
		os.WriteFile(p, nil, 0o644)
		t.Setenv(f, p)
	}
	var log bytes.Buffer
	ga := githubactions.New(githubactions.WithWriter(&log))
	refused := errors.New("setting the check run: 502 Bad Gateway")
	out := &workflow.Outcome{Failed: true, Unreported: []string{"apps/b"}, Stacks: []*workflow.StackOutcome{
		{Dir: "apps/a"}, {Dir: "apps/b", Err: refused, Unreported: true},
	}}
	if code := publishOutcome(ga, out, func(s string) string { return s }); code == 0 {
		t.Error("the step succeeded with a stack left unreported")
	}
	want := "::error::GitHub took neither the comment nor the check run of 1 stack(s): apps/b; their results are in this log and the job summary"
	if !strings.Contains(log.String(), want) {
		t.Errorf("the step's log lacks\n  %s\nit reads:\n%s", want, log.String())
	}
}
