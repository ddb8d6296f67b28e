// Package policy judges a stack's preview with Rego rules, the way conftest
// does: deny, violation and warn rules (and their deny_* forms) in the
// configured packages, messages as strings or objects with msg.
//
// A policy folder comes from a repository, so its rules are untrusted code
// running in our process: they get no network, no files and no environment
// (the builtins that reach outside are not available to them), a bounded
// time per evaluation, and only the input a pull-request comment may show.
// Whatever goes wrong (a parse error, a reference to nothing, a rule that
// errors or runs too long) is an error naming the file and line: a policy
// that cannot be evaluated never passes.
package policy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// DefaultTimeout bounds one evaluation of a stack when Options gives none.
const DefaultTimeout = 5 * time.Second

// DefaultPackage is the package whose rules count when Options names none,
// as in conftest.
const DefaultPackage = "main"

// Options chooses which rules count and how long they may run.
type Options struct {
	// Packages whose rules count; default ["main"] (conftest's default).
	Packages []string
	// Timeout bounds each evaluation; default 5s. Past it, Eval fails.
	Timeout time.Duration
	// Sandbox, if set, evaluates in a child process bounded in memory
	// and killed at the timeout (see Sandbox); nil evaluates here.
	Sandbox *Sandbox
}

// Finding is one message of a deny, violation or warn rule.
type Finding struct {
	// Rule identifies the rule for people and overrides: the message
	// object's "rule" (or "id") if it has one, else "<package>.<rule>".
	Rule    string         `json:"rule"`
	Message string         `json:"message"`
	Package string         `json:"package"`
	Kind    string         `json:"kind"` // deny, violation or warn
	Details map[string]any `json:"details,omitempty"`
	// Source is whose rules said it, for people, when a caller judges
	// with more than one set (the operator's, a repository's).
	Source string `json:"source,omitempty"`
}

// Result is what the rules say of one stack.
type Result struct {
	Denies   []Finding `json:"denies"`   // deny and violation
	Warnings []Finding `json:"warnings"` // warn
}

// Set is a compiled policy folder, ready to judge any number of stacks,
// concurrently.
type Set struct {
	files   []string
	rules   []*rule
	timeout time.Duration
	// sources and packages are what a sandbox compiles again.
	sources  map[string]string
	packages []string
	sandbox  *Sandbox
}

// rule is one deny, violation or warn rule (all the definitions of one
// name in one package), prepared once.
type rule struct {
	pkg  string // without "data."
	name string // deny, deny_foo, violation, warn...
	kind string
	loc  *ast.Location // its first definition, for errors
	pq   rego.PreparedEvalQuery
}

// kindPattern is conftest's rule naming: deny, violation or warn, alone or
// followed by an underscore and a name.
var kindPattern = regexp.MustCompile(`^(deny|violation|warn)(_[A-Za-z0-9_]+)?$`)

// Load compiles every .rego file of fsys (recursively; *_test.rego files are
// tests, left out). A parse or compile error fails: the error names the file
// and line (fs paths as given).
func Load(ctx context.Context, fsys fs.FS, opts Options) (*Set, error) {
	modules, sources, err := parseFolder(fsys, false)
	if err != nil {
		return nil, err
	}
	compiler, err := compile(modules, modules)
	if err != nil {
		return nil, err
	}
	s := &Set{files: slices.Sorted(maps.Keys(sources)), timeout: opts.Timeout, sources: sources, packages: opts.Packages, sandbox: opts.Sandbox}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	packages := opts.Packages
	if len(packages) == 0 {
		packages = []string{DefaultPackage}
	}
	if s.rules, err = prepareRules(ctx, compiler, packages); err != nil {
		return nil, err
	}
	return s, nil
}

// Empty reports whether no deny, violation or warn rule is defined in the
// configured packages.
func (s *Set) Empty() bool { return len(s.rules) == 0 }

// Files lists the policy files loaded (tests excluded), sorted.
func (s *Set) Files() []string { return slices.Clone(s.files) }

