package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// dumpCommand is a generate-command that records where it ran and with
// what environment (one file per stack, in dump), then does what a
// generator does: writes the stack's spec, here by changing its version.
func dumpCommand(dump string) string {
	return `name=$(basename "$(dirname "$PWD")")-$(basename "$PWD")
printf '%s\n' "$PWD" >> '` + dump + `/ran'
env > '` + dump + `'/$name.env
sed -i 's/{version: v1}/{version: generated}/' spec.yaml
echo "generated the spec of $name"`
}

// TestGenerateCommand: the input generate-command runs in the folder of
// each stack the pull request touches, and only there, before the stack
// is read, so its preview is of what it wrote. It gets the job's
// environment less what the action holds (the token, the kubeconfig, the
// inputs, the runner's OIDC and runtime tokens, the file commands); a
// fork's pull request without allow-fork-credentials gets none of the
// job's credentials. A failure, output past 1 MiB and a run past its
// timeout each fail their stack alone, naming it and why; the output is
// in the job log with workflow commands off.
func TestGenerateCommand(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	operator, err := os.ReadFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	const token = "ghs_testtoken1234567890"
	// What the action holds: never in the command's environment. The
	// store's key is the workflow's (kusion generate reads workspaces
	// with it): passed, but not to a fork's code.
	secrets := append(kubeconfigSecrets(string(operator)), token, "oidc-request-t0ken", "runtime-t0ken")
	gh := githubfake.New(t)
	touched := []githubfake.PullFile{
		{Filename: "apps/web/dev/spec.yaml", Status: "modified"}, {Filename: "apps/api/dev/stack.yaml", Status: "modified"},
	}
	for i, tc := range []struct {
		name    string
		command string // %s is dumpCommand
		fork    bool
		link    bool // apps/web/dev/spec.yaml links to a file outside
		inputs  map[string]string
		code    int
		// comments holds what each stack's comment must say.
		comments map[string][]string
		// ran is the stacks the command ran in (with dumpCommand).
		ran  []string
		log  []string
		fast bool // the step must end well within the command's own time
	}{
		{name: "touched stacks only, the job's environment less the action's", command: "%s",
			comments: map[string][]string{
				"apps/web/dev": {":memo: Preview of stack", "generated"},
				"apps/api/dev": {":memo: Preview of stack", "generated"},
			},
			ran: []string{"apps/api/dev", "apps/web/dev"},
			log: []string{"::group::generate-command in stack apps/web/dev", "generated the spec of web-dev", "::endgroup::"}},
		{name: "a failure fails its stack alone", command: `case "$PWD" in */web/dev) echo 'boom in web' >&2; exit 3;; esac; %s`, code: 1,
			comments: map[string][]string{
				"apps/web/dev": {"generate-command in stack apps/web/dev: exit status 3; its output is in the job log"},
				"apps/api/dev": {":memo: Preview of stack", "generated"},
			},
			log: []string{"boom in web"}},
		{name: "output past 1 MiB", command: `case "$PWD" in */web/dev) head -c 3000000 /dev/zero | tr '\0' x; sleep 60;; esac; %s`, code: 1,
			comments: map[string][]string{
				"apps/web/dev": {"generate-command in stack apps/web/dev: stopped: its output passed 1048576 bytes"},
				"apps/api/dev": {":memo: Preview of stack"},
			}, fast: true},
		{name: "past its timeout", command: `sleep 60 & sleep 60; wait`, inputs: map[string]string{"INPUT_GENERATE-TIMEOUT": "2s"}, code: 1,
			comments: map[string][]string{
				"apps/web/dev": {"generate-command in stack apps/web/dev: stopped after 2s (input generate-timeout)"},
				"apps/api/dev": {"generate-command in stack apps/api/dev: stopped after 2s"},
			}, fast: true},
		{name: "a spec.yaml linked out of the checkout is not written through", command: "%s", link: true, code: 1,
			comments: map[string][]string{
				"apps/web/dev": {"generate-command in stack apps/web/dev: spec.yaml is a link, which a generator writing it would follow: not run"},
				"apps/api/dev": {":memo: Preview of stack", "generated"},
			}},
		{name: "a bad timeout", command: "true", inputs: map[string]string{"INPUT_GENERATE-TIMEOUT": "soon"}, code: 2,
			log: []string{`input generate-timeout: "soon" is not a duration`}},
		{name: "a fork's pull request gets none of the job's credentials", command: "%s", fork: true,
			ran: []string{"apps/api/dev", "apps/web/dev"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := newPRRepo(t)
			dump := t.TempDir()
			githubEnv := filepath.Join(t.TempDir(), "github-env")
			number := 90 + i
			sha := fmt.Sprintf("%040x", 0x9000+i)
			ev := prEvent(t, number, sha)
			if tc.fork {
				ev = forkEvent(t, number, sha, false)
			}
			o, r := owner(ev)
			gh.SetPullFiles(o, r, number, touched)
			command := tc.command
			if strings.Contains(command, "%s") {
				command = strings.ReplaceAll(command, "%s", dumpCommand(dump))
			}
			env := map[string]string{
				"INPUT_GENERATE-COMMAND": command, "INPUT_KUBECONFIG": string(operator), "KUBECONFIG": kc,
				"INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"), "GITHUB_TOKEN": token,
				"ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc-request-t0ken", "ACTIONS_ID_TOKEN_REQUEST_URL": "https://token.actions.example/",
				"ACTIONS_RUNTIME_TOKEN": "runtime-t0ken", "GITHUB_ENV": githubEnv,
				"AWS_SECRET_ACCESS_KEY": "store-s3cret-key", "WORKFLOW_SETTING": "seen-by-the-generator",
			}
			for k, v := range tc.inputs {
				env[k] = v
			}
			target := filepath.Join(t.TempDir(), "runner-file")
			if tc.link {
				write(t, target, "{version: v1}\n")
				spec := filepath.Join(repo.root, "apps/web/dev/spec.yaml")
				if err := os.Remove(spec); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, spec); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			run := runAction(t, gh, repo.root, "pull_request", ev, env)
			took := time.Since(start)
			if run.code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", run.code, tc.code, run.stdout, run.stderr)
			}
			if tc.fast && took > 40*time.Second {
				t.Errorf("the step took %s: the command was not stopped", took)
			}
			for dir, wants := range tc.comments {
				body := commentOf(gh, o, r, number, dir)
				for _, want := range wants {
					if !strings.Contains(body, want) {
						t.Errorf("%s: the comment lacks %q:\n%s", dir, want, body)
					}
				}
			}
			if b, _ := os.ReadFile(target); tc.link && string(b) != "{version: v1}\n" {
				t.Errorf("the file the link points to was written: %q", b)
			}
			for _, want := range tc.log {
				if !strings.Contains(run.stdout, want) {
					t.Errorf("the job log lacks %q:\n%s", want, run.stdout)
				}
			}
			if tc.ran == nil {
				return
			}
			b, _ := os.ReadFile(filepath.Join(dump, "ran"))
			var ran []string
			for _, l := range strings.Fields(string(b)) {
				rel, _ := filepath.Rel(repo.root, l)
				ran = append(ran, rel)
			}
			slices.Sort(ran)
			if got, want := strings.Join(ran, " "), strings.Join(tc.ran, " "); got != want {
				t.Errorf("the command ran in %q, want %q (the stacks touched)", got, want)
			}
			for _, stack := range []string{"web-dev", "api-dev"} {
				b, err := os.ReadFile(filepath.Join(dump, stack+".env"))
				if err != nil {
					t.Fatal(err)
				}
				environ := string(b)
				for _, s := range secrets {
					if len(s) >= minSecret && strings.Contains(environ, s) {
						t.Errorf("%s: the command's environment holds a credential of the action's (%.12s...)", stack, s)
					}
				}
				for _, line := range strings.Split(environ, "\n") {
					for _, name := range []string{"INPUT_", "GITHUB_TOKEN=", "KUBECONFIG=", "ACTIONS_ID_TOKEN_REQUEST_", "ACTIONS_RUNTIME_TOKEN=", "GITHUB_ENV="} {
						if strings.HasPrefix(line, name) {
							t.Errorf("%s: the command's environment holds %s", stack, name)
						}
					}
				}
				for _, kv := range []string{"WORKFLOW_SETTING=seen-by-the-generator", "AWS_SECRET_ACCESS_KEY=store-s3cret-key"} {
					if got := strings.Contains(environ, kv); got != !tc.fork {
						t.Errorf("%s: the workflow's %s passed: %v, want %v", stack, kv, got, !tc.fork)
					}
				}
				if !strings.Contains(environ, "PATH=") {
					t.Errorf("%s: no PATH in the command's environment", stack)
				}
			}
			if b, _ := os.ReadFile(githubEnv); len(b) > 0 {
				t.Errorf("GITHUB_ENV was written: %q", b)
			}
		})
	}
}

