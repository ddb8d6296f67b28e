package report_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/internal/mdcheck"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
)

// kubeconfigErr is what the Kubernetes runtime says without credentials.
var kubeconfigErr = errors.New("kubernetes runtime: load kubeconfig: invalid configuration: no configuration has been provided")

// stubRuntime answers as a cluster would: the ids in live exist as the spec
// says (so they preview unchanged), the others do not (created); the ids in
// broken cannot be read, as with no credentials. Its SensitivePaths fails
// like the real runtime's first call to the cluster.
type stubRuntime struct {
	live, broken map[string]bool
}

func (s stubRuntime) SensitivePaths(_ context.Context, r model.Resource) ([]string, error) {
	if s.broken[r.ID] {
		return nil, kubeconfigErr
	}
	return nil, nil
}

func (s stubRuntime) Read(_ context.Context, _ *model.Resource, r model.Resource) (*model.Resource, error) {
	if s.broken[r.ID] {
		return nil, fmt.Errorf("read %s: %w", r.ID, kubeconfigErr)
	}
	if !s.live[r.ID] {
		return nil, nil
	}
	out := model.Redact(r.DeepCopy())
	return &out, nil
}

func (s stubRuntime) Apply(_ context.Context, _ *model.Resource, r model.Resource, _ bool) (*model.Resource, error) {
	out := model.Redact(r.DeepCopy())
	return &out, nil
}

func (stubRuntime) Delete(context.Context, model.Resource) error { return nil }
func (stubRuntime) Watch(context.Context, model.Resource) error  { return nil }

// quickstart is the README's stack: five resources, all depending on the
// namespace.
func quickstart() []model.Resource {
	ns := "v1:Namespace:quickstart"
	k := func(id string, attrs map[string]any, deps ...string) model.Resource {
		return model.Resource{ID: id, Type: model.Kubernetes, Attributes: attrs, DependsOn: deps}
	}
	return []model.Resource{
		k(ns, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "quickstart"}}),
		k("v1:ConfigMap:quickstart:web", map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "web", "namespace": "quickstart"}, "data": map[string]any{"greeting": "hello"}}, ns),
		k("v1:Secret:quickstart:web", map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": "web", "namespace": "quickstart"}, "stringData": map[string]any{"token": "tok-quickstart"}}, ns),
		k("apps/v1:Deployment:quickstart:web", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "quickstart"}, "spec": map[string]any{"replicas": 1.0}}, ns),
		k("v1:Service:quickstart:web", map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": "web", "namespace": "quickstart"}, "spec": map[string]any{"ports": []any{map[string]any{"port": 80.0}}}}, ns),
	}
}