// prepareRules prepares one query per rule name of the configured packages:
// a rule not defined at all is not queried (its query would be undefined,
// not empty).
func prepareRules(ctx context.Context, compiler *ast.Compiler, packages []string) ([]*rule, error) {
	want := map[string]bool{}
	for _, p := range packages {
		want[strings.TrimPrefix(p, "data.")] = true
	}
	seen := map[string]*rule{}
	var rules []*rule
	for _, name := range sortedModuleNames(compiler.Modules) {
		mod := compiler.Modules[name]
		pkg := strings.TrimPrefix(mod.Package.Path.String(), "data.")
		if !want[pkg] {
			continue
		}
		for _, r := range mod.Rules {
			ref := r.Head.Ref()
			if len(ref) == 0 {
				continue
			}
			head, ok := ref[0].Value.(ast.Var)
			if !ok {
				continue
			}
			m := kindPattern.FindStringSubmatch(string(head))
			if m == nil {
				continue
			}
			key := pkg + "\x00" + string(head)
			if seen[key] != nil {
				continue
			}
			rl := &rule{pkg: pkg, name: string(head), kind: m[1], loc: r.Location}
			seen[key] = rl
			rules = append(rules, rl)
		}
	}
	store := inmem.New()
	for _, rl := range rules {
		query := pathOf(rl.pkg).Append(ast.StringTerm(rl.name)).String()
		pq, err := rego.New(
			rego.Query(query),
			rego.Compiler(compiler),
			rego.Store(store),
			rego.Capabilities(capabilities()),
			// A builtin's error (a bad regex, a division by zero) fails
			// the evaluation instead of leaving the rule silently undefined.
			rego.StrictBuiltinErrors(true),
			rego.Runtime(ast.ObjectTerm()),
		).PrepareForEval(ctx)
		if err != nil {
			return nil, fmt.Errorf("prepare policy rule %s.%s (%s): %w", rl.pkg, rl.name, where(rl.loc), astError(err))
		}
		rl.pq = pq
	}
	return rules, nil
}

// pathOf is the data reference of a package name ("a.b" is data.a.b).
func pathOf(pkg string) ast.Ref {
	ref := ast.Ref{ast.DefaultRootDocument}
	for _, part := range strings.Split(pkg, ".") {
		ref = append(ref, ast.StringTerm(part))
	}
	return ref
}

// Eval evaluates deny, violation and warn in each configured package against
// input. Any rule that errors or runs past the timeout fails the whole
// evaluation: a stack is never judged by some of its rules only.
func (s *Set) Eval(ctx context.Context, input Input) (Result, error) {
	if s.sandbox != nil {
		return s.evalIn(ctx, s.sandbox, input)
	}
	value, err := input.value()
	if err != nil {
		return Result{}, err
	}
	return s.eval(ctx, value)
}

// eval evaluates every rule on value, the input, here.
func (s *Set) eval(ctx context.Context, value ast.Value) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var res Result
	for _, rl := range s.rules {
		rs, err := rl.pq.Eval(ctx, rego.EvalParsedInput(value))
		if err != nil {
			if ctx.Err() != nil || topdown.IsCancel(err) {
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					return Result{}, fmt.Errorf("policy rule %s.%s (%s): evaluation exceeded the timeout of %s", rl.pkg, rl.name, where(rl.loc), s.timeout)
				}
				return Result{}, fmt.Errorf("policy rule %s.%s (%s): %w", rl.pkg, rl.name, where(rl.loc), context.Cause(ctx))
			}
			return Result{}, fmt.Errorf("policy rule %s.%s: %w", rl.pkg, rl.name, evalError(err, rl.loc))
		}
		for _, r := range rs {
			for _, e := range r.Expressions {
				for _, f := range findings(rl, e.Value) {
					if f.Kind == "warn" {
						res.Warnings = append(res.Warnings, f)
					} else {
						res.Denies = append(res.Denies, f)
					}
				}
			}
		}
	}
	sortFindings(res.Denies)
	sortFindings(res.Warnings)
	return res, nil
}

// findings reads a rule's value: a set (or array) of messages, or one
// message for a complete rule. A message conftest would not understand
// still counts, shown as JSON: a deny is never dropped for its shape.
func findings(rl *rule, v any) []Finding {
	var msgs []any
	switch t := v.(type) {
	case []any:
		msgs = t
	case nil:
		return nil
	case bool:
		if !t {
			return nil
		}
		msgs = []any{rl.pkg + "." + rl.name}
	default:
		msgs = []any{t}
	}
	out := make([]Finding, 0, len(msgs))
	for _, m := range msgs {
		f := Finding{Rule: rl.pkg + "." + rl.name, Package: rl.pkg, Kind: rl.kind}
		switch t := m.(type) {
		case string:
			f.Message = t
		case map[string]any:
			details := map[string]any{}
			for k, x := range t {
				details[k] = x
			}
			if msg, ok := details["msg"].(string); ok {
				f.Message = msg
				delete(details, "msg")
			} else {
				f.Message = jsonText(t)
			}
			for _, key := range []string{"rule", "id"} {
				if id, ok := details[key].(string); ok && id != "" {
					f.Rule = id
					delete(details, key)
					break
				}
			}
			if len(details) > 0 {
				f.Details = details
			}
		default:
			f.Message = jsonText(t)
		}
		out = append(out, f)
	}
	return out
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Package != b.Package {
			return a.Package < b.Package
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Message < b.Message
	})
}

func sortedModuleNames(m map[string]*ast.Module) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
