package workflow

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
)

// TestWriteDrift: the JSON keeps the preview's shape per stack with the
// scan's summary; every format masks a Secret's digests and names each
// status; the Markdown shows a folder holding a pipe or a backtick as
// code, outside any table.
func TestWriteDrift(t *testing.T) {
	secret := driftOf("apps/a|b`c", Drifted, map[string][]engine.FieldChange{
		"v1:Secret:shop:creds": {{Path: "data.password", Op: "replace", From: model.Fingerprint("old-value"), To: model.Fingerprint("new-value")}},
	})
	stacks := []*StackDrift{secret, {Dir: "apps/new", Project: "new", Workspace: "default", Status: NeverApplied}}
	for _, f := range []report.Format{report.JSON, report.Markdown, report.Text} {
		t.Run(string(f), func(t *testing.T) {
			var b strings.Builder
			if err := WriteDrift(&b, f, stacks, []IssueOutcome{{Dir: secret.Dir, Number: 12, URL: "https://github.com/o/r/issues/12", Action: IssueOpened}}); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if strings.Contains(out, "sha256") || strings.Contains(out, "old-value") {
				t.Errorf("a digest or value is shown:\n%s", out)
			}
			if !strings.Contains(out, "never applied") && f != report.JSON {
				t.Errorf("the stack never applied is not said to be:\n%s", out)
			}
			switch f {
			case report.JSON:
				var v struct {
					Drifted bool
					Stacks  []map[string]any
				}
				if err := json.Unmarshal([]byte(out), &v); err != nil {
					t.Fatal(err)
				}
				first := v.Stacks[0]
				for _, k := range []string{"stepKeys", "changeSteps", "driftSummary", "status", "issue", "dir", "project", "workspace", "stack"} {
					if _, ok := first[k]; !ok {
						t.Errorf("the drifted stack's JSON has no %q: %v", k, first)
					}
				}
				if !v.Drifted || v.Stacks[1]["status"] != "never-applied" || v.Stacks[1]["stepKeys"] != nil {
					t.Errorf("JSON %s", out)
				}
			case report.Markdown:
				if strings.Contains(out, "\n|") || !strings.Contains(out, "- ``apps/a|b`c``") {
					t.Errorf("the folder is not shown as code in a list:\n%s", out)
				}
			}
		})
	}
}
