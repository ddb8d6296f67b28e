package mdsafe_test

import (
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/mdcheck"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	xhtml "golang.org/x/net/html"
)

func TestCode(t *testing.T) {
	tests := []struct{ in, want string }{
		{"apps/web/dev", "`apps/web/dev`"},
		{"", "` `"},
		{"a`b", "``a`b``"},
		{"`a", "`` `a ``"},
		{"a``", "``` a`` ```"},
		{"a ``b` c", "```a ``b` c```"},
		{"a\n\n# heading\r\n\tb", "`a # heading b`"},
		{"  padded  ", "`padded`"},
		{"bidi \u202egnp.exe", "`bidi \ufffdgnp.exe`"},
		{"nul\x00", "`nul\ufffd`"},
	}
	for _, tt := range tests {
		if got := mdsafe.Code(tt.in); got != tt.want {
			t.Errorf("Code(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestHTML(t *testing.T) {
	in := "</details><!-- a=\"b\" 'c' `d` & @org\n\ne"
	want := "&lt;/details&gt;&lt;!-- a=&quot;b&quot; &#39;c&#39; &#96;d&#96; &amp; @org e"
	if got := mdsafe.HTML(in); got != want {
		t.Errorf("HTML(%q) = %q, want %q", in, got, want)
	}
}

func TestFence(t *testing.T) {
	tests := []struct{ info, in, want string }{
		{"diff", "+ a\n", "```diff\n+ a\n```"},
		{"text", "no newline", "```text\nno newline\n```"},
		{"text", "", "```text\n```"},
		{"yaml", "a: |\n  ```\n  ````\n", "`````yaml\na: |\n  ```\n  ````\n`````"},
		{"text", "crlf\r\nend\x1b[31m", "```text\ncrlf\nend\ufffd[31m\n```"},
	}
	for _, tt := range tests {
		if got := mdsafe.Fence(tt.info, tt.in); got != tt.want {
			t.Errorf("Fence(%q, %q) = %q, want %q", tt.info, tt.in, got, tt.want)
		}
	}
}

func TestCommentValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"apps/web/dev", "apps/web/dev"},
		{"a b", "a%20b"},
		{"x-->y<!--z", "x--%3Ey%3C%21--z"},
		{"100%", "100%25"},
		{"é", "%C3%A9"},
	}
	for _, tt := range tests {
		if got := mdsafe.CommentValue(tt.in); got != tt.want {
			t.Errorf("CommentValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := mdsafe.CommentText("preview stack=" + mdsafe.CommentValue(tt.in)); got != "preview stack="+tt.want {
			t.Errorf("CommentText changed an escaped value: %q", got)
		}
	}
	if got := mdsafe.CommentText("a --> b\n<!--"); got != "a --%3E b%0A%3C%21--" {
		t.Errorf("CommentText = %q", got)
	}
}

func TestPlain(t *testing.T) {
	for in, want := range map[string]string{
		"succeeded":   "succeeded",
		"v1.2-rc 3":   "v1.2-rc 3",
		"_emphasis_":  "`_emphasis_`",
		"@org":        "`@org`",
		"<b>x</b>":    "`<b>x</b>`",
		"":            "",
		"[x](http:/)": "`[x](http:/)`",
	} {
		if got := mdsafe.Plain(in); got != want {
			t.Errorf("Plain(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSentence(t *testing.T) {
	for in, want := range map[string]string{
		"in a namespace this apply creates: checked against the API server's schema only, not by admission (webhooks, quotas, LimitRanges)": "in a namespace this apply creates: checked against the API server's schema only, not by admission (webhooks, quotas, LimitRanges)",
		"ends with a colon:": "ends with a colon:",
		"a :smile: b":        "`a :smile: b`",
		"a:b":                "`a:b`",
		"see [x](http:/)":    "`see [x](http:/)`",
		"@org/team":          "`@org/team`",
		"<b>x</b>":           "`<b>x</b>`",
		"_emphasis_ #12":     "`_emphasis_ #12`",
	} {
		if got := mdsafe.Sentence(in); got != want {
			t.Errorf("Sentence(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzCode: whatever the value, GitHub's Markdown shows Code's span as one
// code element holding the value (white space folded), and nothing else.
// Its seeds run in every go test.
func FuzzCode(f *testing.F) {
	for _, s := range []string{"</details><!-- @org/team ![x](http://127.0.0.1/b)", "``", "` `", "a``b```c", "\\`", "<code>", "*a*", "&lt;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		md := "Stack " + mdsafe.Code(s) + " done."
		html, err := mdcheck.Render(md)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := xhtml.Parse(strings.NewReader(html))
		if err != nil {
			t.Fatal(err)
		}
		var codes []string
		elements := 0
		var walk func(*xhtml.Node)
		walk = func(n *xhtml.Node) {
			if n.Type == xhtml.ElementNode {
				elements++
				if n.Data == "code" && n.FirstChild != nil {
					codes = append(codes, n.FirstChild.Data)
				}
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c)
			}
		}
		walk(doc)
		// html, head, body, p, code.
		if elements != 5 || len(codes) != 1 {
			t.Fatalf("Code(%q) renders as %s", s, html)
		}
		want := strings.Join(strings.Fields(string([]rune(s))), " ")
		if want == "" {
			want = " " // an empty value shows as an empty span
		}
		if !sameVisible(codes[0], want) {
			t.Fatalf("Code(%q) shows %q, want %q", s, codes[0], want)
		}
	})
}

// sameVisible compares what a reader sees: Code shows invisible characters
// as U+FFFD, and the HTML parser turns NUL into it too.
func sameVisible(got, want string) bool {
	norm := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x61c {
				return '\ufffd'
			}
			return r
		}, s)
	}
	return norm(got) == norm(want)
}
