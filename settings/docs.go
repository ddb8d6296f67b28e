package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// ActionInputs is the inputs: section of action.yml, every input in the
// table's order with its description and default.
func ActionInputs() string {
	var b strings.Builder
	b.WriteString("inputs:\n")
	for _, s := range All() {
		if s.Input == nil {
			continue
		}
		def := s.Default
		if s.Input.Default != nil {
			def = *s.Input.Default
		}
		fmt.Fprintf(&b, "  %s:\n    description: %s\n    default: %s\n", s.InputName(), yamlQuoted(s.inputDoc()), yamlScalar(def))
	}
	return b.String()
}

func (s *Setting) inputDoc() string {
	if s.Input.Doc != "" {
		return s.Input.Doc
	}
	return s.Help
}

// yamlQuoted is s as a double-quoted YAML scalar (a JSON string is one).
func yamlQuoted(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// plainScalar is a default action.yml writes unquoted: a word (10m,
// always) or an expression; quoted are numbers, booleans and the rest.
var plainScalar = regexp.MustCompile(`^(?:[0-9]*[a-z]+|\$\{\{ [^}]+ \}\})$`)

func yamlScalar(s string) string {
	switch s {
	case "true", "false", "yes", "no", "on", "off", "null", "y", "n":
		return yamlQuoted(s)
	}
	if plainScalar.MatchString(s) {
		return s
	}
	return yamlQuoted(s)
}

// SpliceInputs is action.yml with its inputs: section, from its line to
// the next top-level key, written from the declarations.
func SpliceInputs(actionYML []byte) ([]byte, error) {
	lines := strings.SplitAfter(string(actionYML), "\n")
	first := slices.Index(lines, "inputs:\n")
	if first < 0 {
		return nil, errors.New("action.yml has no inputs: section")
	}
	last := first + 1
	for last < len(lines) && (lines[last] == "" || strings.HasPrefix(lines[last], " ") || strings.HasPrefix(lines[last], "\n")) {
		last++
	}
	out := strings.Join(lines[:first], "") + ActionInputs() + strings.Join(lines[last:], "")
	return []byte(out), nil
}

// BotHelp lists the bot's settings as --help shows them, the required
// ones first, in the shape of the flag package's PrintDefaults.
func BotHelp(w io.Writer) {
	fmt.Fprintf(w, "variables (the key of the %s file in parentheses; a variable that is set wins):\n", ConfigVar)
	for _, s := range botSettings() {
		name := s.Var.Name
		if name == "" {
			name = "(file only)"
		}
		fmt.Fprintf(w, "  %s %s", name, s.Type)
		if s.Var.YAML != "" {
			fmt.Fprintf(w, " (%s)", s.Var.YAML)
		}
		fmt.Fprintf(w, "\n    \t%s%s\n", strings.ReplaceAll(s.Help, "\n", "\n    \t"), s.helpDefault())
	}
}

// botSettings are the bot's settings, the required ones first.
func botSettings() []*Setting {
	var bot []*Setting
	for _, s := range All() {
		if s.Var != nil && s.Var.Bot {
			bot = append(bot, s)
		}
	}
	slices.SortStableFunc(bot, func(a, b *Setting) int {
		switch {
		case a.Required != "" && b.Required == "":
			return -1
		case a.Required == "" && b.Required != "":
			return 1
		}
		return 0
	})
	return bot
}

// helpDefault is " (default ...)" after a help line, as PrintDefaults
// writes it; nothing for a secret or a setting without a default.
func (s *Setting) helpDefault() string {
	switch {
	case s.Required != "":
		return " (required)"
	case s.Secret, s.DefaultDoc == "none":
		return ""
	case s.DefaultDoc != "":
		return " (default " + s.DefaultDoc + ")"
	case s.Default == "":
		return ""
	case s.Type == String:
		return fmt.Sprintf(" (default %q)", s.Default)
	}
	return " (default " + s.Default + ")"
}

// Markdown is docs/settings.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString(`# Settings

<!-- Written by hack/settingsgen (make settings) from settings/table.go: edit the declarations there, not this page. -->

Every setting of the action and the bot, each declared once in
[settings/table.go](../settings/table.go) with its type, default, check
and help, and the doors it comes in by: a flag of the action's commands, an
input of the action (action.yml), a variable of the bot's environment or a
key of its YAML file. A setting keeps the name each door's users know; the
column *also* names it at its other doors. A mistake names the setting as
its door does: ` + "`input lease: ...`, `error: --timeout: ...`, `KUSIONPR_LEASE: ...`" + `.

`)
	writeFlags(&b)
	writeInputs(&b)
	writeBot(&b)
	writeActionEnv(&b)
	return b.String()
}

func writeFlags(b *strings.Builder) {
	b.WriteString("## The action's flags\n\n" +
		"`action COMMAND --help` lists a command's flags. A flag takes one dash or two (`-stack`, `--stack`); one that names a variable takes its default from it when it is set.\n\n" +
		"| flag | commands | type | default | meaning | also |\n|---|---|---|---|---|---|\n")
	var flags []*Setting
	for _, s := range All() {
		if s.Flag != nil {
			flags = append(flags, s)
		}
	}
	slices.SortStableFunc(flags, func(a, b *Setting) int { return strings.Compare(a.flagName(), b.flagName()) })
	for _, s := range flags {
		def := s.docDefault()
		for _, c := range s.Flag.Commands {
			if d, ok := s.Flag.Default[c]; ok {
				def += fmt.Sprintf(" (%s: `%s`)", c, d)
			}
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | %s |\n", s.FlagName(), strings.Join(s.Flag.Commands, ", "), s.Type, def, mdText(s.Help), s.also(flagDoor))
	}
	b.WriteString("\n")
}

func writeInputs(b *strings.Builder) {
	b.WriteString("## The action's inputs\n\n" +
		"The inputs of `action.yml`, which the runner passes with their defaults.\n\n" +
		"| input | default | meaning | also |\n|---|---|---|---|\n")
	for _, s := range All() {
		if s.Input == nil {
			continue
		}
		def := s.docDefault()
		if s.Input.Default != nil {
			def = "`" + *s.Input.Default + "`"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", s.InputName(), def, mdText(s.inputDoc()), s.also(inputDoor))
	}
	b.WriteString("\n")
}

func writeBot(b *strings.Builder) {
	b.WriteString("## The bot's settings\n\n" +
		"Environment variables, or the same settings under their keys in a YAML file named by `" + ConfigVar + "`; a variable that is set wins, an empty one counts as unset, and a key the bot does not know stops it. `bot --help` lists them. A variable without a key is read from the environment alone; a key without a variable (a structured value) from the file alone.\n\n" +
		"| variable | key | type | default | meaning | also |\n|---|---|---|---|---|---|\n")
	for _, s := range botSettings() {
		name, key := "—", "—"
		if s.Var.Name != "" {
			name = "`" + s.Var.Name + "`"
		}
		if s.Var.YAML != "" {
			key = "`" + s.Var.YAML + "`"
		}
		typ := s.Type.String()
		if s.Secret {
			typ += ", secret"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", name, key, typ, s.docDefault(), mdText(s.Help), s.also(varDoor))
	}
	b.WriteString("\n")
}

func writeActionEnv(b *strings.Builder) {
	b.WriteString("## Variables the action reads\n\n" +
		"Besides its flags and inputs, the action reads these from its environment: KCL's settings whatever it runs as (a command, a job's step, a Job the bot started), and the defaults of some flags.\n\n" +
		"| variable | read as | default | meaning |\n|---|---|---|---|\n")
	for _, s := range All() {
		switch {
		case s.Var != nil && s.Var.Action:
			fmt.Fprintf(b, "| `%s` | itself | %s | %s |\n", s.Var.Name, s.docDefault(), mdText(s.Help))
		case s.Flag != nil && s.Flag.FromEnv:
			fmt.Fprintf(b, "| `%s` | the default of `%s` | %s | %s |\n", s.Var.Name, s.FlagName(), s.docDefault(), mdText(s.Help))
		}
	}
}

// docDefault is the default as the docs show it.
func (s *Setting) docDefault() string {
	switch {
	case s.Required != "":
		return "required"
	case s.DefaultDoc != "":
		return mdText(s.DefaultDoc)
	case s.Secret:
		return "none"
	case s.Default == "":
		return "none"
	}
	return "`" + s.Default + "`"
}

// also names the setting at its doors other than d.
func (s *Setting) also(d door) string {
	var out []string
	if s.Flag != nil && d != flagDoor {
		out = append(out, "`"+s.FlagName()+"`")
	}
	if s.Input != nil && d != inputDoor {
		out = append(out, "input `"+s.InputName()+"`")
	}
	switch {
	case s.Flag != nil && s.Flag.FromEnv && d == flagDoor:
		out = append(out, "env `"+s.Var.Name+"`")
	case s.Var != nil && s.Var.Name != "" && d != varDoor && (s.Var.Bot || s.Var.Action):
		out = append(out, "`"+s.Var.Name+"`")
	}
	if s.Var != nil && s.Var.Action && d == varDoor {
		out = append(out, "the action's environment")
	}
	return strings.Join(out, ", ")
}

// mdText is text for a table cell: no pipe ends the cell, no star or
// angle bracket is taken for emphasis or HTML.
func mdText(s string) string {
	return strings.NewReplacer("|", `\|`, "*", `\*`, "<", "&lt;", ">", "&gt;").Replace(s)
}
