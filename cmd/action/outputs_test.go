package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// TestOutputsAgreeWithChecks: a pull request touching a good stack and
// one whose spec is broken. Every output of the step is read against the
// check runs the run left on its head: the same stacks; a failed check ↔
// Errors > 0 and an error in summary; a passed one ↔ neither, and the
// counts its title shows; comment-urls the comments of each stack; changed
// and complete as a failed stack makes them.
func TestOutputsAgreeWithChecks(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	gh := githubfake.New(t)
	repo := newPRRepo(t)
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", repo.ns("apps/web/dev"), "--ignore-not-found", "--wait=false").Run()
	})
	// Not a spec the engine can read: nothing of it is previewed.
	write(t, filepath.Join(repo.root, "apps/web/prod/spec.yaml"), "resources:\n- id: v1:ConfigMap:x\n  type: Kubernetes\n  attributes: {}\n")
	const number, sha = 17, "1717171717171717171717171717171717171717"
	ev := prEvent(t, number, sha)
	o, r := owner(ev)
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{
		{Filename: "apps/web/dev/spec.yaml", Status: "modified"},
		{Filename: "apps/web/prod/spec.yaml", Status: "modified"},
	})
	run := runAction(t, gh, repo.root, "pull_request", ev, map[string]string{
		"KUBECONFIG": kc, "INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"),
	})
	if run.code == 0 {
		t.Errorf("the step succeeded with a broken stack")
	}

	checks := map[string]githubfake.CheckRun{}
	perStack, overview := stackChecks(gh.CheckRuns(o, r))
	for _, ck := range perStack {
		if ck.HeadSHA == sha {
			checks[strings.TrimPrefix(ck.Name, "kusion/preview: ")] = ck
		}
	}
	if len(overview) != 1 || overview[0].Conclusion != "failure" {
		t.Errorf("overview check runs %+v, want one failure, as the step failed", overview)
	}
	var stacks []string
	if err := json.Unmarshal([]byte(run.outputs["stacks"]), &stacks); err != nil {
		t.Fatalf("output stacks %q: %v", run.outputs["stacks"], err)
	}
	slices.Sort(stacks)
	if checked := slices.Sorted(func(yield func(string) bool) {
		for k := range checks {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(stacks, checked) || len(stacks) != 2 {
		t.Errorf("output stacks %v, check runs for %v; want the same two", stacks, checked)
	}

	type counts struct {
		Create, Update, Delete, Unchanged, Drift, Errors int
		Error                                            *string `json:"error"`
	}
	var summary map[string]counts
	if err := json.Unmarshal([]byte(run.outputs["summary"]), &summary); err != nil {
		t.Fatalf("output summary %q: %v", run.outputs["summary"], err)
	}
	var urls map[string][]string
	if err := json.Unmarshal([]byte(run.outputs["comment-urls"]), &urls); err != nil {
		t.Fatalf("output comment-urls %q: %v", run.outputs["comment-urls"], err)
	}
	failed := 0
	for stack, ck := range checks {
		s, ok := summary[stack]
		if !ok {
			t.Errorf("%s: a check run but no summary (%s)", stack, run.outputs["summary"])
			continue
		}
		switch ck.Conclusion {
		case "failure":
			failed++
			if s.Errors == 0 || s.Error == nil || *s.Error == "" {
				t.Errorf("%s: its check failed (%q) but its summary reads %+v", stack, ck.Title, s)
			} else if first, _, _ := strings.Cut(*s.Error, "\n"); !strings.Contains(ck.Title, first) {
				t.Errorf("%s: summary error %q, check title %q; want the same failure", stack, *s.Error, ck.Title)
			}
		case "success":
			if s.Errors != 0 || s.Error != nil {
				t.Errorf("%s: its check passed but its summary reads %+v", stack, s)
			}
			want := fmt.Sprintf("%d to create, %d to update, %d to delete, %d unchanged, %d drifted", s.Create, s.Update, s.Delete, s.Unchanged, s.Drift)
			if !strings.Contains(ck.Title, want) || s.Create != 3 {
				t.Errorf("%s: check title %q, summary %+v; want the 3 creations in both", stack, ck.Title, s)
			}
		default:
			t.Errorf("%s: check run concluded %q", stack, ck.Conclusion)
		}
		var posted []string
		for _, c := range gh.Comments(o, r, number) {
			if m := markerRE.FindStringSubmatch(c.Body); m != nil && m[2] == stack {
				posted = append(posted, c.HTMLURL)
			}
		}
		if len(posted) == 0 || !slices.Equal(urls[stack], posted) {
			t.Errorf("%s: output comment-urls %v, comments posted %v", stack, urls[stack], posted)
		}
	}
	if failed != 1 {
		t.Errorf("%d failed check runs, want 1 (apps/web/prod)", failed)
	}
	if run.outputs["changed"] != "true" || run.outputs["complete"] != "false" {
		t.Errorf("outputs changed = %q, complete = %q; want true and false (a stack was not previewed)", run.outputs["changed"], run.outputs["complete"])
	}
}
