package report

import (
	"strings"
	"unicode/utf8"
)

// GitHub rejects an issue comment body longer than 65,536 characters, and
// its validation counts characters (Unicode code points), not bytes. Split
// therefore counts runes: counting bytes would also be safe but would waste
// up to three quarters of each comment on non-ASCII text, while counting
// anything coarser (graphemes) could let a part exceed the limit. The
// githubapi package checks lengths the same way (len([]rune(body))).
const (
	defaultSplitLimit    = 65536
	defaultSplitMaxParts = 10
)

// SplitOptions shape the parts Split makes.
type SplitOptions struct {
	// Limit is the most runes in one part, header, footer and Truncated
	// included (default 65536).
	Limit int
	// MaxParts is a hard cap on the number of parts (default 10): when
	// exceeded, the last allowed part ends with Truncated and the rest is
	// dropped.
	MaxParts int
	// Header starts every part but the first, e.g. the hidden marker and
	// "(continued, part i of n)"; i is 1-based. A newline is added when it
	// does not end with one, so that the part's Markdown starts on a line of
	// its own. Its length must not shrink as n grows (true of anything that
	// prints n in decimal).
	Header func(i, n int) string
	// Footer ends every part but the last.
	Footer func(i, n int) string
	// Truncated ends the last part when parts were dropped.
	Truncated string
}

// Split cuts a rendered Markdown comment into parts each at most limit characters (runes),
// cutting only on Markdown boundaries: never inside a fenced code block (``` or ~~~, any fence length,
// matching closers per CommonMark), never inside an open <details>...</details> (nested ones counted),
// preferring blank lines between blocks. When a single block (one <details> section or one code block)
// is itself longer than the limit, it is split into several closed pieces of the same kind: the code
// fence is closed at the cut and reopened (same info string) in the next part, and the <details> is
// closed and reopened with its <summary> followed by " (continued)". Each part is valid Markdown on its own.
// Parts after the first start with header(i, n) and every part but the last ends with footer(i, n).
//
// A body that fits is returned unchanged as the only part. Cuts fall
// between lines; only a single line longer than a whole part is cut inside
// (on a rune boundary, a newline added). Fences are recognised at the top
// level and inside <details> only, not inside lists or block quotes, which
// the preview template does not produce.
func Split(body string, opts SplitOptions) []string {
	if opts.Limit <= 0 {
		opts.Limit = defaultSplitLimit
	}
	if opts.MaxParts <= 0 {
		opts.MaxParts = defaultSplitMaxParts
	}
	if opts.Header == nil {
		opts.Header = func(int, int) string { return "" }
	}
	if opts.Footer == nil {
		opts.Footer = func(int, int) string { return "" }
	}
	if utf8.RuneCountInString(body) <= opts.Limit {
		return []string{body}
	}
	s := &splitter{d: parseDoc(body), o: opts}
	// Headers and footers say "i of n", so their lengths, and with them the
	// number of parts, depend on n: lay out for a guessed n and grow the
	// guess until the layout needs no more parts than it reserved room for.
	// A layout made for g also fits any n <= g, since labels do not shrink
	// as n grows; the final check guards against functions that break that.
	const maxRounds = 8
	// Each part holds at most Limit runes of the body: start from that bound.
	g := min(max(2, (s.d.runes[s.d.lines]+opts.Limit-1)/opts.Limit), opts.MaxParts)
	for round := 0; ; round++ {
		cuts, truncated := s.layout(g)
		n := len(cuts) - 1
		if n > g && round < maxRounds {
			g = n
			continue
		}
		parts := s.assemble(cuts, n, truncated)
		if (n <= g && fits(parts, opts.Limit)) || round >= maxRounds {
			return parts
		}
		g++
	}
}

func fits(parts []string, limit int) bool {
	for _, p := range parts {
		if utf8.RuneCountInString(p) > limit {
			return false
		}
	}
	return true
}

type blockKind uint8

const (
	fenceBlock blockKind = iota
	detailsBlock
)

