package settings

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// TestDeclarations holds the table to what the doors assume of it: one
// name per setting and per door, defaults that parse and pass their own
// checks, secrets no door could show.
func TestDeclarations(t *testing.T) {
	names, inputs, vars, keys := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	flags := map[string]map[string]bool{} // command -> flag
	for _, s := range All() {
		once := func(seen map[string]bool, what, name string) {
			if seen[name] {
				t.Errorf("%s: %s %q is declared twice", s.Name, what, name)
			}
			seen[name] = true
		}
		once(names, "setting", s.Name)
		if s.Type < String || s.Type > Object {
			t.Errorf("%s: no type", s.Name)
		}
		if s.Help == "" && (s.Input == nil || s.Input.Doc == "") {
			t.Errorf("%s: no help", s.Name)
		}
		if (s.Type == Bool || s.Type == Int || s.Type == Duration) && s.Default == "" {
			t.Errorf("%s: a %s needs a default", s.Name, s.Type)
		}
		if s.Type == Map && s.Parse == nil {
			t.Errorf("%s: a map needs Parse", s.Name)
		}
		if s.Type == Object && (s.Flag != nil || s.Input != nil || s.Var == nil || s.Var.Name != "" || s.Var.YAML == "") {
			t.Errorf("%s: an object is a key of the bot's file alone", s.Name)
		}
		if s.Type != Object {
			mustDefault(t, s, "the default", s.Default)
		}
		if s.Flag != nil {
			if len(s.Flag.Commands) == 0 {
				t.Errorf("%s: a flag of no command", s.Name)
			}
			for _, c := range s.Flag.Commands {
				if flags[c] == nil {
					flags[c] = map[string]bool{}
				}
				once(flags[c], "flag of "+c, s.flagName())
			}
			for c, d := range s.Flag.Default {
				if !slices.Contains(s.Flag.Commands, c) {
					t.Errorf("%s: a default for %s, which has no such flag", s.Name, c)
				}
				mustDefault(t, s, c+"'s default", d)
			}
			if s.Flag.FromEnv && (s.VarName() == "" || (s.Type != String && s.Type != List && s.Type != Map)) {
				t.Errorf("%s: a flag read from the environment needs a variable and a text type", s.Name)
			}
		}
		if s.Input != nil {
			once(inputs, "input", s.InputName())
			if s.Input.Empty != nil {
				mustDefault(t, s, "the empty input's meaning", *s.Input.Empty)
			}
		}
		if s.Var != nil {
			if s.Var.Name != "" {
				once(vars, "variable", s.Var.Name)
				if !strings.HasPrefix(s.Var.Name, "KUSIONPR_") {
					t.Errorf("%s: variable %s is not a KUSIONPR_ one", s.Name, s.Var.Name)
				}
			}
			if s.Var.YAML != "" {
				once(keys, "key", s.Var.YAML)
				if !s.Var.Bot {
					t.Errorf("%s: a key of the bot's file the bot does not read", s.Name)
				}
			}
		}
		if s.Required != "" && (s.Var == nil || !s.Var.Bot) {
			t.Errorf("%s: only the bot's settings can be required", s.Name)
		}
		if s.Secret && (s.Type != String || s.Default != "" || s.Flag != nil || s.Parse != nil || s.Check != nil || s.CheckNamed != nil || s.Want != "") {
			// A check could quote the value; a flag's help shows its
			// default, which may come from the environment.
			t.Errorf("%s: a secret is a plain string, without default, check or flag", s.Name)
		}
	}
}

// mustDefault fails unless text is a value of s that passes its checks.
func mustDefault(t *testing.T, s *Setting, what, text string) {
	t.Helper()
	v, err := s.parse(text)
	if err == nil {
		err = s.check(v)
	}
	if err != nil && s.Required == "" {
		t.Errorf("%s: %s %q: %v", s.Name, what, text, err)
	}
}

// TestGenerated: action.yml's inputs and docs/settings.md are what the
// declarations say (make settings writes them), and action.yml has no
// input the declarations lack, nor lacks one.
func TestGenerated(t *testing.T) {
	action, err := os.ReadFile("../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Inputs map[string]struct {
			Description string `json:"description"`
			Default     any    `json:"default"`
		} `json:"inputs"`
	}
	if err := yaml.Unmarshal(action, &meta); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	for _, name := range slices.Sorted(maps.Keys(meta.Inputs)) {
		if s := byInput(name); s == nil {
			t.Errorf("action.yml has the input %s, which no setting declares (settings/table.go): declare it, then run make settings", name)
		}
	}
	for _, s := range All() {
		if _, ok := meta.Inputs[s.InputName()]; s.Input != nil && !ok {
			t.Errorf("action.yml lacks the input %s that settings/table.go declares: run make settings", s.InputName())
		}
	}
	want, err := SpliceInputs(action)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(action) {
		t.Errorf("action.yml's inputs are not what settings/table.go declares (descriptions, defaults, order): run make settings")
	}
	doc, err := os.ReadFile("../docs/settings.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(doc) != Markdown() {
		t.Errorf("docs/settings.md is not what settings/table.go declares: run make settings")
	}
}

