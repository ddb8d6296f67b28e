package docs

import (
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// commandPages are the pages a newcomer copies commands from.
var commandPages = []string{"README.md", "docs/getting-started.md", "docs/coming-from-kusion.md"}

// shellLangs are the info strings of a block of shell commands.
var shellLangs = []string{"sh", "shell", "bash", "console"}

// command is a shell line of a page that runs the action: its words
// (brackets of a usage line dropped, quotes undone) after the program.
type command struct {
	line  int
	text  string
	words []string
}

// actionPrefixes are how the pages run the action: the binary itself, or
// from the checkout.
var actionPrefixes = []string{"action ", "go run ./cmd/action "}

// commands finds the lines of a page's shell blocks that run the action.
// A line continued with a backslash is read with the next; a comment is
// dropped.
func commands(lines []string) []command {
	_, blocks := split(lines)
	var out []command
	for _, b := range blocks {
		if !slices.Contains(shellLangs, b.lang) {
			continue
		}
		for i := 0; i < len(b.lines); i++ {
			first := b.first + i
			text := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(b.lines[i]), "$ "))
			for strings.HasSuffix(text, `\`) && i+1 < len(b.lines) {
				i++
				text = strings.TrimSuffix(text, `\`) + " " + strings.TrimSpace(b.lines[i])
			}
			for _, p := range actionPrefixes {
				if rest, ok := strings.CutPrefix(text, p); ok {
					out = append(out, command{line: first, text: text, words: words(rest)})
				}
			}
		}
	}
	return out
}

// words splits a command line as the shell would for our purpose: on
// blanks outside quotes, up to a comment or a second command (&&, ;, |
// between words); a usage line's [optional] brackets are dropped.
func words(line string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	inWord := false
	flush := func() {
		if inWord {
			out = append(out, strings.Trim(cur.String(), "[]"))
		}
		cur.Reset()
		inWord = false
	}
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			flush()
		case r == '#' && !inWord:
			flush()
			return out
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	flush()
	for i, w := range out {
		if w == "&&" || w == ";" || w == "||" {
			return out[:i]
		}
	}
	return out
}

// helpText is what the built action prints for "action ARGS --help", once
// per ARGS.
type helpText struct {
	mu   sync.Mutex
	seen map[string]string
}

func (h *helpText) of(t *testing.T, args ...string) string {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	key := strings.Join(args, " ")
	if out, ok := h.seen[key]; ok {
		return out
	}
	// --help exits 0 for a command and 2 for "policy test": the text is
	// what counts, not the code.
	out, _ := exec.Command(actionBinary, append(args, "--help")...).CombinedOutput()
	if h.seen == nil {
		h.seen = map[string]string{}
	}
	h.seen[key] = string(out)
	return string(out)
}

var (
	commandLine = regexp.MustCompile(`(?m)^  ([a-z][a-z-]*)\s{2,}`)
	flagLine    = regexp.MustCompile(`(?m)^\s+-([A-Za-z0-9][A-Za-z0-9-]*)\b`)
)

// checkCommand says what in c the action would refuse: a command it does
// not have, or a flag the command does not take. commands lists the
// action's commands; help gives the help text of a command (and
// subcommand).
func checkCommand(c command, commands []string, help func(args ...string) string) []string {
	var path []string // the command, and a subcommand such as policy test
	for _, w := range c.words {
		if strings.HasPrefix(w, "-") {
			break
		}
		path = append(path, w)
	}
	if len(path) == 0 {
		return []string{"names no command"}
	}
	if !slices.Contains(commands, path[0]) {
		return []string{fmt.Sprintf("no command %q: action help lists %s", path[0], strings.Join(commands, ", "))}
	}
	// A word after the command is a subcommand when the command's usage
	// line names it (usage: action policy test ...).
	args := path[:1]
	if len(path) > 1 && strings.HasPrefix(help(path[0]), fmt.Sprintf("usage: action %s %s", path[0], path[1])) {
		args = path[:2]
	}
	text := help(args...)
	if !strings.Contains(text, "usage: action "+strings.Join(args, " ")) {
		return []string{fmt.Sprintf("action %s --help prints no usage:\n%s", strings.Join(args, " "), text)}
	}
	var flags []string
	for _, m := range flagLine.FindAllStringSubmatch(text, -1) {
		flags = append(flags, m[1])
	}
	var bad []string
	for _, w := range c.words {
		name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if !strings.HasPrefix(w, "-") || w == "-" || w == "--" || name == "help" || name == "h" {
			continue
		}
		if !slices.Contains(flags, name) {
			bad = append(bad, fmt.Sprintf("action %s takes no flag %s: its --help lists -%s", strings.Join(args, " "), w, strings.Join(flags, ", -")))
		}
	}
	return bad
}

// TestCommandsAreTheActions: every line of a getting-started page's shell
// blocks that runs the action names one of its commands, and flags that
// command takes, as the built binary's help says. A renamed flag fails
// here, not in a reader's terminal.
func TestCommandsAreTheActions(t *testing.T) {
	var h helpText
	var names []string
	out, err := exec.Command(actionBinary, "help").CombinedOutput()
	if err != nil {
		t.Fatalf("action help: %v\n%s", err, out)
	}
	for _, m := range commandLine.FindAllStringSubmatch(string(out), -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		t.Fatalf("action help lists no commands:\n%s", out)
	}
	help := func(args ...string) string { return h.of(t, args...) }
	n := 0
	for _, name := range commandPages {
		p := readPage(t, name)
		for _, c := range commands(p.lines) {
			n++
			for _, why := range checkCommand(c, names, help) {
				t.Errorf("%s:%d: %s\n\t%s", p.name, c.line, why, c.text)
			}
		}
	}
	t.Logf("%d commands checked against the action's help", n)
	if n == 0 {
		t.Errorf("no action command found on %s: the command finder is broken", strings.Join(commandPages, ", "))
	}
}

func TestCommandsFound(t *testing.T) {
	lines := []string{
		"```sh",
		"go run ./cmd/action preview --stack examples/quickstart/dev -o markdown   # the comment",
		"make demo",
		"action apply --stack 'apps/web dev' \\",
		"  --yes && echo done",
		"```",
		"```text",
		"action preview --not-a-shell-block",
		"```",
		"```sh",
		"$ action policy test [--dir policy] [-o text|json]",
		"```",
	}
	var got []string
	for _, c := range commands(lines) {
		got = append(got, fmt.Sprintf("%d %q", c.line, c.words))
	}
	want := []string{
		`2 ["preview" "--stack" "examples/quickstart/dev" "-o" "markdown"]`,
		`4 ["apply" "--stack" "apps/web dev" "--yes"]`,
		`11 ["policy" "test" "--dir" "policy" "-o" "text|json"]`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("commands found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestCheckCommand(t *testing.T) {
	helps := map[string]string{
		"preview":     "usage: action preview --stack DIR [flags]\n\nflags:\n  -stack string\n    \tstack folder\n  -o string\n    \toutput\n  -dry-run\n    \tchange nothing\n",
		"policy":      "usage: action policy test [--dir DIR] [-o text|json]\n",
		"policy test": "usage: action policy test [--dir DIR] [-o text|json]\n\nflags:\n  -dir string\n  -o string\n",
	}
	help := func(args ...string) string { return helps[strings.Join(args, " ")] }
	commands := []string{"preview", "policy"}
	for _, tc := range []struct {
		words []string
		bad   string // what the first failure says, "" for none
	}{
		{[]string{"preview", "--stack", "x", "-o", "json"}, ""},
		{[]string{"preview", "--stack=x", "--dry-run", "--help"}, ""},
		{[]string{"preview", "--stak", "x"}, "action preview takes no flag --stak"},
		{[]string{"preveiw", "--stack", "x"}, `no command "preveiw"`},
		{[]string{"policy", "test", "--dir", "policy", "-o", "json"}, ""},
		{[]string{"policy", "test", "--directory", "policy"}, "action policy test takes no flag --directory"},
		{[]string{"--stack", "x"}, "names no command"},
	} {
		got := checkCommand(command{words: tc.words}, commands, help)
		switch {
		case tc.bad == "" && len(got) > 0:
			t.Errorf("%q: %v, want no failure", tc.words, got)
		case tc.bad != "" && (len(got) == 0 || !strings.Contains(got[0], tc.bad)):
			t.Errorf("%q: %v, want %q", tc.words, got, tc.bad)
		}
	}
}