// container is a fence or <details> open at a line boundary. Containers
// form a persistent stack (each points to its parent) so that every
// boundary can hold its whole context in one pointer.
type container struct {
	kind   blockKind
	parent *container
	depth  int
	// A fence's character and length recognise its closer.
	char byte
	size int
	// open is a fence's opener line, or the <details ...> tag as written.
	open           string
	summary        string
	hasSummary     bool
	summaryPending bool
	// reopen and closer are this container's own; reopenLen and closeLen
	// are for it and all its parents, in runes.
	reopen, closer      string
	reopenLen, closeLen int
}

func (c *container) depthOf() int {
	if c == nil {
		return 0
	}
	return c.depth
}

func (c *container) reopenCost() int {
	if c == nil {
		return 0
	}
	return c.reopenLen
}

func (c *container) closeCost() int {
	if c == nil {
		return 0
	}
	return c.closeLen
}

// Cut categories, best first.
const (
	catTop     = iota // between top-level blocks: costs nothing
	catDetails        // between blocks inside a <details>: closed and reopened
	catFence          // between lines of a code block: closed and reopened
	catOther          // anywhere else between lines (inside a paragraph or table)
	numCats
)

// doc is the body as lines with, for each boundary k (before line k,
// k = 0..L), what is open there and how good a cut there is.
type doc struct {
	body   string
	endsNL bool
	lines  int
	start  []int        // byte offset of line k; start[L] = len(body)
	runes  []int        // rune offset of line k; runes[L] = total runes
	ctx    []*container // open containers at boundary k
	cat    []uint8      // category of boundary k (k >= 1)
	// next[c][k] is the first boundary after k of category c or better, -1 if none.
	next [catOther][]int32
}

func parseDoc(body string) *doc {
	d := &doc{body: body, endsNL: strings.HasSuffix(body, "\n")}
	lines := strings.Count(body, "\n") + 1
	d.start, d.runes, d.ctx = make([]int, 0, lines+1), make([]int, 0, lines+1), make([]*container, 0, lines+1)
	var (
		all    []*container
		cur    *container
		blank  = make([]bool, 0, lines)
		popped = make([]bool, 0, lines)
		r      int
	)
	for off := 0; off < len(body); {
		end := strings.IndexByte(body[off:], '\n')
		if end < 0 {
			end = len(body)
		} else {
			end += off + 1
		}
		line := body[off:end]
		d.start = append(d.start, off)
		d.runes = append(d.runes, r)
		d.ctx = append(d.ctx, cur)
		r += utf8.RuneCountInString(line)
		next := scanLine(cur, line, &all)
		blank = append(blank, isBlank(line))
		popped = append(popped, next.depthOf() < cur.depthOf())
		cur = next
		off = end
	}
	d.lines = len(d.start)
	d.start = append(d.start, len(body))
	d.runes = append(d.runes, r)
	d.ctx = append(d.ctx, cur)

	// Parents are created before their children, so their totals are ready.
	for _, c := range all {
		switch c.kind {
		case fenceBlock:
			c.reopen = c.open
			if !strings.HasSuffix(c.reopen, "\n") {
				c.reopen += "\n"
			}
			c.closer = strings.Repeat(string(c.char), c.size) + "\n"
		case detailsBlock:
			sum := c.summary
			if !c.hasSummary {
				sum = "Details" // what GitHub shows for a <details> without one
			}
			// The blank line ends the HTML block, so Markdown (a fence) may follow.
			c.reopen = c.open + "<summary>" + sum + " (continued)</summary>\n\n"
			c.closer = "</details>\n"
		}
		c.reopenLen = c.parent.reopenCost() + utf8.RuneCountInString(c.reopen)
		c.closeLen = c.parent.closeCost() + utf8.RuneCountInString(c.closer)
	}

	L := d.lines
	d.cat = make([]uint8, L+1)
	for k := 1; k <= L; k++ {
		c := d.ctx[k]
		// A block ends at a blank line, after a line that closed a container,
		// or before a line that opens one.
		clean := blank[k-1] || popped[k-1] || (k < L && d.ctx[k+1].depthOf() > c.depthOf())
		switch {
		case k == L || (c == nil && clean):
			d.cat[k] = catTop
		case c != nil && c.kind == fenceBlock:
			d.cat[k] = catFence
		case c != nil && clean:
			d.cat[k] = catDetails
		default:
			d.cat[k] = catOther
		}
	}
	for c := range d.next {
		nx := make([]int32, L+1)
		nx[L] = -1
		for k := L - 1; k >= 0; k-- {
			if int(d.cat[k+1]) <= c {
				nx[k] = int32(k + 1)
			} else {
				nx[k] = nx[k+1]
			}
		}
		d.next[c] = nx
	}
	return d
}