// TestGenerateCommandOutputIsNoWorkflowCommand: what the command prints,
// through which a pull request's code may speak, reaches the job log with
// workflow commands off: a forged ::error:: or ::add-mask:: is text between
// ::stop-commands:: and the token that ends it.
func TestGenerateCommandOutputIsNoWorkflowCommand(t *testing.T) {
	gh := githubfake.New(t)
	repo := newPRRepo(t)
	const number = 99
	ev := prEvent(t, number, "9999999999999999999999999999999999999999")
	o, r := owner(ev)
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
	run := runAction(t, gh, repo.root, "pull_request", ev, map[string]string{
		"KUBECONFIG": "", "INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"),
		"INPUT_GENERATE-COMMAND": `echo '::error title=forged::forged by the generator'; echo '::stop-commands::guess'; echo '::add-mask::Preview'; exit 1`,
	})
	m := regexp.MustCompile(`(?s)::stop-commands::([0-9a-f]{32})\n(.*)\n::([0-9a-f]{32})::\n`).FindStringSubmatch(run.stdout)
	if m == nil || m[1] != m[3] {
		t.Fatalf("the command's output is not between ::stop-commands:: and its token:\n%s", run.stdout)
	}
	if !strings.Contains(m[2], "::error title=forged::forged by the generator") || strings.Count(run.stdout, "forged by the generator") != 1 {
		t.Errorf("the forged command is not (only) inside the block:\n%s", run.stdout)
	}
	if body := commentOf(gh, o, r, number, "apps/web/dev"); !strings.Contains(body, "generate-command in stack apps/web/dev: exit status 1") {
		t.Errorf("the comment:\n%s", body)
	}
}

