package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
)

// TestDriftComparesLiveWithTheRelease: a scan tells which fields changed
// outside of a release, what an apply of the release would put back, and a
// sensitive value only by its fingerprint; it reads only, so the store and
// the objects are as they were.
func TestDriftComparesLiveWithTheRelease(t *testing.T) {
	ctx := context.Background()
	e, rt, store := setup(t)
	secret := res("secret", map[string]any{"password": "hunter2-value"})
	secret.Extensions = map[string]any{model.SensitivePathsExtension: []any{"password"}}
	st := stack(res("a", map[string]any{"size": 1}), res("b", map[string]any{"size": 2, "name": "$kusion_path." + id("a") + ".size"}, id("a")), res("gone", map[string]any{"size": 3}), secret)
	if _, err := e.Apply(ctx, st, engine.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	rel, err := store.Latest(ctx, "p", "w")
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		touch func()
		want  map[string]engine.Action
		paths map[string][]string
	}{
		{name: "as applied", touch: func() {},
			want: map[string]engine.Action{id("a"): engine.UnChanged, id("b"): engine.UnChanged, id("gone"): engine.UnChanged, id("secret"): engine.UnChanged}},
		{name: "changed by hand", touch: func() {
			rt.set(id("a"), "size", 5)
			rt.set(id("a"), "status", "degraded") // a field the spec does not set is no drift
			rt.set(id("secret"), "password", "changed-by-hand")
			rt.mu.Lock()
			delete(rt.objects, id("gone"))
			rt.mu.Unlock()
		},
			want:  map[string]engine.Action{id("a"): engine.Update, id("b"): engine.UnChanged, id("gone"): engine.Create, id("secret"): engine.Update},
			paths: map[string][]string{id("a"): {"size"}, id("gone"): {"."}, id("secret"): {"password"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.touch()
			applied, dryRuns := len(rt.applied), sum(rt.dryRuns)
			p, err := e.Drift(ctx, rel)
			if err != nil {
				t.Fatal(err)
			}
			if got := actionsOf(p); !equalActions(got, tc.want) {
				t.Errorf("actions %v, want %v", got, tc.want)
			}
			for id, want := range tc.paths {
				var got []string
				for _, d := range p.ChangeSteps[id].Drift {
					got = append(got, d.Path)
				}
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("%s drifted in %v, want %v", id, got, want)
				}
			}
			if s := p.Summary(); s.Drift != len(tc.paths) {
				t.Errorf("summary counts %d drifted, want %d", s.Drift, len(tc.paths))
			}
			if len(rt.applied) != applied || sum(rt.dryRuns) != dryRuns {
				t.Errorf("a drift scan applied %d and dry-ran %d", len(rt.applied)-applied, sum(rt.dryRuns)-dryRuns)
			}
			b, _ := json.Marshal(p)
			if strings.Contains(string(b), "changed-by-hand") || strings.Contains(string(b), "hunter2-value") {
				t.Errorf("a sensitive value is in the drift: %s", b)
			}
			if tc.paths != nil {
				back := p.ChangeSteps[id("a")].Changes
				if len(back) != 1 || back[0].To != float64(1) && back[0].To != 1 {
					t.Errorf("what an apply of the release would change: %+v, want size back to 1", back)
				}
			}
			latest, err := store.Latest(ctx, "p", "w")
			if err != nil || latest.Revision != rel.Revision {
				t.Errorf("the store's latest release is %v (%v), want revision %d still", latest, err, rel.Revision)
			}
		})
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func equalActions(a, b map[string]engine.Action) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestCompareSpecsTellsAnApplyThatNeverHappened: a spec that differs from
// the release's, by resource and attribute, and a sensitive value compared
// by fingerprint, never shown.
func TestCompareSpecsTellsAnApplyThatNeverHappened(t *testing.T) {
	ctx := context.Background()
	e, _, store := setup(t)
	secret := func(v string) model.Resource {
		r := res("secret", map[string]any{"password": v})
		r.Extensions = map[string]any{model.SensitivePathsExtension: []any{"password"}}
		return r
	}
	st := stack(res("a", map[string]any{"size": 1}), res("b", map[string]any{"size": 2}), secret("hunter2-value"))
	if _, err := e.Apply(ctx, st, engine.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	rel, _ := store.Latest(ctx, "p", "w")
	tests := []struct {
		name string
		spec *model.Spec
		want string
	}{
		{name: "the same", spec: st.Spec, want: ""},
		{name: "changed", spec: &model.Spec{Resources: model.Resources{res("a", map[string]any{"size": 4}), res("c", nil), secret("a-new-password")}},
			want: "hashicorp:fake:thing:a Update size; hashicorp:fake:thing:c Create; hashicorp:fake:thing:secret Update password; hashicorp:fake:thing:b Delete"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			changes, err := e.CompareSpecs(ctx, rel.Spec, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range changes {
				s := c.ID + " " + string(c.Action)
				for i, f := range c.Changes {
					if i == 0 {
						s += " "
					}
					s += f.Path
				}
				got = append(got, s)
			}
			if g := strings.Join(got, "; "); g != tc.want {
				t.Errorf("changes %q, want %q", g, tc.want)
			}
			b, _ := json.Marshal(changes)
			if strings.Contains(string(b), "a-new-password") {
				t.Errorf("a sensitive value is shown: %s", b)
			}
		})
	}
}
