package report_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
)

// The checker below is written apart from split.go's scanner, from the
// CommonMark rules, so that the two do not share a mistake.
var (
	fenceOpenRE   = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})(.*)$")
	fenceCloseRE  = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})[ \t]*$")
	detailsTagRE  = regexp.MustCompile(`(?i)<(/?)details(?:[\s>/]|$)`)
	codeIDRE      = regexp.MustCompile(`<code>([^<]+)</code>`)
	backtickRunRE = regexp.MustCompile("`+")
)

// walk calls fn for every line of md with its role: "open" and "close" for
// fence delimiters, "code" for lines inside a fence, "text" otherwise. It
// returns an error when a fence or a <details> is left open, or a
// </details> closes nothing.
func walk(md string, fn func(line, role string)) error {
	inFence, char, size, depth := false, byte(0), 0, 0
	for _, line := range strings.Split(strings.TrimSuffix(md, "\n"), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if inFence {
			if m := fenceCloseRE.FindStringSubmatch(line); m != nil && m[1][0] == char && len(m[1]) >= size {
				inFence = false
				fn(line, "close")
			} else {
				fn(line, "code")
			}
			continue
		}
		if m := fenceOpenRE.FindStringSubmatch(line); m != nil && !(m[1][0] == '`' && strings.Contains(m[2], "`")) {
			inFence, char, size = true, m[1][0], len(m[1])
			fn(line, "open")
			continue
		}
		for _, m := range detailsTagRE.FindAllStringSubmatch(withoutCodeSpans(line), -1) {
			if m[1] == "/" {
				depth--
			} else {
				depth++
			}
			if depth < 0 {
				return fmt.Errorf("</details> closes nothing: %q", line)
			}
		}
		fn(line, "text")
	}
	if inFence {
		return fmt.Errorf("unclosed fence")
	}
	if depth != 0 {
		return fmt.Errorf("%d <details> left open", depth)
	}
	return nil
}

// withoutCodeSpans drops the code spans of a line (CommonMark: a run of
// backticks up to the next run of the same length), whose text is not HTML.
func withoutCodeSpans(line string) string {
	runs := backtickRunRE.FindAllStringIndex(line, -1)
	var b strings.Builder
	at := 0
	for i := 0; i < len(runs); i++ {
		open := runs[i]
		for j := i + 1; j < len(runs); j++ {
			if runs[j][1]-runs[j][0] == open[1]-open[0] {
				b.WriteString(line[at:open[0]])
				at, i = runs[j][1], j
				break
			}
		}
	}
	return b.String() + line[at:]
}

// codeLines is the multiset (sorted) of lines inside fences.
func codeLines(md string) []string {
	var out []string
	walk(md, func(line, role string) {
		if role == "code" {
			out = append(out, line)
		}
	})
	slices.Sort(out)
	return out
}

// skeleton is md's lines in order without what Split may add or move:
// blank lines, fence delimiters, </details> and reopened <details>.
func skeleton(md string) []string {
	var out []string
	walk(md, func(line, role string) {
		t := strings.TrimSpace(line)
		if role == "open" || role == "close" || t == "" || t == "</details>" || strings.HasSuffix(t, " (continued)</summary>") {
			return
		}
		out = append(out, line)
	})
	return out
}

func header(i, n int) string {
	return fmt.Sprintf("<!-- kusionpr:preview stack=prod part=%d -->\n*Stack `prod`, continued (%d of %d)*\n\n", i, i, n)
}

func footer(i, n int) string {
	return fmt.Sprintf("\n\n*Continued in the next comment (%d of %d).*", i+1, n)
}

const truncated = "\n\n> [!NOTE]\n> This preview is too long for comments: the rest is in the job summary."

// strip removes part i's header and footer (or Truncated), failing when
// they are not where they belong.
func strip(t *testing.T, parts []string, i int, opts report.SplitOptions, wantTruncated bool) string {
	t.Helper()
	p, n := parts[i-1], len(parts)
	if i > 1 && opts.Header != nil {
		h := opts.Header(i, n)
		if !strings.HasPrefix(p, h) {
			t.Fatalf("part %d of %d does not start with its header:\n%.200s", i, n, p)
		}
		p = strings.TrimPrefix(p, h)
	}
	end := ""
	switch {
	case i < n && opts.Footer != nil:
		end = opts.Footer(i, n)
	case i == n && wantTruncated:
		end = opts.Truncated
	}
	if !strings.HasSuffix(p, end) {
		t.Fatalf("part %d of %d does not end with %q:\n...%s", i, n, end, p[max(0, len(p)-200):])
	}
	return strings.TrimSuffix(p, end)
}

