package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
)

// TestCheckJudgesThePlanApplied: a plan Check refuses changes nothing and
// writes no release, for an apply and a destroy; a plan it passes is the
// one applied; a plan made anew under the stack (another run came in
// between) is judged again.
func TestCheckJudgesThePlanApplied(t *testing.T) {
	ctx := context.Background()
	no := errors.New("rule main.no_size_2: size 2 is not allowed")
	bySize := func(_ context.Context, p *engine.Preview) error {
		for _, st := range p.ChangeSteps {
			if st.To != nil && st.To.Attributes["size"] == 2 {
				return no
			}
		}
		return nil
	}
	e, f, store := setup(t)
	id := res("a", nil).ID
	var judged []*engine.Preview
	check := func(ctx context.Context, p *engine.Preview) error { judged = append(judged, p); return bySize(ctx, p) }

	r, err := e.Apply(ctx, stack(res("a", map[string]any{"size": 1})), engine.ApplyOptions{Check: check})
	if err != nil || r.Release == nil || len(judged) != 1 || judged[0] != r.Preview {
		t.Fatalf("a plan passed: %v, %d judged, the plan applied is the one judged: %v", err, len(judged), len(judged) == 1 && judged[0] == r.Preview)
	}
	_, err = e.Apply(ctx, stack(res("a", map[string]any{"size": 2})), engine.ApplyOptions{Check: check})
	var refused *engine.RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, no) {
		t.Fatalf("a refused plan: %v", err)
	}
	if got := f.objects[id]["size"]; got != 1 {
		t.Errorf("a refused plan changed the object: size %v", got)
	}
	if rel, _ := store.Latest(ctx, "p", "w"); rel.Revision != 1 {
		t.Errorf("a refused plan wrote release %d", rel.Revision)
	}
	// Another run applies between the judged plan and the stack taken:
	// the plan made anew is judged too. Here an update is refused: the
	// first plan has none (the object is as the spec says), the plan made
	// after the other run has one.
	judged = nil
	noUpdates := func(ctx context.Context, p *engine.Preview) error {
		judged = append(judged, p)
		if len(judged) == 1 {
			if _, err := e.Apply(ctx, stack(res("a", map[string]any{"size": 3})), engine.ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if p.Summary().Update > 0 {
			return no
		}
		return nil
	}
	_, err = e.Apply(ctx, stack(res("a", map[string]any{"size": 1})), engine.ApplyOptions{Check: noUpdates})
	if len(judged) != 2 || !errors.As(err, &refused) || f.objects[id]["size"] != 3 {
		t.Fatalf("the plan made anew: %d plans judged, %v, size %v", len(judged), err, f.objects[id]["size"])
	}
	_, err = e.Destroy(ctx, stack(), engine.ApplyOptions{Check: func(context.Context, *engine.Preview) error { return no }})
	if !errors.As(err, &refused) || f.objects[id] == nil {
		t.Errorf("a refused destroy: %v, object %v", err, f.objects[id])
	}
	if rel, _ := store.Latest(ctx, "p", "w"); rel.Revision != 3 {
		t.Errorf("a refused destroy wrote a release: latest %d, want 3 (the run in between, then the refusal under the stack)", rel.Revision)
	}
}
