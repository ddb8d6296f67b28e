package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
)

// The fake resources use Terraform-shaped ids so no Kubernetes rules
// (implicit namespace edges) apply.
func res(name string, attrs map[string]any, deps ...string) model.Resource {
	return model.Resource{ID: "hashicorp:fake:thing:" + name, Type: model.Terraform, Attributes: attrs, DependsOn: deps}
}

func id(name string) string { return "hashicorp:fake:thing:" + name }

func setup(t *testing.T) (*engine.Engine, *fakeRuntime, *backend.Store) {
	t.Helper()
	store, err := backend.Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	rt := newFakeRuntime()
	return &engine.Engine{Runtimes: map[model.ResourceType]engine.Driver{model.Terraform: engine.Built(rt)}, Store: store, Parallelism: 4}, rt, store
}

func stack(rs ...model.Resource) engine.Stack {
	return engine.Stack{Project: "p", Workspace: "w", Stack: "s", Spec: &model.Spec{Resources: rs}}
}

func actionsOf(p *engine.Preview) map[string]engine.Action {
	m := map[string]engine.Action{}
	for _, s := range p.Steps() {
		m[s.ID] = s.Action
	}
	return m
}

func TestPreviewApplyCycle(t *testing.T) {
	ctx := context.Background()
	e, rt, store := setup(t)
	st := stack(res("a", map[string]any{"size": 1}), res("b", map[string]any{"size": 2}, id("a")))

	p, err := e.Preview(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if got := actionsOf(p); got[id("a")] != engine.Create || got[id("b")] != engine.Create {
		t.Fatalf("first preview actions %v, want all Create", got)
	}
	if _, err := e.Apply(ctx, st, engine.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if rt.applied[0] != id("a") {
		t.Errorf("applied %v: a must come before b, which depends on it", rt.applied)
	}
	rel, err := store.Latest(ctx, "p", "w")
	if err != nil || rel == nil {
		t.Fatalf("latest release: %v %v", rel, err)
	}
	if rel.Revision != 1 || rel.Phase != model.PhaseSucceeded || len(rel.State.Resources) != 2 {
		t.Fatalf("release %d %s with %d resources, want 1 succeeded with 2", rel.Revision, rel.Phase, len(rel.State.Resources))
	}

	p, _ = e.Preview(ctx, st)
	if got := actionsOf(p); got[id("a")] != engine.UnChanged || got[id("b")] != engine.UnChanged {
		t.Fatalf("re-preview actions %v, want all UnChanged", got)
	}

	// A spec change and a change made outside are reported apart.
	st = stack(res("a", map[string]any{"size": 5}), res("b", map[string]any{"size": 2}, id("a")))
	rt.set(id("b"), "size", 9)
	p, _ = e.Preview(ctx, st)
	a, b := p.ChangeSteps[id("a")], p.ChangeSteps[id("b")]
	if a.Action != engine.Update || len(a.SpecChanges) != 1 || a.SpecChanges[0].Path != "size" || len(a.Drift) != 0 {
		t.Errorf("a: %s spec changes %+v drift %+v, want Update of size with no drift", a.Action, a.SpecChanges, a.Drift)
	}
	if b.Action != engine.Update || len(b.Drift) != 1 || b.Drift[0].Path != "size" || len(b.SpecChanges) != 0 {
		t.Errorf("b: %s spec changes %+v drift %+v, want Update reverting drift on size", b.Action, b.SpecChanges, b.Drift)
	}

	// Leaving the spec is a Delete; destroy empties the state.
	p, _ = e.Preview(ctx, stack(res("a", map[string]any{"size": 1})))
	if got := actionsOf(p)[id("b")]; got != engine.Delete {
		t.Errorf("b left the spec: %s, want Delete", got)
	}
	if _, err := e.Destroy(ctx, st, engine.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	rel, _ = store.Latest(ctx, "p", "w")
	if rel.Revision != 2 || len(rel.State.Resources) != 0 || len(rt.objects) != 0 {
		t.Errorf("after destroy: revision %d, %d in state, %d live; want 2, 0, 0", rel.Revision, len(rel.State.Resources), len(rt.objects))
	}
}

func TestFailedApplyKeepsWhatApplied(t *testing.T) {
	ctx := context.Background()
	e, rt, store := setup(t)
	rt.failOn[id("bad")] = true
	st := stack(
		res("ok", map[string]any{"v": 1}),
		res("bad", map[string]any{"v": 2}),
		res("child", map[string]any{"v": 3}, id("bad")),
	)
	res, err := e.Apply(ctx, st, engine.ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "server says no to "+id("bad")) {
		t.Fatalf("apply error %v: want the runtime's error naming the resource", err)
	}
	if _, ok := res.Failed[id("child")]; !ok {
		t.Errorf("child depends on the failed resource and must be reported, got %v", res.Failed)
	}
	rel, _ := store.Latest(ctx, "p", "w")
	if rel.Phase != model.PhaseFailed || !strings.Contains(rel.Message, id("bad")) {
		t.Errorf("release phase %s message %q, want failed naming %s", rel.Phase, rel.Message, id("bad"))
	}
	if len(rel.State.Resources) != 1 || rel.State.Resources[0].ID != id("ok") {
		t.Errorf("state %v, want only the resource that applied", rel.State.Resources)
	}
	if _, ok := rt.objects[id("child")]; ok {
		t.Errorf("child was applied though its dependency failed")
	}
}

func TestCancelledApplyEndsTheRelease(t *testing.T) {
	e, rt, store := setup(t)
	rt.block[id("slow")] = true
	st := stack(res("fast", map[string]any{"v": 1}), res("slow", map[string]any{"v": 2}), res("after", map[string]any{"v": 3}, id("slow")))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	_, err := e.Apply(ctx, st, engine.ApplyOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("apply error %v, want context.Canceled", err)
	}
	rel, _ := store.Latest(context.Background(), "p", "w")
	if rel.Phase != model.PhaseFailed || !strings.Contains(rel.Message, "interrupted") {
		t.Errorf("release phase %s message %q, want failed, interrupted", rel.Phase, rel.Message)
	}
	if len(rel.State.Resources) != 1 || rel.State.Resources[0].ID != id("fast") {
		t.Errorf("state %v, want the one resource that applied", rel.State.Resources)
	}
	// The stack is free again.
	rt.block[id("slow")] = false
	if _, err := e.Apply(context.Background(), st, engine.ApplyOptions{}); err != nil {
		t.Fatalf("apply after an interrupted one: %v", err)
	}
}

func TestReferencesResolveAtApply(t *testing.T) {
	ctx := context.Background()
	e, rt, _ := setup(t)
	st := stack(
		res("db", map[string]any{"host": "db.local"}),
		res("app", map[string]any{"dbHost": "$kusion_path." + id("db") + ".host", "dbStatus": "$kusion_path." + id("db") + ".status"}),
	)
	p, err := e.Preview(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.ChangeSteps[id("app")].To.Attributes["dbStatus"]; got != engine.KnownAfterApply {
		t.Errorf("preview of app.dbStatus = %v, want %q", got, engine.KnownAfterApply)
	}
	if _, err := e.Apply(ctx, st, engine.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := rt.objects[id("app")]["dbStatus"]; got != "ready" {
		t.Errorf("app.dbStatus = %v after apply, want the live value %q", got, "ready")
	}
	if got := rt.objects[id("app")]["dbHost"]; got != "db.local" {
		t.Errorf("app.dbHost = %v after apply, want db.local", got)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	ctx := context.Background()
	e, rt, store := setup(t)
	res, err := e.Apply(ctx, stack(res("a", map[string]any{"v": 1})), engine.ApplyOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Release != nil || len(rt.objects) != 0 {
		t.Errorf("dry run wrote a release or an object")
	}
	if rel, _ := store.Latest(ctx, "p", "w"); rel != nil {
		t.Errorf("dry run left release %d", rel.Revision)
	}
	if res.Preview.ChangeSteps[id("a")].Action != engine.Create {
		t.Errorf("dry run preview: %s, want Create", res.Preview.ChangeSteps[id("a")].Action)
	}
}

func TestSecretsAreRedactedInReleaseAndPreview(t *testing.T) {
	ctx := context.Background()
	e, _, store := setup(t)
	r := model.Resource{ID: "v1:Secret:ns:s", Type: model.Terraform, Attributes: map[string]any{"kind": "Secret"}}
	// A Terraform-typed resource carries its sensitive paths in an extension.
	r.Attributes["password"] = "hunter2-value"
	r.Extensions = map[string]any{model.SensitivePathsExtension: []any{"password"}}
	st := stack(r)
	p, err := e.Preview(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := p.ChangeSteps[r.ID].To.Attributes["password"].(string); !model.IsFingerprint(s) {
		t.Errorf("preview carries %q, want a fingerprint", s)
	}
	if _, err := e.Apply(ctx, st, engine.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	rel, _ := store.Latest(ctx, "p", "w")
	for _, rs := range []model.Resources{rel.Spec.Resources, rel.State.Resources} {
		if s, _ := rs[0].Attributes["password"].(string); !model.IsFingerprint(s) {
			t.Errorf("release carries %q, want a fingerprint", s)
		}
	}
}
