package workflow

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
)

// refusingGitHub keeps what it is sent, and refuses the comments and the
// check runs of the stacks named, as GitHub does when it is down or past
// a limit that waiting does not lift.
type refusingGitHub struct {
	files                      []githubapi.File
	refuseComment, refuseCheck []string
	// refuseAll refuses every comment and every check run.
	refuseAllComments, refuseAllChecks bool
	// outdated is what MarkOutdated was told of each key it was given.
	outdated map[string]string

	mu       sync.Mutex
	comments map[string]string // key → last body published
	checks   map[string]githubapi.Check
}

func (g *refusingGitHub) PullRequestFiles(context.Context, int) ([]githubapi.File, error) {
	return g.files, nil
}

func (g *refusingGitHub) PullRequestsOfCommit(context.Context, string) ([]int, error) {
	return nil, nil
}

func (g *refusingGitHub) Publish(_ context.Context, _ int, key string, parts []string) ([]string, error) {
	if g.refuseAllComments {
		return nil, errors.New("POST https://api.github.com/repos/o/r/issues/1/comments: 502 Bad Gateway")
	}
	for _, d := range g.refuseComment {
		if strings.Contains(key, "stack="+d+" ") {
			return nil, errors.New("POST https://api.github.com/repos/o/r/issues/1/comments: 502 Bad Gateway")
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.comments[key] = strings.Join(parts, "")
	return []string{"https://github.com/o/r/pull/1#issuecomment-" + key}, nil
}

func (g *refusingGitHub) MarkOutdated(_ context.Context, _ int, _ string, current map[string]bool, why func(string) string) ([]string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for key := range g.comments {
		if !current[key] {
			if g.outdated == nil {
				g.outdated = map[string]string{}
			}
			g.outdated[key] = why(key)
		}
	}
	return nil, nil
}

func (g *refusingGitHub) SetCheck(_ context.Context, _ string, ck githubapi.Check) error {
	if g.refuseAllChecks {
		return errors.New("POST https://api.github.com/repos/o/r/check-runs: 502 Bad Gateway")
	}
	for _, d := range g.refuseCheck {
		if strings.HasSuffix(ck.Name, ": "+d) {
			return errors.New("POST https://api.github.com/repos/o/r/check-runs: 502 Bad Gateway")
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.checks[ck.Name] = ck
	return nil
}

// TestEveryStackIsReported: when GitHub refuses a stack's comment, its
// check run says so; when it refuses its check run, its comment says so;
// a stack GitHub refused both is named in the outcome, for the step's
// error. A stack with both is left as it was.
func TestEveryStackIsReported(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("apps/project.yaml", "name: apps\n")
	stacks := []string{"apps/ok", "apps/nocomment", "apps/nocheck", "apps/neither"}
	var files []githubapi.File
	for _, s := range stacks {
		write(s+"/stack.yaml", "name: "+filepath.Base(s)+"\n")
		write(s+"/spec.yaml", "resources: []\n")
		files = append(files, githubapi.File{Path: s + "/spec.yaml", Status: "modified"})
	}
	gh := &refusingGitHub{files: files, refuseComment: []string{"apps/nocomment", "apps/neither"}, refuseCheck: []string{"apps/nocheck", "apps/neither"},
		comments: map[string]string{}, checks: map[string]githubapi.Check{}}
	r, err := report.New()
	if err != nil {
		t.Fatal(err)
	}
	c := &Change{Root: root, Number: 1, SHA: "1111111111111111111111111111111111111111", Command: Preview, GitHub: gh, Renderer: r,
		Runner: &Runner{Runtimes: noRuntimes{}, Store: StoreConfig{Backend: "file://" + t.TempDir()}}, Request: Request{Workspace: "default"}}
	out, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Unreported, []string{"apps/neither"}) || !out.Failed {
		t.Errorf("unreported %v, failed %v; want [apps/neither], true", out.Unreported, out.Failed)
	}

	ok := gh.checks["kusion/preview: apps/ok"]
	if ok.Conclusion != "success" || strings.Contains(ok.Summary+gh.comments[c.key("apps/ok")], "could not be") {
		t.Errorf("apps/ok, reported in full: check %q %q, comment\n%s", ok.Conclusion, ok.Title, gh.comments[c.key("apps/ok")])
	}
	if ck := gh.checks["kusion/preview: apps/nocomment"]; ck.Conclusion != "failure" || !strings.HasPrefix(ck.Title, "comment not posted; ") ||
		!strings.Contains(ck.Summary, "The comment of this stack could not be posted") || !strings.Contains(ck.Summary, "502 Bad Gateway") {
		t.Errorf("apps/nocomment's check does not say its comment is missing: %q %q\n%s", ck.Conclusion, ck.Title, ck.Summary)
	}
	body := gh.comments[c.key("apps/nocheck")]
	if !strings.Contains(body, "The check run `kusion/preview: apps/nocheck` could not be set") || !strings.Contains(body, "502 Bad Gateway") {
		t.Errorf("apps/nocheck's comment does not say its check run is missing:\n%s", body)
	}
	if !strings.HasPrefix(body, "<!-- kusionpr:") {
		t.Errorf("the note went above the comment's marker:\n%s", body)
	}
	for _, so := range out.Stacks {
		if so.Unreported != (so.Dir == "apps/neither") {
			t.Errorf("%s: Unreported %v", so.Dir, so.Unreported)
		}
	}
}

// noRuntimes builds no runtime: enough for stacks without resources.
type noRuntimes struct{}

func (noRuntimes) Runtimes(context.Context, RuntimeTarget) (map[model.ResourceType]engine.Driver, error) {
	return map[model.ResourceType]engine.Driver{}, nil
}
