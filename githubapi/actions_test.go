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

// TestWorkflowDispatchAndArtifacts: a dispatch on the default branch is
// answered with the run it made, whose actor is the client's own account
// (Self, by id), and is found by its name on its branch; a GitHub that
// answers without the run (204) is told apart; GitHub's refusals name the
// workflow and the ref; an artifact is downloaded through the redirect
// without the token going to the other host (the fake counts that as a
// violation), and one larger than the limit is refused.
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
		_, err := c.DispatchWorkflow(ctx, tc.workflow, tc.ref, tc.inputs)
		de, ok := errors.AsType[*githubapi.DispatchError](err)
		if !ok || de.Status != tc.status || !strings.Contains(err.Error(), tc.workflow) || !strings.Contains(err.Error(), tc.ref) {
			t.Errorf("%s: %v, want a refusal %d naming the workflow and the ref", tc.name, err, tc.status)
		}
	}
	if len(gh.Dispatches()) != 0 {
		t.Fatalf("refused dispatches made runs: %+v", gh.Dispatches())
	}
	self, err := c.Self(ctx)
	if err != nil || self.Login != githubapi.ActionsLogin || self.ID == 0 {
		t.Fatalf("own account %+v, %v", self, err)
	}
	var answered []githubapi.Dispatched
	for _, stack := range []string{"apps/a", "apps/b"} {
		d, err := c.DispatchWorkflow(ctx, "kusion-run.yml", branch, map[string]any{"request": "{}", "stack": stack})
		if err != nil {
			t.Fatal(err)
		}
		answered = append(answered, d)
	}
	runs, err := c.DispatchedRuns(ctx, "kusion-run.yml", branch, func(r githubapi.WorkflowRun) bool { return strings.Contains(r.Name, "[apps/a-id]") })
	if err != nil || len(runs) != 1 {
		t.Fatalf("run not found by name: %v, %v", runs, err)
	}
	run := runs[0]
	d := gh.Dispatches()[0]
	if run.ID != d.RunID || answered[0].RunID != d.RunID || answered[0].HTMLURL != run.HTMLURL || run.Status != "queued" || d.Inputs["stack"] != "apps/a" || d.Ref != branch {
		t.Errorf("run %+v, dispatch %+v answered as %+v", run, d, answered[0])
	}
	if !run.Actor.Is(self) || !run.TriggeringActor.Is(self) || run.Event != "workflow_dispatch" || run.HeadBranch != branch ||
		!strings.HasPrefix(run.Path, ".github/workflows/kusion-run.yml") {
		t.Errorf("the run does not say who started it, how and where: %+v", run)
	}
	if other, err := c.DispatchedRuns(ctx, "kusion-run.yml", "another-branch", func(githubapi.WorkflowRun) bool { return true }); err != nil || len(other) != 0 {
		t.Errorf("runs of another branch listed: %+v, %v", other, err)
	}
	gh.AnswerDispatchWithoutRun()
	if d, err := c.DispatchWorkflow(ctx, "kusion-run.yml", branch, map[string]any{"stack": "apps/c"}); err != nil || d.RunID != 0 {
		t.Errorf("a GitHub answering 204: %+v, %v, want no run named", d, err)
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
