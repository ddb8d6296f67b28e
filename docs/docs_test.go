// Package docs tests the pages people read: README.md, SECURITY.md and
// docs/*.md. A link or anchor that leads nowhere, a command the binary does
// not accept, a YAML block that does not parse or a diagram older than its
// source fails here, naming the file and line, so the pages stay as true as
// the code they describe. It runs under plain go test, and so in make test.
package docs

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository's root, from this package's folder.
const root = ".."

// generated are the pages another tool writes: a link to one is tolerated
// while it is absent (make settings writes docs/settings.md from the
// settings' declarations), and the pages' own conventions (the audience
// line) are the generator's to keep.
var generated = []string{"docs/settings.md"}

// actionBinary is cmd/action, built once by TestMain, whose help text the
// commands the pages show are checked against.
var actionBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kusionpr-docs-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	actionBinary = filepath.Join(dir, "action")
	// go test puts its own go first on PATH, so this is the toolchain
	// under test.
	build := exec.Command("go", "build", "-o", actionBinary, "./cmd/action")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/action (the docs' commands are checked against its help): %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// page is a Markdown file of the repository, as its lines; name is its
// path from the root, with slashes, as failures name it.
type page struct {
	name  string
	lines []string
}

// pages are the pages the tests check: the README, the threat model and
// every page under docs/.
func pages(t *testing.T) []page {
	t.Helper()
	names := []string{"README.md", "SECURITY.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		names = append(names, "docs/"+filepath.Base(d))
	}
	var out []page
	for _, n := range names {
		out = append(out, readPage(t, n))
	}
	return out
}

func readPage(t *testing.T, name string) page {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return page{name: name, lines: strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")}
}

// block is a fenced code block: its info string's language and its lines,
// first being the line number of the first of them.
type block struct {
	lang  string
	first int
	lines []string
}

var fenceOpen = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})\\s*([^`\\s]*)")

// split separates a page into its fenced blocks and its prose: prose[i] is
// line i+1 of the page, or "" where that line is in a block (so that line
// numbers stay the page's). A fence closes on a line of the same character
// at least as long, as CommonMark says.
func split(lines []string) (prose []string, blocks []block) {
	prose = make([]string, len(lines))
	var cur *block
	var fence string
	for i, l := range lines {
		if cur != nil {
			if t := strings.TrimSpace(l); strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				blocks = append(blocks, *cur)
				cur = nil
				continue
			}
			cur.lines = append(cur.lines, l)
			continue
		}
		if m := fenceOpen.FindStringSubmatch(l); m != nil {
			fence = m[1]
			cur = &block{lang: strings.ToLower(m[2]), first: i + 2}
			continue
		}
		prose[i] = l
	}
	if cur != nil {
		// An unclosed fence runs to the end of the page, as GitHub shows it.
		blocks = append(blocks, *cur)
	}
	return prose, blocks
}

// TestPagesSayWhoTheyAreFor: each page under docs/ opens, under its title,
// with the line saying who it is for ("*For: ...*"), so that a reader who
// lands on it knows at once whether it is theirs.
func TestPagesSayWhoTheyAreFor(t *testing.T) {
	for _, p := range pages(t) {
		if !strings.HasPrefix(p.name, "docs/") || slices.Contains(generated, p.name) {
			continue
		}
		var first []string // the title and the line after it
		for _, l := range p.lines {
			if strings.TrimSpace(l) != "" {
				first = append(first, l)
			}
			if len(first) == 2 {
				break
			}
		}
		switch {
		case len(first) < 2 || !strings.HasPrefix(first[0], "# "):
			t.Errorf("%s:1: a page opens with its title (# ...), then who it is for", p.name)
		case !strings.HasPrefix(first[1], "*For: ") || !strings.HasSuffix(first[1], "*"):
			t.Errorf("%s: the line under the title should say who the page is for, as \"*For: platform engineers installing the bot.*\", not %q", p.name, first[1])
		}
	}
}

// maxReadmeLines is how long the README may grow: it is read in five
// minutes, and everything longer has a page under docs/.
const maxReadmeLines = 150

func TestReadmeIsShort(t *testing.T) {
	p := readPage(t, "README.md")
	if n := len(p.lines); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to a page under docs/ and link it", n, maxReadmeLines)
	}
}

// diagramSum is what make diagrams writes into each SVG: the sha256 of the
// source it was drawn from.
var diagramSum = regexp.MustCompile(`source sha256 ([0-9a-f]{64})`)

// TestDiagramsAreDrawnFromTheirSource: every docs/NAME.dot has its
// docs/NAME.svg, drawn from that very source. Graphviz is not needed
// here: the SVG records its source's hash.
func TestDiagramsAreDrawnFromTheirSource(t *testing.T) {
	sources, err := filepath.Glob(filepath.Join(root, "docs", "*.dot"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) == 0 {
		t.Fatal("no docs/*.dot: the pages' diagram of a pull request's flow is docs/pr-flow.dot")
	}
	for _, src := range sources {
		name := "docs/" + filepath.Base(src)
		svgName := strings.TrimSuffix(name, ".dot") + ".svg"
		source, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		svg, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(svgName)))
		if err != nil {
			t.Errorf("%s has no picture (%v): run make diagrams and commit %s", name, err, svgName)
			continue
		}
		if err := drawnFrom(svg, source); err != nil {
			t.Errorf("%s: %v: run make diagrams and commit it", svgName, err)
		}
	}
}

// drawnFrom says why svg was not drawn from source, or nil.
func drawnFrom(svg, source []byte) error {
	m := diagramSum.FindSubmatch(svg)
	if m == nil {
		return fmt.Errorf("records no source sha256 (it was not drawn by make diagrams)")
	}
	if want := sha256Hex(source); !bytes.Equal(m[1], []byte(want)) {
		return fmt.Errorf("was drawn from another source (sha256 %.12s…, the source's is %.12s…): the picture is stale", m[1], want)
	}
	return nil
}
