// Package chatops reads the bot's commands from pull-request comments
// ("/kusion apply", "/kusion preview", ...) and writes the reply to
// "/kusion help". Parsing is deliberately narrow: a command is a line of
// text of a top-level paragraph (see markdown.go), so that talking about a
// command, quoting, listing or hiding one never runs it.
package chatops

import (
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kusionpr/kusionpr/internal/mdsafe"
)

// Verb is what a command asks for.
type Verb string

const (
	Apply    Verb = "apply"
	Preview  Verb = "preview"
	Unlock   Verb = "unlock"
	Rollback Verb = "rollback"
	Cancel   Verb = "cancel"
	Help     Verb = "help"
)

// Prefix starts every command.
const Prefix = "/kusion"

// Command is one parsed comment.
type Command struct {
	Verb Verb
	// Stacks are folders relative to the repository root ("." is the root
	// itself), cleaned and without repeats, named literally (no globs),
	// never holding ".." or starting with "/". For Apply and Preview none
	// means every stack the pull request touches; Unlock has exactly one.
	Stacks []string
	// Revision is the release a rollback goes back to.
	Revision uint64
	// OverridePolicy are the policy rules (their ids) an apply is to pass
	// (--override-policy <rule>, repeatable): the bot lets only those it
	// authorises for it.
	OverridePolicy []string
	// Unknown is the word of the comment that was not understood, and
	// Problem (ours, no text of the comment) why; set only with Help.
	// Unknown is the comment's text: shown only as data (HelpText).
	Unknown, Problem string
}

// Parse finds the command in a comment body: the first line of a top-level
// paragraph that starts with "/kusion" followed by white space or the
// line's end. ok is false when there is none. Lines of code blocks, code
// spans, block quotes, list items, headings, tables, HTML blocks and
// comments, links, and what raw HTML leaves open (a comment, a <details>)
// never count. Anything that is not a well-formed command is Help with
// Problem saying why, so the author is answered rather than ignored.
func Parse(body string) (cmd Command, ok bool) {
	cmd, _, ok = parse(body)
	return cmd, ok
}

// parse is Parse, also returning the command's line in body with its line
// breaks made "\n".
func parse(body string) (Command, int, bool) {
	body = normalize(body)
	lines := strings.Split(body, "\n")
	for _, i := range paragraphLines(body) {
		text := strings.TrimLeft(lines[i], " \t")
		rest, found := strings.CutPrefix(text, Prefix)
		if !found || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		return command(rest), i, true
	}
	return Command{}, -1, false
}

// normalize makes every line break "\n", as CommonMark reads "\r\n" and
// "\r", and NUL U+FFFD.
func normalize(body string) string {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	body = strings.ReplaceAll(body, "\r", "\n")
	return strings.ReplaceAll(body, "\x00", "\uFFFD")
}

func command(rest string) Command {
	if strings.ContainsRune(rest, '<') {
		// Raw HTML on the command's line can hide words of it.
		return Command{Verb: Help, Problem: "a command's line holds no HTML"}
	}
	words := strings.Fields(rest)
	if len(words) == 0 {
		return Command{Verb: Help}
	}
	verb, args := Verb(words[0]), words[1:]
	switch verb {
	case Help:
		// "/kusion help me" still wants help; nothing to complain about.
		return Command{Verb: Help}
	case Apply, Preview, Unlock, Cancel:
	case Rollback:
		return rollback(args)
	default:
		return Command{Verb: Help, Unknown: words[0], Problem: "no such command"}
	}
	var overrides []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, inline := strings.Cut(a, "=")
		if name != "--override-policy" {
			if strings.HasPrefix(a, "-") {
				return Command{Verb: Help, Unknown: a, Problem: "no such option"}
			}
			continue
		}
		if verb != Apply {
			return Command{Verb: Help, Unknown: a, Problem: "only apply takes --override-policy"}
		}
		if !inline {
			if i+1 >= len(args) {
				return Command{Verb: Help, Unknown: a, Problem: "--override-policy needs a rule"}
			}
			value = args[i+1]
			args = append(args[:i:i], args[i+2:]...)
		} else {
			args = append(args[:i:i], args[i+1:]...)
		}
		i--
		if !ruleID.MatchString(value) {
			return Command{Verb: Help, Unknown: value, Problem: "a rule is named by letters, digits, '.', '_', '-' and '/'"}
		}
		if !slices.Contains(overrides, value) {
			overrides = append(overrides, value)
		}
	}
	stacks, bad, problem := cleanStacks(args)
	if problem != "" {
		return Command{Verb: Help, Unknown: bad, Problem: problem}
	}
	if (verb == Unlock || verb == Cancel) && len(stacks) != 1 {
		return Command{Verb: Help, Problem: string(verb) + " needs one stack folder"}
	}
	return Command{Verb: verb, Stacks: stacks, OverridePolicy: overrides}
}