// checkParts checks what holds of every split: each part fits and is valid
// Markdown on its own, and, unless parts were dropped, together they keep
// every line of the body in order.
func checkParts(t *testing.T, body string, parts []string, opts report.SplitOptions, wantTruncated bool) {
	t.Helper()
	if len(parts) == 0 {
		t.Fatal("no parts")
	}
	if opts.MaxParts > 0 && len(parts) > opts.MaxParts {
		t.Errorf("%d parts, more than MaxParts %d", len(parts), opts.MaxParts)
	}
	var joined strings.Builder
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > opts.Limit {
			t.Errorf("part %d has %d runes, more than %d", i+1, n, opts.Limit)
		}
		if !utf8.ValidString(p) {
			t.Errorf("part %d is not valid UTF-8", i+1)
		}
		if err := walk(p, func(string, string) {}); err != nil {
			t.Errorf("part %d is not valid on its own: %v\n%s", i+1, err, p)
		}
		joined.WriteString(strip(t, parts, i+1, opts, wantTruncated))
	}
	if wantTruncated {
		if !strings.HasSuffix(parts[len(parts)-1], opts.Truncated) {
			t.Errorf("the last part does not end with Truncated")
		}
		return
	}
	if got, want := skeleton(joined.String()), skeleton(body); !slices.Equal(got, want) {
		t.Errorf("the parts do not keep the body's lines in order: %d lines, want %d", len(got), len(want))
	}
	if got, want := codeLines(joined.String()), codeLines(body); !slices.Equal(got, want) {
		t.Errorf("the parts do not keep the code lines: %d, want %d", len(got), len(want))
	}
}

// detailsBlocks renders n blocks the way preview.md.tmpl does.
func detailsBlocks(n int, line func(i, j int) string) string {
	var b strings.Builder
	b.WriteString("<!-- kusionpr:preview stack=prod -->\n### :memo: Preview of stack `prod`\n\n#### Changes")
	for i := range n {
		fmt.Fprintf(&b, "\n\n<details><summary>~ <b>Update</b> <code>v1:ConfigMap:app:cm-%04d</code> (%d fields)</summary>\n\n```diff\n", i, 5+i%11)
		for j := range 5 + i%11 {
			b.WriteString(line(i, j))
		}
		b.WriteString("```\n</details>")
	}
	b.WriteString("\n")
	return b.String()
}

func diffLine(i, j int) string {
	return fmt.Sprintf("- data.key%d: \"old-%d-%d\"\n+ data.key%d: \"new-%d-%d\"\n", j, i, j, j, i, j)
}

func TestSplitShort(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		limit int
		parts int
	}{
		{"empty", "", 0, 1},
		{"short", "<!-- m -->\n### Preview\n\n```diff\n+ a\n```\n", 0, 1},
		{"exactly the limit in runes, four times in bytes", strings.Repeat("🚀", 100), 100, 1},
		{"one rune over", strings.Repeat("🚀", 101), 100, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := report.SplitOptions{Limit: tt.limit}
			parts := report.Split(tt.body, opts)
			if len(parts) != tt.parts {
				t.Fatalf("%d parts, want %d: %q", len(parts), tt.parts, parts)
			}
			if tt.parts == 1 && parts[0] != tt.body {
				t.Errorf("the body changed: %q", parts[0])
			}
		})
	}
}

