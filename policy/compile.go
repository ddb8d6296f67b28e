package policy

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// A policy folder is a repository's: bounded so that a pull request merged
// with a huge or endless folder cannot exhaust the process reading it.
const (
	maxFileSize = 1 << 20
	maxFiles    = 1000
)

// outsideBuiltins reach outside the process: the network, the process's
// environment and configuration. A repository's rules must not.
var outsideBuiltins = map[string]bool{
	"http.send":          true,
	"net.lookup_ip_addr": true,
	"opa.runtime":        true,
	"trace":              true,
}

// capabilities are OPA's own minus what reaches outside, with no host
// allowed for whatever network builtin a later OPA adds.
func capabilities() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	builtins := c.Builtins[:0:0]
	for _, b := range c.Builtins {
		if !outsideBuiltins[b.Name] {
			builtins = append(builtins, b)
		}
	}
	c.Builtins = builtins
	c.AllowNet = []string{}
	return c
}

// parseFolder parses the .rego files of fsys: all of them with tests, else
// those not named *_test.rego. Only regular files are read: a symbolic link
// could name a file outside the folder (a credential the runner holds),
// whose text a parse error would quote.
func parseFolder(fsys fs.FS, tests bool) (map[string]*ast.Module, map[string]string, error) {
	modules := map[string]*ast.Module{}
	sources := map[string]string{}
	var errs ast.Errors
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("read policy folder: %w", err)
		}
		if d.IsDir() || !strings.HasSuffix(path, ".rego") {
			return nil
		}
		if !tests && strings.HasSuffix(path, "_test.rego") {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("policy %s: not a regular file (a symbolic link?): refused", path)
		}
		if len(sources) == maxFiles {
			return fmt.Errorf("policy folder: more than %d .rego files", maxFiles)
		}
		src, err := readBounded(fsys, path)
		if err != nil {
			return err
		}
		sources[path] = string(src)
		mod, err := ast.ParseModuleWithOpts(path, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
		if err != nil {
			errs = append(errs, asErrors(err)...)
			return nil
		}
		modules[path] = mod
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("parse policy: %w", formatErrors(errs))
	}
	return modules, sources, nil
}

func readBounded(fsys fs.FS, path string) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read policy %s: %w", path, err)
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read policy %s: %w", path, err)
	}
	if len(src) > maxFileSize {
		return nil, fmt.Errorf("policy %s: larger than %d bytes", path, maxFileSize)
	}
	return src, nil
}

// inputSchema is Input's JSON Schema (docs/policy-input.schema.json): the
// compiler checks every reference into input against it, so that a rule
// naming a field the input does not have (input.workspce) is refused
// instead of never matching.
//
//go:embed input.schema.json
var inputSchema []byte

func schemas() (*ast.SchemaSet, error) {
	var doc any
	if err := json.Unmarshal(inputSchema, &doc); err != nil {
		return nil, fmt.Errorf("the policy input's schema: %w", err)
	}
	ss := ast.NewSchemaSet()
	ss.Put(ast.SchemaRootRef, doc)
	return ss, nil
}

// compile compiles modules strictly, against Input's schema, with the restricted capabilities, and
// refuses a reference into data, in the modules named in checked, that no
// rule or package defines: no data
// document is ever loaded beside the rules, so such a reference is a typo
// that would leave a deny silently undefined.
func compile(modules, checked map[string]*ast.Module) (*ast.Compiler, error) {
	ss, err := schemas()
	if err != nil {
		return nil, err
	}
	c := ast.NewCompiler().
		WithCapabilities(capabilities()).
		WithStrict(true).
		WithSchemas(ss).
		WithUseTypeCheckAnnotations(true).
		WithDefaultRegoVersion(ast.RegoV1)
	c.Compile(modules)
	if c.Failed() {
		return nil, fmt.Errorf("compile policy: %w", formatErrors(c.Errors))
	}
	if errs := undefinedRefs(c, checked); len(errs) > 0 {
		return nil, fmt.Errorf("compile policy: %w", formatErrors(errs))
	}
	return c, nil
}

// undefinedRefs lists the references into data, in the modules given (a
// test's `with data.x as` mocks are not references), that lead nowhere.
func undefinedRefs(c *ast.Compiler, modules map[string]*ast.Module) ast.Errors {
	var errs ast.Errors
	for _, name := range sortedModuleNames(modules) {
		mod := c.Modules[name]
		if mod == nil {
			continue
		}
		for _, r := range mod.Rules {
			ast.WalkRefs(r, func(ref ast.Ref) bool {
				if bad := undefinedPrefix(c.RuleTree, ref); bad != nil {
					loc := ref[0].Location
					if loc == nil {
						loc = r.Location
					}
					errs = append(errs, ast.NewError(ast.CompileErr, loc, "undefined reference: %v", bad))
				}
				return false
			})
		}
	}
	return dedupe(errs)
}

// undefinedPrefix returns the shortest prefix of a data reference that no
// package or rule defines, or nil.
func undefinedPrefix(tree *ast.TreeNode, ref ast.Ref) ast.Ref {
	if len(ref) < 2 || !ref[0].Equal(ast.DefaultRootDocument) {
		return nil
	}
	node := tree // its children are the roots: data
	for i := range ref {
		if len(node.Values) > 0 {
			return nil // into a rule's value
		}
		if _, ok := ref[i].Value.(ast.String); !ok && i > 0 {
			return nil // a variable: whatever it iterates over
		}
		next := node.Child(ref[i].Value)
		if next == nil {
			return ref[:i+1]
		}
		node = next
	}
	return nil
}

func dedupe(errs ast.Errors) ast.Errors {
	seen := map[string]bool{}
	var out ast.Errors
	for _, e := range errs {
		if k := e.Error(); !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}

func asErrors(err error) ast.Errors {
	var errs ast.Errors
	if errors.As(err, &errs) {
		return errs
	}
	var e *ast.Error
	if errors.As(err, &e) {
		return ast.Errors{e}
	}
	return ast.Errors{ast.NewError(ast.ParseErr, nil, "%v", err)}
}

// formatErrors writes one line per error, "file:line: code: message", the
// form editors and GitHub annotations read.
func formatErrors(errs ast.Errors) error {
	lines := make([]string, 0, len(errs))
	for _, e := range errs {
		lines = append(lines, fmt.Sprintf("%s: %s: %s", where(e.Location), e.Code, e.Message))
	}
	return errors.New(strings.Join(lines, "\n"))
}

// astError formats err if it holds OPA's compile errors.
func astError(err error) error {
	var errs ast.Errors
	if errors.As(err, &errs) {
		return formatErrors(errs)
	}
	return err
}

// evalError is an evaluation error with the file and line OPA gives it, or
// the rule's own when it gives none.
func evalError(err error, fallback *ast.Location) error {
	var te *topdown.Error
	if errors.As(err, &te) {
		loc := te.Location
		if loc == nil {
			loc = fallback
		}
		return fmt.Errorf("%s: %s: %s", where(loc), te.Code, te.Message)
	}
	var errs ast.Errors
	if errors.As(err, &errs) {
		return formatErrors(errs)
	}
	return fmt.Errorf("%s: %w", where(fallback), err)
}

func where(loc *ast.Location) string {
	if loc == nil {
		return "?"
	}
	if loc.File == "" {
		return fmt.Sprintf("line %d", loc.Row)
	}
	return fmt.Sprintf("%s:%d", loc.File, loc.Row)
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