func byInput(name string) *Setting {
	for _, s := range All() {
		if s.Input != nil && s.InputName() == name {
			return s
		}
	}
	return nil
}

// TestFlags: a command's flags are the declared ones, with their defaults
// (a command's own, a variable's), read and checked as declared, and a
// mistake names the flag as written.
func TestFlags(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name    string
		command string
		args    []string
		getenv  func(string) string
		want    map[string]any
		wantErr string
	}{
		{"defaults", "preview", nil, env(), map[string]any{"stack": ".", "output": "text", "log-level": "info", "timeout": 5 * time.Minute, "force-conflicts": true, "parallelism": int64(10), "ignore-fields": []string(nil)}, ""},
		{"a command's own default", "drift", nil, env(), map[string]any{"log-level": "warn", "drift-stack": "", "max-parallel": int64(4)}, ""},
		{"one dash or two", "apply", []string{"-stack", "x", "--yes", "-o", "json", "--ignore-fields", "a.b, c"}, env(), map[string]any{"stack": "x", "yes": true, "output": "json", "ignore-fields": []string{"a.b", "c"}}, ""},
		{"a default from the environment", "preview", nil, env("KUSIONPR_TERRAFORM_ENV", "AWS_REGION,ARM_*", "KUSIONPR_KCL_CACHE", "/k"),
			map[string]any{"terraform-env": []string{"AWS_REGION", "ARM_*"}, "kcl-cache": "/k"}, ""},
		{"the flag over the environment", "preview", []string{"--terraform-env", "X"}, env("KUSIONPR_TERRAFORM_ENV", "Y"), map[string]any{"terraform-env": []string{"X"}}, ""},
		{"a timeout of zero", "apply", []string{"--timeout", "0s"}, env(), nil, "--timeout: 0s is not a positive duration: want one such as 90s or 10m (default 5m)"},
		{"a bad format", "preview", []string{"-o", "yaml"}, env(), nil, `-o: unknown output format "yaml"`},
		{"a bad level", "drift", []string{"--log-level", "loud"}, env(), nil, "--log-level: slog: level string"},
		{"a bad allowance", "generate", []string{"--spec-kubeconfig-allow", "everything"}, env(), nil, `--spec-kubeconfig-allow: unknown allowance "everything"`},
		{"a bad pair from the environment", "preview", nil, env("KUSIONPR_KUBECONFIGS", "dev"), nil, `--kubeconfigs: "dev": want WORKSPACE=FILE`},
		{"a terraform pattern", "preview", []string{"--terraform-env", "A[B"}, env(), nil, `terraform-env (--terraform-env, KUSIONPR_TERRAFORM_ENV): "A[B" is not a variable name or pattern`},
		{"a bad KCL variable", "preview", nil, env("KUSIONPR_KCL_UNCONFINED", "maybe"), nil, `KUSIONPR_KCL_UNCONFINED: "maybe" is not true or false`},
		{"policy test", "policy test", []string{"-o", "yaml"}, env(), nil, `-o: "yaml" is neither text nor json`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("action", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			cl := Flags(fs, tc.command, tc.getenv)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			vals, err := cl.Values()
			checkValues(t, vals, err, tc.want, tc.wantErr)
		})
	}
}

func equal(a, b any) bool {
	as, aok := a.([]string)
	bs, bok := b.([]string)
	if aok || bok {
		return aok && bok && slices.Equal(as, bs)
	}
	return a == b
}