// TestGenerateCommandCannotReadTheActionsStartEnvironment: the action
// unsets the token and the kubeconfig it read, but the kernel keeps the
// environment it started with in /proc/<pid>/environ, readable by any
// process of its user, as the command is. The action makes itself
// undumpable: the command (run, as in a job, by the action's own user)
// reads its own shell's environment there, not the action's. Run as the
// unprivileged user 65532 when the test runs as root, who may read any.
func TestGenerateCommandCannotReadTheActionsStartEnvironment(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	operator, err := os.ReadFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	var cred *syscall.Credential
	if os.Getuid() == 0 {
		cred = &syscall.Credential{Uid: 65532, Gid: 65532}
	}
	bin := actionBinary(t)
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	// Every folder the action touches, open to its user.
	open := func() string {
		d, err := os.MkdirTemp("", "kusionpr-generate-*")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		os.Chmod(d, 0o777)
		return d
	}
	root, dump, jobDir, home := open(), open(), open(), open()
	repo := newPRRepo(t)
	if err := os.CopyFS(root, os.DirFS(repo.root)); err != nil {
		t.Fatal(err)
	}
	filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error { return os.Chmod(p, 0o777) })
	gh := githubfake.New(t)
	const number = 98
	ev := prEvent(t, number, "9898989898989898989898989898989898989898")
	o, r := owner(ev)
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
	eventPath := githubfake.WriteEvent(t, jobDir, ev)
	os.Chmod(eventPath, 0o644)
	outputs, summary := filepath.Join(jobDir, "output"), filepath.Join(jobDir, "summary")
	for _, f := range []string{outputs, summary} {
		os.WriteFile(f, nil, 0o666)
		os.Chmod(f, 0o666)
	}
	const token = "ghs_startenv_t0ken_5521"
	repoInfo := ev["repository"].(map[string]any)
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home,
		"GITHUB_ACTIONS=true", "GITHUB_EVENT_NAME=pull_request", "GITHUB_EVENT_PATH=" + eventPath,
		"GITHUB_OUTPUT=" + outputs, "GITHUB_STEP_SUMMARY=" + summary, "GITHUB_WORKSPACE=" + root,
		"GITHUB_REPOSITORY=" + fmt.Sprint(repoInfo["full_name"]), "GITHUB_REPOSITORY_ID=" + fmt.Sprintf("%.0f", repoInfo["id"]),
		"GITHUB_API_URL=" + strings.TrimSuffix(gh.URL, "/"), "GITHUB_ACTOR=octocat",
		"INPUT_GITHUB-TOKEN=" + token, "INPUT_WORKSPACE=default", "INPUT_KUBECONFIG=" + string(operator),
		"INPUT_BACKEND=file://" + filepath.Join(home, "releases"), "DUMP=" + dump,
		// The shell's own environment is readable (the control); the
		// action's, its parent's, must not be.
		`INPUT_GENERATE-COMMAND=cat /proc/$$/environ > "$DUMP/own" 2>&1; cat /proc/$PPID/environ > "$DUMP/action" 2>&1; echo $? > "$DUMP/action.rc"`,
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the action: %v\n%s", err, out.String())
	}
	own, _ := os.ReadFile(filepath.Join(dump, "own"))
	if !strings.Contains(string(own), "DUMP=") {
		t.Fatalf("the command could not read its own shell's environment (the control): %q\n%s", own, out.String())
	}
	action, _ := os.ReadFile(filepath.Join(dump, "action"))
	rc, _ := os.ReadFile(filepath.Join(dump, "action.rc"))
	if strings.Contains(string(action), token) || strings.Contains(string(action), "INPUT_KUBECONFIG") || strings.TrimSpace(string(rc)) == "0" {
		t.Errorf("the command read the action's start environment (exit %s): %.80q", strings.TrimSpace(string(rc)), action)
	}
	if body := commentOf(gh, o, r, number, "apps/web/dev"); !strings.Contains(body, ":memo: Preview of stack") {
		t.Errorf("the preview did not run:\n%s", body)
	}
}

// TestGeneratorPrintEscapesTheStack: a stack folder named with a line
// break cannot start a workflow command of its own in the job log.
func TestGeneratorPrintEscapesTheStack(t *testing.T) {
	var log bytes.Buffer
	g := &generator{log: &log}
	g.print("apps/x\n::error::forged\r", &boundedBuffer{max: 10})
	want := "::group::generate-command in stack apps/x%0A::error::forged%0D\n::endgroup::\n"
	if log.String() != want {
		t.Errorf("log %q\nwant %q", log.String(), want)
	}
}
