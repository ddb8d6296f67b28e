// Package mdsafe is the vocabulary every comment, reply and check run uses
// to put a value from a repository (a resource id, a project, stack or
// folder name, an error message, an attribute) into GitHub Markdown as
// data, never as markup: each function escapes for one place a value can
// land.
//
//   - Code: inline, in Markdown text (headings, paragraphs, emphasis).
//   - HTML: inside an HTML element we write (<summary>, <code>, a table cell
//     of HTML).
//   - Fence: a fenced code block of its own, for long or multi-line text.
//   - CommentValue: inside the HTML comment of a hidden marker.
//   - Plain: a word we expect to be plain (a release phase), as is when it
//     is, as code otherwise; Sentence, the same for a sentence of ours.
//
// GitHub renders nothing inside code: no HTML, no image, no link, no
// @-mention (it notifies nobody), no #123 reference, no :emoji:. So values
// go inside code wherever they land, and the functions make sure nothing
// in the value ends the code early. Templates get the same functions by
// FuncMap.
package mdsafe

import (
	"fmt"
	"strings"
	"text/template"
	"unicode"
	"unicode/utf8"
)

// Code returns s as an inline code span that s cannot break out of: the
// span's backtick fence is longer than any run of backticks in s, and a
// space pads s when it starts or ends with a backtick (CommonMark strips
// one space from each end, so the padding does not show). White space runs,
// line breaks included, become one space, since a line break in a
// paragraph could end it (a blank line) or start a block; control and
// bidirectional formatting characters become U+FFFD.
func Code(s string) string {
	s = oneLine(s)
	if s == "" {
		// A span of only a space keeps it (nothing to strip): an empty value
		// still shows as an empty piece of code.
		return "` `"
	}
	ticks := strings.Repeat("`", longestRun(s, '`')+1)
	if s[0] == '`' || s[len(s)-1] == '`' {
		return ticks + " " + s + " " + ticks
	}
	return ticks + s + ticks
}

// HTML returns s escaped for text inside an HTML element: '&', '<', '>',
// quotes and backticks become character references, so s can neither
// close the element, open a tag or a comment, nor (in an HTML block,
// where GitHub reads no Markdown) start a code span the splitter of long
// comments would misread. Line breaks become spaces, as a blank line ends
// an HTML block and turns what follows into Markdown. Put the result
// inside <code> so that an @-mention or a link in it stays text.
func HTML(s string) string {
	s = oneLine(s)
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		case '\'':
			b.WriteString("&#39;")
		case '`':
			b.WriteString("&#96;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Fence returns content as a fenced code block with the info string info
// (a language such as "diff", ours, never a value), ending with the closing
// fence (no line break after it). The
// fence is backticks, at least three and more than any run of backticks in
// content, so no line of content closes it. Control and bidirectional
// formatting characters other than tabs and line breaks become U+FFFD.
func Fence(info, content string) string {
	content = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r == '\r' {
			return -1
		}
		return visible(r)
	}, content)
	if content != "" && !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	ticks := strings.Repeat("`", max(3, longestRun(content, '`')+1))
	return ticks + info + "\n" + content + ticks
}

// CommentValue returns s for a hidden marker, inside an HTML comment:
// every byte but letters, digits and "-._~/+,:=@" is percent-encoded, so
// s holds no space (the marker's separator), no "<" or ">" (nothing can
// end the comment or open another), and tells apart any two values. A
// plain folder name such as apps/web/dev is unchanged, so markers written
// before stay found.
func CommentValue(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if commentSafe(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func commentSafe(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~/+,:=@", c) >= 0
}

// CommentText returns s, a marker's text made of CommentValues and single
// spaces, with whatever else could end or break the comment percent-encoded
// ('%' and spaces are left, so CommentText of CommentText is the same).
func CommentText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if commentSafe(c) || c == ' ' || c == '%' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// Plain returns s as it is when it is made only of ASCII letters, digits,
// spaces, '.' and '-' (nothing Markdown or GitHub reads as markup inside a
// line), and as Code otherwise.
func Plain(s string) string {
	if s == "" {
		return s
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == ' ' || c == '.' || c == '-':
		default:
			return Code(s)
		}
	}
	return s
}

// Sentence returns s as it is when it is a sentence with nothing Markdown
// or GitHub reads as markup inside a line: ASCII letters, digits, spaces
// and the punctuation ".,;'()-", and ':' only before a space or at the end
// (so no :emoji: can form); as Code otherwise.
func Sentence(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte(" .,;'()-", c) >= 0:
		case c == ':' && (i == len(s)-1 || s[i+1] == ' '):
		default:
			return Code(s)
		}
	}
	return s
}

// Funcs are the functions above for templates, under the names code,
// htmlText, fence, commentValue, plain and sentence. They take any value and
// format it with fmt.Sprint, so typed strings (a phase, an action) need no
// conversion.
func Funcs() template.FuncMap {
	return template.FuncMap{
		"code":         func(v any) string { return Code(fmt.Sprint(v)) },
		"htmlText":     func(v any) string { return HTML(fmt.Sprint(v)) },
		"fence":        func(info string, v any) string { return Fence(info, fmt.Sprint(v)) },
		"commentValue": func(v any) string { return CommentValue(fmt.Sprint(v)) },
		"plain":        func(v any) string { return Plain(fmt.Sprint(v)) },
		"sentence":     func(v any) string { return Sentence(fmt.Sprint(v)) },
	}
}

// oneLine makes s one line of visible text: white space runs become one
// space, the ends are trimmed, and invisible control characters are shown
// as U+FFFD.
func oneLine(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(visible(r))
	}
	return b.String()
}

// visible replaces a control character, or a character that reorders or
// hides text (bidirectional overrides and isolates, zero-width marks), by
// U+FFFD, so what a reader sees is what the value holds.
func visible(r rune) rune {
	switch {
	case r == utf8.RuneError:
		return r
	case unicode.IsControl(r):
		return utf8.RuneError
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
		return utf8.RuneError
	}
	return r
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	longest, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			longest = max(longest, n)
		} else {
			n = 0
		}
	}
	return longest
}
