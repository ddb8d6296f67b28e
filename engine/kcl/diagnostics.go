package kcl

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Error is a program KCL refused: a syntax error, a type error, a failing
// check or assertion. Its messages are KCL's, with the values they quote
// replaced by "…", and without the source lines KCL prints under them: a
// program's line may hold a secret.
type Error struct {
	Diagnostics []Diagnostic
}

// Diagnostic is one thing KCL refused.
type Diagnostic struct {
	// Kind is KCL's name for it: InvalidSyntax, TypeError,
	// EvaluationError, ...
	Kind string
	// Code is KCL's code (E2G22); "" when KCL gave none.
	Code string
	Location
	Message string
	// Related are the other places KCL names: the failing condition of a
	// schema's check block, the attribute's declaration.
	Related []Related
}

// Related is a place a diagnostic names besides its own.
type Related struct {
	Location
	Message string
}

// Location is a place in a program's files.
type Location struct {
	// File is relative to the program's folder, or to the folder of the
	// external package holding it (Package), else absolute.
	File    string
	Package string
	Line    int
	Column  int
}

func (l Location) String() string {
	s := l.File
	if l.Line > 0 {
		s += ":" + strconv.Itoa(l.Line)
		if l.Column > 0 {
			s += ":" + strconv.Itoa(l.Column)
		}
	}
	if l.Package != "" {
		s += " (package " + l.Package + ")"
	}
	return s
}

func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.Location.String())
	b.WriteString(": ")
	b.WriteString(d.Kind)
	if d.Message != "" {
		b.WriteString(": ")
		b.WriteString(d.Message)
	}
	for _, r := range d.Related {
		b.WriteString("; at ")
		b.WriteString(r.Location.String())
		if r.Message != "" {
			b.WriteString(": ")
			b.WriteString(r.Message)
		}
	}
	return b.String()
}

func (e *Error) Error() string {
	if len(e.Diagnostics) == 0 {
		return "KCL refused the program"
	}
	parts := make([]string, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		parts[i] = d.String()
	}
	return strings.Join(parts, "\n")
}

// newError reads what the runtime said when it refused prog: SARIF for
// what the parser and type checker refuse, KCL's text (with colours and
// source lines) for what fails while evaluating. Only locations, kinds and
// messages are kept, the messages redacted.
func newError(text string, prog Program) *Error {
	text = ansi.ReplaceAllString(text, "")
	diags := parseSARIF(text)
	if len(diags) == 0 {
		diags = parseText(text)
	}
	if len(diags) == 0 {
		// Neither form: nothing of it is shown, as it may quote anything.
		diags = []Diagnostic{{Kind: "Error", Message: "KCL's message could not be read, and is not shown (it may quote the program)"}}
	}
	r := newRedactor(prog, diags)
	seen := map[string]bool{}
	var out []Diagnostic
	for _, d := range diags {
		d.Location = relative(d.Location, prog)
		d.Message = r.redact(d.Message)
		for i := range d.Related {
			d.Related[i].Location = relative(d.Related[i].Location, prog)
			d.Related[i].Message = r.redact(d.Related[i].Message)
		}
		// KCL reports some errors twice.
		if k := d.String(); !seen[k] {
			seen[k] = true
			out = append(out, d)
		}
	}
	return &Error{Diagnostics: out}
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

type sarifLog struct {
	Runs []struct {
		Tool struct {
			Driver struct {
				Rules []struct {
					ID   string `json:"id"`
					Name string `json:"name"`
				} `json:"rules"`
			} `json:"driver"`
		} `json:"tool"`
		Results []struct {
			RuleID  string `json:"ruleId"`
			Message struct {
				Text string `json:"text"`
			} `json:"message"`
			Locations        []sarifLocation `json:"locations"`
			RelatedLocations []sarifLocation `json:"relatedLocations"`
		} `json:"results"`
	} `json:"runs"`
}

type sarifLocation struct {
	PhysicalLocation struct {
		ArtifactLocation struct {
			URI string `json:"uri"`
		} `json:"artifactLocation"`
		Region struct {
			StartLine   int `json:"startLine"`
			StartColumn int `json:"startColumn"`
		} `json:"region"`
	} `json:"physicalLocation"`
	Message *struct {
		Text string `json:"text"`
	} `json:"message"`
}

func (l sarifLocation) location() Location {
	p := l.PhysicalLocation
	return Location{File: strings.TrimPrefix(p.ArtifactLocation.URI, "file://"), Line: p.Region.StartLine, Column: p.Region.StartColumn}
}

// parseSARIF reads the SARIF logs in text, one after another.
func parseSARIF(text string) []Diagnostic {
	i := strings.IndexByte(text, '{')
	if i < 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(text[i:]))
	var out []Diagnostic
	for {
		var log sarifLog
		if dec.Decode(&log) != nil {
			return out
		}
		for _, run := range log.Runs {
			names := map[string]string{}
			for _, r := range run.Tool.Driver.Rules {
				names[r.ID] = r.Name
			}
			for _, res := range run.Results {
				d := Diagnostic{Code: res.RuleID, Kind: names[res.RuleID]}
				if d.Kind == "" {
					d.Kind = "Error"
				}
				// The related messages, joined to the first by KCL, are
				// taken from the related locations instead.
				d.Message, _, _ = strings.Cut(res.Message.Text, "; related: ")
				if len(res.Locations) > 0 {
					d.Location = res.Locations[0].location()
				}
				for _, rl := range res.RelatedLocations {
					r := Related{Location: rl.location()}
					if rl.Message != nil {
						r.Message = rl.Message.Text
					}
					d.Related = append(d.Related, r)
				}
				out = append(out, d)
			}
		}
	}
}

