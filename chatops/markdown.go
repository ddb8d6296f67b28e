package chatops

import (
	"regexp"
	"strings"
)

// This file finds the lines of a comment that are the text of a top-level
// paragraph, as GitHub renders it: CommonMark (0.29, with GitHub's tables)
// read block by block. Only such a line can hold a command. The scanner is
// conservative: where it cannot tell (a construct that versions of
// CommonMark read differently, a table, a link), it reads the line as not
// a paragraph's, so that a command is missed rather than taken from code,
// a quote, a list, an HTML comment or a <details> a reader does not see.
//
// What is not a top-level paragraph's line, and why a command there does
// not count:
//   - fenced and indented code, and code spans: talking about a command;
//   - block quotes (with their lazy continuation lines): quoting one;
//   - list items and footnotes: enumerating steps, a task list's to-do;
//   - headings and tables (setext underlines, delimiter rows): titles;
//   - HTML blocks, raw HTML inline, and whatever an HTML comment, an open
//     tag or an element such as <details> holds, up to where the raw HTML
//     closes it: the reader does not see it, or not without unfolding it;
//   - link text, destinations and titles, image descriptions, link
//     reference definitions: not a line of text of its own.

// paragraphLines returns, in order, the lines of body (split on "\n")
// that are visible text of a top-level paragraph, starting no code span,
// link or raw HTML.
func paragraphLines(body string) []int {
	s := &scanner{lines: strings.Split(body, "\n")}
	for i, line := range s.lines {
		s.line(i, line)
	}
	s.endParagraph()
	return s.found
}

type scanner struct {
	lines []string
	found []int

	// para holds the indexes of the open paragraph's lines; paraBad is set
	// once it is known not to stay a paragraph (a heading, a table, link
	// reference definitions).
	para    []int
	paraBad bool

	fence *fenceState
	html  *htmlBlock
	// quote: in a block quote, up to the next blank line (lazy lines
	// included). list: in a list; listBlank: a blank line since its last
	// line, so an unindented line that is no item ends it.
	quote, list, listBlank bool

	// raw follows the HTML the comment's raw parts make, across blocks: an
	// unclosed comment or tag, or an open element, hides what comes after.
	raw htmlTokenizer
}

type fenceState struct {
	char byte
	size int
}

type htmlBlock struct {
	// end is what ends the block on a line (none: a blank line);
	// maybeEnd what ends it in some versions of CommonMark only.
	end, maybeEnd []string
	// certain: every version of CommonMark reads the block's lines so far
	// as an HTML block, so their raw HTML is fed to raw as it is.
	certain bool
}

func (s *scanner) line(i int, line string) {
	ind, text := indentation(line)
	blank := strings.TrimSpace(line) == ""
	switch {
	case s.fence != nil:
		if ind < 4 && isFenceClose(text, s.fence) {
			s.fence = nil
		}
		return
	case s.html != nil:
		if len(s.html.end) == 0 && blank {
			s.html = nil
			return
		}
		s.feedRaw(line, s.html.certain)
		low := strings.ToLower(line)
		for _, e := range s.html.maybeEnd {
			if strings.Contains(low, e) {
				// Ended for some readers: what follows is a paragraph's
				// text to them, raw HTML to others.
				s.html.certain = false
			}
		}
		for _, e := range s.html.end {
			if strings.Contains(low, e) {
				s.html = nil
				break
			}
		}
		return
	case blank:
		s.endParagraph()
		s.quote = false
		if s.list {
			s.listBlank = true
		}
		return
	case s.quote:
		s.feedRaw(line, false)
		return
	case s.list:
		if !s.listBlank || ind > 0 || isListItem(text) {
			s.listBlank = false
			s.feedRaw(line, false)
			return
		}
		s.list, s.listBlank = false, false
	}

	if s.para != nil {
		if ind >= 4 {
			s.para = append(s.para, i) // a continuation line, whatever it holds
			return
		}
		if isSetextUnderline(text) {
			// The paragraph is a heading, which this line ends.
			s.paraBad = true
			s.endParagraph()
			return
		}
		if isDelimiterRow(text) {
			// The paragraph's last line heads a table, whose rows run to
			// the next blank line or block.
			s.paraBad = true
			s.para = append(s.para, i)
			return
		}
		interrupts, doubtful := s.interrupts(text)
		if !interrupts {
			s.para = append(s.para, i)
			return
		}
		if doubtful {
			// Some CommonMark versions continue the paragraph with this
			// line: were it followed by an underline, all of it would be
			// a heading. Take none of it.
			s.paraBad = true
		}
		s.endParagraph()
	}
	s.startBlock(i, ind, text, line)
}

