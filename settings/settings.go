// Package settings declares every setting of the action and the bot once:
// its name, type, default, validation and help, and the doors it may come
// in by: the action's command-line flags (and for which commands), its
// inputs (action.yml), the environment variables the bot reads over the
// keys of its YAML file, and the few variables every process reads. Three
// thin front doors read the declarations (Flags, Inputs, Bot) and say
// each mistake naming the setting as that door's user knows it; the same
// declarations write docs/settings.md, the inputs of action.yml, the
// bot's --help and each action command's --help (hack/settingsgen), and
// TestGenerated fails when those disagree with them.
//
// The declarations are a table (table.go), as Atlantis's cmd/server.go
// declares its flags in maps. Atlantis then hands its table to cobra,
// pflag and viper; kong would read struct tags. Each would change what
// users already rely on, so no such library reads this table: pflag and
// kong parse -stack as the short flags s, t, a, c, k (the action's flags
// have always taken one dash or two, as the standard flag package parses
// them) and print another --help; viper folds the file's keys to lower
// case (the bot's file says appID and apiURL) and ignores a key it does
// not know unless each Unmarshal is told otherwise, where a misspelt key
// must stop the bot, and it would bring a dozen modules for what is here
// a loop over the table. The doors are the libraries the project already
// used: the standard flag package, go-githubactions' GetInput and
// sigs.k8s.io/yaml.
package settings

//go:generate go run ../hack/settingsgen -root ..

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Type is the kind of value a setting holds.
type Type int

// The types of settings. Text (a flag, an input, a variable) is read as
// the type says; the bot's YAML file gives the value itself (a list is a
// YAML list, a map a YAML map).
const (
	// String is text as given.
	String Type = iota + 1
	// Bool is true or false (strconv.ParseBool).
	Bool
	// Int is a whole number (a size in bytes, a count).
	Int
	// Duration is a Go duration: 90s, 5m, 1h30m.
	Duration
	// List is text split on commas and newlines, each entry trimmed.
	List
	// Map is KEY=VALUE pairs (Setting.Parse reads them).
	Map
	// Object is a structured value of the bot's YAML file alone, decoded
	// into the field that takes it, unknown keys refused.
	Object
)