var (
	// "error[E2G22]: TypeError" or "EvaluationError": a diagnostic's first line.
	textHeader = regexp.MustCompile(`^\s*(?:error\[(\w+)\]:\s*)?([A-Z][A-Za-z]*)\s*$`)
	// " --> /path/main.k:2:7"
	textLocation = regexp.MustCompile(`^\s*-->\s*(.+):(\d+):(\d+)\s*$`)
	// "2 | password = ...": a line of the program, never kept.
	textSource = regexp.MustCompile(`^\s*\d+\s*\|`)
	// "  |    ^ message": the marker under it, with the message.
	textMarker = regexp.MustCompile(`^\s*\|(.*)$`)
)

// parseText reads KCL's text diagnostics: a header line, then for each
// place " --> file:line:col", the program's lines (skipped) and a marker
// line ending in the message. The first place is the diagnostic's, the
// others related.
func parseText(text string) []Diagnostic {
	var out []Diagnostic
	var d *Diagnostic
	// where the next marker's message goes
	var msg *string
	for _, line := range strings.Split(text, "\n") {
		if m := textLocation.FindStringSubmatch(line); m != nil {
			if d == nil {
				out = append(out, Diagnostic{Kind: "Error"})
				d = &out[len(out)-1]
			}
			ln, _ := strconv.Atoi(m[2])
			col, _ := strconv.Atoi(m[3])
			loc := Location{File: m[1], Line: ln, Column: col}
			if d.File == "" {
				d.Location = loc
				msg = &d.Message
			} else {
				d.Related = append(d.Related, Related{Location: loc})
				msg = &d.Related[len(d.Related)-1].Message
			}
			continue
		}
		if textSource.MatchString(line) {
			continue
		}
		if m := textMarker.FindStringSubmatch(line); m != nil {
			if t := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(m[1]), "^-~")); t != "" && msg != nil && *msg == "" {
				*msg = t
			}
			continue
		}
		if m := textHeader.FindStringSubmatch(line); m != nil {
			out = append(out, Diagnostic{Code: m[1], Kind: m[2]})
			d, msg = &out[len(out)-1], nil
		}
	}
	// A header with no place says nothing useful.
	kept := out[:0]
	for _, d := range out {
		if d.File != "" {
			kept = append(kept, d)
		}
	}
	return kept
}

// relative puts an absolute path from KCL relative to the program's
// folder or to its package's.
func relative(l Location, prog Program) Location {
	if l.File == "" || !filepath.IsAbs(l.File) {
		return l
	}
	if rel, ok := under(l.File, prog.WorkDir); ok {
		l.File = rel
		return l
	}
	for _, p := range prog.Packages {
		if rel, ok := under(l.File, p.Path); ok {
			l.File, l.Package = rel, p.Name
			return l
		}
	}
	return l
}

func under(file, dir string) (string, bool) {
	if dir == "" {
		return "", false
	}
	for _, d := range []string{dir, evalSymlinks(dir)} {
		rel, err := filepath.Rel(d, file)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(rel), true
		}
	}
	return "", false
}

func evalSymlinks(dir string) string {
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		return d
	}
	return dir
}

// minSecret is the shortest value redacted from messages: shorter ones
// (a replica count, "web") would cut words out of KCL's own text.
const minSecret = 4

// redactor takes out of KCL's messages the values they quote: what a type
// error shows in str(...), and any string of the program's own files or
// arguments (a check's message may interpolate one).
type redactor struct {
	values []string
}