func TestSplit(t *testing.T) {
	giantDetails := "<!-- m -->\n### Preview\n\n<details><summary>~ <b>Update</b> <code>big</code></summary>\n\n```diff\n" +
		strings.Repeat("- data.a: \"one\"\n+ data.a: \"two\"\n", 600) + "```\n</details>\n"
	nested := "Intro.\n\n<details><summary>outer</summary>\n\nSome text.\n\n<details open>\n<summary>inner</summary>\n\n~~~yaml title=\"cm.yaml\"\n" +
		strings.Repeat("key: value\n", 2000) + "~~~\n</details>\n\nAfter the inner one.\n</details>\n\nOutro.\n"
	var fences strings.Builder
	for i := range 40 {
		// Lines that look like fences but do not close the one they are in.
		fmt.Fprintf(&fences, "`````md\n```go\nfmt.Println(%d)\n```\n~~~\n", i)
		fences.WriteString(strings.Repeat("inside five backticks\n", 30))
		fences.WriteString("````\n`````\n\n   ~~~~ info with `backticks` is fine for tildes\n")
		fences.WriteString(strings.Repeat("tilde line ~~~\n", 30))
		fences.WriteString("```\n~~~~~~   \n\n")
	}

	tests := []struct {
		name  string
		body  string
		opts  report.SplitOptions
		trunc bool
		check func(t *testing.T, parts []string)
	}{
		{
			name: "many details with diff fences",
			body: detailsBlocks(300, diffLine),
			opts: report.SplitOptions{Limit: 4000},
			check: func(t *testing.T, parts []string) {
				for i, p := range parts {
					if strings.Contains(p, "(continued)</summary>") {
						t.Errorf("part %d cuts a <details> that fits in a part", i+1)
					}
				}
			},
		},
		{
			name: "one giant code block",
			body: "Intro.\n\n```go title=\"main.go\"\n" + strings.Repeat("fmt.Println(\"hello, world\")\n", 1000) + "```\n\nOutro.\n",
			opts: report.SplitOptions{Limit: 3000},
			check: func(t *testing.T, parts []string) {
				if len(parts) < 5 {
					t.Errorf("%d parts", len(parts))
				}
				for i, p := range parts {
					if c := strings.Count(p, "```go title=\"main.go\"\n"); c != 1 {
						t.Errorf("part %d opens the fence %d times, want once with its info string", i+1, c)
					}
				}
			},
		},
		{
			name: "one giant details with a giant fence",
			body: giantDetails,
			opts: report.SplitOptions{Limit: 2500},
			check: func(t *testing.T, parts []string) {
				for i, p := range parts[1:] {
					want := header(i+2, len(parts)) + "<details><summary>~ <b>Update</b> <code>big</code> (continued)</summary>\n\n```diff\n"
					if !strings.HasPrefix(p, want) {
						t.Errorf("part %d does not reopen the details and the fence:\n%.300s", i+2, p)
					}
				}
				if !strings.HasPrefix(parts[0], "<!-- m -->\n### Preview\n\n<details><summary>~ <b>Update</b> <code>big</code></summary>") {
					t.Errorf("the first part does not fill with the block's start:\n%.300s", parts[0])
				}
			},
		},
		{
			name: "nested details",
			body: nested,
			opts: report.SplitOptions{Limit: 3000},
			check: func(t *testing.T, parts []string) {
				reopened := 0
				for _, p := range parts {
					if strings.Contains(p, "<details><summary>outer (continued)</summary>\n\n<details open><summary>inner (continued)</summary>\n\n~~~yaml title=\"cm.yaml\"\n") {
						reopened++
					}
				}
				if reopened < len(parts)-2 {
					t.Errorf("%d of %d parts reopen both details and the fence", reopened, len(parts))
				}
			},
		},
		{
			name: "CommonMark fence lengths and characters",
			body: fences.String(),
			opts: report.SplitOptions{Limit: 2000},
		},
		{
			name: "multibyte text near the limit",
			body: detailsBlocks(200, func(i, j int) string {
				return fmt.Sprintf("- data.région-%d: \"café é\"\n+ data.région-%d: \"🚀🚀🚀 décollage %d\"\n", j, j, i)
			}),
			opts: report.SplitOptions{Limit: 3000, Header: func(i, n int) string { return fmt.Sprintf("<!-- 🚀 part=%d -->\n_suite %d/%d_ é\n\n", i, i, n) }},
			check: func(t *testing.T, parts []string) {
				most, overBytes := 0, false
				for _, p := range parts {
					most = max(most, utf8.RuneCountInString(p))
					overBytes = overBytes || len(p) > 3000
				}
				if !overBytes {
					t.Error("no part has more bytes than the limit: bytes, not runes, were counted")
				}
				if most < 2700 {
					t.Errorf("the longest part has %d runes: parts are not filled", most)
				}
			},
		},
		{
			name:  "MaxParts cap",
			body:  detailsBlocks(300, diffLine),
			opts:  report.SplitOptions{Limit: 3000, MaxParts: 3, Truncated: truncated},
			trunc: true,
			check: func(t *testing.T, parts []string) {
				if len(parts) != 3 {
					t.Errorf("%d parts, want 3", len(parts))
				}
				if !strings.HasPrefix(parts[2], header(3, 3)) {
					t.Errorf("the last part is not labelled 3 of 3")
				}
			},
		},
		{
			name:  "MaxParts 1",
			body:  detailsBlocks(300, diffLine),
			opts:  report.SplitOptions{Limit: 3000, MaxParts: 1, Truncated: truncated},
			trunc: true,
		},
		{
			name: "an unclosed fence and details at the end, no final newline",
			body: "<details><summary>s</summary>\n\n```\n" + strings.Repeat("x = 1\n", 1000) + "x = 2",
			opts: report.SplitOptions{Limit: 1000},
		},
		{
			name: "the default limit",
			body: detailsBlocks(400, diffLine),
			opts: report.SplitOptions{},
			check: func(t *testing.T, parts []string) {
				if len(parts) < 3 {
					t.Errorf("%d parts", len(parts))
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			if opts.Header == nil {
				opts.Header = header
			}
			if opts.MaxParts == 0 && tt.name != "the default limit" {
				opts.MaxParts = 1000
			}
			opts.Footer = footer
			parts := report.Split(tt.body, opts)
			if opts.Limit == 0 {
				opts.Limit = 65536
			}
			if len(parts) < 2 && opts.MaxParts != 1 {
				t.Fatalf("the body was not split: %d parts", len(parts))
			}
			checkParts(t, tt.body, parts, opts, tt.trunc)
			if tt.check != nil {
				tt.check(t, parts)
			}
		})
	}
}

// A line longer than a part is the one thing cut inside a line.
func TestSplitLongLine(t *testing.T) {
	long := strings.Repeat("é🚀ab ", 2000)
	for _, tt := range []struct{ name, before, after string }{
		{"paragraph", "", "\n"},
		{"fence", "```text\n", "\n```\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.before + long + tt.after
			opts := report.SplitOptions{Limit: 1000, MaxParts: 100}
			parts := report.Split(body, opts)
			if len(parts) < 10 {
				t.Fatalf("%d parts", len(parts))
			}
			var got strings.Builder
			for i, p := range parts {
				if n := utf8.RuneCountInString(p); n > opts.Limit {
					t.Errorf("part %d has %d runes", i+1, n)
				}
				if !utf8.ValidString(p) {
					t.Errorf("part %d cuts a rune", i+1)
				}
				if err := walk(p, func(line, role string) {
					if role != "open" && role != "close" {
						got.WriteString(line)
					}
				}); err != nil {
					t.Errorf("part %d: %v", i+1, err)
				}
			}
			if got.String() != long {
				t.Errorf("the line was not kept whole across the parts")
			}
		})
	}
}