func (t Type) String() string {
	switch t {
	case String:
		return "string"
	case Bool:
		return "bool"
	case Int:
		return "int"
	case Duration:
		return "duration"
	case List:
		return "list"
	case Map:
		return "map"
	case Object:
		return "object"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// Setting is one setting, declared once.
type Setting struct {
	// Name is the setting's own name: the action's flag or input where it
	// has one, and what struct tags (`setting:"name"`) name it by.
	Name string
	Type Type
	// Default is the value, as text, when no door gives one.
	Default string
	// DefaultDoc says the default in the docs when the text alone would
	// not (a default decided at run time, or none).
	DefaultDoc string
	// Help is one line: the flag's usage, the bot's --help, the docs.
	Help string
	// Secret marks a credential: no help, doc or error shows its value,
	// and Secrets lists where it comes in, for the doors to remove once
	// read.
	Secret bool
	// Unset removes the variable from the environment once read, as for
	// a secret: it says where one lies (the App key's file).
	Unset bool
	// Required, when set, is why the bot cannot start without the
	// setting: "NAME is not set: <Required>".
	Required string
	// Want, when set, is what a value must be, said of one that does not
	// parse or pass: `"soon" is not a duration such as 10m`.
	Want string
	// Range bounds an Int.
	Range *Range
	// Parse reads the text of a String or a Map (required for a Map).
	Parse func(text string) (any, error)
	// Check judges a value of the setting's type; its error says what is
	// wrong and the door names the setting before it.
	Check func(v any) error
	// CheckNamed judges a value where the error already names the
	// setting (a check of another package's that takes the name).
	CheckNamed func(name string, v any) error

	// The doors.
	Flag  *Flag
	Input *Input
	Var   *Var
}

// Range is the least value an Int takes.
type Range struct {
	Min int64
	// Want says the range in words; default "at least Min".
	Want string
}

// Flag is the action's command-line door.
type Flag struct {
	// Name is the flag's name, default the setting's.
	Name string
	// Commands are the action's commands that take the flag ("policy
	// test" for a subcommand).
	Commands []string
	// Default is a command's own default, where it differs.
	Default map[string]string
	// FromEnv takes the flag's default from the setting's variable
	// (Var.Name) when it is set.
	FromEnv bool
}

// Input is the action's door under GitHub Actions: an input of action.yml.
type Input struct {
	// Name is the input's name, default the setting's.
	Name string
	// Doc is action.yml's description; default Help.
	Doc string
	// Default is action.yml's default when it is not the setting's
	// value: an expression the runner evaluates.
	Default *string
	// Empty is what an empty input means when not the setting's
	// default. The runner passes action.yml's default for every input
	// not given, so this is only for a run outside a workflow (the
	// container alone, the tests), which keeps what it always did.
	Empty *string
}

// Var is an environment variable.
type Var struct {
	Name string
	// YAML is the key of the bot's file (KUSIONPR_CONFIG); "" when only
	// the environment sets it.
	YAML string
	// Bot says the bot reads the variable, over the file's key.
	Bot bool
	// Action says the action reads it whatever it runs as (its commands
	// and under GitHub Actions), besides a flag's default (Flag.FromEnv).
	Action bool
}

// Text is a pointer to s, for Input's optional defaults.
func Text(s string) *string { return &s }

// FlagName is the setting's flag as a user writes it: -o, --stack.
func (s *Setting) FlagName() string {
	name := s.flagName()
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func (s *Setting) flagName() string {
	if s.Flag != nil && s.Flag.Name != "" {
		return s.Flag.Name
	}
	return s.Name
}

// InputName is the setting's input.
func (s *Setting) InputName() string {
	if s.Input != nil && s.Input.Name != "" {
		return s.Input.Name
	}
	return s.Name
}

// VarName is the setting's environment variable, "" when it has none.
func (s *Setting) VarName() string {
	if s.Var == nil {
		return ""
	}
	return s.Var.Name
}

// onCommand says whether the command takes the setting's flag.
func (s *Setting) onCommand(command string) bool {
	return s.Flag != nil && slices.Contains(s.Flag.Commands, command)
}

// door is where a value came in by, which decides how a mistake is said.
type door int

const (
	flagDoor door = iota
	inputDoor
	varDoor
	// fileDoor is a key of the bot's file.
	fileDoor
)

// nameIn is the setting as the door's user knows it.
func (s *Setting) nameIn(d door) string {
	switch d {
	case flagDoor:
		return s.FlagName()
	case inputDoor:
		return "input " + s.InputName()
	case fileDoor:
		return s.Var.YAML
	}
	return s.Var.Name
}

// predicate is a mistake said after the setting's name without a colon:
// "KUSIONPR_CONCURRENCY must be at least 1, not 0".
type predicate string

func (p predicate) Error() string { return string(p) }

// Predicate is an error said as a predicate of the setting's name:
// "NAME is empty: ...", where other errors read "NAME: ...".
func Predicate(format string, args ...any) error {
	return predicate(fmt.Sprintf(format, args...))
}

// named is an error that names the setting already (CheckNamed's).
type named struct{ error }

// notNumber is an Int that does not parse.
type notNumber struct{ text string }

func (n notNumber) Error() string { return fmt.Sprintf("%q is not a number", n.text) }

// outOfRange is an Int below its Range.
type outOfRange struct{ n int64 }

func (o outOfRange) Error() string { return fmt.Sprintf("%d is out of range", o.n) }

// said is err as the door says it, naming the setting; text is the value
// as given. An Int's range is said as each door always said it: the bot
// "KUSIONPR_X must be at least 1, not 0", the action `input x: "0" is
// not ...`.
func (s *Setting) said(d door, text string, err error) error {
	name := s.nameIn(d)
	var (
		n   named
		p   predicate
		nan notNumber
		out outOfRange
	)
	switch {
	case errors.As(err, &n):
		return n.error
	case errors.As(err, &p):
		return fmt.Errorf("%s %s", name, p)
	case s.Want != "":
		return fmt.Errorf("%s: %q is not %s", name, text, s.Want)
	case errors.As(err, &out) && d == varDoor:
		return fmt.Errorf("%s must be %s, not %d", name, s.rangeWant(), out.n)
	case errors.As(err, &nan) && d == varDoor:
		return fmt.Errorf("%s: %v", name, nan)
	case (errors.As(err, &out) || errors.As(err, &nan)) && s.Range != nil && s.Range.Want != "":
		return fmt.Errorf("%s: %q is not %s", name, text, s.Range.Want)
	case errors.As(err, &out):
		return fmt.Errorf("%s: %q is not %s", name, text, s.rangeWant())
	}
	return fmt.Errorf("%s: %w", name, err)
}

func (s *Setting) rangeWant() string {
	if s.Range.Want != "" {
		return s.Range.Want
	}
	return fmt.Sprintf("at least %d", s.Range.Min)
}

// parse reads text as the setting's type.
func (s *Setting) parse(text string) (any, error) {
	switch s.Type {
	case String:
		if s.Parse != nil {
			return s.Parse(text)
		}
		return text, nil
	case Bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", text)
		}
		return b, nil
	case Int:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, notNumber{text}
		}
		return n, nil
	case Duration:
		return time.ParseDuration(text)
	case List:
		return SplitList(text), nil
	case Map:
		return s.Parse(text)
	}
	return nil, fmt.Errorf("a %s has no text form", s.Type)
}

// check judges a parsed value.
func (s *Setting) check(v any) error {
	if n, ok := v.(int64); ok && s.Range != nil && n < s.Range.Min {
		return outOfRange{n}
	}
	if s.Check != nil {
		if err := s.Check(v); err != nil {
			return err
		}
	}
	if s.CheckNamed != nil {
		if err := s.CheckNamed(s.nameIn(varDoor), v); err != nil {
			return named{err}
		}
	}
	return nil
}

// value reads and judges text as it came in by door d.
func (s *Setting) value(d door, text string) (any, error) {
	v, err := s.parse(text)
	if err == nil {
		err = s.check(v)
	}
	if err != nil {
		return nil, s.said(d, text, err)
	}
	return v, nil
}

// SplitList splits a list setting on commas and newlines, each entry
// trimmed, empty ones dropped; nil when there is none.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == ',' }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Values are the settings one door read, by name.
type Values struct {
	v map[string]any
	// file is the bot's file the values were read over, for its errors.
	file string
}

// Has says whether the door read the setting.
func (v Values) Has(name string) bool {
	_, ok := v.v[name]
	return ok
}

// Fill sets each field of the struct dst points to (or of a struct it
// embeds) that is tagged `setting:"name"` to the setting's value, when
// the door read it; the
// field's type must hold the setting's: string, bool, int or int64,
// time.Duration, []string, map[string]string, or for an Object any type
// JSON decodes into.
func (v Values) Fill(dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("settings: Fill wants a pointer to a struct, not %T", dst)
	}
	rv = rv.Elem()
	var errs []error
	for i := range rv.NumField() {
		f := rv.Type().Field(i)
		name := f.Tag.Get("setting")
		if name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct {
			// An embedded struct's fields are the struct's own.
			errs = append(errs, v.Fill(rv.Field(i).Addr().Interface()))
			continue
		}
		if name == "" {
			continue
		}
		s := Lookup(name)
		if s == nil {
			errs = append(errs, fmt.Errorf("settings: field %s names %q, which is not declared", f.Name, name))
			continue
		}
		val, ok := v.v[name]
		if !ok {
			continue
		}
		var bad *FileError
		switch err := assign(rv.Field(i), s, val); {
		case errors.As(err, &bad):
			bad.Path = v.file
			errs = append(errs, bad)
		case err != nil:
			errs = append(errs, fmt.Errorf("settings: field %s: %w", f.Name, err))
		}
	}
	return errors.Join(errs...)
}