// enginePreview previews the quickstart stack through the real engine.
func enginePreview(t *testing.T, rt stubRuntime) *engine.Preview {
	t.Helper()
	ctx := context.Background()
	store, err := backend.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e := &engine.Engine{Runtimes: map[model.ResourceType]engine.Driver{model.Kubernetes: engine.Built(rt)}, Store: store, Parallelism: 1}
	p, err := e.Preview(ctx, engine.Stack{Project: "quickstart", Workspace: "default", Stack: "dev",
		Spec: &model.Spec{Resources: quickstart()}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// failedCases: every resource failing (no cluster), and one failing of five
// (its credentials refused) beside three unchanged and one to create.
func failedCases(t *testing.T) []struct {
	name           string
	p              *engine.Preview
	failed, others []string
	counts         string
	details        int
} {
	ids := func(rs []model.Resource) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = r.ID
		}
		return out
	}
	all := ids(quickstart())
	set := func(list ...string) map[string]bool {
		m := map[string]bool{}
		for _, id := range list {
			m[id] = true
		}
		return m
	}
	return []struct {
		name           string
		p              *engine.Preview
		failed, others []string
		counts         string
		details        int
	}{
		{name: "failed-unreachable", p: enginePreview(t, stubRuntime{broken: set(all...)}), failed: all,
			counts: "0 to create, 0 to update, 0 to delete, 0 unchanged, 0 drifted, 5 failed"},
		{name: "failed-one-of-five", p: enginePreview(t, stubRuntime{
			live:   set(all[0], all[1], all[3]),
			broken: set("v1:Secret:quickstart:web"),
		}), failed: []string{"v1:Secret:quickstart:web"}, others: []string{all[0], all[1], all[3], all[4]},
			counts: "1 to create, 0 to update, 0 to delete, 3 unchanged, 0 drifted, 1 failed", details: 1},
	}
}

// TestFailedPreviewGolden: a preview whose resources could not be read says
// so in every format, names each failed resource with its error, counts none
// of them as unchanged, created or deleted, and shows no masked value as if
// it were a planned one.
func TestFailedPreviewGolden(t *testing.T) {
	r, err := report.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range failedCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			outputs := map[string]string{}
			for _, f := range []report.Format{report.Text, report.JSON} {
				var buf bytes.Buffer
				if err := r.Render(&buf, f, tc.p, tc.p.Err()); err != nil {
					t.Fatal(err)
				}
				outputs[map[report.Format]string{report.Text: ".txt", report.JSON: ".json"}[f]] = buf.String()
			}
			md, err := r.Comment(tc.p, tc.p.Err(), report.CommentOptions{Location: "examples/quickstart/dev"})
			if err != nil {
				t.Fatal(err)
			}
			outputs[".md"] = md
			for ext, got := range outputs {
				path := filepath.Join("testdata", "golden", tc.name+ext)
				golden(t, tc.name+ext, got)
				if strings.Contains(got, model.SensitiveMask) {
					t.Errorf("%s shows %q: no value of a resource is known, none may be shown", path, model.SensitiveMask)
				}
				if strings.Contains(got, "tok-quickstart") {
					t.Errorf("%s shows the secret's value", path)
				}
			}
			for _, p := range mdcheck.Check(md, mdcheck.Want{Details: tc.details}) {
				t.Error(p)
			}

			s := tc.p.Summary()
			n := len(tc.failed)
			if s.Errors != n || s.Total() != 5 {
				t.Errorf("summary %+v: want %d failed of 5", s, n)
			}
			if want := fmt.Sprintf("%d of 5 resource", n); !strings.Contains(firstVisibleLine(md), "Incomplete preview") || !strings.Contains(firstVisibleLine(md), want) {
				t.Errorf("comment's first line %q: want it to say the preview is incomplete, %s...", firstVisibleLine(md), want)
			}
			if !strings.Contains(outputs[".txt"], tc.counts) {
				t.Errorf("text does not count %q:\n%s", tc.counts, outputs[".txt"])
			}
			for _, id := range tc.failed {
				st := tc.p.ChangeSteps[id]
				if st.Action != engine.Failed || st.Error == "" || st.From != nil || st.To != nil {
					t.Errorf("step %s: action %s, error %q, from %v, to %v: want Failed with its error and no values", id, st.Action, st.Error, st.From, st.To)
				}
				if !strings.Contains(outputs[".txt"], "x Failed    "+id) {
					t.Errorf("text does not mark %s failed", id)
				}
				if !strings.Contains(outputs[".json"], `"action": "Failed"`) {
					t.Errorf("JSON does not mark %s failed", id)
				}
				if !strings.Contains(md, ":x: **Failed** `"+id+"`") {
					t.Errorf("comment does not list %s as failed", id)
				}
			}
			for _, id := range tc.others {
				if st := tc.p.ChangeSteps[id]; st.Action == engine.Failed || st.Error != "" {
					t.Errorf("step %s: %s %q, want it previewed", id, st.Action, st.Error)
				}
			}
			if strings.Contains(md, "Deleted: the spec no longer has it.") {
				t.Error("the comment calls a resource the spec has deleted")
			}
		})
	}
}

// firstVisibleLine is the comment's first line after its hidden marker.
func firstVisibleLine(md string) string {
	_, rest, _ := strings.Cut(md, "\n")
	line, _, _ := strings.Cut(rest, "\n")
	return line
}
