package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// CommandLine is one action command's flags, declared on a flag.FlagSet
// by Flags: the standard package parses them, so a flag takes one dash or
// two and --help prints what PrintDefaults always printed.
type CommandLine struct {
	getenv func(string) string
	flags  []boundFlag
}

// boundFlag is a declared flag and how to read it once parsed: its text
// (for errors) and, for a flag the flag package typed, its value.
type boundFlag struct {
	s    *Setting
	read func() (text string, v any)
}

// Flags declares on fs the flags of the command ("preview", "policy
// test"), each with its declared default (or, for a flag read from the
// environment, the variable's value when set) and help. Read them with
// Values once fs has parsed the arguments.
func Flags(fs *flag.FlagSet, command string, getenv func(string) string) *CommandLine {
	c := &CommandLine{getenv: getenv}
	for _, s := range All() {
		if !s.onCommand(command) {
			continue
		}
		def, name, usage := s.flagDefault(command, getenv), s.flagName(), s.flagUsage()
		var read func() (string, any)
		switch s.Type {
		case Bool:
			b, _ := strconv.ParseBool(def)
			p := fs.Bool(name, b, usage)
			read = func() (string, any) { return strconv.FormatBool(*p), *p }
		case Int:
			n, _ := strconv.Atoi(def)
			p := fs.Int(name, n, usage)
			read = func() (string, any) { return strconv.Itoa(*p), int64(*p) }
		case Duration:
			d, _ := time.ParseDuration(def)
			p := fs.Duration(name, d, usage)
			read = func() (string, any) { return p.String(), *p }
		default:
			p := fs.String(name, def, usage)
			read = func() (string, any) { return *p, nil }
		}
		c.flags = append(c.flags, boundFlag{s: s, read: read})
	}
	return c
}

// flagDefault is the flag's default for the command, as text.
func (s *Setting) flagDefault(command string, getenv func(string) string) string {
	if s.Flag.FromEnv {
		if v := getenv(s.Var.Name); v != "" {
			return v
		}
	}
	if d, ok := s.Flag.Default[command]; ok {
		return d
	}
	return s.Default
}

// flagUsage is the flag's line of --help: its help, then in parentheses
// a default decided at run time (PrintDefaults shows a value) and the
// variable it is read from.
func (s *Setting) flagUsage() string {
	var more []string
	if d := s.DefaultDoc; s.Default == "" && d != "" && d != "none" && d != "all" {
		more = append(more, "default "+d)
	}
	if s.Flag.FromEnv {
		more = append(more, "env "+s.Var.Name)
	}
	if len(more) == 0 {
		return s.Help
	}
	return s.Help + " (" + strings.Join(more, "; ") + ")"
}

// Values are the parsed flags, each judged as its declaration says, and
// the variables the action reads from its environment (Var.Action). A
// mistake names the flag as written: --timeout, -o.
func (c *CommandLine) Values() (Values, error) {
	vals := Values{v: map[string]any{}}
	var errs []error
	for _, b := range c.flags {
		text, v := b.read()
		var err error
		if v == nil {
			v, err = b.s.parse(text)
		}
		if err == nil {
			err = b.s.check(v)
		}
		if err != nil {
			errs = append(errs, b.s.said(flagDoor, text, err))
			continue
		}
		vals.v[b.s.Name] = v
	}
	errs = append(errs, vals.environment(c.getenv, func(v *Var) bool { return v.Action }))
	return vals, errors.Join(errs...)
}

// environment reads the variables pick chooses that no other door of
// the process has read, each as set, else its default.
func (vals Values) environment(getenv func(string) string, pick func(*Var) bool) error {
	var errs []error
	for _, s := range All() {
		if s.Var == nil || !pick(s.Var) || vals.Has(s.Name) {
			continue
		}
		text := getenv(s.Var.Name)
		if text == "" {
			text = s.Default
		}
		v, err := s.value(varDoor, text)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		vals.v[s.Name] = v
	}
	return errors.Join(errs...)
}

// Inputs reads the action's inputs under GitHub Actions (get is
// go-githubactions' GetInput) and the variables the action reads from its
// environment. An empty input is its default (see Input.Empty). A
// mistake names the input: "input lease: ...".
func Inputs(get func(input string) string, getenv func(string) string) (Values, error) {
	vals := Values{v: map[string]any{}}
	var errs []error
	for _, s := range All() {
		if s.Input == nil {
			continue
		}
		text := strings.TrimSpace(get(s.InputName()))
		if text == "" {
			text = s.Default
			if s.Input.Empty != nil {
				text = *s.Input.Empty
			}
		}
		v, err := s.value(inputDoor, text)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		vals.v[s.Name] = v
	}
	errs = append(errs, vals.environment(getenv, func(v *Var) bool { return v.Action }))
	return vals, errors.Join(errs...)
}

// ConfigVar names the bot's YAML file.
const ConfigVar = "KUSIONPR_CONFIG"

