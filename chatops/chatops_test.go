package chatops

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
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
		{name: "unknown verb", body: "/kusion deploy dev", ok: true, want: Command{Verb: Help, Unknown: "deploy"}},
		{name: "verbs are lower case", body: "/kusion Apply", ok: true, want: Command{Verb: Help, Unknown: "Apply"}},
		{name: "/kusionapply is not a command", body: "/kusionapply"},
		{name: "/kusionx is not a command", body: "/kusionx apply\nthanks"},
		{name: "/Kusion is not a command", body: "/Kusion apply"},
		{name: "not at the start of the line", body: "please /kusion apply"},
		{name: "inline code is not a command", body: "run `/kusion apply` to apply"},
		{name: "leading whitespace", body: "  \t/kusion apply dev", ok: true, want: Command{Verb: Apply, Stacks: []string{"dev"}}},
		{name: "tab after /kusion", body: "/kusion\tpreview\tdev", ok: true, want: Command{Verb: Preview, Stacks: []string{"dev"}}},
		{name: "trailing text is taken as stacks", body: "/kusion apply dev thanks", ok: true,
			want: Command{Verb: Apply, Stacks: []string{"dev", "thanks"}}},
		{name: "trailing spaces", body: "/kusion apply dev   ", ok: true, want: Command{Verb: Apply, Stacks: []string{"dev"}}},
		{name: "after other text", body: "Approved, thanks.\n\n/kusion apply dev\n\nSee you.", ok: true,
			want: Command{Verb: Apply, Stacks: []string{"dev"}}},
		{name: "first command wins", body: "/kusion preview\n/kusion apply", ok: true, want: Command{Verb: Preview}},
		{name: "a non-command /kusionx line is passed over", body: "/kusionx\n/kusion apply", ok: true, want: Command{Verb: Apply}},
		{name: "CRLF line endings", body: "LGTM\r\n/kusion apply dev\r\nthanks\r\n", ok: true,
			want: Command{Verb: Apply, Stacks: []string{"dev"}}},
		{name: "CRLF bare /kusion", body: "/kusion\r\n", ok: true, want: Command{Verb: Help}},
		{name: "lone CR line endings", body: "LGTM\r/kusion unlock dev\r", ok: true, want: Command{Verb: Unlock, Stacks: []string{"dev"}}},
		{name: "quoted", body: "> /kusion apply\n\nWhy did you run this?"},
		{name: "quoted with leading space", body: "  > /kusion apply"},
		{name: "nested quote", body: ">> /kusion apply"},
		{name: "a line right after a quote continues it", body: "> Why did the preview fail?\n/kusion preview"},
		{name: "and so does the line after that", body: "> Why?\nI wonder.\n/kusion preview"},
		{name: "a blank line ends the quote", body: "> Why?\n\n/kusion preview", ok: true, want: Command{Verb: Preview}},
		{name: "an empty quote line ends its text", body: "> Why?\n>\n/kusion preview", ok: true, want: Command{Verb: Preview}},
		{name: "a fence ends the quote", body: "> Why?\n```\nlog\n```\n/kusion preview", ok: true, want: Command{Verb: Preview}},
		{name: "quoted then a real command", body: "> /kusion apply\n\n/kusion preview dev", ok: true,
			want: Command{Verb: Preview, Stacks: []string{"dev"}}},
		{name: "backtick fence", body: "To apply, comment:\n```\n/kusion apply\n```\n"},
		{name: "tilde fence with info string", body: "~~~text\n/kusion apply\n~~~"},
		{name: "command after a closed fence", body: "```sh\n/kusion apply\n```\n/kusion preview", ok: true, want: Command{Verb: Preview}},
		{name: "unclosed fence runs to the end", body: "```\n/kusion apply"},
		{name: "a tilde line does not close a backtick fence", body: "```\n~~~\n/kusion apply\n```"},
		{name: "a shorter run does not close a fence", body: "````\n```\n/kusion apply\n````"},
		{name: "a fence line with text after does not close", body: "```\n``` not closed\n/kusion apply\n```"},
		{name: "indented fence", body: "  ```\n/kusion apply\n  ```\n"},
		{name: "CRLF fence", body: "```\r\n/kusion apply\r\n```\r\n/kusion help\r\n", ok: true, want: Command{Verb: Help}},
		{name: "backticks with a backtick after are inline code, not a fence", body: "```a`\n/kusion apply", ok: true, want: Command{Verb: Apply}},
		{name: "duplicated stacks", body: "/kusion apply dev ./dev prod dev/ /dev prod", ok: true,
			want: Command{Verb: Apply, Stacks: []string{"dev", "prod"}}},
		{name: "stacks cleaned", body: "/kusion preview ./a//b/./c/ /x", ok: true,
			want: Command{Verb: Preview, Stacks: []string{"a/b/c", "x"}}},
		{name: "repository root", body: "/kusion apply . / ./", ok: true, want: Command{Verb: Apply, Stacks: []string{"."}}},
		{name: "dot-dot prefix", body: "/kusion apply ../other", ok: true,
			want: Command{Verb: Help, Unknown: `stack folder "../other": ".." is not allowed, name folders from the repository root`}},
		{name: "dot-dot inside, even when it stays in", body: "/kusion preview dev a/../prod", ok: true,
			want: Command{Verb: Help, Unknown: `stack folder "a/../prod": ".." is not allowed, name folders from the repository root`}},
		{name: "three dots is a name", body: "/kusion apply .../x", ok: true, want: Command{Verb: Apply, Stacks: []string{".../x"}}},
		{name: "unlock one", body: "/kusion unlock examples/quickstart/dev", ok: true,
			want: Command{Verb: Unlock, Stacks: []string{"examples/quickstart/dev"}}},
		{name: "unlock none", body: "/kusion unlock", ok: true, want: Command{Verb: Help, Unknown: "unlock needs one stack folder"}},
		{name: "unlock two", body: "/kusion unlock dev prod", ok: true, want: Command{Verb: Help, Unknown: "unlock needs one stack folder"}},
		{name: "unlock one named twice", body: "/kusion unlock dev ./dev", ok: true, want: Command{Verb: Unlock, Stacks: []string{"dev"}}},
		{name: "unlock dot-dot", body: "/kusion unlock ..", ok: true,
			want: Command{Verb: Help, Unknown: `stack folder "..": ".." is not allowed, name folders from the repository root`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Parse(tt.body)
			if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q) = %#v, %v; want %#v, %v", tt.body, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestHelpText(t *testing.T) {
	tests := []struct {
		name    string
		unknown string
		want    []string // substrings
		notWant []string
	}{
		{name: "plain", want: []string{
			"/kusion apply [stack...]", "/kusion preview [stack...]", "/kusion unlock <stack>", "/kusion help",
			"write or admin", "other than its author", "mergeable", "required checks", "Forks are never applied",
		}, notWant: []string{"did not understand"}},
		{name: "unknown verb", unknown: "deploy", want: []string{"did not understand that command: ` deploy `", "/kusion apply"}},
		{name: "mentions and links stay code", unknown: "@org/team [x](http://evil)", want: []string{"` @org/team [x](http://evil) `"}},
		{name: "backticks cannot close the span", unknown: "a ``b` c", want: []string{"``` a ``b` c ```"}},
		{name: "a backtick at the end", unknown: "x`", want: []string{"`` x` ``"}},
		{name: "newlines cannot start a block", unknown: "a\n\n# heading", want: []string{"` a # heading `"}},
		{name: "long text is cut", unknown: strings.Repeat("x", 500), want: []string{strings.Repeat("x", 200) + "… `"}, notWant: []string{strings.Repeat("x", 201)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HelpText(tt.unknown)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("HelpText(%q) lacks %q:\n%s", tt.unknown, w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("HelpText(%q) holds %q:\n%s", tt.unknown, w, got)
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
		if !strings.Contains(HelpText(""), "`"+strings.Join(fields[:2], " ")) {
			t.Errorf("HelpText does not show %q", tt.line)
		}
		if cmd, ok := Parse(tt.line); !ok || cmd.Verb != tt.verb || cmd.Unknown != "" {
			t.Errorf("Parse(%q) = %#v, %v; want %s", tt.line, cmd, ok, tt.verb)
		}
	}
}
