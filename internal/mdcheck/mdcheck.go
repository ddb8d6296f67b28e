// Package mdcheck renders a comment's Markdown as GitHub does (CommonMark
// with GitHub's tables, autolinks, strikethrough and task lists, raw HTML
// kept) and says whether values from a repository stayed data: no element
// or HTML comment of theirs, no link, no image, no @-mention outside code.
// Tests of the comments, replies and check runs use it; the renderer is
// goldmark, written apart from this project's escaping, so the two do not
// share a mistake.
package mdcheck

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
	xhtml "golang.org/x/net/html"
)

// Want is what the comment itself is made of.
type Want struct {
	// Details is how many <details> elements the comment's own layout has.
	Details int
	// Data are values that must show, verbatim, as the text of a code
	// element (inline code or a code block).
	Data []string
	// Mentions are the @-mentions the comment makes on purpose (the
	// author of a refused command), without the "@".
	Mentions []string
}

// allowed are the elements our comments are made of, and those GitHub makes
// of Markdown we write (tables, quotes, lists, headings).
var allowed = map[string]bool{
	"html": true, "head": true, "body": true,
	"p": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true,
	"code": true, "pre": true, "details": true, "summary": true, "b": true, "strong": true, "em": true,
	"table": true, "thead": true, "tbody": true, "tr": true, "th": true, "td": true,
	"blockquote": true, "ul": true, "ol": true, "li": true, "hr": true, "br": true,
}

// Render is the HTML GitHub would make of md, before its sanitiser.
func Render(md string) (string, error) {
	var buf bytes.Buffer
	g := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))
	if err := g.Convert([]byte(md), &buf); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// Check lists what in md is not as w says: an element or HTML comment
// other than the comment's own (hidden markers start " kusionpr:"), a
// <details> count other than w.Details, a value of w.Data not shown as
// code, an @-mention outside code other than w.Mentions, or text outside
// code that still reads like markup ("![", "](", "<!--", "</details").
func Check(md string, w Want) []string {
	out, err := Render(md)
	if err != nil {
		return []string{fmt.Sprintf("render: %v", err)}
	}
	doc, err := xhtml.Parse(strings.NewReader(out))
	if err != nil {
		return []string{fmt.Sprintf("parse the rendered HTML: %v", err)}
	}
	var problems []string
	details := 0
	var codeText []string
	var walk func(n *xhtml.Node, inCode bool)
	walk = func(n *xhtml.Node, inCode bool) {
		switch n.Type {
		case xhtml.ElementNode:
			if !allowed[n.Data] {
				problems = append(problems, fmt.Sprintf("element <%s> rendered", n.Data))
			}
			if n.Data == "details" {
				details++
			}
			if (n.Data == "code" || n.Data == "pre") && !inCode {
				codeText = append(codeText, text(n))
				inCode = true
			}
		case xhtml.CommentNode:
			if !strings.HasPrefix(n.Data, " kusionpr:") {
				problems = append(problems, fmt.Sprintf("HTML comment <!--%s--> rendered", n.Data))
			}
		case xhtml.TextNode:
			if !inCode {
				problems = append(problems, outsideCode(n.Data, w.Mentions)...)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inCode)
		}
	}
	walk(doc, false)
	if details != w.Details {
		problems = append(problems, fmt.Sprintf("%d <details> elements, want %d", details, w.Details))
	}
	for _, d := range w.Data {
		found := false
		for _, t := range codeText {
			if strings.Contains(t, d) {
				found = true
				break
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("%q is not shown as code", d))
		}
	}
	return problems
}

// outsideCode lists what text outside code must not hold.
func outsideCode(t string, mentions []string) []string {
	var problems []string
	for _, s := range []string{"![", "](", "<!--", "</details"} {
		if strings.Contains(t, s) {
			problems = append(problems, fmt.Sprintf("%q outside code in %q", s, t))
		}
	}
	for i := 0; i < len(t); i++ {
		if t[i] != '@' || i+1 == len(t) || !isLoginByte(t[i+1]) || (i > 0 && isLoginByte(t[i-1])) {
			continue
		}
		j := i + 1
		for j < len(t) && (isLoginByte(t[j]) || t[j] == '/' || t[j] == '[' || t[j] == ']') {
			j++
		}
		who := t[i+1 : j]
		ok := false
		for _, m := range mentions {
			if who == m {
				ok = true
			}
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("@-mention %q outside code in %q", who, t))
		}
	}
	return problems
}

func isLoginByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

func text(n *xhtml.Node) string {
	var b strings.Builder
	var f func(*xhtml.Node)
	f = func(n *xhtml.Node) {
		if n.Type == xhtml.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			f(c)
		}
	}
	f(n)
	return b.String()
}