// TestInputs: an input is read as declared, an empty one is its default
// (or what it always meant outside a workflow), and a mistake names it.
func TestInputs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		inputs  map[string]string
		want    map[string]any
		wantErr string
	}{
		{"defaults", nil, map[string]any{"root": ".", "comment": "always", "combine-above": int64(10), "deployments": true, "policy": "none", "comment-user": "", "generate-timeout": 10 * time.Minute}, ""},
		{"as given", map[string]string{"policy": "/rules/", "stacks": "a/*\nb/*", "allow-fork-credentials": "true", "lease": "1m"},
			map[string]any{"policy": "rules", "stacks": []string{"a/*", "b/*"}, "allow-fork-credentials": true, "lease": time.Minute}, ""},
		{"a way to comment", map[string]string{"comment": "sometimes"}, nil, `input comment: "sometimes" is not always, on-change, combined or never`},
		{"stacks combined above none", map[string]string{"combine-above": "-1"}, nil, `input combine-above: "-1" is not a number of stacks (0 never combines)`},
		{"a word for a number of stacks", map[string]string{"combine-above": "ten"}, nil, `input combine-above: "ten" is not a number of stacks (0 never combines)`},
		{"a word for a number", map[string]string{"max-parallel": "many"}, nil, `input max-parallel: "many" is not a number`},
		{"a generate timeout", map[string]string{"generate-timeout": "soon"}, nil, `input generate-timeout: "soon" is not a duration such as 10m`},
		{"a lease", map[string]string{"lease": "5"}, nil, "input lease: time: missing unit"},
		{"a timeout of zero", map[string]string{"timeout": "0s"}, nil, "input timeout: 0s is not a positive duration"},
		{"a flag", map[string]string{"issues": "yes please"}, nil, `input issues: "yes please" is not true or false`},
		{"a command", map[string]string{"command": "plan"}, nil, `input command: unknown command "plan"`},
		{"a policy folder out of the repository", map[string]string{"policy": "../x"}, nil, `input policy: "../x" is not a folder inside a repository (or none)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals, err := Inputs(func(name string) string { return tc.inputs[name] }, func(string) string { return "" })
			checkValues(t, vals, err, tc.want, tc.wantErr)
		})
	}
}

// TestBot: a variable wins over the file's key, each is read as declared,
// and a mistake names the variable (in the file, the key); a key no
// setting has stops the bot.
func TestBot(t *testing.T) {
	dir := t.TempDir()
	n := 0
	file := func(content string) string {
		n++
		p := filepath.Join(dir, fmt.Sprintf("bot%d.yaml", n))
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    map[string]any
		wantErr string
	}{
		{"defaults", map[string]string{"KUSIONPR_WEBHOOK_SECRET": "s", "KUSIONPR_APP_ID": "3"}, map[string]any{"listen": ":8080", "concurrency": int64(4), "mergeable-states": []string{"clean"}, "executor": "in-process", "timeout": 5 * time.Minute}, ""},
		{"the file, the environment over it", map[string]string{"KUSIONPR_WEBHOOK_SECRET": "s", "KUSIONPR_APP_ID": "3", "KUSIONPR_LEASE": "2m", "KUSIONPR_CONFIG": file("lease: 1m\nholdWait: 3m\nallowRepos: [a/b]\nrequireChecks: false\n")},
			map[string]any{"lease": 2 * time.Minute, "hold-wait": 3 * time.Minute, "allow-repos": []string{"a/b"}, "require-checks": false}, ""},
		{"nothing set", nil, nil, "KUSIONPR_WEBHOOK_SECRET is not set"},
		{"a number below its range", map[string]string{"KUSIONPR_WEBHOOK_SECRET": "s", "KUSIONPR_APP_ID": "3", "KUSIONPR_CONCURRENCY": "0"}, nil, "KUSIONPR_CONCURRENCY must be at least 1, not 0"},
		{"stacks combined above none", map[string]string{"KUSIONPR_WEBHOOK_SECRET": "s", "KUSIONPR_APP_ID": "3", "KUSIONPR_COMBINE_ABOVE": "-1"}, nil, "KUSIONPR_COMBINE_ABOVE must be a number of stacks (0 never combines), not -1"},
		{"a word for a number", map[string]string{"KUSIONPR_WEBHOOK_SECRET": "s", "KUSIONPR_APP_ID": "many"}, nil, `KUSIONPR_APP_ID: "many" is not a number`},
		{"no mergeable state", map[string]string{"KUSIONPR_WEBHOOK_SECRET": "s", "KUSIONPR_APP_ID": "3", "KUSIONPR_MERGEABLE_STATES": ","}, nil, "KUSIONPR_MERGEABLE_STATES is empty"},
		{"a file's value out of range", map[string]string{"KUSIONPR_WEBHOOK_SECRET": "s", "KUSIONPR_APP_ID": "3", "KUSIONPR_CONFIG": file("concurrency: 0\n")}, nil, "KUSIONPR_CONCURRENCY must be at least 1, not 0"},
		{"an unknown key", map[string]string{"KUSIONPR_CONFIG": file("workspaces: prod\n")}, nil, `unknown field "workspaces"`},
		{"a bad duration in the file", map[string]string{"KUSIONPR_CONFIG": file("lease: soon\n")}, nil, `lease: time: invalid duration "soon"`},
		{"a string for a flag in the file", map[string]string{"KUSIONPR_CONFIG": file("requireChecks: \"no\"\n")}, nil, "requireChecks: json: cannot unmarshal string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals, err := Bot(func(k string) string { return tc.env[k] })
			checkValues(t, vals, err, tc.want, tc.wantErr)
		})
	}
}

// TestSecretsUnsaid: no help, doc or error of any door shows a secret's
// value, and the doors know which variables to remove once read.
func TestSecretsUnsaid(t *testing.T) {
	const secret = "s3cr3t-Value-42"
	inputs := map[string]string{}
	env := map[string]string{"KUSIONPR_CONCURRENCY": "0", "KUSIONPR_APP_ID": "x"}
	var names []string
	for _, s := range All() {
		if !s.Secret {
			continue
		}
		names = append(names, s.Name)
		if s.Input != nil {
			inputs[s.InputName()] = secret
		}
		if s.Var != nil && s.Var.Bot {
			env[s.Var.Name] = secret
		}
	}
	if len(names) < 5 {
		t.Fatalf("secrets %v: want the webhook secret, the App key, the token, the kubeconfig, the CLI configuration", names)
	}
	inputs["comment"] = "bad"
	_, inErr := Inputs(func(n string) string { return inputs[n] }, func(k string) string { return env[k] })
	_, botErr := Bot(func(k string) string { return env[k] })
	var help strings.Builder
	BotHelp(&help)
	for what, text := range map[string]string{"inputs' errors": errText(inErr), "bot's errors": errText(botErr), "bot's help": help.String(), "docs": Markdown(), "action.yml": ActionInputs()} {
		if strings.Contains(text, secret) {
			t.Errorf("the %s show a secret:\n%s", what, text)
		}
	}
	if inErr == nil || botErr == nil {
		t.Fatalf("no errors to look into: %v, %v", inErr, botErr)
	}
	for _, want := range []string{"KUSIONPR_WEBHOOK_SECRET", "KUSIONPR_APP_PRIVATE_KEY", "KUSIONPR_APP_PRIVATE_KEY_PATH"} {
		if !slices.Contains(BotSecrets(), want) {
			t.Errorf("BotSecrets() = %v, without %s", BotSecrets(), want)
		}
	}
	for _, want := range []string{"INPUT_GITHUB-TOKEN", "INPUT_KUBECONFIG"} {
		if !slices.Contains(InputSecrets(), want) {
			t.Errorf("InputSecrets() = %v, without %s", InputSecrets(), want)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestFill: a struct's tagged fields take the values of the settings they
// name; a tag naming no setting, or a field of another type, is refused.
func TestFill(t *testing.T) {
	vals, err := Bot(func(k string) string {
		return map[string]string{"KUSIONPR_WEBHOOK_SECRET": "s", "KUSIONPR_APP_ID": "7", "KUSIONPR_KUBECONFIGS": "dev=/k", "KUSIONPR_ALLOW_REPOS": "a/b,c/d"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppID       int64             `setting:"app-id"`
		Concurrency int               `setting:"concurrency"`
		Lease       time.Duration     `setting:"lease"`
		Repos       []string          `setting:"allow-repos"`
		Kubeconfigs map[string]string `setting:"kubeconfigs"`
		Jobs        *struct{}         `setting:"kubernetes-jobs"`
		Stack       string            `setting:"stack"` // not the bot's: left alone
		Untagged    string
	}
	c.Stack = "kept"
	if err := vals.Fill(&c); err != nil {
		t.Fatal(err)
	}
	if c.AppID != 7 || c.Concurrency != 4 || c.Lease != 5*time.Minute || len(c.Repos) != 2 || c.Kubeconfigs["dev"] != "/k" || c.Jobs != nil || c.Stack != "kept" {
		t.Errorf("filled %+v", c)
	}
	var bad struct {
		A string `setting:"no-such-setting"`
		B string `setting:"concurrency"`
	}
	err = vals.Fill(&bad)
	if err == nil || !strings.Contains(err.Error(), `"no-such-setting"`) || !strings.Contains(err.Error(), "field B") {
		t.Errorf("error %v", err)
	}
}

// checkValues holds what a door read to what a case wants: the error
// saying wantErr, or else the values of want.
func checkValues(t *testing.T, vals Values, err error, want map[string]any, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want one saying %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if got := vals.v[name]; !equal(got, w) {
			t.Errorf("%s = %#v, want %#v", name, got, w)
		}
	}
}
