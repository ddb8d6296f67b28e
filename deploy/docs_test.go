package deploy_test

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// section is the part of a page between <!-- marker ... --> and
// <!-- marker end -->; first is the line number of its first line.
type section struct {
	file  string
	first int
	lines []string
}

func (s section) at(i int) string { return fmt.Sprintf("%s:%d", rel(s.file), s.first+i) }

// sections finds every marked section of the pages.
func sections(t *testing.T, marker string) []section {
	t.Helper()
	open := regexp.MustCompile(`^<!-- ` + regexp.QuoteMeta(marker) + `[: ].*-->$`)
	end := "<!-- " + marker + " end -->"
	var out []section
	for _, f := range pages(t) {
		var cur *section
		for i, l := range lines(t, f) {
			switch {
			case cur == nil && open.MatchString(l):
				cur = &section{file: f, first: i + 2}
			case cur != nil && l == end:
				out = append(out, *cur)
				cur = nil
			case cur != nil:
				cur.lines = append(cur.lines, l)
			}
		}
		if cur != nil {
			t.Errorf("%s:%d: <!-- %s --> has no %s", rel(f), cur.first-1, marker, end)
		}
	}
	if len(out) == 0 {
		t.Errorf("no page has a <!-- %s --> section", marker)
	}
	return out
}

// row is a row of a Markdown table: its cells, trimmed, and where it is.
type row struct {
	at    string
	cells []string
}