// randomBlocks writes Markdown of paragraphs, fences of both kinds and
// lengths (with fence-like lines inside) and nested <details>.
func randomBlocks(r *rand.Rand, b *strings.Builder, depth int) {
	for range 1 + r.IntN(6) {
		switch k := r.IntN(4); {
		case k == 0:
			for j := range 1 + r.IntN(4) {
				fmt.Fprintf(b, "Text %d é🚀 line %d.\n", r.IntN(1000), j)
			}
		case k == 1 || depth >= 3:
			char := string("`~"[r.IntN(2)])
			size := 3 + r.IntN(3)
			fmt.Fprintf(b, "%s%s%s\n", strings.Repeat(" ", r.IntN(4)), strings.Repeat(char, size), []string{"", "diff", "yaml title=x"}[r.IntN(3)])
			for j := range r.IntN(120) {
				switch r.IntN(10) {
				case 0:
					b.WriteString(strings.Repeat(char, size-1) + "\n") // too short to close
				case 1:
					b.WriteString("<details><summary>not a tag here</summary>\n")
				case 2:
					b.WriteString("\n")
				default:
					fmt.Fprintf(b, "+ code %d-%d\n", depth, j)
				}
			}
			b.WriteString(strings.Repeat(char, size+r.IntN(2)) + "\n")
		default:
			if r.IntN(2) == 0 {
				fmt.Fprintf(b, "<details><summary>block %d</summary>\n\n", r.IntN(1000))
			} else {
				fmt.Fprintf(b, "<details open>\n<summary>block %d</summary>\n\n", r.IntN(1000))
			}
			randomBlocks(r, b, depth+1)
			b.WriteString("</details>\n")
		}
		if r.IntN(3) > 0 {
			b.WriteString("\n")
		}
	}
}

