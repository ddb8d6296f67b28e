package main

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/sethvargo/go-githubactions"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
	"github.com/kusionpr/kusionpr/workflow"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.md from the current output")

// TestJobSummaryGolden: the job summary of a run with a stack to create
// and a stack whose spec is broken is exactly as reviewed in
// testdata/job-summary.md (go test ./cmd/action -run TestJobSummaryGolden
// -update rewrites it; read the diff).
func TestJobSummaryGolden(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"} {
		p := filepath.Join(dir, f)
		os.WriteFile(p, nil, 0o644)
		t.Setenv(f, p)
	}
	r, err := report.New()
	if err != nil {
		t.Fatal(err)
	}
	cm := &model.Resource{ID: "v1:ConfigMap:shop:cfg", Type: model.Kubernetes, Attributes: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cfg", "namespace": "shop"}, "data": map[string]any{"mode": "one"}}}
	created := &engine.Preview{Project: "shop", Workspace: "dev", Stack: "dev", StepKeys: []string{cm.ID},
		ChangeSteps: map[string]*engine.Step{cm.ID: {ID: cm.ID, Action: engine.Create, To: cm}}}
	broken := errors.New("apps/shop/prod/spec.yaml: resource 1 (v1:ConfigMap:x): id kind \"ConfigMap\" differs from attributes.kind (missing)")
	ok, err := r.Comment(created, nil, report.CommentOptions{Marker: "<!-- kusionpr:preview stack=apps/shop/dev workspace=default -->", Location: "apps/shop/dev"})
	if err != nil {
		t.Fatal(err)
	}
	failed, err := r.Comment(&engine.Preview{Project: "shop", Stack: "apps/shop/prod", Workspace: "default", ChangeSteps: map[string]*engine.Step{}}, broken,
		report.CommentOptions{Marker: "<!-- kusionpr:preview stack=apps/shop/prod workspace=default -->", Location: "apps/shop/prod"})
	if err != nil {
		t.Fatal(err)
	}
	out := &workflow.Outcome{Failed: true, Changed: true, Stacks: []*workflow.StackOutcome{
		{Dir: "apps/shop/dev", Summary: created.Summary(), Markdown: ok},
		{Dir: "apps/shop/prod", Err: broken, Markdown: failed},
	}}
	ga := githubactions.New(githubactions.WithWriter(&discard{}))
	if code := publishOutcome(ga, out, func(s string) string { return s }); code != 1 {
		t.Errorf("exit %d with a broken stack, want 1", code)
	}
	got, err := os.ReadFile(os.Getenv("GITHUB_STEP_SUMMARY"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "job-summary.md")
	if *updateGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("the job summary differs from %s (run with -update and review the diff):\n%s", path, got)
	}
}

type discard struct{}

func (*discard) Write(p []byte) (int, error) { return len(p), nil }
