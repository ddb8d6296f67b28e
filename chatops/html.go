package chatops

import "strings"

// htmlTokenizer follows the raw HTML of a comment, coarsely, as a browser
// reads it: whether it is inside a comment, a tag, a declaration or an
// element whose text is not markup (<script>, <textarea>, ...), and how
// many elements that hold or hide blocks (<details>, <div>, <table>, <a>,
// ...) are open. The Markdown GitHub renders between raw parts lands
// there: in a comment or an open <details> a reader does not see it.
type htmlTokenizer struct {
	state tokState
	// quote is the quote of an attribute value being read in a tag.
	quote byte
	// eq: the last thing read in the tag was "=" (a quote opens a value).
	eq bool
	// closing: the tag being read is an end tag; name its name, so far.
	closing bool
	name    []byte
	nameEnd bool
	// rawEnd is the end tag that ends a raw text element ("</script").
	rawEnd string
	depth  int
}

type tokState uint8

const (
	tokData tokState = iota
	tokTag
	tokComment
	tokBogus // <!DOCTYPE ...>, <?...>, <![CDATA[...: up to ">"
	tokRawText
)

// hides reports whether what comes next is hidden or inside an element.
func (t *htmlTokenizer) hides() bool { return t.state != tokData || t.depth > 0 }

// containers are the elements whose content a Markdown block can land in
// and which hide it, fold it or make it something else than a paragraph's
// text: code (<pre>, <code>), list items, headings, table parts. Those
// whose end tag is optional (li, td, ...) count as open until it comes:
// a command is missed rather than taken from inside one. Left out: void
// elements (<img>, <br>), which hold nothing, <p>, and unknown names
// (GitHub drops unknown tags and keeps their text).
var containers = map[string]bool{}

// rawText elements hold text, not markup, up to their end tag.
var rawText = map[string]bool{
	"script": true, "style": true, "textarea": true, "title": true, "xmp": true,
	"iframe": true, "noembed": true, "noframes": true, "noscript": true, "plaintext": true,
}

func init() {
	for _, n := range strings.Fields(`a address article aside audio blockquote canvas center details dialog
		dir div dl fieldset figure footer form header main map math menu nav object ol picture section select
		summary svg table template ul video pre code li dt dd h1 h2 h3 h4 h5 h6 thead tbody tfoot tr td th
		caption figcaption option optgroup head`) {
		containers[n] = true
	}
}

// feed reads raw HTML.
func (t *htmlTokenizer) feed(s string) {
	for i := 0; i < len(s); {
		switch t.state {
		case tokData:
			j := strings.IndexByte(s[i:], '<')
			if j < 0 {
				return
			}
			i += j
			rest := s[i:]
			switch {
			case strings.HasPrefix(rest, "<!--"):
				t.state = tokComment
				i += 4
				// "<!-->" and "<!--->" are empty comments, closed at once.
				if strings.HasPrefix(s[i:], ">") {
					t.state, i = tokData, i+1
				} else if strings.HasPrefix(s[i:], "->") {
					t.state, i = tokData, i+2
				}
			case len(rest) > 1 && (rest[1] == '!' || rest[1] == '?'):
				t.state = tokBogus
				i += 2
			case len(rest) > 2 && rest[1] == '/' && isASCIILetter(rest[2]):
				t.startTag(true)
				i += 2
			case len(rest) > 1 && isASCIILetter(rest[1]):
				t.startTag(false)
				i++
			default:
				i++
			}
		case tokComment:
			j := strings.Index(s[i:], "-->")
			k := strings.Index(s[i:], "--!>")
			switch {
			case j >= 0 && (k < 0 || j < k):
				t.state, i = tokData, i+j+3
			case k >= 0:
				t.state, i = tokData, i+k+4
			default:
				return
			}
		case tokBogus:
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				return
			}
			t.state, i = tokData, i+j+1
		case tokRawText:
			j := strings.Index(strings.ToLower(s[i:]), t.rawEnd)
			if j < 0 {
				return
			}
			i += j
			// "</scripts" does not end a <script>.
			if k := i + len(t.rawEnd); k < len(s) && strings.IndexByte(" \t\n/>", s[k]) < 0 {
				i = k
				continue
			}
			i += 2
			t.startTag(true)
		case tokTag:
			i = t.tag(s, i)
		}
	}
}

func (t *htmlTokenizer) startTag(closing bool) {
	t.state, t.closing, t.quote, t.eq, t.name, t.nameEnd = tokTag, closing, 0, false, t.name[:0], false
}

// tag reads a tag's name and attributes from s[i:], up to its ">".
func (t *htmlTokenizer) tag(s string, i int) int {
	for ; i < len(s); i++ {
		c := s[i]
		if t.quote != 0 {
			if c == t.quote {
				t.quote = 0
			}
			continue
		}
		if !t.nameEnd {
			if c != ' ' && c != '\t' && c != '\n' && c != '/' && c != '>' {
				t.name = append(t.name, lower(c))
				continue
			}
			t.nameEnd = true
		}
		switch c {
		case '>':
			t.endTag()
			return i + 1
		case '=':
			t.eq = true
		case '"', '\'':
			if t.eq {
				t.quote = c
			}
			t.eq = false
		case ' ', '\t', '\n':
		default:
			t.eq = false
		}
	}
	return i
}

func (t *htmlTokenizer) endTag() {
	name := string(t.name)
	t.state = tokData
	switch {
	case t.closing:
		if containers[name] && t.depth > 0 {
			t.depth--
		}
	case rawText[name]:
		t.state, t.rawEnd = tokRawText, "</"+name
	case containers[name]:
		t.depth++
	}
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
