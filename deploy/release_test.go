package deploy_test

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const releaseWorkflow = "../.github/workflows/release.yml"

// released is what release.yml pushes for one tag: it runs the steps the
// build step's tags name (the image's name and version), as the runner runs
// a step (bash -e), with the tag and the repository a run would have, and
// fills their outputs into the tags. err says why a tag pushes nothing
// (release.yml's own words when its step refuses the tag).
func released(t *testing.T, repository, tag string) (refs []string, err error) {
	t.Helper()
	var wf struct {
		On   map[string]struct{ Tags []string } `yaml:"on"` // by event
		Jobs map[string]struct {
			Steps []struct {
				ID   string            `yaml:"id"`
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				Env  map[string]string `yaml:"env"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	b, rerr := os.ReadFile(releaseWorkflow)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("%s: %v", releaseWorkflow, err)
	}
	if pushes := wf.On["push"].Tags; !slices.ContainsFunc(pushes, func(p string) bool { ok, _ := path.Match(p, tag); return ok }) {
		return nil, fmt.Errorf("release.yml runs on the tags %v, not %s", pushes, tag)
	}
	for _, j := range wf.Jobs {
		runs := map[string]string{} // step id -> its script
		envs := map[string]map[string]string{}
		for _, s := range j.Steps {
			if s.ID != "" {
				runs[s.ID], envs[s.ID] = s.Run, s.Env
			}
		}
		for _, s := range j.Steps {
			if !strings.HasPrefix(s.Uses, "docker/build-push-action@") || s.With["push"] != "true" {
				continue
			}
			tags := s.With["tags"]
			outputs := map[string]string{}
			for _, m := range regexp.MustCompile(`\$\{\{ steps\.([\w-]+)\.outputs\.([\w-]+) \}\}`).FindAllStringSubmatch(tags, -1) {
				id := m[1]
				if _, done := outputs[id+"."+m[2]]; done {
					continue
				}
				out, err := runStep(t, runs[id], envs[id], repository, tag)
				if err != nil {
					return nil, fmt.Errorf("its step %q: %v", id, err)
				}
				for k, v := range out {
					outputs[id+"."+k] = v
				}
			}
			filled := regexp.MustCompile(`\$\{\{ steps\.([\w-]+)\.outputs\.([\w-]+) \}\}`).ReplaceAllStringFunc(tags, func(e string) string {
				m := regexp.MustCompile(`steps\.([\w-]+)\.outputs\.([\w-]+)`).FindStringSubmatch(e)
				return outputs[m[1]+"."+m[2]]
			})
			for _, r := range strings.FieldsFunc(filled, func(r rune) bool { return r == '\n' || r == ',' }) {
				if r = strings.TrimSpace(r); r != "" {
					refs = append(refs, r)
				}
			}
		}
	}
	if len(refs) == 0 {
		t.Fatalf("%s: no docker/build-push-action step pushing tags", releaseWorkflow)
	}
	return refs, nil
}

// runStep runs a step's script with the variables of a run on tag in
// repository and returns what it wrote to GITHUB_OUTPUT.
func runStep(t *testing.T, script string, env map[string]string, repository, tag string) (map[string]string, error) {
	t.Helper()
	if script == "" {
		t.Fatalf("%s: the step naming the image has no run: script", releaseWorkflow)
	}
	dir := t.TempDir()
	output := filepath.Join(dir, "output")
	cmd := exec.Command("bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GITHUB_OUTPUT=" + output, "GITHUB_REPOSITORY=" + repository, "GITHUB_REF_NAME=" + tag}
	for k, v := range env {
		switch v {
		case "${{ github.ref_name }}":
			v = tag
		case "${{ github.repository }}":
			v = repository
		default:
			t.Fatalf("%s: the step naming the image sets %s to %q, which this test cannot fill", releaseWorkflow, k, v)
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	b, err := os.ReadFile(output)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			outputs[k] = v
		}
	}
	return outputs, nil
}

// repository is this repository's owner/name on GitHub, from go.mod's module
// path: what GITHUB_REPOSITORY is in its release runs.
func repository(t *testing.T) string {
	t.Helper()
	for _, l := range lines(t, "../go.mod") {
		if m, ok := strings.CutPrefix(l, "module github.com/"); ok {
			return m
		}
	}
	t.Fatal("go.mod names no github.com module")
	return ""
}

// TestManifestImagesAreReleased holds every image of this repository the
// manifests and the pages name by tag (ghcr.io/OWNER/REPO:TAG, perhaps
// @sha256:... after it) to what release.yml pushes for the release tag
// vTAG, by running release.yml's own steps for it; every container image of
// the manifests must be this repository's. A tag release.yml never pushes
// (such as latest) fails, naming the line and what release.yml says.
func TestManifestImagesAreReleased(t *testing.T) {
	repo := repository(t)
	image := "ghcr.io/" + strings.ToLower(repo)
	ours := regexp.MustCompile(regexp.QuoteMeta(image) + `(?::[\w][\w.-]*)?(?:@sha256:[0-9a-f.<>A-Za-z -]*)?`)
	type use struct{ at, ref string }
	var uses []use
	for _, f := range manifestFiles(t) {
		for i, l := range lines(t, f) {
			m := regexp.MustCompile(`^\s*(?:- )?image:\s*"?([^"\s#]+)`).FindStringSubmatch(l)
			if m == nil {
				continue
			}
			at := fmt.Sprintf("%s:%d", rel(f), i+1)
			if !strings.HasPrefix(m[1], image+":") && !strings.HasPrefix(m[1], image+"@") {
				t.Errorf("%s: image %s is not %s, the image release.yml pushes", at, m[1], image)
				continue
			}
			uses = append(uses, use{at, m[1]})
		}
	}
	if len(uses) == 0 {
		t.Fatalf("no manifest names %s", image)
	}
	for _, f := range pages(t) {
		for i, l := range lines(t, f) {
			for _, r := range ours.FindAllString(l, -1) {
				uses = append(uses, use{fmt.Sprintf("%s:%d", rel(f), i+1), strings.TrimSpace(r)})
			}
		}
	}
	pushed := map[string][]string{} // tag -> refs
	for _, u := range uses {
		ref, _, _ := strings.Cut(u.ref, "@")
		version, tagged := strings.CutPrefix(ref, image+":")
		if !tagged {
			continue // by digest alone: a release's notes give it
		}
		tag := "v" + version
		refs, ok := pushed[tag]
		if !ok {
			var err error
			if refs, err = released(t, repo, tag); err != nil {
				t.Errorf("%s: %s: release.yml pushes no such tag: for the tag %s, %v", u.at, u.ref, tag, err)
				pushed[tag] = nil
				continue
			}
			pushed[tag] = refs
		}
		if refs != nil && !slices.Contains(refs, ref) {
			t.Errorf("%s: %s: release.yml pushes %v for the tag %s, not it", u.at, ref, refs, tag)
		}
	}
}
