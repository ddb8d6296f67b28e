package module

import (
	"errors"
	"fmt"

	"github.com/kusionpr/kusionpr/engine/generate/strict"
)

// Source says which input of a Request a field belongs to.
type Source string

const (
	// Workload is Request.Workload: the app's workload in the AppConfiguration.
	Workload Source = "workload"
	// DevConfig is Request.DevConfig: the accessory in the AppConfiguration.
	DevConfig Source = "devConfig"
	// PlatformConfig is Request.PlatformConfig: the module's block in the workspace.
	PlatformConfig Source = "platformConfig"
	// Context is Request.Context: the workspace context.
	Context Source = "context"
)

// ConfigError is a module's complaint about one field of its input. Modules
// running in this process (the built-in ones) return it so that the
// generator can name the file and the field the user must change; over the
// plugin protocol an error is its message only.
type ConfigError struct {
	Source Source
	// Path is the field within the source, as a.b[0].c; empty for the
	// source as a whole.
	Path string
	Msg  string
}

func (e *ConfigError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s: %s", e.Source, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Source, e.Path, e.Msg)
}

// Invalid is a ConfigError about one field.
func Invalid(src Source, path, format string, args ...any) *ConfigError {
	return &ConfigError{Source: src, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Decode reads one YAML input of a Request into out (a pointer) strictly:
// an unknown field or a value of the wrong kind is a ConfigError naming the
// field. An empty input leaves out as it is.
func Decode(src Source, data []byte, out any) error {
	err := strict.Unmarshal(data, out)
	if err == nil {
		return nil
	}
	list := strict.Errors(err)
	errs := make([]error, len(list))
	for i, e := range list {
		errs[i] = &ConfigError{Source: src, Path: e.Path, Msg: e.Msg}
	}
	return errors.Join(errs...)
}

// ConfigErrors lists the ConfigErrors in err (joined or wrapped); ok is false
// if err holds anything else, whose message then stands as it is.
func ConfigErrors(err error) (list []*ConfigError, ok bool) {
	ok = true
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if ce, isCE := err.(*ConfigError); isCE {
			list = append(list, ce)
			return
		}
		if j, isJoin := err.(interface{ Unwrap() []error }); isJoin {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		if u := errors.Unwrap(err); u != nil {
			walk(u)
			return
		}
		ok = false
	}
	walk(err)
	return list, ok && len(list) > 0
}