func newRedactor(prog Program, diags []Diagnostic) *redactor {
	files := map[string]bool{}
	for _, f := range prog.Files {
		if !filepath.IsAbs(f) {
			f = filepath.Join(prog.WorkDir, f)
		}
		files[filepath.Clean(f)] = true
	}
	// Files of the program's folder KCL names (an imported module of the
	// stack's own), not the external packages' schemas.
	for _, d := range diags {
		locs := []Location{d.Location}
		for _, r := range d.Related {
			locs = append(locs, r.Location)
		}
		for _, l := range locs {
			if _, ok := under(l.File, prog.WorkDir); ok && filepath.IsAbs(l.File) {
				files[filepath.Clean(l.File)] = true
			}
		}
	}
	seen := map[string]bool{}
	r := &redactor{}
	add := func(v string) {
		if len(strings.TrimSpace(v)) >= minSecret && !seen[v] {
			seen[v] = true
			r.values = append(r.values, v)
		}
	}
	for f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, v := range stringLiterals(string(src)) {
			add(v)
		}
	}
	for _, v := range prog.Args {
		add(v)
	}
	// Longest first: a value holding another goes whole.
	sort.Slice(r.values, func(i, j int) bool { return len(r.values[i]) > len(r.values[j]) })
	return r
}

// typedValue is how KCL quotes a value in a type error: str(s3cr3t),
// int(42).
var typedValue = regexp.MustCompile(`\b(str|int|float|bool)\(`)

func (r *redactor) redact(msg string) string {
	msg = redactTyped(msg)
	for _, v := range r.values {
		msg = strings.ReplaceAll(msg, v, "…")
	}
	return msg
}

// redactTyped replaces what is between the parentheses of str(...) and
// its kind with "…", the parentheses balanced.
func redactTyped(msg string) string {
	var b strings.Builder
	for {
		loc := typedValue.FindStringIndex(msg)
		if loc == nil {
			b.WriteString(msg)
			return b.String()
		}
		b.WriteString(msg[:loc[1]])
		depth, end := 1, len(msg)
		for i := loc[1]; i < len(msg); i++ {
			switch msg[i] {
			case '(':
				depth++
			case ')':
				depth--
			}
			if depth == 0 {
				end = i
				break
			}
		}
		b.WriteString("…")
		if end < len(msg) {
			b.WriteByte(')')
			msg = msg[end+1:]
		} else {
			msg = ""
		}
	}
}

// stringLiterals are the strings written in a KCL source: each literal's
// text, or for one with ${...} interpolations the text between them. A
// check's or an assertion's message (a literal after a comma, ending its
// line) is no value and is left out, so that it stays readable.
func stringLiterals(src string) []string {
	var out []string
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case c == '"' || c == '\'':
		default:
			i++
			continue
		}
		raw := i > 0 && (src[i-1] == 'r' || src[i-1] == 'R')
		q := string(c)
		if strings.HasPrefix(src[i:], strings.Repeat(q, 3)) {
			q = strings.Repeat(q, 3)
		}
		start := i
		j := i + len(q)
		var text strings.Builder
		for j < len(src) && !strings.HasPrefix(src[j:], q) {
			if src[j] == '\\' && !raw && j+1 < len(src) {
				text.WriteByte(src[j+1])
				j += 2
				continue
			}
			if len(q) == 1 && src[j] == '\n' {
				break
			}
			text.WriteByte(src[j])
			j++
		}
		end := min(j+len(q), len(src))
		if !isMessage(src, start, end) {
			for _, piece := range interpolated.Split(text.String(), -1) {
				out = append(out, piece)
			}
		}
		i = end
	}
	return out
}

var interpolated = regexp.MustCompile(`\$\{[^}]*\}`)

// isMessage says whether the literal src[start:end] follows a comma and
// ends its line: a check's or an assertion's message.
func isMessage(src string, start, end int) bool {
	before := strings.TrimRight(src[:start], " \t")
	if before == "" || before[len(before)-1] != ',' {
		return false
	}
	rest := src[end:]
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[:nl]
	}
	rest = strings.TrimSpace(rest)
	return rest == "" || strings.HasPrefix(rest, "#")
}

// Kinds says what the diagnostic kinds are and where, for logs that must not hold
// KCL's messages.
func (e *Error) Kinds() string {
	var kinds []string
	for _, d := range e.Diagnostics {
		kinds = append(kinds, fmt.Sprintf("%s at %s", d.Kind, d.Location))
	}
	return strings.Join(kinds, ", ")
}