// interrupts reports whether text, at most three spaces in, starts a block
// that ends a paragraph; doubtful when CommonMark versions disagree.
func (s *scanner) interrupts(text string) (interrupts, doubtful bool) {
	if _, ok := fenceOpen(text); ok {
		return true, false
	}
	if strings.HasPrefix(text, ">") || isATXHeading(text) || isThematicBreak(text) {
		return true, false
	}
	if isListItem(text) {
		// Only a bullet or "1." with some text after it interrupts.
		return listInterrupts(text), false
	}
	// HTML blocks of kinds 1 to 6 interrupt a paragraph, kind 7 (any
	// complete tag) does not.
	if b := htmlStart(text); b != nil && !b.kind7 {
		return true, !b.certain
	}
	return false, false
}

// listInterrupts: a list item that can interrupt a paragraph is not empty
// and, when ordered, starts at 1.
func listInterrupts(text string) bool {
	marker := 1
	if text[0] != '-' && text[0] != '+' && text[0] != '*' {
		marker = strings.IndexAny(text, ".)") + 1
		if text[:marker-1] != "1" {
			return false
		}
	}
	return strings.TrimSpace(text[marker:]) != ""
}

// startBlock reads a line that is not in a paragraph.
func (s *scanner) startBlock(i, ind int, text, line string) {
	switch {
	case ind >= 4:
		return // indented code
	case strings.HasPrefix(text, ">"):
		s.quote = true
		s.feedRaw(line, false)
		return
	case isListItem(text):
		s.list, s.listBlank = true, false
		s.feedRaw(line, false)
		return
	case isATXHeading(text) || isThematicBreak(text):
		s.feedRaw(line, false)
		return
	}
	if f, ok := fenceOpen(text); ok {
		s.fence = f
		return
	}
	if b := htmlStart(text); b != nil {
		s.feedRaw(line, b.certain)
		s.html = &htmlBlock{end: b.end, maybeEnd: b.maybeEnd, certain: b.certain}
		// The end may be on the opening line, after the opening.
		low := strings.ToLower(text)
		low = low[min(len(low), 2):]
		for _, e := range b.maybeEnd {
			if strings.Contains(low, e) {
				s.html.certain = false
			}
		}
		for _, e := range b.end {
			if strings.Contains(low, e) {
				s.html = nil
				break
			}
		}
		return
	}
	s.para, s.paraBad = []int{i}, false
}

// endParagraph finds the command lines of the open paragraph.
func (s *scanner) endParagraph() {
	if s.para == nil {
		return
	}
	lines := s.para
	s.para = nil
	var b strings.Builder
	starts := make([]int, len(lines))
	for k, i := range lines {
		_, text := indentation(s.lines[i])
		starts[k] = b.Len()
		b.WriteString(text)
		b.WriteByte('\n')
	}
	text := b.String()
	first := strings.TrimSpace(s.lines[lines[0]])
	if s.paraBad || (strings.HasPrefix(first, "[") && strings.Contains(text, "]:")) {
		// A heading, a table or link reference definitions: what raw HTML
		// they hold may still hide what follows.
		s.feedRaw(text, false)
		return
	}
	hidden := s.inline(text, starts)
	for k, i := range lines {
		if !hidden[k] {
			s.found = append(s.found, i)
		}
	}
}

