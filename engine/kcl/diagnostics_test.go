package kcl

import (
	"slices"
	"strings"
	"testing"
)

// KCL's text form (what a failure while evaluating gives, whatever the
// error format asked), colours and all: only places, kinds and messages
// are read, never the program's lines printed between them.
func TestParseText(t *testing.T) {
	const c, r, e = "\x1b[1;38;5;12m", "\x1b[1;38;5;9m", "\x1b[0m"
	text := "EvaluationError\n" +
		" " + c + "-->" + e + " /w/stack/main.k:2:7\n" +
		c + "  |" + e + "\n" +
		c + "2 |" + e + ` app = service.Service {name = "Bad_Name", labels = {secret = "s3cr3t-value"}}` + "\n" +
		c + "  |" + e + r + "       ^" + e + " " + r + "Instance check failed" + e + "\n" +
		c + "  |" + e + "\n\n" +
		" " + c + "-->" + e + " /w/pkgs/service/service.k:6:1\n" +
		c + "  |" + e + "\n" +
		c + "6 |" + e + `         regex.match(name, r"^[a-z]*$"), "name must be lower case"` + "\n" +
		c + "  |" + e + r + " " + e + " " + r + "Check failed on the condition: name must be lower case" + e + "\n" +
		c + "  |" + e + "\n\n"
	prog := Program{WorkDir: "/w/stack", Files: []string{"main.k"}, Packages: []Package{{Name: "service", Path: "/w/pkgs/service"}}}
	err := newError(text, prog)
	want := "main.k:2:7: EvaluationError: Instance check failed; at service.k:6:1 (package service): Check failed on the condition: name must be lower case"
	if got := err.Error(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "regex.match") {
		t.Errorf("a program line is shown: %s", err)
	}
}

// A message neither SARIF nor KCL's text is not shown at all.
func TestUnreadableMessageWithheld(t *testing.T) {
	err := newError("panic: value 's3cr3t' broke everything", Program{WorkDir: "/w"})
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("shown: %s", err)
	}
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"expected int, got str(s3cr3t)", "expected int, got str(…)"},
		{"unsupported operand type(s) for +: 'str(a(b)c)' and 'int(1)'", "unsupported operand type(s) for +: 'str(…)' and 'int(…)'"},
		{"expected str(a) | str(b), got str(x", "expected str(…) | str(…), got str(…"},
		{"Cannot add member 'nme' to schema 'Service'", "Cannot add member 'nme' to schema 'Service'"},
	} {
		if got := (&redactor{}).redact(tc.in); got != tc.want {
			t.Errorf("redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStringLiterals(t *testing.T) {
	src := `import regex
# a comment with "not a literal"
a = "plain"
b = 'single'
c = r"raw\d"
d = """triple
lines"""
e = "url://${user}:${host}/path"
f = "esc\"aped"
schema S:
    check:
        regex.match(a, r"^x$"), "a check's message"
assert True, "an assertion's message"
`
	got := stringLiterals(src)
	want := []string{"plain", "single", `raw\d`, "triple\nlines", "url://", ":", "/path", `esc"aped`, "^x$"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
