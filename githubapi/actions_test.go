package githubapi_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// TestWorkflowDispatchAndArtifacts: a dispatch on the default branch makes
// a run found by its name; GitHub's refusals name the workflow and the
// ref; an artifact is downloaded through the redirect without the token
// going to the other host (the fake counts that as a violation), and one
// larger than the limit is refused.
func TestWorkflowDispatchAndArtifacts(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	c, err := githubapi.New("ghs_token", gh.URL, "octo", "infra", nil)
	if err != nil {
		t.Fatal(err)
	}
	gh.SetWorkflow("octo", "infra", "kusion-run.yml", githubfake.Workflow{Inputs: []string{"request", "stack"}, RunName: "kusion ${{ inputs.stack }} [${{ inputs.stack }}-id]"})
	branch, err := c.DefaultBranch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, workflow, ref string
		inputs              map[string]any
		status              int
	}{
		{"unknown workflow", "nope.yml", branch, nil, http.StatusNotFound},
		{"unknown ref", "kusion-run.yml", "no-such-branch", nil, http.StatusUnprocessableEntity},
		{"undeclared input", "kusion-run.yml", branch, map[string]any{"other": "x"}, http.StatusUnprocessableEntity},
	} {
		err := c.DispatchWorkflow(ctx, tc.workflow, tc.ref, tc.inputs)
		de, ok := errors.AsType[*githubapi.DispatchError](err)
		if !ok || de.Status != tc.status || !strings.Contains(err.Error(), tc.workflow) || !strings.Contains(err.Error(), tc.ref) {
			t.Errorf("%s: %v, want a refusal %d naming the workflow and the ref", tc.name, err, tc.status)
		}
	}
	if len(gh.Dispatches()) != 0 {
		t.Fatalf("refused dispatches made runs: %+v", gh.Dispatches())
	}
	for _, stack := range []string{"apps/a", "apps/b"} {
		if err := c.DispatchWorkflow(ctx, "kusion-run.yml", branch, map[string]any{"request": "{}", "stack": stack}); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := c.DispatchedRuns(ctx, "kusion-run.yml", func(r githubapi.WorkflowRun) bool { return strings.Contains(r.Name, "[apps/a-id]") })
	if err != nil || len(runs) != 1 {
		t.Fatalf("run not found by name: %v, %v", runs, err)
	}
	run := runs[0]
	d := gh.Dispatches()[0]
	if run.ID != d.RunID || run.Status != "queued" || d.Inputs["stack"] != "apps/a" || d.Ref != branch {
		t.Errorf("run %+v, dispatch %+v", run, d)
	}
	if _, err := c.RunArtifact(ctx, run.ID, "result", 1<<20); !errors.Is(err, githubapi.ErrNoArtifact) {
		t.Errorf("a run without artifacts: %v", err)
	}
	gh.AddArtifact("octo", "infra", run.ID, "result", map[string][]byte{"result.json": []byte(`{"request":"x"}`)})
	gh.CompleteRun("octo", "infra", run.ID, "success")
	got, err := c.WorkflowRun(ctx, run.ID)
	if err != nil || got.Status != "completed" || got.Conclusion != "success" || got.HTMLURL == "" {
		t.Errorf("completed run read as %+v, %v", got, err)
	}
	zip, err := c.RunArtifact(ctx, run.ID, "result", 1<<20)
	if err != nil || len(zip) == 0 {
		t.Fatalf("artifact: %d bytes, %v", len(zip), err)
	}
	if _, err := c.RunArtifact(ctx, run.ID, "result", 10); !errors.As(err, new(*githubapi.ArtifactTooLarge)) {
		t.Errorf("an artifact over the limit: %v", err)
	}
}
