package testenv

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TerraformRecorder is a terraform executable that records the arguments
// and the environment of each run, then runs the real binary: what tests
// read to know which commands ran and what terraform (and the providers it
// starts, which inherit its environment) could see.
type TerraformRecorder struct {
	// Binary is the recording executable, named terraform; Dir its folder,
	// to put first on PATH.
	Binary, Dir string
	calls       string
}

// TerraformCall is one run of the recorder.
type TerraformCall struct {
	Args []string
	// Env is the environment terraform ran with, as NAME=value entries.
	Env []string
}

// Command is the terraform command of the call: init, plan, apply...
func (c TerraformCall) Command() string {
	for _, a := range c.Args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// Getenv returns a variable of the call's environment.
func (c TerraformCall) Getenv(name string) (string, bool) {
	for _, kv := range c.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// RecordTerraform makes a recorder in front of the real binary.
func RecordTerraform(t testing.TB, real string) *TerraformRecorder {
	t.Helper()
	dir := t.TempDir()
	r := &TerraformRecorder{Dir: filepath.Join(dir, "bin"), calls: filepath.Join(dir, "calls")}
	r.Binary = filepath.Join(r.Dir, "terraform")
	for _, d := range []string{r.Dir, r.calls} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\n" +
		"n=$(/usr/bin/mktemp '" + r.calls + "/call.XXXXXXXX') || exit 97\n" +
		"printf '%s\\0' \"$@\" > \"$n.args\"\n" +
		"/usr/bin/env -0 > \"$n.env\"\n" +
		"exec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(r.Binary, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return r
}

// Calls returns the runs so far, in no particular order.
func (r *TerraformRecorder) Calls(t testing.TB) []TerraformCall {
	t.Helper()
	entries, err := os.ReadDir(r.calls)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".args"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names) // stable across calls
	split := func(b []byte) []string {
		s := strings.TrimSuffix(string(b), "\x00")
		if s == "" {
			return nil
		}
		return strings.Split(s, "\x00")
	}
	var out []TerraformCall
	for _, n := range names {
		args, err := os.ReadFile(filepath.Join(r.calls, n+".args"))
		if err != nil {
			t.Fatal(err)
		}
		env, err := os.ReadFile(filepath.Join(r.calls, n+".env"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, TerraformCall{Args: split(args), Env: split(env)})
	}
	return out
}
