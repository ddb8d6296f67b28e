// Package chatops reads the bot's commands from pull-request comments
// ("/kusion apply", "/kusion preview", ...) and writes the reply to
// "/kusion help". Parsing is deliberately narrow: only a line of its own,
// outside code blocks and quotes, is a command, so that talking about a
// command, or quoting someone else's, never runs it.
package chatops

import (
	"fmt"
	"path"
	"strings"
)

// Verb is what a command asks for.
type Verb string

const (
	Apply   Verb = "apply"
	Preview Verb = "preview"
	Unlock  Verb = "unlock"
	Help    Verb = "help"
)

// Prefix starts every command.
const Prefix = "/kusion"

// Command is one parsed comment.
type Command struct {
	Verb Verb
	// Stacks are folders relative to the repository root ("." is the root
	// itself), cleaned and without repeats. For Apply and Preview none
	// means every stack the pull request touches; Unlock has exactly one.
	Stacks []string
	// Unknown is what was not understood, for the help reply; set only
	// with Help.
	Unknown string
}

// Parse finds the command in a comment body: the first line that starts
// with "/kusion" followed by a space or the line's end, leading white space
// allowed. ok is false when there is none. Lines inside fenced code blocks
// (``` or ~~~) and quoted lines (">", and the lines Markdown continues the
// quote with) never count. Anything that is not a well-formed command is
// Help with Unknown saying why, so the author is answered rather than
// ignored.
func Parse(body string) (cmd Command, ok bool) {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	body = strings.ReplaceAll(body, "\r", "\n")
	var fence fence
	// quoted: the line before was text in a quote, so a line without ">"
	// that follows it still renders inside the quote (Markdown's "lazy
	// continuation"), until a blank line.
	quoted := false
	for line := range strings.Lines(body) {
		line = strings.TrimRight(line, "\n")
		if fence.inside(line) {
			quoted = false
			continue
		}
		text := strings.TrimLeft(line, " \t")
		if strings.HasPrefix(text, ">") {
			quoted = strings.TrimLeft(text, "> \t") != ""
			continue
		}
		if text == "" {
			quoted = false
			continue
		}
		if quoted {
			continue
		}
		rest, found := strings.CutPrefix(text, Prefix)
		if !found || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		return command(strings.Fields(rest)), true
	}
	return Command{}, false
}

func command(words []string) Command {
	if len(words) == 0 {
		return Command{Verb: Help}
	}
	verb, args := Verb(words[0]), words[1:]
	switch verb {
	case Help:
		// "/kusion help me" still wants help; nothing to complain about.
		return Command{Verb: Help}
	case Apply, Preview, Unlock:
	default:
		return Command{Verb: Help, Unknown: words[0]}
	}
	stacks, err := cleanStacks(args)
	if err != "" {
		return Command{Verb: Help, Unknown: err}
	}
	if verb == Unlock && len(stacks) != 1 {
		return Command{Verb: Help, Unknown: "unlock needs one stack folder"}
	}
	return Command{Verb: verb, Stacks: stacks}
}

// cleanStacks makes the arguments repository-relative folders. ".." is
// refused rather than resolved, since "a/../b" is almost certainly a
// mistake and a folder outside the checkout is never a stack.
func cleanStacks(args []string) (stacks []string, problem string) {
	seen := map[string]bool{}
	for _, a := range args {
		for seg := range strings.SplitSeq(a, "/") {
			if seg == ".." {
				return nil, fmt.Sprintf("stack folder %q: \"..\" is not allowed, name folders from the repository root", a)
			}
		}
		s := strings.TrimLeft(path.Clean(a), "/")
		if s == "" {
			s = "."
		}
		if !seen[s] {
			seen[s] = true
			stacks = append(stacks, s)
		}
	}
	return stacks, ""
}

// fence follows fenced code blocks as CommonMark does: a run of at least
// three backticks or tildes opens one, and only a run of the same
// character, at least as long and with nothing after it, closes it; an
// unclosed block runs to the end of the comment.
type fence struct {
	char byte
	size int
}

// inside reports whether line is part of a code block, fence lines
// included.
func (f *fence) inside(line string) bool {
	text := strings.TrimLeft(line, " \t")
	if f.size == 0 {
		c, n := run(text)
		// A backtick in the info string makes it inline code, not a fence.
		if n >= 3 && (c == '~' || !strings.Contains(text[n:], "`")) {
			f.char, f.size = c, n
			return true
		}
		return false
	}
	if c, n := run(text); c == f.char && n >= f.size && strings.TrimSpace(text[n:]) == "" {
		f.size = 0
	}
	return true
}

// run returns the fence character text starts with and how many times.
func run(text string) (byte, int) {
	if text == "" || (text[0] != '`' && text[0] != '~') {
		return 0, 0
	}
	n := 1
	for n < len(text) && text[n] == text[0] {
		n++
	}
	return text[0], n
}

// HelpText is the reply to Help, in GitHub Markdown. unknown, when set, is
// said first, as code so that nothing in it can render, link or mention.
func HelpText(unknown string) string {
	var b strings.Builder
	if unknown != "" {
		fmt.Fprintf(&b, "I did not understand that command: %s\n\n", codeSpan(unknown))
	}
	b.WriteString(helpBody)
	return b.String()
}

const helpBody = "### Kusion commands\n" +
	"\n" +
	"Comment on the pull request with a command on a line of its own. A stack is a folder relative to the repository root, such as `examples/quickstart/dev`; without one, `preview` and `apply` work on every stack the pull request touches.\n" +
	"\n" +
	"| command | what it does |\n" +
	"|---|---|\n" +
	"| `/kusion preview [stack...]` | previews the stacks again and updates their comments |\n" +
	"| `/kusion apply [stack...]` | applies the stacks before the pull request is merged, and reports each in its comment |\n" +
	"| `/kusion unlock <stack>` | ends the stack's running release, such as one left behind by a run that died, and records who ended it; a runner still alive stops at its next write |\n" +
	"| `/kusion help` | shows this message |\n" +
	"\n" +
	"**Who may apply or unlock.** Only people with write or admin permission on the repository.\n" +
	"\n" +
	"**When a pull request can be applied before merge.** All of these must hold:\n" +
	"\n" +
	"- it is approved by someone other than its author;\n" +
	"- it is mergeable: no conflicts, and nothing else the branch protection asks for is missing;\n" +
	"- its required checks are green.\n" +
	"\n" +
	"**Forks are never applied**, whoever asks: a pull request from a fork is only previewed.\n" +
	"\n" +
	"Commands in quoted lines (`>`) and in code blocks are ignored, so quoting a command does not run it again.\n"

// codeSpan writes s as an inline code span that s cannot break out of:
// the fence is longer than any run of backticks in s, and the padding
// spaces, which CommonMark strips, keep a backtick at either end apart.
func codeSpan(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	longest, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			n++
			longest = max(longest, n)
		} else {
			n = 0
		}
	}
	ticks := strings.Repeat("`", longest+1)
	return ticks + " " + s + " " + ticks
}
