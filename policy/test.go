package policy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Test statuses.
const (
	StatusPass  = "pass"
	StatusFail  = "fail"
	StatusError = "error"
	StatusSkip  = "skip" // a todo_test_ rule
)

// TestReport is the outcome of a policy folder's unit tests.
type TestReport struct {
	Passed  int          `json:"passed"`
	Failed  int          `json:"failed"`
	Errored int          `json:"errored"`
	Skipped int          `json:"skipped"`
	Results []TestResult `json:"results"`
}

// TestResult is one test_* rule's outcome.
type TestResult struct {
	Package  string `json:"package"`
	Name     string `json:"name"`
	Location string `json:"location"` // file:line
	Status   string `json:"status"`   // pass, fail, error or skip
	// Message says why a test failed or errored, and holds what it printed.
	Message string `json:"message,omitempty"`
}

// Test runs the Rego unit tests (test_* rules, opa test semantics) of every
// .rego file of fsys, under the same restrictions as Eval: no builtin that
// reaches outside, strict compilation, builtin errors raised, DefaultTimeout
// per test. A folder that does not parse or compile is an error.
func Test(ctx context.Context, fsys fs.FS) (TestReport, error) {
	modules, _, err := parseFolder(fsys, true)
	if err != nil {
		return TestReport{}, err
	}
	policies := map[string]*ast.Module{}
	for name, m := range modules {
		if !strings.HasSuffix(name, "_test.rego") {
			policies[name] = m
		}
	}
	// Compiled once on its own for the checks Load makes, so that a test
	// cannot pass on rules Load would refuse.
	if _, err := compile(copyModules(modules), policies); err != nil {
		return TestReport{}, err
	}
	compiler := ast.NewCompiler().
		WithCapabilities(capabilities()).
		WithStrict(true).
		WithEnablePrintStatements(true).
		WithDefaultRegoVersion(ast.RegoV1)
	ch, err := tester.NewRunner().
		SetCompiler(compiler).
		SetRuntime(ast.ObjectTerm()).
		SetTimeout(DefaultTimeout).
		RaiseBuiltinErrors(true).
		CapturePrintOutput(true).
		SetParallel(1).
		Run(ctx, modules)
	if err != nil {
		return TestReport{}, fmt.Errorf("policy tests: %w", astError(err))
	}
	var rep TestReport
	for r := range ch {
		tr := TestResult{Package: strings.TrimPrefix(r.Package, "data."), Name: r.Name, Location: where(r.Location)}
		switch {
		case r.Error != nil:
			tr.Status = StatusError
			tr.Message = testError(r.Error)
			rep.Errored++
		case r.Skip:
			tr.Status = StatusSkip
			rep.Skipped++
		case r.Fail:
			tr.Status = StatusFail
			tr.Message = "the test's rule is undefined or false"
			if r.FailedAt != nil {
				tr.Message += fmt.Sprintf(" (failed at %s: %s)", where(r.FailedAt.Location), r.FailedAt)
			}
			rep.Failed++
		default:
			tr.Status = StatusPass
			rep.Passed++
		}
		if out := strings.TrimSpace(string(r.Output)); out != "" && tr.Status != StatusPass {
			tr.Message += "\nprinted:\n" + out
		}
		rep.Results = append(rep.Results, tr)
	}
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("policy tests: %w", err)
	}
	sort.Slice(rep.Results, func(i, j int) bool {
		a, b := rep.Results[i], rep.Results[j]
		if a.Package != b.Package {
			return a.Package < b.Package
		}
		return a.Name < b.Name
	})
	return rep, nil
}

func testError(err error) string {
	if errors.Is(err, context.DeadlineExceeded) || topdown.IsCancel(err) {
		return fmt.Sprintf("exceeded the timeout of %s", DefaultTimeout)
	}
	return evalError(err, nil).Error()
}

// copyModules copies modules: a compiler rewrites the modules it is given.
func copyModules(m map[string]*ast.Module) map[string]*ast.Module {
	out := make(map[string]*ast.Module, len(m))
	for k, v := range m {
		out[k] = v.Copy()
	}
	return out
}