// scanLine returns what is open after line, given what was open before it.
func scanLine(cur *container, line string, all *[]*container) *container {
	if cur != nil && cur.kind == fenceBlock {
		if isFenceCloser(line, cur.char, cur.size) {
			return cur.parent
		}
		return cur
	}
	// "<details>" may be followed by its "<summary>" on the next line.
	if cur != nil && cur.summaryPending {
		cur.summaryPending = false
		cur.summary, cur.hasSummary = findSummary(line)
	}
	if ch, n, ok := fenceOpener(line); ok {
		c := &container{kind: fenceBlock, parent: cur, depth: cur.depthOf() + 1, char: ch, size: n, open: line}
		*all = append(*all, c)
		return c
	}
	for i := 0; ; {
		j := strings.IndexAny(line[i:], "<`\\")
		if j < 0 {
			return cur
		}
		i += j
		switch {
		case line[i] == '\\':
			i = min(i+2, len(line)) // an escaped character is text
		case line[i] == '`':
			// A code span's text is not HTML: a value shown as code may
			// hold "<details>" (see mdsafe.Code).
			i = codeSpanEnd(line, i)
		case tagAt(line, i, "<details"):
			// A tag whose ">" is on a later line is reopened as a plain one.
			tag, next := "<details>", len(line)
			if gt := strings.IndexByte(line[i:], '>'); gt >= 0 {
				tag, next = line[i:i+gt+1], i+gt+1
			}
			c := &container{kind: detailsBlock, parent: cur, depth: cur.depthOf() + 1, open: tag}
			i = next
			c.summary, c.hasSummary = findSummary(line[i:])
			c.summaryPending = !c.hasSummary
			*all = append(*all, c)
			cur = c
		case tagAt(line, i, "</details"):
			// Outside a fence the innermost container is a <details>; a stray
			// closer with none open changes nothing.
			if cur != nil {
				cur = cur.parent
			}
			i += len("</details")
		default:
			i++
		}
	}
}

// codeSpanEnd returns where the code span opened by the backtick run at i
// ends (after its closing run, of the same length), or the end of that run
// when nothing on the line closes it (the backticks are then text).
// Our comments write code spans on one line.
func codeSpanEnd(line string, i int) int {
	n := 0
	for i+n < len(line) && line[i+n] == '`' {
		n++
	}
	for k := i + n; k < len(line); {
		j := strings.IndexByte(line[k:], '`')
		if j < 0 {
			break
		}
		k += j
		m := 0
		for k+m < len(line) && line[k+m] == '`' {
			m++
		}
		if m == n {
			return k + m
		}
		k += m
	}
	return i + n
}

// tagAt reports whether s has the tag name (lower case) at i, in any case,
// and not as the start of a longer name.
func tagAt(s string, i int, name string) bool {
	if len(s)-i < len(name) {
		return false
	}
	for k := 0; k < len(name); k++ {
		c := s[i+k]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[k] {
			return false
		}
	}
	if i+len(name) == len(s) {
		return true
	}
	switch s[i+len(name)] {
	case '>', ' ', '\t', '\r', '\n', '/':
		return true
	}
	return false
}

// indexTag returns where the tag name first is in s, or -1.
func indexTag(s, name string) int {
	for i := 0; ; {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			return -1
		}
		if i += j; tagAt(s, i, name) {
			return i
		}
		i++
	}
}

// findSummary returns the inner HTML of the first <summary> in line.
func findSummary(line string) (string, bool) {
	a := indexTag(line, "<summary")
	if a < 0 {
		return "", false
	}
	gt := strings.IndexByte(line[a:], '>')
	if gt < 0 {
		return "", false
	}
	from := a + gt + 1
	b := indexTag(line[from:], "</summary")
	if b < 0 {
		return "", false
	}
	return line[from : from+b], true
}

