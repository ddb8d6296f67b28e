package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/internal/mdcheck"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
)

// awaits is the error of a dry run that cannot run before dep exists, as
// the Kubernetes runtime's is for an object in a namespace the stack
// creates, or of a kind a CRD of the stack defines.
type awaits struct{ dep, notChecked string }

func (a awaits) Error() string                { return "not found: " + a.dep }
func (a awaits) Awaits(r model.Resource) bool { return r.ID == a.dep }
func (a awaits) NotChecked() string           { return a.notChecked }

// newNamespaceRuntime is a cluster where nothing of the stack exists yet:
// the dry run of an object in namespace "quickstart", or of a Widget,
// awaits what it needs.
type newNamespaceRuntime struct{ stubRuntime }

const (
	inNewNamespace = "in a namespace this apply creates: checked against the API server's schema only, not by admission (webhooks, quotas, LimitRanges)"
	ofNewKind      = "of a kind this apply defines: not checked"
	widgetCRD      = "apiextensions.k8s.io/v1:CustomResourceDefinition:widgets.example.com"
)

func (n newNamespaceRuntime) Apply(ctx context.Context, prior *model.Resource, r model.Resource, dryRun bool) (*model.Resource, error) {
	id, err := model.ParseKubernetesID(r.ID)
	switch {
	case err != nil || !dryRun:
	case id.Kind == "Widget":
		return nil, awaits{dep: widgetCRD, notChecked: ofNewKind}
	case id.Namespace == "quickstart":
		return nil, awaits{dep: "v1:Namespace:quickstart", notChecked: inNewNamespace}
	}
	return n.stubRuntime.Apply(ctx, prior, r, dryRun)
}

// TestNotCheckedGolden: the first preview of the README's stack, whose
// namespace it creates, with a CRD and an object of it. The text and the
// comment say in a line per note how many resources no dry run checked and
// what was left unchecked; the JSON says it per step, beside Kusion's
// fields.
func TestNotCheckedGolden(t *testing.T) {
	ctx := context.Background()
	store, err := backend.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	k := func(id string, attrs map[string]any) model.Resource {
		return model.Resource{ID: id, Type: model.Kubernetes, Attributes: attrs}
	}
	spec := append(quickstart(),
		k(widgetCRD, map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "widgets.example.com"},
			"spec":     map[string]any{"group": "example.com", "names": map[string]any{"kind": "Widget", "plural": "widgets"}}}),
		k("example.com/v1:Widget:quickstart:w", map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w", "namespace": "quickstart"}, "spec": map[string]any{"size": 1.0}}),
	)
	e := &engine.Engine{Runtimes: map[model.ResourceType]engine.Driver{model.Kubernetes: engine.Built(newNamespaceRuntime{})}, Store: store, Parallelism: 1}
	p, err := e.Preview(ctx, engine.Stack{Project: "quickstart", Workspace: "default", Stack: "dev", Spec: &model.Spec{Resources: spec}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Err(); err != nil {
		t.Fatalf("the preview failed: %v", err)
	}
	r, err := report.New()
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{}
	for ext, f := range map[string]report.Format{".txt": report.Text, ".json": report.JSON} {
		var buf bytes.Buffer
		if err := r.Render(&buf, f, p, nil); err != nil {
			t.Fatal(err)
		}
		outputs[ext] = buf.String()
	}
	if outputs[".md"], err = r.Comment(p, nil, report.CommentOptions{Location: "examples/quickstart/dev"}); err != nil {
		t.Fatal(err)
	}
	for ext, got := range outputs {
		golden(t, "not-checked"+ext, got)
	}
	for _, line := range []string{"NOT DRY-RUN: 4 resources " + inNewNamespace + "\n", "NOT DRY-RUN: 1 resource " + ofNewKind + "\n"} {
		if strings.Count(outputs[".txt"], line) != 1 {
			t.Errorf("the text does not say once %q:\n%s", line, outputs[".txt"])
		}
	}
	for _, line := range []string{"> **Not dry-run**: 4 resources " + inNewNamespace + ".\n", "> **Not dry-run**: 1 resource " + ofNewKind + ".\n"} {
		if strings.Count(outputs[".md"], line) != 1 {
			t.Errorf("the comment does not say once %q:\n%s", line, outputs[".md"])
		}
	}
	for _, p := range mdcheck.Check(outputs[".md"], mdcheck.Want{Details: 7}) {
		t.Error(p)
	}
	var kusion struct {
		StepKeys    []string `json:"stepKeys"`
		ChangeSteps map[string]struct {
			ID, Action, NotChecked string
			To                     *model.Resource
		} `json:"changeSteps"`
	}
	if err := json.Unmarshal([]byte(outputs[".json"]), &kusion); err != nil {
		t.Fatal(err)
	}
	for _, id := range kusion.StepKeys {
		st := kusion.ChangeSteps[id]
		want := ""
		switch {
		case strings.Contains(id, ":Widget:"):
			want = ofNewKind
		case strings.Contains(id, ":quickstart:"):
			want = inNewNamespace
		}
		if st.Action != "Create" || st.NotChecked != want || st.To == nil {
			t.Errorf("JSON step %s: %s, notChecked %q, to %v; want Create, %q and the spec", id, st.Action, st.NotChecked, st.To, want)
		}
	}
}
