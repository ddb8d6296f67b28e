package report_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/internal/mdcheck"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
)

// update rewrites the golden files: go test ./report -run Golden -update,
// then read the diff before committing it.
var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

// hostile is markup a repository could put in any name, id, path or value:
// it closes our <details>, opens a comment that would hide the rest,
// mentions a team and loads a beacon image.
const hostile = "</details><!-- @org/team ![x](http://127.0.0.1/b)"

// hostileFolder is hostile as a folder path can hold it (no "//").
const hostileFolder = "evil/</details><!-- @org/team ![x](http:/127.0.0.1/b)"

func hostilePreview() *engine.Preview {
	create := "v1:ConfigMap:" + hostile
	update := "v1:Secret:ns:`" + hostile + "``"
	replace := "apps/v1:Deployment:ns:" + hostile
	deleted := "v1:Service:" + hostile
	failed := "hashicorp:local:file:" + hostile
	return &engine.Preview{
		Project: hostile, Workspace: "default", Stack: hostile, PriorRevision: 2,
		StepKeys: []string{create, update, replace, deleted, failed},
		ChangeSteps: map[string]*engine.Step{
			create: {ID: create, Action: engine.Create, To: &model.Resource{ID: create, Type: model.Kubernetes, Attributes: map[string]any{
				"data": map[string]any{
					"```\n" + hostile: "````\n" + hostile + "\n````",
					"note":            "@org/team ![x](http://127.0.0.1/b)",
				},
			}}},
			update: {ID: update, Action: engine.Update, Changes: []engine.FieldChange{
				{Path: "data.```\n</details>\n<!--", Op: "replace", From: "a", To: hostile + "\n```"},
				{Path: "metadata.labels.@org/team", Op: "add", To: "![x](http://127.0.0.1/b)"},
			}, Drift: []engine.FieldChange{
				{Path: "data.`` " + hostile, Op: "remove", From: hostile},
			}},
			replace: {ID: replace, Action: engine.Update, Replace: []string{"spec.selector.`" + hostile + "`", "spec.@org/team"},
				Changes: []engine.FieldChange{{Path: "spec.selector", Op: "replace", From: "a", To: "b"}}},
			deleted: {ID: deleted, Action: engine.Delete},
			failed: {ID: failed, Action: engine.Failed,
				Error: "apply " + failed + ": exit status 1\n\n" + hostile + "\n```\n<!--\n@org/team"},
		},
	}
}

// goldenCases are the comments whose exact Markdown is reviewed in
// testdata/golden.
func goldenCases() []struct {
	name  string
	p     *engine.Preview
	err   error
	opts  report.CommentOptions
	check mdcheck.Want
} {
	failedRelease := &model.Release{Project: hostile, Workspace: "default", Revision: 3, Phase: model.Phase(hostile),
		Spec: &model.Spec{Resources: []model.Resource{{ID: "x"}}}}
	return []struct {
		name  string
		p     *engine.Preview
		err   error
		opts  report.CommentOptions
		check mdcheck.Want
	}{
		{name: "sample", p: samplePreview(), check: mdcheck.Want{Details: 5}},
		{name: "hostile", p: hostilePreview(), opts: report.CommentOptions{Location: hostileFolder},
			check: mdcheck.Want{Details: 5, Data: []string{hostile, hostileFolder, "@org/team ![x](http://127.0.0.1/b)"}}},
		{name: "hostile-release", p: hostilePreview(), opts: report.CommentOptions{Location: hostileFolder, Release: failedRelease},
			check: mdcheck.Want{Details: 5, Data: []string{hostile, hostileFolder}}},
		{name: "hostile-stack-error", p: &engine.Preview{Project: hostile, Stack: hostile, Workspace: "default", ChangeSteps: map[string]*engine.Step{}},
			err:   errors.New("stacks/" + hostile + "/spec.yaml: resource 2: unknown type \"" + hostile + "\""),
			check: mdcheck.Want{Details: 0, Data: []string{hostile, "unknown type \"" + hostile + "\""}}},
	}
}

// golden compares got with testdata/golden/name, which -update rewrites.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update and review the diff):\n%s", path, got)
	}
}

// TestCommentGolden: the comments are exactly as reviewed, and GitHub
// renders every value in them as text: no element, comment, link, image
// or mention of the repository's.
func TestCommentGolden(t *testing.T) {
	r, err := report.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Comment(tc.p, tc.err, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".md", got)
			for _, p := range mdcheck.Check(got, tc.check) {
				t.Error(p)
			}
		})
	}
}

// TestHostileCommentSplits: cut into many parts, the hostile comment stays
// inert in each part, and the splitter, which follows <details> across
// parts, is not fooled by "</details>" in the values.
func TestHostileCommentSplits(t *testing.T) {
	r, _ := report.New()
	p := hostilePreview()
	// Many steps, so the comment needs several parts.
	for i := range 40 {
		id := strings.Repeat("x", i) + ":" + hostile
		p.StepKeys = append(p.StepKeys, id)
		p.ChangeSteps[id] = &engine.Step{ID: id, Action: engine.Update, Changes: []engine.FieldChange{
			{Path: "data.`" + hostile, Op: "replace", From: hostile, To: strings.Repeat("y", 200)},
		}}
	}
	body, err := r.Comment(p, nil, report.CommentOptions{Location: hostileFolder})
	if err != nil {
		t.Fatal(err)
	}
	opts := report.SplitOptions{Limit: 3000, MaxParts: 50, Header: header, Footer: footer}
	parts := report.Split(body, opts)
	if len(parts) < 5 {
		t.Fatalf("%d parts, want the comment split", len(parts))
	}
	for i, part := range parts {
		// Our own <details> lines, opened and reopened, are what GitHub
		// must render as elements, no more.
		own := 0
		if err := walk(part, func(line, role string) {
			if role == "text" && strings.HasPrefix(line, "<details>") {
				own++
			}
		}); err != nil {
			t.Errorf("part %d: %v", i+1, err)
		}
		for _, problem := range mdcheck.Check(part, mdcheck.Want{Details: own}) {
			t.Errorf("part %d: %s\n%s", i+1, problem, part)
		}
	}
}