var durationType = reflect.TypeFor[time.Duration]()

// assign puts a setting's value into a field.
func assign(field reflect.Value, s *Setting, val any) error {
	ft := field.Type()
	mismatch := fmt.Errorf("a %s setting (%s) does not go into a %s", s.Type, s.Name, ft)
	switch s.Type {
	case String, Bool, List, Map:
		rv := reflect.ValueOf(val)
		if !rv.Type().AssignableTo(ft) {
			return mismatch
		}
		field.Set(rv)
	case Int:
		if ft == durationType || (ft.Kind() != reflect.Int && ft.Kind() != reflect.Int64) {
			return mismatch
		}
		field.SetInt(val.(int64))
	case Duration:
		if ft != durationType {
			return mismatch
		}
		field.SetInt(int64(val.(time.Duration)))
	case Object:
		raw, _ := val.(json.RawMessage)
		if raw == nil {
			return nil
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(field.Addr().Interface()); err != nil {
			return &FileError{Err: fmt.Errorf("%s: %w", s.Var.YAML, err)}
		}
	}
	return nil
}

// FileError is a mistake in the bot's file (KUSIONPR_CONFIG): the bot
// stops on it before it reads anything else.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("config %s: %v", e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// All is every declared setting, in the table's order.
func All() []*Setting {
	out := make([]*Setting, len(declared))
	for i := range declared {
		out[i] = &declared[i]
	}
	return out
}

// Lookup is the setting of that name, nil when none is declared.
func Lookup(name string) *Setting {
	for i := range declared {
		if declared[i].Name == name {
			return &declared[i]
		}
	}
	return nil
}

// Must is the setting of that name; it panics when none is declared, a
// mistake of the program that every test of its door finds.
func Must(name string) *Setting {
	s := Lookup(name)
	if s == nil {
		panic("settings: no setting " + strconv.Quote(name) + " is declared")
	}
	return s
}