func trimEOL(line string) string {
	line = strings.TrimSuffix(line, "\n")
	return strings.TrimSuffix(line, "\r")
}

func isBlank(line string) bool {
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ', '\t', '\r', '\n':
		default:
			return false
		}
	}
	return true
}

// fenceOpener recognises a CommonMark fence opener: up to three spaces, then
// three or more backticks or tildes; a backtick fence's info string may not
// contain a backtick.
func fenceOpener(line string) (byte, int, bool) {
	s := trimEOL(line)
	i := 0
	for i < len(s) && i < 4 && s[i] == ' ' {
		i++
	}
	if i > 3 || i == len(s) || (s[i] != '`' && s[i] != '~') {
		return 0, 0, false
	}
	ch, j := s[i], i
	for j < len(s) && s[j] == ch {
		j++
	}
	if j-i < 3 || (ch == '`' && strings.IndexByte(s[j:], '`') >= 0) {
		return 0, 0, false
	}
	return ch, j - i, true
}

// isFenceCloser recognises a CommonMark closer of a fence of size ch's: up to
// three spaces, at least as many of the same character, then only spaces.
func isFenceCloser(line string, ch byte, size int) bool {
	s := trimEOL(line)
	i := 0
	for i < len(s) && i < 4 && s[i] == ' ' {
		i++
	}
	if i > 3 {
		return false
	}
	j := i
	for j < len(s) && s[j] == ch {
		j++
	}
	return j-i >= size && strings.Trim(s[j:], " \t") == ""
}

// pos is a cut: the start of line, or off bytes (roff runes) into it.
type pos struct{ line, off, roff int }

type splitter struct {
	d *doc
	o SplitOptions
	g int
	// Header and footer lengths for the guess g, by part.
	pre, post []int
}

func (s *splitter) abs(p pos) int { return s.d.runes[p.line] + p.roff }

func (s *splitter) byteAt(p pos) int { return s.d.start[p.line] + p.off }

// closeAt is what closing the containers open at line boundary k costs.
func (s *splitter) closeAt(k int) int {
	n := s.d.ctx[k].closeCost()
	if n > 0 && k == s.d.lines && !s.d.endsNL {
		n++ // the closer must start a line
	}
	return n
}

func headerLen(h string) int {
	n := utf8.RuneCountInString(h)
	if h != "" && !strings.HasSuffix(h, "\n") {
		n++
	}
	return n
}

// overhead returns the header and footer lengths of part i for n = s.g.
func (s *splitter) overhead(i int) (pre, post int) {
	for len(s.pre) <= i {
		j := len(s.pre)
		h, f := 0, 0
		if j > 1 {
			h = headerLen(s.o.Header(j, s.g))
		}
		if j > 0 {
			f = utf8.RuneCountInString(s.o.Footer(j, s.g))
		}
		s.pre, s.post = append(s.pre, h), append(s.post, f)
	}
	return s.pre[i], s.post[i]
}

// layout cuts the body into parts with room for n = g's headers and
// footers; part i spans cuts[i-1] to cuts[i].
func (s *splitter) layout(g int) (cuts []pos, truncated bool) {
	s.g, s.pre, s.post = g, s.pre[:0], s.post[:0]
	d, limit := s.d, s.o.Limit
	end := pos{line: d.lines}
	cuts = []pos{{}}
	for i := 1; ; i++ {
		from := cuts[len(cuts)-1]
		pre, footer := s.overhead(i)
		open := d.ctx[from.line].reopenCost()
		if pre+open+d.runes[d.lines]-s.abs(from)+s.closeAt(d.lines) <= limit {
			return append(cuts, end), false
		}
		last := i == s.o.MaxParts
		post := footer
		if last {
			post = utf8.RuneCountInString(s.o.Truncated)
		}
		cuts = append(cuts, s.cut(from, pre+open+post, i))
		if last {
			return cuts, true
		}
	}
}

