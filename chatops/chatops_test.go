package chatops

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	const dotdot = `".." is not allowed in a stack folder: name folders from the repository root`
	tests := []struct {
		name string
		body string
		want Command
		ok   bool
	}{
		{name: "no command", body: "Looks good to me!"},
		{name: "empty", body: ""},
		{name: "apply all", body: "/kusion apply", ok: true, want: Command{Verb: Apply}},
		{name: "preview stacks", body: "/kusion preview examples/quickstart/dev examples/quickstart/prod", ok: true,
			want: Command{Verb: Preview, Stacks: []string{"examples/quickstart/dev", "examples/quickstart/prod"}}},
		{name: "bare /kusion", body: "/kusion", ok: true, want: Command{Verb: Help}},
		{name: "bare /kusion with trailing space", body: "/kusion   \n", ok: true, want: Command{Verb: Help}},
		{name: "help", body: "/kusion help", ok: true, want: Command{Verb: Help}},
		{name: "help ignores what follows", body: "/kusion help me please", ok: true, want: Command{Verb: Help}},
		{name: "unknown verb", body: "/kusion deploy dev", ok: true, want: Command{Verb: Help, Unknown: "deploy", Problem: "no such command"}},
		{name: "verbs are lower case", body: "/kusion Apply", ok: true, want: Command{Verb: Help, Unknown: "Apply", Problem: "no such command"}},
		{name: "/kusionapply is not a command", body: "/kusionapply"},
		{name: "/kusionx is not a command", body: "/kusionx apply\nthanks"},
		{name: "/Kusion is not a command", body: "/Kusion apply"},
		{name: "not at the start of the line", body: "please /kusion apply"},
		{name: "inline code is not a command", body: "run `/kusion apply` to apply"},
		{name: "leading spaces", body: "   /kusion apply dev", ok: true, want: Command{Verb: Apply, Stacks: []string{"dev"}}},
		{name: "tab after /kusion", body: "/kusion\tpreview\tdev", ok: true, want: Command{Verb: Preview, Stacks: []string{"dev"}}},
		{name: "trailing text is taken as stacks", body: "/kusion apply dev thanks", ok: true,
			want: Command{Verb: Apply, Stacks: []string{"dev", "thanks"}}},
		{name: "an override of a policy rule", body: "/kusion apply --override-policy no-public-lb apps/web/dev", ok: true,
			want: Command{Verb: Apply, Stacks: []string{"apps/web/dev"}, OverridePolicy: []string{"no-public-lb"}}},
		{name: "overrides, one inline, repeated", body: "/kusion apply dev --override-policy=main.deny --override-policy main.deny --override-policy k8s/limits", ok: true,
			want: Command{Verb: Apply, Stacks: []string{"dev"}, OverridePolicy: []string{"main.deny", "k8s/limits"}}},
		{name: "an override without a rule", body: "/kusion apply --override-policy", ok: true,
			want: Command{Verb: Help, Unknown: "--override-policy", Problem: "--override-policy needs a rule"}},
		{name: "an override of a rule with odd characters", body: "/kusion apply --override-policy a`b", ok: true,
			want: Command{Verb: Help, Unknown: "a`b", Problem: "a rule is named by letters, digits, '.', '_', '-' and '/'"}},
		{name: "an override on a preview", body: "/kusion preview --override-policy x", ok: true,
			want: Command{Verb: Help, Unknown: "--override-policy", Problem: "only apply takes --override-policy"}},
		{name: "an unknown option", body: "/kusion apply --force", ok: true,
			want: Command{Verb: Help, Unknown: "--force", Problem: "no such option"}},
		{name: "trailing spaces", body: "/kusion apply dev   ", ok: true, want: Command{Verb: Apply, Stacks: []string{"dev"}}},
		{name: "after other text", body: "Approved, thanks.\n\n/kusion apply dev\n\nSee you.", ok: true,
			want: Command{Verb: Apply, Stacks: []string{"dev"}}},
		{name: "a line of a paragraph", body: "Approved, thanks.\n/kusion apply dev\nSee you.", ok: true,
			want: Command{Verb: Apply, Stacks: []string{"dev"}}},
		{name: "first command wins", body: "/kusion preview\n/kusion apply", ok: true, want: Command{Verb: Preview}},
		{name: "a non-command /kusionx line is passed over", body: "/kusionx\n/kusion apply", ok: true, want: Command{Verb: Apply}},
		{name: "CRLF line endings", body: "LGTM\r\n/kusion apply dev\r\nthanks\r\n", ok: true,
			want: Command{Verb: Apply, Stacks: []string{"dev"}}},
		{name: "CRLF bare /kusion", body: "/kusion\r\n", ok: true, want: Command{Verb: Help}},
		{name: "lone CR line endings", body: "LGTM\r/kusion unlock dev\r", ok: true, want: Command{Verb: Unlock, Stacks: []string{"dev"}}},

		// Block quotes.
		{name: "quoted", body: "> /kusion apply\n\nWhy did you run this?"},
		{name: "quoted with leading space", body: "  > /kusion apply"},
		{name: "nested quote", body: ">> /kusion apply"},
		{name: "nested quote with spaces", body: "> > /kusion apply"},
		{name: "a deeper quote inside a quote", body: "> why?\n>> /kusion apply"},
		{name: "a line right after a quote continues it", body: "> Why did the preview fail?\n/kusion preview"},
		{name: "and so does the line after that", body: "> Why?\nI wonder.\n/kusion preview"},
		{name: "a blank line ends the quote", body: "> Why?\n\n/kusion preview", ok: true, want: Command{Verb: Preview}},
		// CommonMark ends the quote at the fence (no lazy line); the quote is
		// read to the blank line: a command is missed, never taken from it.
		{name: "a quote runs to the blank line", body: "> Why?\n```\nlog\n```\n/kusion preview"},
		{name: "a fence in a quote ends with it", body: "> ```\n> log\n\n/kusion preview", ok: true, want: Command{Verb: Preview}},
		{name: "quoted then a real command", body: "> /kusion apply\n\n/kusion preview dev", ok: true,
			want: Command{Verb: Preview, Stacks: []string{"dev"}}},
		{name: "an indented > after a paragraph is text", body: "LGTM\n    > x\n/kusion apply", ok: true, want: Command{Verb: Apply}},

		// Fenced code.
		{name: "backtick fence", body: "To apply, comment:\n```\n/kusion apply\n```\n"},
		{name: "tilde fence with info string", body: "~~~text\n/kusion apply\n~~~"},
		{name: "command after a closed fence", body: "```sh\n/kusion apply\n```\n/kusion preview", ok: true, want: Command{Verb: Preview}},
		{name: "unclosed fence runs to the end", body: "```\n/kusion apply"},
		{name: "an unclosed fence after text", body: "LGTM\n````\n\n/kusion apply\n```"},
		{name: "a tilde line does not close a backtick fence", body: "```\n~~~\n/kusion apply\n```"},
		{name: "a shorter run does not close a fence", body: "````\n```\n/kusion apply\n````"},
		{name: "a fence line with text after does not close", body: "```\n``` not closed\n/kusion apply\n```"},
		{name: "indented fence", body: "  ```\n/kusion apply\n  ```\n"},
		{name: "a fence interrupts a paragraph", body: "LGTM\n```\n/kusion apply\n```"},
		{name: "CRLF fence", body: "```\r\n/kusion apply\r\n```\r\n/kusion help\r\n", ok: true, want: Command{Verb: Help}},
		{name: "backticks with a backtick after are inline code, not a fence", body: "```a`\n/kusion apply", ok: true, want: Command{Verb: Apply}},

		// Indented code, tabs.
		{name: "indented code", body: "    /kusion apply"},
		{name: "a tab is indented code", body: "\t/kusion apply"},
		{name: "spaces and a tab make four columns", body: "  \t/kusion apply dev"},
		{name: "indented code after a blank line", body: "LGTM\n\n    /kusion apply"},
		{name: "an indented line after a paragraph continues it", body: "LGTM\n    /kusion apply", ok: true, want: Command{Verb: Apply}},
		{name: "a tab-indented line after a paragraph continues it", body: "LGTM\n\t/kusion apply", ok: true, want: Command{Verb: Apply}},

		// Code spans across lines.
		{name: "a code span over lines", body: "run `\n/kusion apply\n` please"},
		{name: "a lone backtick is text", body: "it`s fine\n/kusion apply", ok: true, want: Command{Verb: Apply}},

		// HTML comments and blocks.
		{name: "an HTML comment", body: "<!-- /kusion apply -->"},
		{name: "a multi-line HTML comment", body: "<!--\n/kusion apply\n-->"},
		{name: "a comment over a blank line", body: "<!--\n\n/kusion apply\n\n-->"},
		{name: "after a closed comment", body: "<!--\nnote\n-->\n/kusion apply", ok: true, want: Command{Verb: Apply}},
		{name: "an inline comment over lines", body: "LGTM <!--\n/kusion apply\n-->"},
		{name: "an inline comment before a blank line and closed after", body: "LGTM <!-- a -->\n\n/kusion apply", ok: true, want: Command{Verb: Apply}},
		{name: "a comment an HTML block leaves open", body: "<div><!--\n\n/kusion apply\n\n-->"},
		{name: "a comment a quote leaves open", body: "> <!--\n\n/kusion apply"},
		{name: "an escaped <", body: "\\<!--\n/kusion apply", ok: true, want: Command{Verb: Apply}},
		{name: "an HTML block", body: "<div>\n/kusion apply\n</div>"},
		{name: "an HTML block interrupts a paragraph", body: "LGTM\n<div>\n/kusion apply"},
		{name: "inside <details>", body: "<details>\n\n/kusion apply\n\n</details>"},
		{name: "inside <details> with a summary", body: "<details><summary>x</summary>\n\n/kusion apply\n\n</details>"},
		{name: "after </details>", body: "<details><summary>logs</summary>\n\n```\nlog\n```\n\n</details>\n\n/kusion apply", ok: true, want: Command{Verb: Apply}},
		{name: "a </details> in code closes nothing", body: "<details>\n\n`</details>`\n\n/kusion apply\n\n</details>"},
		{name: "a </details> in a fence closes nothing", body: "<details>\n\n```\n</details>\n```\n\n/kusion apply"},
		{name: "<details> opened inline", body: "see <details>\n\n/kusion apply"},
		{name: "<details> opened and closed inline", body: "see <details>x</details>\n/kusion apply", ok: true, want: Command{Verb: Apply}},
		{name: "inside <div>", body: "<div>\n\n/kusion apply\n\n</div>"},
		{name: "a <pre> block over blank lines", body: "<pre>\n\n/kusion apply\n\n</pre>"},
		{name: "a <script> block", body: "<script>\n\n/kusion apply\n</script>"},
		{name: "a closing </pre> is no HTML block: its lines close no comment", body: "<div><!--\n\n</pre>\n-->\n\n/kusion apply"},
		{name: "</textarea> ends a <pre> block for some readers only", body: "<pre>\n</textarea>\n-->\n/kusion apply\n</pre>"},
		{name: "a complete tag alone is an HTML block", body: "<br>\n/kusion apply"},
		{name: "a tag's attribute over lines", body: "x <a title=\"\n/kusion apply\n\">"},
		{name: "an unknown tag hides nothing", body: "Use `/kusion unlock` with a <stack> folder.\n\n/kusion apply", ok: true, want: Command{Verb: Apply}},
		{name: "HTML on the command's line", body: "/kusion apply <img src=x>", ok: true,
			want: Command{Verb: Help, Problem: "a command's line holds no HTML"}},

		// Lists.
		{name: "a list item", body: "- /kusion apply"},
		{name: "an ordered list item", body: "1. /kusion apply"},
		{name: "a task list item", body: "- [ ] /kusion apply"},
		{name: "a list's lazy line", body: "- item\n/kusion apply"},
		{name: "an item's indented paragraph", body: "- item\n\n  /kusion apply"},
		{name: "after a list", body: "- item\n\n/kusion apply", ok: true, want: Command{Verb: Apply}},
		{name: "2. cannot start a list in a paragraph", body: "LGTM\n2. x\n/kusion apply", ok: true, want: Command{Verb: Apply}},

		// Headings, tables, links.
		{name: "an ATX heading", body: "# /kusion apply"},
		{name: "a setext heading", body: "/kusion apply\n==="},
		{name: "a setext heading of two lines", body: "LGTM\n/kusion apply\n---"},
		{name: "after a setext heading", body: "LGTM\n-\n/kusion apply", ok: true, want: Command{Verb: Apply}},
		{name: "an empty item does not interrupt, so the underline takes all", body: "/kusion apply\n-\n---"},
		{name: "a table header", body: "/kusion apply\n|---|"},
		{name: "a table row", body: "| a |\n|---|\n/kusion apply"},
		{name: "link text", body: "[\n/kusion apply\n](http://a)"},
		{name: "a link title", body: "[x](http://a \"\n/kusion apply\n\")"},
		{name: "an image description", body: "![\n/kusion apply\n](x.png)"},
		{name: "after a link", body: "See [docs](http://x).\n/kusion apply", ok: true, want: Command{Verb: Apply}},
		{name: "link reference definitions", body: "[x]: http://a\n/kusion apply"},

		// Stacks.
		{name: "duplicated stacks", body: "/kusion apply dev ./dev prod dev/ /dev prod", ok: true,
			want: Command{Verb: Apply, Stacks: []string{"dev", "prod"}}},
		{name: "stacks cleaned", body: "/kusion preview ./a//b/./c/ /x", ok: true,
			want: Command{Verb: Preview, Stacks: []string{"a/b/c", "x"}}},
		{name: "globs are names", body: "/kusion apply apps/* [ab]/?", ok: true, want: Command{Verb: Apply, Stacks: []string{"apps/*", "[ab]/?"}}},
		{name: "repository root", body: "/kusion apply . / ./", ok: true, want: Command{Verb: Apply, Stacks: []string{"."}}},
		{name: "dot-dot prefix", body: "/kusion apply ../other", ok: true,
			want: Command{Verb: Help, Unknown: "../other", Problem: dotdot}},
		{name: "dot-dot inside, even when it stays in", body: "/kusion preview dev a/../prod", ok: true,
			want: Command{Verb: Help, Unknown: "a/../prod", Problem: dotdot}},
		{name: "three dots is a name", body: "/kusion apply .../x", ok: true, want: Command{Verb: Apply, Stacks: []string{".../x"}}},
		{name: "control characters", body: "/kusion apply a\x1b[31m", ok: true,
			want: Command{Verb: Help, Unknown: "a\x1b[31m", Problem: "a stack folder's name holds no control characters"}},
		{name: "unlock one", body: "/kusion unlock examples/quickstart/dev", ok: true,
			want: Command{Verb: Unlock, Stacks: []string{"examples/quickstart/dev"}}},
		{name: "unlock none", body: "/kusion unlock", ok: true, want: Command{Verb: Help, Problem: "unlock needs one stack folder"}},
		{name: "rollback", body: "/kusion rollback apps/web/prod 41", ok: true, want: Command{Verb: Rollback, Stacks: []string{"apps/web/prod"}, Revision: 41}},
		{name: "rollback without a revision", body: "/kusion rollback apps/web/prod", ok: true,
			want: Command{Verb: Help, Problem: "rollback needs a stack folder and a release's revision: /kusion rollback <stack> <revision>"}},
		{name: "rollback to zero", body: "/kusion rollback prod 0", ok: true, want: Command{Verb: Help, Unknown: "0", Problem: "a release's revision is a whole number, 1 or more"}},
		{name: "rollback to a word", body: "/kusion rollback prod latest", ok: true, want: Command{Verb: Help, Unknown: "latest", Problem: "a release's revision is a whole number, 1 or more"}},
		{name: "rollback of two stacks", body: "/kusion rollback dev prod 3", ok: true,
			want: Command{Verb: Help, Problem: "rollback needs a stack folder and a release's revision: /kusion rollback <stack> <revision>"}},
		{name: "rollback dot-dot", body: "/kusion rollback ../x 3", ok: true, want: Command{Verb: Help, Unknown: "../x", Problem: dotdot}},
		{name: "rollback with an option", body: "/kusion rollback --force 3", ok: true, want: Command{Verb: Help, Unknown: "--force", Problem: "no such option"}},
		{name: "cancel", body: "/kusion cancel apps/web/prod", ok: true, want: Command{Verb: Cancel, Stacks: []string{"apps/web/prod"}}},
		{name: "cancel none", body: "/kusion cancel", ok: true, want: Command{Verb: Help, Problem: "cancel needs one stack folder"}},
		{name: "cancel with an override", body: "/kusion cancel --override-policy x dev", ok: true, want: Command{Verb: Help, Unknown: "--override-policy", Problem: "only apply takes --override-policy"}},
		{name: "unlock two", body: "/kusion unlock dev prod", ok: true, want: Command{Verb: Help, Problem: "unlock needs one stack folder"}},
		{name: "unlock one named twice", body: "/kusion unlock dev ./dev", ok: true, want: Command{Verb: Unlock, Stacks: []string{"dev"}}},
		{name: "unlock dot-dot", body: "/kusion unlock ..", ok: true, want: Command{Verb: Help, Unknown: "..", Problem: dotdot}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Parse(tt.body)
			if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q) = %#v, %v; want %#v, %v", tt.body, got, ok, tt.want, tt.ok)
			}
			// GitHub shows the command's line as a paragraph's text (see
			// FuzzParse).
			if _, line, ok := parse(tt.body); ok {
				lines := strings.Split(normalize(tt.body), "\n")
				lines[line] = strings.Replace(lines[line], Prefix, token, 1)
				if where := rendered(strings.Join(lines, "\n")); where != "" {
					t.Errorf("Parse(%q) took line %d, which GitHub shows %s", tt.body, line+1, where)
				}
			}
		})
	}
}