// inline reads a paragraph's text (its lines, without their indentation,
// each ending in "\n") and reports for each line start whether it is
// hidden: inside a code span, raw HTML, a link or an image, or after raw
// HTML that left a comment, a tag or an element open.
func (s *scanner) inline(text string, starts []int) []bool {
	hidden := make([]bool, len(starts))
	next := 0
	mark := func(upTo int, covered bool) {
		// Line starts before upTo are decided: covered, or as raw says.
		for next < len(starts) && starts[next] < upTo {
			hidden[next] = covered || s.raw.hides()
			next++
		}
	}
	brackets := 0
	for i := 0; i < len(text); {
		mark(i+1, brackets > 0)
		c := text[i]
		switch {
		case c == '\\' && i+1 < len(text) && isASCIIPunct(text[i+1]):
			i += 2
		case c == '`':
			n := runLen(text, i, '`')
			if end := closingRun(text, i+n, n); end >= 0 {
				mark(end, true)
				i = end
			} else {
				i += n
			}
		case c == '<':
			if n := autolinkLen(text[i:]); n > 0 {
				i += n
				continue
			}
			if n := rawHTMLLen(text[i:]); n > 0 {
				mark(i+n, true)
				s.raw.feed(text[i : i+n])
				i += n
				continue
			}
			i++
		case c == '[' || (c == '!' && i+1 < len(text) && text[i+1] == '['):
			brackets++
			if c == '!' {
				i++
			}
			i++
		case c == ']':
			if brackets > 0 {
				brackets--
			}
			i++
			if n := linkTailLen(text[i:]); n > 0 {
				mark(i+n, true)
				i += n
			}
		default:
			i++
		}
	}
	mark(len(text)+1, brackets > 0)
	return hidden
}

// feedRaw passes a line that may hold raw HTML to raw. A certain line is
// raw HTML as GitHub reads it; an uncertain one (in a quote or list, a
// heading, a line CommonMark versions read differently) may only make raw
// hide more, never less: its "-->" or "</details>" may be text in a code
// span.
func (s *scanner) feedRaw(text string, certain bool) {
	if certain {
		s.raw.feed(text)
		return
	}
	if s.raw.hides() {
		return
	}
	t := s.raw
	t.feed(text)
	if t.hides() {
		s.raw = t
	}
}

// indentation returns the columns of a line's leading white space (a tab
// goes to the next multiple of 4, as CommonMark counts) and the rest.
func indentation(line string) (int, string) {
	col := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ':
			col++
		case '\t':
			col += 4 - col%4
		default:
			return col, line[i:]
		}
	}
	return col, ""
}

func runLen(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

// closingRun returns the end of the first run of exactly n backticks at or
// after from, -1 if none.
func closingRun(s string, from, n int) int {
	for i := from; i < len(s); {
		j := strings.IndexByte(s[i:], '`')
		if j < 0 {
			return -1
		}
		i += j
		m := runLen(s, i, '`')
		if m == n {
			return i + m
		}
		i += m
	}
	return -1
}

// fenceOpen recognises a fence opener (after the indentation): three or
// more backticks or tildes; a backtick fence's info string holds no
// backtick.
func fenceOpen(text string) (*fenceState, bool) {
	if text == "" || (text[0] != '`' && text[0] != '~') {
		return nil, false
	}
	n := runLen(text, 0, text[0])
	if n < 3 || (text[0] == '`' && strings.IndexByte(text[n:], '`') >= 0) {
		return nil, false
	}
	return &fenceState{char: text[0], size: n}, true
}

func isFenceClose(text string, f *fenceState) bool {
	n := runLen(text, 0, f.char)
	return n >= f.size && strings.Trim(text[n:], " \t") == ""
}

func isATXHeading(text string) bool {
	n := runLen(text, 0, '#')
	return n >= 1 && n <= 6 && (n == len(text) || text[n] == ' ' || text[n] == '\t')
}

// isThematicBreak: three or more of one of "*-_", spaces and tabs between.
func isThematicBreak(text string) bool {
	if text == "" || strings.IndexByte("*-_", text[0]) < 0 {
		return false
	}
	n := 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case text[0]:
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3
}

// isSetextUnderline: a run of "=" or of "-", then only spaces and tabs.
func isSetextUnderline(text string) bool {
	if text == "" || (text[0] != '=' && text[0] != '-') {
		return false
	}
	n := runLen(text, 0, text[0])
	return strings.Trim(text[n:], " \t") == ""
}

// isDelimiterRow reads a line as the delimiter row of a table when it is
// made of "|", ":", "-", spaces and tabs, with a "-" and a "|" or ":"
// (looser than GitHub, which also wants the header's cell count).
func isDelimiterRow(text string) bool {
	dash, sep := false, false
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '-':
			dash = true
		case '|', ':':
			sep = true
		case ' ', '\t':
		default:
			return false
		}
	}
	return dash && sep
}