// rollback reads "rollback <stack> <revision>".
func rollback(args []string) Command {
	if len(args) != 2 {
		return Command{Verb: Help, Problem: "rollback needs a stack folder and a release's revision: /kusion rollback <stack> <revision>"}
	}
	if strings.HasPrefix(args[0], "-") {
		return Command{Verb: Help, Unknown: args[0], Problem: "no such option"}
	}
	n, err := strconv.ParseUint(args[1], 10, 64)
	if err != nil || n == 0 || n > 1<<40 {
		return Command{Verb: Help, Unknown: args[1], Problem: "a release's revision is a whole number, 1 or more"}
	}
	stacks, bad, problem := cleanStacks(args[:1])
	if problem != "" {
		return Command{Verb: Help, Unknown: bad, Problem: problem}
	}
	return Command{Verb: Rollback, Stacks: stacks, Revision: n}
}

// ruleID is what names a policy rule in an override.
var ruleID = regexp.MustCompile(`^[A-Za-z0-9._/-]{1,128}$`)

// cleanStacks makes the arguments repository-relative folders, taken
// literally. ".." is refused rather than resolved, since "a/../b" is almost
// certainly a mistake and a folder outside the checkout is never a stack.
func cleanStacks(args []string) (stacks []string, bad, problem string) {
	seen := map[string]bool{}
	for _, a := range args {
		if !utf8.ValidString(a) || strings.IndexFunc(a, unicode.IsControl) >= 0 {
			return nil, a, "a stack folder's name holds no control characters"
		}
		for seg := range strings.SplitSeq(a, "/") {
			if seg == ".." {
				return nil, a, `".." is not allowed in a stack folder: name folders from the repository root`
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
	return stacks, "", ""
}

// HelpText is the reply to Help, in GitHub Markdown. What cmd did not
// understand, when set, is said first: its Problem, and the words of the
// comment as code (mdsafe.Code), so that nothing in them can render, link
// or mention anyone.
func HelpText(cmd Command) string {
	var b strings.Builder
	switch {
	case cmd.Unknown != "":
		unknown := cmd.Unknown
		if r := []rune(unknown); len(r) > 200 {
			unknown = string(r[:200]) + "…"
		}
		b.WriteString("I did not understand " + mdsafe.Code(unknown))
		if cmd.Problem != "" {
			b.WriteString(": " + cmd.Problem)
		}
		b.WriteString(".\n\n")
	case cmd.Problem != "":
		b.WriteString("I did not understand that command: " + cmd.Problem + ".\n\n")
	}
	b.WriteString(helpBody)
	return b.String()
}

const helpBody = "### Kusion commands\n" +
	"\n" +
	"Comment on the pull request with a command on a line of its own, in a paragraph of the comment. A stack is a folder relative to the repository root, named as it is (no wildcards), such as `examples/quickstart/dev`; without one, `preview` and `apply` work on every stack the pull request touches.\n" +
	"\n" +
	"| command | what it does |\n" +
	"|---|---|\n" +
	"| `/kusion preview [stack...]` | previews the stacks again and updates their comments |\n" +
	"| `/kusion apply [stack...]` | applies the stacks before the pull request is merged, and reports each in its comment |\n" +
	"| `/kusion apply --override-policy <rule> [stack...]` | the same, letting the plan through that policy rule's denial; only for those the bot lets override (by default admins), and recorded in the release |\n" +
	"| `/kusion unlock <stack>` | ends the stack's running release, such as one left behind by a run that died, and records who ended it; a runner still alive stops at its next write |\n" +
	"| `/kusion rollback <stack> <revision>` | puts the stack back as that release left it: the spec it recorded is applied again as a new release, with the gates of an apply (policies of the default branch, deployments); what was made since is deleted. Also on a drift issue |\n" +
	"| `/kusion cancel <stack>` | asks the stack's running apply to stop: what is in flight finishes, nothing more is applied, and its release ends failed, saying who cancelled. Also on a drift issue |\n" +
	"| `/kusion help` | shows this message |\n" +
	"\n" +
	"**Who may apply, unlock, roll back or cancel.** Only people with write or admin permission on the repository.\n" +
	"\n" +
	"**When a pull request can be applied before merge.** All of these must hold:\n" +
	"\n" +
	"- it is approved by someone other than its author;\n" +
	"- it is mergeable: no conflicts, and nothing else the branch protection asks for is missing;\n" +
	"- its required checks are green.\n" +
	"\n" +
	"**Forks are never applied**, whoever asks: a pull request from a fork is only previewed.\n" +
	"\n" +
	"Commands in quotes (`>`), lists, code, headings, tables, links, HTML comments and `<details>` are ignored, so quoting or describing a command does not run it.\n"
