package report_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
)

func samplePreview() *engine.Preview {
	secret := model.Redact(model.Resource{ID: "v1:Secret:app:creds", Type: model.Kubernetes, Attributes: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "creds", "namespace": "app"},
		"stringData": map[string]any{"token": "tok-123456"},
	}})
	cm := &model.Resource{ID: "v1:ConfigMap:app:cfg", Type: model.Kubernetes, Attributes: map[string]any{"data": map[string]any{"mode": "two"}}}
	return &engine.Preview{
		Project: "shop", Workspace: "prod", Stack: "prod", PriorRevision: 4,
		StepKeys: []string{secret.ID, cm.ID, "apps/v1:Deployment:app:web", "v1:Service:app:old"},
		ChangeSteps: map[string]*engine.Step{
			secret.ID: {ID: secret.ID, Action: engine.Create, To: &secret},
			cm.ID: {ID: cm.ID, Action: engine.Update, To: cm, Changes: []engine.FieldChange{
				{Path: "data.mode", Op: "replace", From: "one", To: "two"},
				{Path: "data.token", Op: "replace", From: model.Fingerprint("a"), To: model.Fingerprint("b")},
			}},
			"apps/v1:Deployment:app:web": {ID: "apps/v1:Deployment:app:web", Action: engine.Update,
				Changes: []engine.FieldChange{{Path: "spec.replicas", Op: "replace", From: 3.0, To: 2.0}},
				Drift:   []engine.FieldChange{{Path: "spec.replicas", Op: "replace", From: 2.0, To: 3.0}}},
			"v1:Service:app:old": {ID: "v1:Service:app:old", Action: engine.Delete},
		},
	}
}

func TestRender(t *testing.T) {
	r, err := report.New()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		format report.Format
		want   []string
	}{
		{report.Markdown, []string{
			"<!-- kusionpr:preview project=shop stack=prod workspace=prod -->",
			"| 1 | 2 | 1 | 0 | 1 |",
			"- data.mode: \"one\"\n+ data.mode: \"two\"",
			"#### Drift: changed outside of a release",
			"! spec.replicas: 2 => 3",
			"<b>Delete</b> <code>v1:Service:app:old</code>",
			"token: (sensitive)",
		}},
		{report.Text, []string{
			"+ Create    v1:Secret:app:creds",
			"~ Update    v1:ConfigMap:app:cfg\n    data.mode: \"one\" => \"two\"",
			"drift: spec.replicas: 2 => 3",
			"1 to create, 2 to update, 1 to delete, 0 unchanged, 1 drifted",
		}},
		{report.JSON, []string{`"stepKeys": [`, `"action": "Delete"`, `"token": "(sensitive)"`}},
	}
	for _, tt := range tests {
		t.Run(string(tt.format), func(t *testing.T) {
			var buf bytes.Buffer
			if err := r.Render(&buf, tt.format, samplePreview(), nil); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, leak := range []string{"tok-123456", "sha256"} {
				if strings.Contains(out, leak) {
					t.Errorf("output contains %q", leak)
				}
			}
			if tt.format == report.JSON {
				var v map[string]any
				if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
					t.Errorf("json output does not parse: %v", err)
				}
			}
		})
	}
}

func TestRenderShowsStackError(t *testing.T) {
	r, _ := report.New()
	p := &engine.Preview{Project: "shop", Stack: "prod", Workspace: "prod", ChangeSteps: map[string]*engine.Step{}}
	var buf bytes.Buffer
	if err := r.Render(&buf, report.Markdown, p, errBadSpec{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "> [!CAUTION]\n> This stack failed:\n\n```text\nstacks/prod/spec.yaml: resource 2: unknown type\n```") || !strings.Contains(buf.String(), ":x:") {
		t.Errorf("the stack's error is not shown as a failure:\n%s", buf.String())
	}
}

type errBadSpec struct{}

func (errBadSpec) Error() string { return "stacks/prod/spec.yaml: resource 2: unknown type" }

func TestParseFormat(t *testing.T) {
	if _, err := report.ParseFormat("yaml"); err == nil || err.Error() != `unknown output format "yaml": want json, markdown or text` {
		t.Errorf("ParseFormat(yaml) = %v", err)
	}
}

// TestCommentMaxDetail: past MaxDetail bytes of created resources'
// attributes, a comment lists the rest without theirs, saying why; every
// resource is still listed, and without MaxDetail all are shown.
func TestCommentMaxDetail(t *testing.T) {
	p := &engine.Preview{Project: "shop", Workspace: "prod", Stack: "prod", ChangeSteps: map[string]*engine.Step{}}
	for i := range 20 {
		id := fmt.Sprintf("v1:ConfigMap:app:cfg-%02d", i)
		to := &model.Resource{ID: id, Type: model.Kubernetes, Attributes: map[string]any{"data": map[string]any{"marker": fmt.Sprintf("value-%02d", i)}}}
		p.StepKeys = append(p.StepKeys, id)
		p.ChangeSteps[id] = &engine.Step{ID: id, Action: engine.Create, To: to}
	}
	r, err := report.New()
	if err != nil {
		t.Fatal(err)
	}
	const notShown = "*Attributes not shown: the preview is longer than GitHub shows; `preview -o json` has them all.*"
	tests := []struct {
		maxDetail, shown int
	}{
		{0, 20},
		{1, 1},   // the first is shown whole, then the budget is spent
		{100, 4}, // each is 30 bytes of YAML: the fourth crosses 100
		{1 << 20, 20},
	}
	for _, tt := range tests {
		body, err := r.Comment(p, nil, report.CommentOptions{MaxDetail: tt.maxDetail})
		if err != nil {
			t.Fatal(err)
		}
		shown := strings.Count(body, "marker: value-")
		if shown != tt.shown || strings.Count(body, notShown) != 20-tt.shown {
			t.Errorf("MaxDetail %d: %d resources' attributes shown, %d marked not shown; want %d and %d", tt.maxDetail, shown, strings.Count(body, notShown), tt.shown, 20-tt.shown)
		}
		if n := strings.Count(body, "<code>v1:ConfigMap:app:cfg-"); n != 20 {
			t.Errorf("MaxDetail %d: %d resources listed, want 20", tt.maxDetail, n)
		}
	}
}