// isListItem: a bullet ("-", "+", "*") or an ordered marker (up to nine
// digits and "." or ")"), then white space or the line's end. Any of them
// counts, even those that could not interrupt a paragraph: reading more
// lines as list items only misses commands.
func isListItem(text string) bool {
	if text == "" {
		return false
	}
	n := 0
	switch {
	case text[0] == '-' || text[0] == '+' || text[0] == '*':
		n = 1
	default:
		d := 0
		for d < len(text) && d < 10 && '0' <= text[d] && text[d] <= '9' {
			d++
		}
		if d == 0 || d > 9 || d == len(text) || (text[d] != '.' && text[d] != ')') {
			return false
		}
		n = d + 1
	}
	return n == len(text) || text[n] == ' ' || text[n] == '\t'
}

// Block-level tag names of CommonMark's HTML blocks of kind 6. "source" is
// one before 0.31 and "search" after: both are read as uncertain.
var blockTags = map[string]bool{}

func init() {
	for _, t := range strings.Fields(`address article aside base basefont blockquote body caption center col
		colgroup dd details dialog dir div dl dt fieldset figcaption figure footer form frame frameset h1
		h2 h3 h4 h5 h6 head header hr html iframe legend li link main menu menuitem meta nav noframes ol
		optgroup option p param section summary table tbody td tfoot th thead title tr track ul`) {
		blockTags[t] = true
	}
}

type htmlStartKind struct {
	end, maybeEnd []string
	certain       bool
	kind7         bool
}

var (
	tagNameRE = regexp.MustCompile(`^</?([A-Za-z][A-Za-z0-9-]*)`)
	kind7Line = regexp.MustCompile(`^(?:` + openTagPat + `|` + closeTagPat + `)[ \t]*$`)
	// laxKind7Line is a kind-7 line as goldmark also reads one: spaces
	// after "</", and attributes or "/>" on an end tag.
	laxKind7Line = regexp.MustCompile(`^<(?:/[ ]*)?[A-Za-z][A-Za-z0-9-]*(?:` + attribute + `)*[ ]*/?>[ \t]*$`)
	openTagRE    = regexp.MustCompile(`^` + openTagPat)
	closeTagRE   = regexp.MustCompile(`^` + closeTagPat)
)

// The grammar of CommonMark's raw HTML tags, with white space that may
// hold line breaks (a paragraph's text).
const (
	ws          = `[ \t\n]`
	attrName    = `[A-Za-z_:][A-Za-z0-9_.:-]*`
	attrValue   = `(?:[^ \t\n"'=<>` + "`" + `]+|'[^']*'|"[^"]*")`
	attribute   = ws + `+` + attrName + `(?:` + ws + `*=` + ws + `*` + attrValue + `)?`
	openTagPat  = `<[A-Za-z][A-Za-z0-9-]*(?:` + attribute + `)*` + ws + `*/?>`
	closeTagPat = `</[A-Za-z][A-Za-z0-9-]*` + ws + `*>`
)

