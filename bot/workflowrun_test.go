package bot

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/workflow"
)

// TestWorkflowRunNews: GitHub's workflow_run event is news for the
// github-actions executor, which reads the run at once rather than at its
// next poll; it queues no work. A bot without that executor, or a
// repository it may not act on, ignores it; a payload without its run is
// refused. The answers show in the metrics by outcome.
func TestWorkflowRunNews(t *testing.T) {
	for _, tc := range []struct {
		name     string
		executor string
		allow    []string
		strip    string // a field of the payload removed
		status   int
		outcome  string
	}{
		{name: "heard by the executor", executor: "github-actions", status: http.StatusOK, outcome: "heard"},
		{name: "no github-actions executor", status: http.StatusOK, outcome: "ignored"},
		{name: "a repository not allowed", executor: "github-actions", allow: []string{"octo/other"}, status: http.StatusOK, outcome: "ignored"},
		{name: "no run in the payload", executor: "github-actions", strip: "workflow_run", status: http.StatusBadRequest, outcome: "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := githubfake.New(t)
			work := &fakeWork{out: &workflow.Outcome{}}
			b, _ := appBot(t, gh, work, func(c *Config) {
				c.AllowRepos = tc.allow
				if tc.executor != "" {
					c.Executor, c.GitHubActions = tc.executor, githubActionsConfig()
				}
			})
			listen(t, gh, b)
			p := payload(t, "workflow_run", "completed")
			if tc.strip != "" {
				delete(p, tc.strip)
			}
			d := gh.Deliver(t, "workflow_run", p)
			if d.Status != tc.status {
				t.Fatalf("answered %d %s, want %d", d.Status, d.Body, tc.status)
			}
			if tc.status == http.StatusOK {
				var answer struct{ Result string }
				if err := json.Unmarshal([]byte(d.Body), &answer); err != nil || answer.Result != tc.outcome {
					t.Errorf("answer %q, want the outcome %s", d.Body, tc.outcome)
				}
			}
			drain(t, b)
			if len(work.changes) != 0 {
				t.Errorf("work %q for news of a run", changes(work))
			}
			if want := `kusionpr_webhooks_total{event="workflow_run",outcome="` + tc.outcome + `"} 1`; !strings.Contains(scrape(t, b), want) {
				t.Errorf("metrics lack %s", want)
			}
		})
	}
}
