// Package threatmodel checks SECURITY.md against the code: a control is only
// as real as the test that attacks it, so every test the threat model names
// must exist, and every control must name one.
package threatmodel

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// named is how SECURITY.md names a test: `package/path.TestName` (or a
// FuzzName) in a code span, the path from the repository's root.
var named = regexp.MustCompile("`([a-z][a-z0-9/]*)\\.((?:Test|Fuzz)[A-Za-z0-9_]+)`")

const root = "../.."

func TestEveryNamedTestExists(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := strings.Split(string(doc), "\n### ")
	if len(sections)-1 < 8 {
		t.Fatalf("SECURITY.md has %d control sections, want at least 8", len(sections)-1)
	}
	tests := map[string]map[string]bool{}
	for _, sec := range sections[1:] {
		title, _, _ := strings.Cut(sec, "\n")
		refs := named.FindAllStringSubmatch(sec, -1)
		if len(refs) == 0 {
			t.Errorf("control %q names no test that attacks it", title)
		}
		for _, m := range refs {
			pkg, fn := m[1], m[2]
			if tests[pkg] == nil {
				tests[pkg] = testFuncs(t, pkg)
			}
			if !tests[pkg][fn] {
				t.Errorf("control %q names %s.%s, which does not exist", title, pkg, fn)
			}
		}
	}
}

// testFuncs lists the top-level functions of a package folder's test files.
func testFuncs(t *testing.T, pkg string) map[string]bool {
	files, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pkg), "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	fns := map[string]bool{}
	for _, f := range files {
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				fns[fd.Name.Name] = true
			}
		}
	}
	return fns
}
