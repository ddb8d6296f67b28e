package mdcheck

import (
	"strings"
	"testing"
)

// TestCheck: the checker finds each way a value can turn into markup, and
// passes the same value shown as code.
func TestCheck(t *testing.T) {
	const hostile = "</details><!-- @org/team ![x](http://127.0.0.1/b)"
	tests := []struct {
		name string
		md   string
		want Want
		// problems are substrings, one per problem expected (none: clean).
		problems []string
	}{
		{name: "as code", md: "Stack `" + hostile + "`", want: Want{Data: []string{hostile}}},
		{name: "in a code block", md: "```\n" + hostile + "\n```", want: Want{Data: []string{hostile}}},
		{name: "escaped in <code>", md: "<details><summary><code>&lt;/details&gt;&lt;!-- @org/team</code></summary>\n\nx\n</details>",
			want: Want{Details: 1, Data: []string{"</details><!-- @org/team"}}},
		{name: "raw in text", md: "Stack " + hostile,
			problems: []string{`"<!--" outside code`, `"org/team"`, "<img>", "not shown as code"}, want: Want{Data: []string{hostile}}},
		{name: "an image", md: "see ![x](http://127.0.0.1/b)", problems: []string{"<img>"}},
		{name: "a link", md: "see [x](http://127.0.0.1/b)", problems: []string{"<a>"}},
		{name: "an autolink", md: "see http://example.com/b", problems: []string{"<a>"}},
		{name: "a mention", md: "hi @org/team", problems: []string{`"org/team"`}},
		{name: "a mention asked for", md: "@writer refused", want: Want{Mentions: []string{"writer"}}},
		{name: "an email is a link, no mention", md: "mail a@b.example", problems: []string{"<a>"}},
		{name: "escaped markup in text", md: `Stack \!\[x\]\(y\)`, problems: []string{`"!["`, `"]("`}},
		{name: "a closing tag too many", md: "<details><summary>a</summary>\n\nx\n</details>\n\n</details><details>", want: Want{Details: 1},
			problems: []string{"2 <details> elements, want 1"}},
		{name: "our marker", md: "<!-- kusionpr:preview stack=a -->\nhi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(tt.md, tt.want)
			if len(got) != len(tt.problems) {
				t.Fatalf("Check(%q) = %q, want %d problems like %q", tt.md, got, len(tt.problems), tt.problems)
			}
			for i, p := range tt.problems {
				if !strings.Contains(got[i], p) {
					t.Errorf("problem %d = %q, want it to name %q", i, got[i], p)
				}
			}
		})
	}
}
