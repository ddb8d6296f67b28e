package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
)

// schemaRuntime is a fakeRuntime that knows sensitive paths from a schema
// and records a private state, as the Terraform runtime does.
type schemaRuntime struct {
	*fakeRuntime
	sensitive []string
}

func (s *schemaRuntime) SensitivePaths(context.Context, model.Resource) ([]string, error) {
	return s.sensitive, nil
}

func (s *schemaRuntime) withState(r *model.Resource) *model.Resource {
	if r == nil {
		return nil
	}
	out := model.Redact(model.WithSensitivePaths(*r, s.sensitive))
	if out.Extensions == nil {
		out.Extensions = map[string]any{}
	}
	out.Extensions[model.StateExtension] = "private state of " + r.ID
	return &out
}

func (s *schemaRuntime) Read(ctx context.Context, prior *model.Resource, r model.Resource) (*model.Resource, error) {
	out, err := s.fakeRuntime.Read(ctx, prior, r)
	return s.withState(out), err
}

func (s *schemaRuntime) Apply(ctx context.Context, prior *model.Resource, r model.Resource, dryRun bool) (*model.Resource, error) {
	out, err := s.fakeRuntime.Apply(ctx, prior, r, dryRun)
	return s.withState(out), err
}

func TestSchemaSensitiveValuesAndPrivateState(t *testing.T) {
	ctx := context.Background()
	e, fake, store := setup(t)
	rt := &schemaRuntime{fakeRuntime: fake, sensitive: []string{"token"}}
	e.Runtimes[model.Terraform] = engine.Built(rt)
	spec := func(token string) engine.Stack {
		return stack(res("api", map[string]any{"token": token, "size": 1}))
	}
	if _, err := e.Apply(ctx, spec("first-token-value"), engine.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := e.Preview(ctx, spec("second-token-value"))
	if err != nil {
		t.Fatal(err)
	}
	st := p.ChangeSteps[id("api")]
	if st.Action != engine.Update || len(st.SpecChanges) != 1 || st.SpecChanges[0].Path != "token" {
		t.Fatalf("token change: action %s spec changes %+v, want Update of token", st.Action, st.SpecChanges)
	}
	rendered, _ := json.Marshal(p)
	for _, leak := range []string{"first-token-value", "second-token-value", "private state of"} {
		if strings.Contains(string(rendered), leak) {
			t.Errorf("the preview shows %q", leak)
		}
	}
	rel, _ := store.Latest(ctx, "p", "w")
	if strings.Contains(rel.Spec.Resources[0].Attributes["token"].(string), "first-token-value") {
		t.Errorf("the release's spec holds the token in the clear")
	}
	if rel.State.Resources[0].Extensions[model.StateExtension] != "private state of "+id("api") {
		t.Errorf("the release lost the runtime's private state: %v", rel.State.Resources[0].Extensions)
	}
	// An unchanged resource keeps its private state in the next release.
	if _, err := e.Apply(ctx, spec("first-token-value"), engine.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	rel, _ = store.Latest(ctx, "p", "w")
	if rel.Revision != 2 || rel.State.Resources[0].Extensions[model.StateExtension] == nil {
		t.Errorf("release %d of an unchanged resource dropped its private state", rel.Revision)
	}
}

func TestDependentsSeePlannedValues(t *testing.T) {
	ctx := context.Background()
	e, _, _ := setup(t)
	spec := func(host string) engine.Stack {
		return stack(
			res("db", map[string]any{"host": host}),
			res("app", map[string]any{"dbHost": "$kusion_path." + id("db") + ".host"}),
		)
	}
	if _, err := e.Apply(ctx, spec("old.db"), engine.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := e.Preview(ctx, spec("new.db"))
	if err != nil {
		t.Fatal(err)
	}
	app := p.ChangeSteps[id("app")]
	if app.Action != engine.Update || len(app.Changes) != 1 || app.Changes[0].To != "new.db" {
		t.Errorf("app after db's host changed: %s %+v, want Update of dbHost to new.db", app.Action, app.Changes)
	}
}

func TestIgnoreFields(t *testing.T) {
	ctx := context.Background()
	e, rt, _ := setup(t)
	st := stack(res("a", map[string]any{"size": 1}))
	if _, err := e.Apply(ctx, st, engine.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	rt.set(id("a"), "status", "scaled by a controller")
	p, err := e.Preview(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if p.ChangeSteps[id("a")].Action != engine.Update {
		t.Fatalf("without IgnoreFields a controller's change is an Update, got %s", p.ChangeSteps[id("a")].Action)
	}
	e.IgnoreFields = []string{"status"}
	p, err = e.Preview(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if st := p.ChangeSteps[id("a")]; st.Action != engine.UnChanged || len(st.Drift) != 0 {
		t.Errorf("with status ignored: %s, drift %+v; want UnChanged, no drift", st.Action, st.Drift)
	}
}
