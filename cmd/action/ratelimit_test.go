package main

import (
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// GitHub answers a burst of content creation with a secondary rate limit
// (403, Retry-After) and asks the client to wait and retry. Whichever write
// of a three-stack preview it falls on, every stack still ends with its
// comment and its check run, and the job log says how long the run waited.
func TestPullRequestPreviewUnderSecondaryLimit(t *testing.T) {
	pr := newThreeStackPR(t)
	waited := regexp.MustCompile(`waited [0-9]+s for GitHub rate limits`)
	// Seven writes: three comments, three check runs and the overview.
	for nth := 1; nth <= 7; nth++ {
		t.Run(fmt.Sprintf("write %d limited", nth), func(t *testing.T) {
			gh := githubfake.New(t)
			gh.SecondaryLimitOn(nth)
			const number = 9
			run, o, r := pr.preview(t, gh, number, "3333333333333333333333333333333333333333", nil)
			if run.code != 0 {
				t.Fatalf("action exited %d\n%s\n%s", run.code, run.stdout, run.stderr)
			}
			commented := map[string]bool{}
			for _, c := range gh.Comments(o, r, number) {
				if m := markerRE.FindStringSubmatch(c.Body); m != nil {
					commented[m[2]] = true
				}
			}
			checked := map[string]bool{}
			for _, c := range gh.CheckRuns(o, r) {
				if c.Conclusion == "success" {
					checked[c.Name] = true
				}
			}
			for _, s := range prStacks {
				if !commented[s] {
					t.Errorf("stack %s has no comment", s)
				}
				if !checked["kusion/preview: "+s] {
					t.Errorf("stack %s has no successful check run; checks: %v", s, checked)
				}
			}
			if !checked["kusion/preview"] {
				t.Errorf("no successful overview check run, kusion/preview; checks: %v", checked)
			}
			limited := 0
			for _, c := range gh.Calls() {
				if c.Method != "GET" {
					limited++
				}
			}
			if limited < nth {
				t.Fatalf("only %d writes: the limit on write %d was never met", limited, nth)
			}
			if !waited.MatchString(run.stdout) {
				t.Errorf("the job log does not say how long it waited:\n%s", run.stdout)
			}
		})
	}
}

// threeStackPR is a checkout with the three stacks of prStacks, each
// touched by the pull requests previewed on it, against the test cluster.
type threeStackPR struct {
	kubeconfig string
	repo       *prRepo
}

func newThreeStackPR(t *testing.T) threeStackPR {
	kc := testenv.Kubeconfig(t)
	repo := newPRRepo(t)
	t.Cleanup(func() {
		for _, s := range prStacks {
			exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", repo.ns(s), "--ignore-not-found", "--wait=false").Run()
		}
	})
	return threeStackPR{kubeconfig: kc, repo: repo}
}

// preview runs the action on pull request number at sha, touching every
// stack, against gh, with inputs besides the cluster and a release store
// of its own; it returns the run and the repository's owner and name.
func (p threeStackPR) preview(t *testing.T, gh *githubfake.Server, number int, sha string, inputs map[string]string) (actionRun, string, string) {
	t.Helper()
	env := map[string]string{"KUBECONFIG": p.kubeconfig, "INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases")}
	maps.Copy(env, inputs)
	ev := prEvent(t, number, sha)
	o, r := owner(ev)
	var files []githubfake.PullFile
	for _, s := range prStacks {
		files = append(files, githubfake.PullFile{Filename: s + "/spec.yaml", Status: "modified"})
	}
	gh.SetPullFiles(o, r, number, files)
	return runAction(t, gh, p.repo.root, "pull_request", ev, env), o, r
}