// Bot reads the bot's settings: each variable that is set (an empty one
// counts as unset), else the key of the YAML file KUSIONPR_CONFIG names,
// else the default. A mistake names the variable; one in the file is a
// *FileError, said before anything else is read, naming the key. A key
// no setting has is such a mistake.
func Bot(getenv func(string) string) (Values, error) {
	path := getenv(ConfigVar)
	file, err := readFile(path)
	if err != nil {
		return Values{}, err
	}
	vals := Values{v: map[string]any{}, file: path}
	var errs []error
	for _, s := range All() {
		if s.Var == nil || !s.Var.Bot {
			continue
		}
		v, err := s.botValue(getenv(s.Var.Name), file[s.Var.YAML])
		if err != nil {
			errs = append(errs, err)
			// The default, so that a check of several settings does
			// not say the same mistake again.
			v = s.defaultValue()
		} else if s.Required != "" && isZero(v) {
			errs = append(errs, fmt.Errorf("%s is not set: %s", s.Var.Name, s.Required))
		}
		vals.v[s.Name] = v
	}
	return vals, errors.Join(errs...)
}

// botValue is the setting's value from its variable's text, else from the
// file, else its default.
func (s *Setting) botValue(text string, fromFile any) (any, error) {
	switch {
	case text != "":
		return s.value(varDoor, text)
	case fromFile != nil:
		if err := s.check(fromFile); err != nil {
			return nil, s.said(varDoor, fmt.Sprint(fromFile), err)
		}
		return fromFile, nil
	}
	return s.defaultValue(), nil
}

// defaultValue is the setting's default, which TestDeclarations holds
// to parse; an Object has none.
func (s *Setting) defaultValue() any {
	if s.Type == Object {
		return json.RawMessage(nil)
	}
	v, _ := s.parse(s.Default)
	return v
}

func isZero(v any) bool { return v == nil || reflect.ValueOf(v).IsZero() }

// readFile reads the bot's YAML file into the values of its keys, each of
// its setting's type; none when path is "".
func readFile(path string) (map[string]any, error) {
	out := map[string]any{}
	if path == "" {
		return out, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &FileError{Err: fmt.Errorf("config: %w", err)}
	}
	// Strict: a key given twice is a mistake, as it always was.
	j, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		return nil, &FileError{Path: path, Err: err}
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(j, &keys); err != nil {
		return nil, &FileError{Path: path, Err: fmt.Errorf("want a map of settings: %w", err)}
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		s := byYAML(k)
		if s == nil {
			errs = append(errs, fmt.Errorf("unknown field %q", k))
			continue
		}
		if string(keys[k]) == "null" {
			continue
		}
		v, err := s.fromJSON(keys[k])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
			continue
		}
		out[k] = v
	}
	if err := errors.Join(errs...); err != nil {
		return nil, &FileError{Path: path, Err: err}
	}
	return out, nil
}

// byYAML is the bot's setting of the file's key.
func byYAML(key string) *Setting {
	for _, s := range All() {
		if s.Var != nil && s.Var.Bot && s.Var.YAML == key {
			return s
		}
	}
	return nil
}

// fromJSON is the value of a key of the bot's file.
func (s *Setting) fromJSON(raw json.RawMessage) (any, error) {
	decode := func(p any) error {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		return dec.Decode(p)
	}
	var err error
	switch s.Type {
	case String:
		var v string
		if err = decode(&v); err == nil && s.Parse != nil {
			return s.Parse(v)
		}
		return v, err
	case Bool:
		var v bool
		err = decode(&v)
		return v, err
	case Int:
		var v int64
		err = decode(&v)
		return v, err
	case Duration:
		var v string
		if err = decode(&v); err != nil {
			return nil, err
		}
		return time.ParseDuration(v)
	case List:
		var v []string
		err = decode(&v)
		return v, err
	case Map:
		var v map[string]string
		err = decode(&v)
		return v, err
	}
	return raw, nil
}

// Secrets are the variables holding secrets or saying where one lies
// (Secret, Unset), of the doors pick chooses: a door removes them from
// its environment once read, as every child would inherit them.
func Secrets(pick func(*Setting) []string) []string {
	var out []string
	for _, s := range All() {
		if s.Secret || s.Unset {
			out = append(out, pick(s)...)
		}
	}
	return out
}

// BotSecrets are the bot's variables Secrets lists.
func BotSecrets() []string {
	return Secrets(func(s *Setting) []string {
		if s.Var != nil && s.Var.Bot {
			return []string{s.Var.Name}
		}
		return nil
	})
}

// InputSecrets are the variables the runner passes the secret inputs in
// (INPUT_<NAME>, as go-githubactions reads them).
func InputSecrets() []string {
	return Secrets(func(s *Setting) []string {
		if s.Input != nil {
			return []string{InputVar(s.InputName())}
		}
		return nil
	})
}

// InputVar is the variable the runner passes an input in.
func InputVar(input string) string {
	return "INPUT_" + strings.ToUpper(strings.ReplaceAll(input, " ", "_"))
}
