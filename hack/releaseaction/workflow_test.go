package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// step is a workflow step as far as these checks read it.
type step struct {
	Name string            `yaml:"name"`
	ID   string            `yaml:"id"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	With map[string]string `yaml:"with"`
}

type job struct {
	Permissions map[string]string `yaml:"permissions"`
	Steps       []step            `yaml:"steps"`
}

// What a release promises, read from release.yml itself: on a version tag,
// both architectures with an SBOM and max provenance pushed to ghcr.io,
// action.yml rewritten by this command from the build's digest, and
// third-party actions pinned by commit.
func TestReleaseWorkflow(t *testing.T) {
	src, err := os.ReadFile("../../.github/workflows/release.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		On struct {
			Push struct {
				Tags []string `yaml:"tags"`
			} `yaml:"push"`
		} `yaml:"on"`
		Permissions map[string]string `yaml:"permissions"`
		Jobs        map[string]job    `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(src, &wf); err != nil {
		t.Fatal(err)
	}
	if strings.Join(wf.On.Push.Tags, ",") != "v*.*.*" {
		t.Errorf("runs on tags %v, want v*.*.*", wf.On.Push.Tags)
	}
	if len(wf.Permissions) != 0 {
		t.Errorf("workflow-wide permissions %v: each job names its own", wf.Permissions)
	}

	var build, attest, rewrite *step
	var buildJob, rewriteJob string
	for name, j := range wf.Jobs {
		for i := range j.Steps {
			s := &j.Steps[i]
			switch {
			case strings.HasPrefix(s.Uses, "docker/build-push-action@"):
				build, buildJob = s, name
			case strings.HasPrefix(s.Uses, "actions/attest-build-provenance@"):
				attest = s
			case strings.Contains(s.Run, "go run ./hack/releaseaction "):
				rewrite, rewriteJob = s, name
			}
		}
	}
	if build == nil || attest == nil || rewrite == nil {
		t.Fatalf("release.yml lacks a step: build-push %v, attest %v, releaseaction %v", build != nil, attest != nil, rewrite != nil)
	}
	for k, want := range map[string]string{
		"platforms":  "linux/amd64,linux/arm64",
		"push":       "true",
		"provenance": "mode=max",
		"sbom":       "true",
		"file":       "Dockerfile",
		"context":    ".",
	} {
		if got := build.With[k]; got != want {
			t.Errorf("build-push-action %s: %q, want %q", k, got, want)
		}
	}
	if !strings.HasPrefix(build.With["tags"], "${{ steps.name.outputs.image }}:") {
		t.Errorf("the image is tagged %q", build.With["tags"])
	}
	if want := "${{ steps." + build.ID + ".outputs.digest }}"; attest.With["subject-digest"] != want {
		t.Errorf("the attestation's digest is %q, want %q", attest.With["subject-digest"], want)
	}
	if want := "${{ steps." + build.ID + ".outputs.digest }}"; !strings.Contains(string(src), "digest: "+want) {
		t.Errorf("job %s does not output the build's digest (%s)", buildJob, want)
	}
	if !strings.Contains(rewrite.Run, `-digest "$DIGEST"`) || !strings.Contains(rewrite.Run, "-o action.yml action.yml") {
		t.Errorf("action.yml is not rewritten from the digest in place: %q", rewrite.Run)
	}

	perms := wf.Jobs[buildJob].Permissions
	for k, want := range map[string]string{"contents": "read", "packages": "write", "id-token": "write", "attestations": "write"} {
		if perms[k] != want {
			t.Errorf("job %s permission %s: %q, want %q", buildJob, k, perms[k], want)
		}
	}
	if p := wf.Jobs[rewriteJob].Permissions; len(p) != 1 || p["contents"] != "write" {
		t.Errorf("job %s permissions %v, want contents: write alone", rewriteJob, p)
	}

	// Every action from another repository by a full commit, with the
	// version it is as a comment.
	pinned := regexp.MustCompile(`^\s*(?:- )?uses: ([\w.-]+/[\w.-]+)@([0-9a-f]{40}) # v\d+\.\d+\.\d+$`)
	usesLine := regexp.MustCompile(`^\s*(?:- )?uses:`)
	uses := 0
	for i, line := range strings.Split(string(src), "\n") {
		if !usesLine.MatchString(line) {
			continue
		}
		uses++
		if !pinned.MatchString(line) {
			t.Errorf("release.yml:%d: %q is not pinned by commit with a version comment", i+1, strings.TrimSpace(line))
		}
	}
	if uses < 7 {
		t.Errorf("found %d uses: lines; the checks above read fewer than the workflow has", uses)
	}
}