func TestHelpText(t *testing.T) {
	tests := []struct {
		name    string
		cmd     Command
		want    []string // substrings
		notWant []string
	}{
		{name: "plain", want: []string{
			"/kusion apply [stack...]", "/kusion preview [stack...]", "/kusion unlock <stack>", "/kusion help",
			"write or admin", "other than its author", "mergeable", "required checks", "Forks are never applied",
		}, notWant: []string{"did not understand"}},
		{name: "unknown verb", cmd: Command{Unknown: "deploy", Problem: "no such command"},
			want: []string{"I did not understand `deploy`: no such command.", "/kusion apply"}},
		{name: "a problem alone", cmd: Command{Problem: "unlock needs one stack folder"},
			want: []string{"I did not understand that command: unlock needs one stack folder."}},
		{name: "mentions and links stay code", cmd: Command{Unknown: "@org/team [x](http://evil)"}, want: []string{"`@org/team [x](http://evil)`"}},
		{name: "backticks cannot close the span", cmd: Command{Unknown: "a ``b` c"}, want: []string{"```a ``b` c```"}},
		{name: "a backtick at the end", cmd: Command{Unknown: "x`"}, want: []string{"`` x` ``"}},
		{name: "newlines cannot start a block", cmd: Command{Unknown: "a\n\n# heading"}, want: []string{"`a # heading`"}},
		{name: "long text is cut", cmd: Command{Unknown: strings.Repeat("x", 500)}, want: []string{strings.Repeat("x", 200) + "…`"}, notWant: []string{strings.Repeat("x", 201)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HelpText(tt.cmd)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("HelpText(%#v) lacks %q:\n%s", tt.cmd, w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("HelpText(%#v) holds %q:\n%s", tt.cmd, w, got)
				}
			}
		})
	}
}

// TestHelpTextParses: every command the help shows, written as shown, is
// the command it says.
func TestHelpTextParses(t *testing.T) {
	for _, tt := range []struct {
		line string
		verb Verb
	}{
		{"/kusion preview examples/quickstart/dev", Preview},
		{"/kusion apply examples/quickstart/dev", Apply},
		{"/kusion unlock examples/quickstart/dev", Unlock},
		{"/kusion help", Help},
	} {
		fields := strings.Fields(tt.line)
		if !strings.Contains(HelpText(Command{}), "`"+strings.Join(fields[:2], " ")) {
			t.Errorf("HelpText does not show %q", tt.line)
		}
		if cmd, ok := Parse(tt.line); !ok || cmd.Verb != tt.verb || cmd.Unknown != "" {
			t.Errorf("Parse(%q) = %#v, %v; want %s", tt.line, cmd, ok, tt.verb)
		}
	}
}
