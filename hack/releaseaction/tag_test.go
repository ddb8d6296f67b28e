package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// runScript returns the run: script of the release.yml step named name.
func runScript(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile("../../.github/workflows/release.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]job `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(src, &wf); err != nil {
		t.Fatal(err)
	}
	for _, j := range wf.Jobs {
		for _, s := range j.Steps {
			if s.Name == name {
				return s.Run
			}
		}
	}
	t.Fatalf("release.yml has no step %q", name)
	return ""
}

// git runs git in dir with no user or system configuration.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func gitEnv(dir string) []string {
	return append(os.Environ(),
		"HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=maintainer", "GIT_AUTHOR_EMAIL=m@example.com",
		"GIT_COMMITTER_NAME=maintainer", "GIT_COMMITTER_EMAIL=m@example.com")
}

// The release job's step that commits the pinned action.yml and moves the
// version tag, run as the runner runs it (bash -e -o pipefail) in a clone of
// a local repository: the tag ends on a commit whose parent is the tagged
// one and whose action.yml names the image by digest, the main branch keeps
// image: Dockerfile, and a tag moved meanwhile is left alone.
func TestReleaseMovesTheTag(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed to check the release's tag step")
	}
	script := runScript(t, "Commit action.yml and move the tag to that commit")
	action, err := os.ReadFile("../../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	const tag = "v1.2.3"

	tests := []struct {
		name       string
		annotated  bool
		moveBefore bool // the tag is moved on the remote after the build
	}{
		{name: "annotated tag", annotated: true},
		{name: "lightweight tag"},
		{name: "tag moved meanwhile", annotated: true, moveBefore: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			origin := filepath.Join(dir, "origin.git")
			src := filepath.Join(dir, "src")
			git(t, dir, "init", "-q", "--bare", "-b", "main", origin)
			git(t, dir, "init", "-q", "-b", "main", src)
			if err := os.WriteFile(filepath.Join(src, "action.yml"), action, 0o644); err != nil {
				t.Fatal(err)
			}
			git(t, src, "add", "action.yml")
			git(t, src, "commit", "-q", "-m", "the action")
			built := git(t, src, "rev-parse", "HEAD")
			if tt.annotated {
				git(t, src, "tag", "-a", tag, "-m", "what changed in "+tag)
			} else {
				git(t, src, "tag", tag)
			}
			git(t, src, "push", "-q", origin, "main", "refs/tags/"+tag)

			// The runner's checkout: the tagged commit, detached.
			work := filepath.Join(dir, "work")
			git(t, dir, "clone", "-q", "--depth", "1", "--branch", tag, "file://"+origin, work)
			res, err := Rewrite(action, image, digest)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(work, "action.yml"), res, 0o644); err != nil {
				t.Fatal(err)
			}
			var moved string
			if tt.moveBefore {
				git(t, src, "commit", "-q", "--allow-empty", "-m", "later")
				git(t, src, "tag", "-f", "-a", tag, "-m", "moved by hand")
				git(t, src, "push", "-q", "-f", origin, "refs/tags/"+tag)
				moved = git(t, origin, "rev-parse", "refs/tags/"+tag)
			}

			cmd := exec.Command("bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", script)
			cmd.Dir = work
			cmd.Env = append(gitEnv(dir), "TAG="+tag, "IMAGE="+image, "DIGEST="+digest, "GITHUB_SHA="+built)
			out, err := cmd.CombinedOutput()

			if tt.moveBefore {
				if err == nil {
					t.Fatalf("the step moved a tag that no longer names the built commit:\n%s", out)
				}
				if !strings.Contains(string(out), "::error::tag "+tag+" names ") {
					t.Errorf("the step failed without saying the tag moved:\n%s", out)
				}
				if got := git(t, origin, "rev-parse", "refs/tags/"+tag); got != moved {
					t.Errorf("the remote tag is %s, want it left at %s", got, moved)
				}
				return
			}
			if err != nil {
				t.Fatalf("step failed: %v\n%s", err, out)
			}
			commit := git(t, origin, "rev-parse", "refs/tags/"+tag+"^{commit}")
			if commit == built {
				t.Fatal("the tag still names the built commit")
			}
			if parent := git(t, origin, "rev-parse", commit+"^"); parent != built {
				t.Errorf("the release commit's parent is %s, want the built commit %s", parent, built)
			}
			if files := git(t, origin, "diff", "--name-only", built, commit); files != "action.yml" {
				t.Errorf("the release commit changes %q, want action.yml alone", files)
			}
			if got := git(t, origin, "show", commit+":action.yml"); got != strings.TrimSpace(string(res)) {
				t.Errorf("the released action.yml:\n%s", got)
			}
			if a, err := ParseAction([]byte(git(t, origin, "show", commit+":action.yml"))); err != nil || a.Runs.Image != pinned {
				t.Errorf("the released action.yml runs %q (%v), want %s", a.Runs.Image, err, pinned)
			}
			if main := git(t, origin, "rev-parse", "refs/heads/main"); main != built {
				t.Errorf("main moved to %s", main)
			}
			wantMsg := tag
			if tt.annotated {
				wantMsg = "what changed in " + tag
			}
			if msg := git(t, origin, "tag", "-l", "--format=%(contents)", tag); msg != wantMsg {
				t.Errorf("the tag's message is %q, want %q", msg, wantMsg)
			}
		})
	}
}

// The image job's first step, as the runner runs it: a version tag names
// the image (lowercase, as the registry wants) and its version; anything
// docker cannot tag an image with is refused before a build starts.
func TestReleaseNamesTheImage(t *testing.T) {
	script := runScript(t, "Name the image and the version")
	tests := []struct {
		tag, repo, image, version string // image "" means refused
	}{
		{"v1.2.3", "kusionpr/kusionpr", "ghcr.io/kusionpr/kusionpr", "1.2.3"},
		{"v10.0.1-rc.1", "KusionPR/Kusion-PR", "ghcr.io/kusionpr/kusion-pr", "10.0.1-rc.1"},
		{"v1.2.3+build.5", "kusionpr/kusionpr", "", ""},
		{"v1.2.3.4", "kusionpr/kusionpr", "", ""},
		{"v1.2.x", "kusionpr/kusionpr", "", ""},
		{"v1.2.3-$(id)", "kusionpr/kusionpr", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.tag, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "github_output")
			cmd := exec.Command("bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", script)
			cmd.Env = append(os.Environ(), "TAG="+tt.tag, "GITHUB_REPOSITORY="+tt.repo, "GITHUB_OUTPUT="+out)
			log, err := cmd.CombinedOutput()
			got, _ := os.ReadFile(out)
			if tt.image == "" {
				if err == nil || len(got) != 0 {
					t.Fatalf("tag %s accepted: %s", tt.tag, got)
				}
				if !strings.Contains(string(log), "::error::") {
					t.Errorf("refused without an error annotation: %s", log)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, log)
			}
			if want := "image=" + tt.image + "\nversion=" + tt.version + "\n"; string(got) != want {
				t.Errorf("outputs %q, want %q", got, want)
			}
		})
	}
}