// TestSplitRandom checks the invariants on many random bodies and limits.
func TestSplitRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		var b strings.Builder
		for b.Len() < 2000+r.IntN(30000) {
			randomBlocks(r, &b, 0)
		}
		body := b.String()
		opts := report.SplitOptions{Limit: 600 + r.IntN(5000), MaxParts: 1000, Header: header, Footer: footer}
		parts := report.Split(body, opts)
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkParts(t, body, parts, opts, false) })
		if t.Failed() {
			break
		}
	}
}

// bigPreview is a stack of n ConfigMaps: most updated in two fields, one in
// five created, a few drifted.
func bigPreview(n int) (*engine.Preview, []string) {
	p := &engine.Preview{Project: "shop", Workspace: "prod", Stack: "prod", PriorRevision: 41, ChangeSteps: map[string]*engine.Step{}}
	var ids []string
	for i := range n {
		ns, name := fmt.Sprintf("team-%02d", i%37), fmt.Sprintf("settings-%05d", i)
		id := "v1:ConfigMap:" + ns + ":" + name
		to := &model.Resource{ID: id, Type: model.Kubernetes, Attributes: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app.kubernetes.io/name": "shop", "app.kubernetes.io/part-of": ns}},
			"data":     map[string]any{"LOG_LEVEL": "info", "MAX_CONNECTIONS": fmt.Sprint(100 + i%50), "GREETING": "Grüße aus Zürich 🚀"},
		}}
		st := &engine.Step{ID: id, To: to}
		if i%5 == 0 {
			st.Action = engine.Create
		} else {
			st.Action = engine.Update
			st.Changes = []engine.FieldChange{
				{Path: "data.LOG_LEVEL", Op: "replace", From: "debug", To: "info"},
				{Path: "data.MAX_CONNECTIONS", Op: "replace", From: fmt.Sprint(90 + i%50), To: fmt.Sprint(100 + i%50)},
			}
		}
		if i%97 == 1 {
			st.Drift = []engine.FieldChange{{Path: "data.LOG_LEVEL", Op: "replace", From: "info", To: "debug"}}
		}
		p.StepKeys = append(p.StepKeys, id)
		p.ChangeSteps[id] = st
		ids = append(ids, id)
	}
	return p, ids
}

func renderMarkdown(tb testing.TB, p *engine.Preview) string {
	tb.Helper()
	r, err := report.New()
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.Render(&buf, report.Markdown, p, nil); err != nil {
		tb.Fatal(err)
	}
	return buf.String()
}

func TestSplitRealisticPreview(t *testing.T) {
	p, ids := bigPreview(10000)
	start := time.Now()
	body := renderMarkdown(t, p)
	rendered := time.Now()
	opts := report.SplitOptions{Limit: 65536, MaxParts: 1000, Header: header, Footer: footer, Truncated: truncated}
	parts := report.Split(body, opts)
	split := time.Now()

	checkParts(t, body, parts, opts, false)
	seen := map[string]bool{}
	most := 0
	for _, part := range parts {
		most = max(most, utf8.RuneCountInString(part))
		for _, m := range codeIDRE.FindAllStringSubmatch(part, -1) {
			seen[m[1]] = true
		}
	}
	for _, id := range ids {
		if !seen[id] {
			t.Errorf("%s is in no part", id)
		}
	}
	for i, part := range parts {
		if strings.Contains(part, "(continued)</summary>") {
			t.Errorf("part %d cuts a resource's <details>, though each fits in a part", i+1)
		}
	}
	t.Logf("%d resources: %d runes (%d bytes) rendered in %v, split in %v into %d parts, the longest %d runes",
		len(ids), utf8.RuneCountInString(body), len(body), rendered.Sub(start), split.Sub(rendered), len(parts), most)
}

func BenchmarkSplit10000(b *testing.B) {
	p, _ := bigPreview(10000)
	body := renderMarkdown(b, p)
	opts := report.SplitOptions{Limit: 65536, MaxParts: 1000, Header: header, Footer: footer, Truncated: truncated}
	b.SetBytes(int64(len(body)))
	var parts []string
	for b.Loop() {
		parts = report.Split(body, opts)
	}
	b.ReportMetric(float64(len(parts)), "parts")
}
