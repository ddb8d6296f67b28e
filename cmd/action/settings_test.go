package main

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/settings"
)

// flagLine is a flag's first line in PrintDefaults: "  -name type".
var flagLine = regexp.MustCompile(`(?m)^  -(\S+)`)

// TestCommandHelpListsTheDeclaredFlags: each command's --help lists the
// flags package settings declares for it, each with its help, and no
// other: a flag added or dropped there shows here without another edit.
func TestCommandHelpListsTheDeclaredFlags(t *testing.T) {
	commands := []string{"policy test"}
	for c := range commandUsage {
		commands = append(commands, c)
	}
	for _, command := range commands {
		t.Run(command, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append(strings.Fields(command), "--help")
			if code := run(context.Background(), args, nil, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			help := stdout.String()
			if !strings.Contains(help, "usage: action "+command) || !strings.Contains(help, "\nflags:\n") {
				t.Errorf("--help is not usage, then flags:\n%s", help)
			}
			var listed, declared []string
			for _, m := range flagLine.FindAllStringSubmatch(help, -1) {
				listed = append(listed, m[1])
			}
			for _, s := range settings.All() {
				if s.Flag == nil || !slices.Contains(s.Flag.Commands, command) {
					continue
				}
				name := strings.TrimLeft(s.FlagName(), "-")
				declared = append(declared, name)
				if !strings.Contains(help, s.Help) {
					t.Errorf("--help does not give -%s's help %q:\n%s", name, s.Help, help)
				}
			}
			slices.Sort(listed)
			slices.Sort(declared)
			if !slices.Equal(listed, declared) {
				t.Errorf("--help lists the flags %v, the declarations %v", listed, declared)
			}
		})
	}
}

// TestFlagMistakes: a value a flag's declaration refuses stops the command
// before it runs (exit 2), named as written, as it always was.
func TestFlagMistakes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"apply", "--timeout", "0s"}, "error: --timeout: 0s is not a positive duration: want one such as 90s or 10m (default 5m)\n"},
		{[]string{"preview", "--log-level", "loud"}, "error: --log-level: slog: level string \"loud\": unknown name\n"},
		{[]string{"drift", "-o", "yaml"}, "error: -o: unknown output format \"yaml\": want json, markdown or text\n"},
		{[]string{"generate", "--kubeconfigs", "dev"}, "error: --kubeconfigs: \"dev\": want WORKSPACE=FILE\n"},
		{[]string{"policy", "test", "-o", "yaml"}, "error: -o: \"yaml\" is neither text nor json\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, nil, &stdout, &stderr)
			if code != 2 || stderr.String() != tc.want || stdout.Len() != 0 {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout.String(), stderr.String(), tc.want)
			}
		})
	}
}