// tables splits a section's tables into their header and rows.
func tables(s section) (headers [][]string, rows [][]row) {
	split := func(l string) []string {
		cells := strings.Split(strings.Trim(strings.TrimSpace(l), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		return cells
	}
	inTable := false
	for i, l := range s.lines {
		switch {
		case !strings.HasPrefix(l, "|"):
			inTable = false
		case !inTable:
			inTable = true
			headers = append(headers, split(l))
			rows = append(rows, nil)
		case strings.HasPrefix(l, "|---") || strings.HasPrefix(l, "|:--"):
		default:
			rows[len(rows)-1] = append(rows[len(rows)-1], row{at: s.at(i), cells: split(l)})
		}
	}
	return headers, rows
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// codes are the code spans of a cell, as written.
func codes(cell string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestAppPermissionsDocumented holds the tables of the App's permissions
// and events the README shows (for an App registered by hand) to
// github-app-manifest.json, field by field: a permission or event missing,
// extra, or with another access fails, naming the line.
func TestAppPermissionsDocumented(t *testing.T) {
	m := appManifest(t)
	events := map[string]string{}
	for _, e := range m.Events {
		events[e] = ""
	}
	for _, tc := range []struct {
		marker, field string
		want          map[string]string // name -> access ("" for events)
	}{
		{"app-permissions", "default_permissions", m.Permissions},
		{"app-events", "default_events", events},
	} {
		for _, s := range sections(t, tc.marker) {
			_, tabs := tables(s)
			if len(tabs) != 1 || len(tabs[0]) == 0 {
				t.Errorf("%s: the %s section holds %d tables, want one with a row each", s.at(-1), tc.marker, len(tabs))
				continue
			}
			seen := map[string]bool{}
			for _, r := range tabs[0] {
				c := codes(r.cells[0])
				if len(c) != 1 {
					t.Errorf("%s: the first cell should name one %s in code: %q", r.at, tc.field, r.cells[0])
					continue
				}
				n := c[0]
				want, ok := tc.want[n]
				switch {
				case seen[n]:
					t.Errorf("%s: %s is listed twice", r.at, n)
				case !ok:
					t.Errorf("%s: %s is not in %s's %s: the App would not get it", r.at, n, manifestFile, tc.field)
				case want != "" && (len(r.cells) < 2 || r.cells[1] != want):
					t.Errorf("%s: %s is %q here, %q in %s", r.at, n, r.cells[1], want, manifestFile)
				}
				seen[n] = true
			}
			for n, want := range tc.want {
				if !seen[n] {
					what := n
					if want != "" {
						what += " " + want
					}
					t.Errorf("%s: the table lacks %s (%s asks for it in %s)", s.at(len(s.lines)), what, manifestFile, tc.field)
				}
			}
		}
	}
}

// fence is a fenced code block of a page.
type fence struct {
	file  string
	line  int // of its first content line
	lang  string
	lines []string
}

func fences(t *testing.T, file string) []fence {
	t.Helper()
	var out []fence
	var cur *fence
	for i, l := range lines(t, file) {
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			cur = &fence{file: file, line: i + 2, lang: strings.TrimSpace(strings.TrimPrefix(l, "```"))}
		case cur != nil && strings.TrimSpace(l) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, l)
		}
	}
	return out
}

const examples = "../.github/workflow-examples/"

var exampleLabel = regexp.MustCompile(`^# (\.github/workflow-examples/[\w.-]+\.ya?ml)(?: \(lines (\d+)-(\d+)\))?$`)

// TestReadmeWorkflowsAreTheExamples: every workflow the pages show (a YAML
// block with on: or jobs:) opens with a comment naming its example file,
// and is that file whole, exactly, or the lines of it the label names
// ("# .github/workflow-examples/NAME.yml (lines 5-24)"): a trigger,
// permission or variable the README leaves out of the example it shows
// fails here, naming both lines. A block of steps (a variation, such as
// another store's credentials) may stand alone.
func TestReadmeWorkflowsAreTheExamples(t *testing.T) {
	shown := map[string]bool{}
	for _, f := range pages(t) {
		for _, b := range fences(t, f) {
			if b.lang != "yaml" && b.lang != "yml" {
				continue
			}
			where := fmt.Sprintf("%s:%d", rel(f), b.line)
			var label []string
			if len(b.lines) > 0 {
				label = exampleLabel.FindStringSubmatch(b.lines[0])
			}
			if label == nil {
				var doc map[string]any
				_ = yaml.Unmarshal([]byte(strings.Join(b.lines, "\n")), &doc)
				_, on := doc["on"]
				_, jobs := doc["jobs"]
				if on || jobs {
					t.Errorf("%s: a workflow that names no example file: open it with `# .github/workflow-examples/NAME.yml` and show that file, or a part of it, as it is", where)
				}
				continue
			}
			shown[label[1]] = true
			file := lines(t, "../"+label[1])
			first, last := 1, len(file)
			if label[2] != "" {
				first, _ = strconv.Atoi(label[2])
				last, _ = strconv.Atoi(label[3])
				if first < 1 || last > len(file) || first > last {
					t.Errorf("%s: %s has lines 1-%d, not %d-%d", where, label[1], len(file), first, last)
					continue
				}
			}
			if err := same(b.lines[1:], file, first, last); err != nil {
				shownAs := "as it is"
				if label[2] != "" {
					shownAs = fmt.Sprintf("lines %d-%d", first, last)
				}
				t.Errorf("%s: not %s %s: %v", where, label[1], shownAs, err)
			}
		}
	}
	if len(shown) == 0 {
		t.Errorf("the pages show none of the example workflows")
	}
	// Each example exists to be copied: a page says where it is.
	files, _ := filepath.Glob(examples + "*.yml")
	for _, f := range files {
		n := rel(f)
		if !slices.ContainsFunc(pages(t), func(p string) bool { b, _ := os.ReadFile(p); return strings.Contains(string(b), n) }) {
			t.Errorf("%s is named on no page", n)
		}
	}
}

// same says where got differs from the lines first to last of file.
func same(got, file []string, first, last int) error {
	want := file[first-1 : last]
	for i := 0; i < len(got) || i < len(want); i++ {
		switch {
		case i >= len(want):
			return fmt.Errorf("block line %d, %q, is past line %d, the last shown", i+2, got[i], last)
		case i >= len(got):
			return fmt.Errorf("the block ends before line %d, %q", first+i, want[i])
		case got[i] != want[i]:
			return fmt.Errorf("block line %d is %q, the file's line %d %q", i+2, got[i], first+i, want[i])
		}
	}
	return nil
}

var (
	secretRef = regexp.MustCompile(`\bsecrets\.([A-Za-z_][A-Za-z0-9_]*)`)
	varRef    = regexp.MustCompile(`\bvars\.([A-Za-z_][A-Za-z0-9_]*)`)
)

// TestSecretsDocumented holds docs/deploy.md's list of secrets to what the
// example workflows (secrets.NAME, vars.NAME) and the manifests
// (secretKeyRef, secretRef, a Secret volume, an Ingress's TLS) read: each
// must be listed, and each Secret listed must be one a manifest or an
// example reads.
func TestSecretsDocumented(t *testing.T) {
	secs := sections(t, "secrets")
	if len(secs) == 0 {
		return
	}
	text := map[string]bool{} // every code span of the lists
	var listed []row          // the rows naming Secrets of the cluster
	var actions []row         // the rows naming the workflows' secrets
	for _, s := range secs {
		for _, l := range s.lines {
			for _, c := range codes(l) {
				text[c] = true
			}
		}
		headers, tabs := tables(s)
		for i, h := range headers {
			switch {
			case len(h) > 1 && h[0] == "Secret":
				listed = append(listed, tabs[i]...)
			case len(h) > 1 && h[0] == "secret":
				actions = append(actions, tabs[i]...)
			}
		}
	}
	where := secs[0].at(0)

	// The examples' secrets and variables.
	files, _ := filepath.Glob(examples + "*.yml")
	read := map[string]bool{}
	for _, f := range files {
		for i, l := range lines(t, f) {
			for _, re := range []*regexp.Regexp{secretRef, varRef} {
				for _, m := range re.FindAllStringSubmatch(l, -1) {
					if m[1] == "GITHUB_TOKEN" {
						continue
					}
					read[m[1]] = true
					if !text[m[1]] && !text[m[0]] {
						t.Errorf("%s:%d reads %s, which the list of secrets (%s) does not name", rel(f), i+1, m[0], where)
					}
				}
			}
		}
	}
	// The manifests' Secrets, and the keys they read of them.
	refs := secretsRead(t)
	for _, r := range refs {
		read[r.secret] = true
		what := "the Secret " + r.secret
		if r.key != "" {
			what += " key " + r.key
		}
		for _, want := range []string{r.secret, r.key} {
			if want != "" && !text[want] {
				t.Errorf("%s reads %s, which the list of secrets (%s) does not name (no %s)", r.at, what, where, want)
			}
		}
	}
	// Nothing listed that nothing reads.
	for _, r := range actions {
		for _, n := range codes(r.cells[0]) {
			if !read[n] {
				t.Errorf("%s: the secret %s is read by no example workflow", r.at, n)
			}
		}
	}
	for _, r := range listed {
		c := codes(r.cells[0]) // the Secret, then perhaps its namespace
		if len(c) == 0 {
			t.Errorf("%s: the first cell should name the Secret in code: %q", r.at, r.cells[0])
		} else if !read[c[0]] && !mentioned(t, c[0]) {
			t.Errorf("%s: the Secret %s is read by no manifest or example", r.at, c[0])
		}
	}
}

// mentioned: a Secret only a manifest's instructions name (the Jobs' store
// keys, created by hand beside jobs.yaml).
func mentioned(t *testing.T, secret string) bool {
	for _, f := range manifestFiles(t) {
		b, _ := os.ReadFile(f)
		if regexp.MustCompile(`create secret \w+ ` + regexp.QuoteMeta(secret) + `\b`).Match(b) {
			return true
		}
	}
	return false
}

// secretRead is a Secret a manifest reads, and the key when it names one.
type secretRead struct{ at, secret, key string }

// secretsRead walks every manifest for the Secrets it reads.
func secretsRead(t *testing.T) []secretRead {
	t.Helper()
	var out []secretRead
	for _, f := range manifestFiles(t) {
		text := lines(t, f)
		for _, d := range documents(t, f) {
			if d.obj["kind"] == "Secret" {
				continue // made by the manifest itself
			}
			walk(d.obj, func(key string, v map[string]any) {
				str := func(k string) string { s, _ := v[k].(string); return s }
				// The line naming it, in this document.
				n := d.line
				for i := d.line - 1; i < len(text); i++ {
					l := text[i]
					if name := cmp.Or(str("name"), str("secretName")); name != "" && strings.Contains(l, name) && strings.Contains(l, str("key")) && !strings.HasPrefix(strings.TrimSpace(l), "#") {
						n = i + 1
						break
					}
				}
				at := fmt.Sprintf("%s:%d", rel(f), n)
				switch key {
				case "secretKeyRef":
					out = append(out, secretRead{at, str("name"), str("key")})
				case "secretRef":
					out = append(out, secretRead{at, str("name"), ""})
				case "secret", "tls":
					if n := str("secretName"); n != "" {
						out = append(out, secretRead{at, n, ""})
					}
				}
			})
		}
	}
	return out
}
