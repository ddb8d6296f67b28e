package docs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

var (
	heading = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	// htmlAnchor is an anchor a page sets by hand (<a id="x">, name="x").
	htmlAnchor = regexp.MustCompile(`<a\s[^>]*\b(?:id|name)="([^"]+)"`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	// inlineLink is [text](target) or ![alt](target), the text on one
	// line or several, with an optional title.
	inlineLink = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// refDef is a reference definition, [label]: target.
	refDef = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	// htmlLink is an href or src of an HTML tag.
	htmlLink   = regexp.MustCompile(`<(?:a|img)\s[^>]*\b(?:href|src)="([^"]+)"`)
	scheme     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	lineAnchor = regexp.MustCompile(`^L\d+(-L\d+)?$`)
)

// slug is the anchor GitHub gives a heading: its text as shown (code
// spans' content, links' text), lowercased, with every character but
// letters, digits, marks, '-', '_' and spaces dropped, and spaces made
// '-'.
func slug(text string) string {
	text = inlineLink.ReplaceAllString(text, "$1")
	text = regexp.MustCompile(`<[^>]+>`).ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the anchors of a page: its headings' slugs, a repeated one
// numbered as GitHub numbers it (x, x-1, x-2), and the ids it sets by hand.
func anchors(lines []string) map[string]bool {
	prose, _ := split(lines)
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range prose {
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// link is a link of a page: its target as written and the line it is on.
type link struct {
	line   int
	target string
}

// links finds a page's links outside code: inline links and images (their
// text may run over several lines of a paragraph), reference definitions,
// and the href and src of HTML tags.
func links(lines []string) []link {
	prose, _ := split(lines)
	var out []link
	// Paragraphs are matched whole, so that a link whose text is wrapped
	// is found; offsets map back to lines.
	for i := 0; i < len(prose); {
		if strings.TrimSpace(prose[i]) == "" {
			i++
			continue
		}
		j := i
		for j < len(prose) && strings.TrimSpace(prose[j]) != "" {
			j++
		}
		para := make([]string, j-i)
		for k := i; k < j; k++ {
			// Code spans hold examples, not links; blanked to their
			// length so that offsets stay.
			para[k-i] = codeSpan.ReplaceAllStringFunc(prose[k], func(s string) string { return strings.Repeat(" ", len(s)) })
		}
		text := strings.Join(para, "\n")
		lineOf := func(off int) int { return i + 1 + strings.Count(text[:off], "\n") }
		for _, re := range []*regexp.Regexp{inlineLink, htmlLink} {
			for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
				target := text[m[len(m)-2]:m[len(m)-1]]
				out = append(out, link{line: lineOf(m[0]), target: target})
			}
		}
		for k, l := range para {
			if m := refDef.FindStringSubmatch(l); m != nil {
				out = append(out, link{line: i + k + 1, target: m[1]})
			}
		}
		i = j
	}
	slices.SortStableFunc(out, func(a, b link) int { return a.line - b.line })
	return out
}

// checkLink says why target, a link of the page from, leads nowhere, or
// "" when it resolves. exists and anchorsOf read the repository (tests
// give their own).
func checkLink(from, target string, exists func(name string) bool, anchorsOf func(name string) map[string]bool) string {
	if target == "" || scheme.MatchString(target) || strings.HasPrefix(target, "//") {
		return "" // another site's: not ours to check here
	}
	file, frag, hasFrag := strings.Cut(target, "#")
	name := from
	if file != "" {
		name = path.Clean(path.Join(path.Dir(from), file))
		if name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Sprintf("%s leads out of the repository", target)
		}
		if !exists(name) {
			if slices.Contains(generated, name) {
				if hasFrag {
					return fmt.Sprintf("%s is generated (make settings) and absent here, so its anchors cannot be checked: link the page, not #%s", name, frag)
				}
				return ""
			}
			return fmt.Sprintf("no such file: %s", name)
		}
	}
	if !hasFrag || frag == "" {
		return ""
	}
	if !strings.HasSuffix(name, ".md") {
		if lineAnchor.MatchString(frag) {
			return ""
		}
		return fmt.Sprintf("#%s: only a Markdown page's headings, or a line (#L12), can be linked into %s", frag, name)
	}
	if !anchorsOf(name)[frag] {
		return fmt.Sprintf("%s has no heading whose anchor is #%s", name, frag)
	}
	return ""
}

// TestLinksResolve: every relative link of the README, SECURITY.md and
// docs/*.md names a file of the repository and, with #anchor, a heading of
// that page as GitHub slugs it. docs/settings.md may be absent: make
// settings writes it.
func TestLinksResolve(t *testing.T) {
	cache := map[string]map[string]bool{}
	anchorsOf := func(name string) map[string]bool {
		if a, ok := cache[name]; ok {
			return a
		}
		a := anchors(readPage(t, name).lines)
		cache[name] = a
		return a
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(root, filepath.FromSlash(name)))
		return err == nil
	}
	n := 0
	for _, p := range pages(t) {
		for _, l := range links(p.lines) {
			n++
			if why := checkLink(p.name, l.target, exists, anchorsOf); why != "" {
				t.Errorf("%s:%d: link %s: %s", p.name, l.line, l.target, why)
			}
		}
	}
	if n == 0 {
		t.Error("no links found in any page: the link finder is broken")
	}
	t.Logf("%d links checked", n)
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Formats (Kusion v0.15)", "formats-kusion-v015"},
		{"Growing past one bot: executors", "growing-past-one-bot-executors"},
		{"1. The backend: the one `kusion` uses", "1-the-backend-the-one-kusion-uses"},
		{"Testing rules: `action policy test`", "testing-rules-action-policy-test"},
		{"The release store's credentials", "the-release-stores-credentials"},
		{"What stays the operator's responsibility", "what-stays-the-operators-responsibility"},
		{"13. KCL from a pull request runs confined, its packages from where the operator allows", "13-kcl-from-a-pull-request-runs-confined-its-packages-from-where-the-operator-allows"},
		{"`KUSIONPR_KCL_ALLOW`", "kusionpr_kcl_allow"},
		{"See [the page](other.md) — now", "see-the-page--now"},
		{"Ünïcode stays", "ünïcode-stays"},
	} {
		if got := slug(tc.heading); got != tc.want {
			t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func TestAnchorsNumberRepeatedHeadings(t *testing.T) {
	got := anchors([]string{"# Page", "## Setup", "text", "## Setup", "```sh", "## not a heading", "```", "### Setup", `<a id="by-hand"></a>`})
	for _, want := range []string{"page", "setup", "setup-1", "setup-2", "by-hand"} {
		if !got[want] {
			t.Errorf("no anchor #%s in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a line in a code block was taken for a heading")
	}
}

func TestLinksFound(t *testing.T) {
	lines := []string{
		"See [the page](a.md) and ![a picture](b.svg).",
		"A link whose text is [wrapped over",
		"two lines](c.md#x), then `[code](not-a-link.md)`.",
		"",
		"```md",
		"[in a block](not-a-link-either.md)",
		"```",
		`<img src="d.svg"> and [[nested] text](e.md "title")`,
		"[ref]: f.md",
		"[external](https://example.com)",
	}
	var got []string
	for _, l := range links(lines) {
		got = append(got, fmt.Sprintf("%d %s", l.line, l.target))
	}
	want := []string{"1 a.md", "1 b.svg", "2 c.md#x", "8 e.md", "8 d.svg", "9 f.md", "10 https://example.com"}
	if !slices.Equal(got, want) {
		t.Errorf("links found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestCheckLink(t *testing.T) {
	files := map[string]map[string]bool{
		"README.md":          {"quickstart": true},
		"docs/stacks.md":     {"clusters": true},
		"docs/pr-flow.svg":   nil,
		"action.yml":         nil,
		"docs/kcl.md":        {},
		"docs/sub/nested.md": {"x": true},
	}
	exists := func(name string) bool { _, ok := files[name]; return ok }
	anchorsOf := func(name string) map[string]bool { return files[name] }
	for _, tc := range []struct {
		from, target string
		bad          string // what the failure says, "" when it resolves
	}{
		{"README.md", "docs/stacks.md#clusters", ""},
		{"README.md", "docs/stacks.md#clusterz", "docs/stacks.md has no heading whose anchor is #clusterz"},
		{"README.md", "docs/stack.md", "no such file: docs/stack.md"},
		{"README.md", "#quickstart", ""},
		{"README.md", "#quick-start", "README.md has no heading whose anchor is #quick-start"},
		{"docs/stacks.md", "../action.yml", ""},
		{"docs/stacks.md", "../action.yml#L3", ""},
		{"docs/stacks.md", "../action.yml#inputs", "only a Markdown page's headings"},
		{"docs/stacks.md", "pr-flow.svg", ""},
		{"docs/stacks.md", "../../elsewhere.md", "leads out of the repository"},
		{"docs/sub/nested.md", "../stacks.md#clusters", ""},
		{"docs/stacks.md", "settings.md", ""},
		{"docs/stacks.md", "settings.md#kusionpr_backend", "is generated (make settings) and absent here"},
		{"README.md", "docs/settings.md", ""},
		{"README.md", "https://example.com/#anything", ""},
		{"README.md", "mailto:someone@example.com", ""},
	} {
		got := checkLink(tc.from, tc.target, exists, anchorsOf)
		if (got == "") != (tc.bad == "") || !strings.Contains(got, tc.bad) {
			t.Errorf("checkLink(%s, %s) = %q, want %q", tc.from, tc.target, got, tc.bad)
		}
	}
}
