package chatops

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	xhtml "golang.org/x/net/html"
)

// token replaces "/kusion" on the line Parse took the command from, so the
// line can be found in the rendered comment.
const token = "/kusionZQXJ"

// hiding are the elements a command's text may not be inside: code, quotes,
// lists, headings, tables, links, folded or hidden elements and those
// whose text is not markup. A paragraph (p) in the body, emphasis and
// elements GitHub drops (unknown names) are fine.
var hiding = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`code pre blockquote li ul ol dl dt dd h1 h2 h3 h4 h5 h6 table thead tbody
		tfoot tr td th caption a details summary div section article aside nav header footer main figure
		figcaption fieldset form center dialog template canvas audio video object picture select option optgroup
		svg math map script style textarea title xmp iframe noembed noframes noscript plaintext head img`) {
		hiding[n] = true
	}
}

// rendered says where GitHub would show the text that starts with token:
// "" when it is visible text of a top-level paragraph of the comment,
// otherwise why not. It reads the Markdown with goldmark (CommonMark,
// GitHub's extensions, raw HTML kept), independent of markdown.go: the
// token's line must be a line of a top-level paragraph, and in the HTML,
// read as a browser does, its text in no comment, attribute or element
// that hides or folds it.
func rendered(body string) string {
	md := goldmark.New(goldmark.WithExtensions(extension.GFM, extension.Footnote), goldmark.WithRendererOptions(html.WithUnsafe()))
	if where := inParagraph(md, body); where != "" {
		return where
	}
	var buf bytes.Buffer
	if err := md.Convert([]byte(body), &buf); err != nil {
		return "not rendered: " + err.Error()
	}
	doc, err := xhtml.Parse(bytes.NewReader(buf.Bytes()))
	if err != nil {
		// x/net/html refuses more than 512 open elements (a comment of
		// 600 '>' is 600 nested quotes). What follows the token's text
		// cannot change what encloses it, so the HTML up to the end of
		// that text is read instead; a token cut off inside a tag or a
		// comment is then found nowhere, which fails, never passes.
		cut := buf.Bytes()
		if i := bytes.Index(cut, []byte(token)); i >= 0 {
			if j := bytes.IndexByte(cut[i:], '<'); j >= 0 {
				cut = cut[:i+j]
			}
		}
		if doc, err = xhtml.Parse(bytes.NewReader(cut)); err != nil {
			return "not parsed: " + err.Error()
		}
	}
	var where []string
	var walk func(n *xhtml.Node)
	walk = func(n *xhtml.Node) {
		if n.Type != xhtml.ElementNode && n.Type != xhtml.DocumentNode && strings.Contains(n.Data, token) {
			where = append(where, place(n))
		}
		for _, a := range n.Attr {
			if strings.Contains(a.Val, token) {
				where = append(where, "an attribute of <"+n.Data+">")
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if len(where) == 0 {
		return "nowhere in the HTML"
	}
	return where[0]
}

// inParagraph says whether the token starts a line of a paragraph that is
// a child of the document itself ("" if so).
func inParagraph(md goldmark.Markdown, body string) string {
	i := strings.Index(body, token)
	if i < 0 {
		return "nowhere in the comment"
	}
	src := []byte(body)
	doc := md.Parser().Parse(text.NewReader(src))
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		lines := n.Lines()
		for k := 0; k < lines.Len(); k++ {
			seg := lines.At(k)
			if seg.Start <= i && i < seg.Stop {
				if n.Kind() == ast.KindParagraph {
					return ""
				}
				return "in a top-level " + n.Kind().String()
			}
		}
	}
	return "in no top-level paragraph"
}

// place names what hides a node holding token, "" if nothing does.
func place(n *xhtml.Node) string {
	if n.Type == xhtml.CommentNode {
		return "an HTML comment"
	}
	if n.Type != xhtml.TextNode {
		return "a node of another kind"
	}
	// The token must start a line of the text (the command's line).
	pre := n.Data[:strings.Index(n.Data, token)]
	if k := strings.LastIndexByte(pre, '\n'); k >= 0 {
		pre = pre[k+1:]
	}
	if strings.TrimSpace(pre) != "" {
		return "after other text on its line: " + n.Data
	}
	for a := n.Parent; a != nil; a = a.Parent {
		if a.Type == xhtml.ElementNode && hiding[a.Data] {
			return "inside <" + a.Data + ">"
		}
	}
	return ""
}

// FuzzParse: Parse never panics, its stacks stay inside the repository,
// and a command it finds is on a line GitHub shows as a paragraph's text,
// never in code, a quote, a list, a heading, a table, a link, an HTML
// comment or an element that hides or folds it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"/kusion apply", "LGTM\n\n/kusion preview a b", "> /kusion apply", "```\n/kusion apply\n```",
		"<!--\n/kusion apply\n-->", "<details>\n\n/kusion apply\n\n</details>", "- /kusion apply",
		"    /kusion apply", "LGTM\n    /kusion apply", "x <a title=\"\n/kusion apply\n\">", "[\n/kusion apply\n](x)",
		"/kusion apply\n---", "| a |\n|---|\n/kusion apply", "<div><!--\n\n/kusion apply", "/kusion apply ../x /y ./a/../b",
		"/kusion unlock a\x00", "\t/kusion apply", "> a\n/kusion apply", "<pre>\n\n/kusion apply\n</pre>",
		"/kusion frobnicate <img src=x>", "run `\n/kusion apply\n`", "[x]: /u\n/kusion apply", "<!-- a -->\n/kusion help",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		cmd, line, ok := parse(body)
		if !ok {
			return
		}
		for _, s := range cmd.Stacks {
			if strings.HasPrefix(s, "/") || slices.Contains(strings.Split(s, "/"), "..") || s == "" {
				t.Fatalf("Parse(%q): stack %q", body, s)
			}
		}
		if cmd.Verb == Unlock && len(cmd.Stacks) != 1 {
			t.Fatalf("Parse(%q): unlock of %q", body, cmd.Stacks)
		}
		if cmd.Verb != Help && (cmd.Unknown != "" || cmd.Problem != "") {
			t.Fatalf("Parse(%q) = %#v", body, cmd)
		}
		lines := strings.Split(normalize(body), "\n")
		if strings.Contains(normalize(body), token) {
			return // the input already holds the token
		}
		lines[line] = strings.Replace(lines[line], Prefix, token, 1)
		if where := rendered(strings.Join(lines, "\n")); where != "" {
			t.Fatalf("Parse(%q) took a command from line %d, which GitHub shows %s", body, line+1, where)
		}
	})
}