// cut picks where part i, starting at from, ends; fixed is the room its
// header, reopened containers and footer take.
//
// It takes the furthest boundary that fits in the best category, keeping
// blocks whole. But keeping the block after that boundary whole is only
// worth a shorter part if the block fits in the next part: one that does
// not has to be cut anyway, so the part is filled further instead, at the
// next category down, and the big block is split across parts. The last
// part allowed, which ends with Truncated, is cut the same way.
func (s *splitter) cut(from pos, fixed, i int) pos {
	d, limit := s.d, s.o.Limit
	base := s.abs(from)
	best := [numCats]int{-1, -1, -1, -1}
	for k := from.line + 1; k <= d.lines; k++ {
		used := fixed + d.runes[k] - base
		if used > limit {
			break // closers only add, so no later boundary fits either
		}
		if used+s.closeAt(k) <= limit {
			best[d.cat[k]] = k
		}
	}
	e := -1
	for c := 0; c < numCats; c++ {
		e = max(e, best[c])
		if e < 0 {
			continue
		}
		if c == catOther || s.fitsFresh(e, int(d.next[c][e]), i+1) {
			return pos{line: e}
		}
	}
	return s.midLine(from, fixed+d.ctx[from.line].closeCost()+1)
}

// fitsFresh reports whether boundaries e to nx fit in part j on their own.
func (s *splitter) fitsFresh(e, nx, j int) bool {
	if nx < 0 {
		return true
	}
	pre, post := s.overhead(j)
	d := s.d
	return pre+d.ctx[e].reopenCost()+d.runes[nx]-d.runes[e]+s.closeAt(nx)+post <= s.o.Limit
}

// midLine cuts inside the line at from, when even that line is longer than
// a part. fixed includes the newline added before the closers.
func (s *splitter) midLine(from pos, fixed int) pos {
	avail := max(s.o.Limit-fixed, 1) // always advance, even when the options leave no room
	line := s.d.body[s.byteAt(from):s.d.start[from.line+1]]
	off, n := 0, 0
	for off < len(line) && n < avail {
		_, sz := utf8.DecodeRuneInString(line[off:])
		off += sz
		n++
	}
	if off >= len(line) {
		return pos{line: from.line + 1}
	}
	return pos{line: from.line, off: from.off + off, roff: from.roff + n}
}

func (s *splitter) assemble(cuts []pos, n int, truncated bool) []string {
	d := s.d
	parts := make([]string, 0, n)
	var chain []*container
	for i := 1; i <= n; i++ {
		from, to := cuts[i-1], cuts[i]
		var b strings.Builder
		if i > 1 {
			h := s.o.Header(i, n)
			b.WriteString(h)
			if h != "" && !strings.HasSuffix(h, "\n") {
				b.WriteByte('\n')
			}
		}
		chain = chain[:0]
		for c := d.ctx[from.line]; c != nil; c = c.parent {
			chain = append(chain, c)
		}
		for j := len(chain) - 1; j >= 0; j-- {
			b.WriteString(chain[j].reopen)
		}
		seg := d.body[s.byteAt(from):s.byteAt(to)]
		open := d.ctx[to.line]
		if i < n && to.off == 0 && (open == nil || open.kind != fenceBlock) {
			seg = trimBlankLines(seg)
		}
		b.WriteString(seg)
		if to.off > 0 || (open != nil && to.line == d.lines && !d.endsNL) {
			b.WriteByte('\n')
		}
		for c := open; c != nil; c = c.parent {
			b.WriteString(c.closer)
		}
		switch {
		case i < n:
			b.WriteString(s.o.Footer(i, n))
		case truncated:
			b.WriteString(s.o.Truncated)
		}
		parts = append(parts, b.String())
	}
	return parts
}

// trimBlankLines drops the blank lines a part ends with, which a cut after
// them leaves before the closers and the footer; a code block's own blank
// lines are content and must not be passed here.
func trimBlankLines(seg string) string {
	for strings.HasSuffix(seg, "\n") {
		k := strings.LastIndexByte(seg[:len(seg)-1], '\n')
		if k < 0 || !isBlank(seg[k+1:]) {
			break
		}
		seg = seg[:k+1]
	}
	return seg
}