// htmlStart recognises the start of an HTML block (text is after the
// indentation, which is under four columns); nil if none.
func htmlStart(text string) *htmlStartKind {
	if !strings.HasPrefix(text, "<") {
		return nil
	}
	low := strings.ToLower(text)
	if m := tagNameRE.FindStringSubmatch(low); m != nil {
		name, rest := m[1], low[len(m[0]):]
		endsName := rest == "" || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '>' || strings.HasPrefix(rest, "/>")
		if !strings.HasPrefix(low, "</") && endsName {
			switch name {
			case "script", "pre", "style":
				// "</textarea>" ends them from CommonMark 0.30 on.
				return &htmlStartKind{end: []string{"</script>", "</pre>", "</style>"}, maybeEnd: []string{"</textarea>"}, certain: true}
			case "textarea": // kind 1 from CommonMark 0.30 on
				return &htmlStartKind{end: []string{"</script>", "</pre>", "</style>", "</textarea>"}}
			}
		}
		if endsName && (blockTags[name] || name == "search" || name == "source") {
			return &htmlStartKind{certain: name != "search" && name != "source"}
		}
	}
	switch {
	case strings.HasPrefix(text, "<!--"):
		return &htmlStartKind{end: []string{"-->"}, certain: true}
	case strings.HasPrefix(text, "<?"):
		return &htmlStartKind{end: []string{"?>"}, certain: true}
	case strings.HasPrefix(text, "<![CDATA["):
		return &htmlStartKind{end: []string{"]]>"}, certain: true}
	case len(text) > 2 && text[1] == '!' && isASCIILetter(text[2]):
		// Kind 4: an upper-case letter before 0.31, any letter after.
		return &htmlStartKind{end: []string{">"}, certain: 'A' <= text[2] && text[2] <= 'Z'}
	}
	if kind7Line.MatchString(strings.TrimRight(text, " \t")) {
		switch m := tagNameRE.FindStringSubmatch(low); m[1] {
		case "script", "pre", "style", "textarea":
			// Kind 7 is any tag but these (and an open one is kind 1).
			return nil
		}
		return &htmlStartKind{certain: true, kind7: true}
	}
	if laxKind7Line.MatchString(strings.TrimRight(text, " \t")) {
		// Not a tag to CommonMark ("</ div>"), an HTML block to other
		// renderers: read as one that may hide what follows, so a command
		// under it is not taken.
		return &htmlStartKind{kind7: true}
	}
	return nil
}

// rawHTMLLen is the length of the raw HTML (a tag, comment, processing
// instruction, declaration or CDATA section) s starts with, 0 if none. An
// unclosed comment or section runs to the end: conservative, as text it
// would be shown, but what it hides is then not read.
func rawHTMLLen(s string) int {
	switch {
	case strings.HasPrefix(s, "<!--"):
		if strings.HasPrefix(s, "<!-->") {
			return len("<!-->")
		}
		if strings.HasPrefix(s, "<!--->") {
			return len("<!--->")
		}
		if j := strings.Index(s[4:], "-->"); j >= 0 {
			return 4 + j + 3
		}
		return len(s)
	case strings.HasPrefix(s, "<?"):
		if j := strings.Index(s[2:], "?>"); j >= 0 {
			return 2 + j + 2
		}
		return len(s)
	case strings.HasPrefix(s, "<![CDATA["):
		if j := strings.Index(s, "]]>"); j >= 0 {
			return j + 3
		}
		return len(s)
	case len(s) > 2 && s[1] == '!' && isASCIILetter(s[2]):
		if j := strings.IndexByte(s, '>'); j >= 0 {
			return j + 1
		}
		return len(s)
	}
	if m := openTagRE.FindString(s); m != "" {
		return len(m)
	}
	if m := closeTagRE.FindString(s); m != "" {
		return len(m)
	}
	return 0
}

var (
	uriAutolinkRE   = regexp.MustCompile(`^<[A-Za-z][A-Za-z0-9+.-]{1,31}:[^ \t\n<>]*>`)
	emailAutolinkRE = regexp.MustCompile(`^<[A-Za-z0-9.!#$%&'*+/=?^_` + "`" + `{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*>`)
	// linkTailRE is an inline link's "(destination "title")" after "]",
	// white space (line breaks included) allowed where CommonMark allows it.
	linkTailRE = regexp.MustCompile(`^\(` + ws + `*(?:<[^<>\n]*>|[^ \t\n<][^ \t\n]*?)?(?:` + ws + `+(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\((?:[^()\\]|\\.)*\)))?` + ws + `*\)`)
)

func autolinkLen(s string) int {
	if m := uriAutolinkRE.FindString(s); m != "" {
		return len(m)
	}
	return len(emailAutolinkRE.FindString(s))
}

func linkTailLen(s string) int { return len(linkTailRE.FindString(s)) }

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isASCIIPunct(c byte) bool {
	return strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) >= 0
}
