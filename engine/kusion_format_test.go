package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
)

// kusionRelease is Kusion v0.15's release (pkg/apis/api.kusion.io/v1
// Release, Spec, State, Resource) and nothing else, but for the two fields
// kusionpr adds, origin and message, which Kusion's reader skips.
type kusionRelease struct {
	Project      string       `json:"project"`
	Workspace    string       `json:"workspace"`
	Revision     uint64       `json:"revision"`
	Stack        string       `json:"stack"`
	Spec         *kusionSpec  `json:"spec,omitempty"`
	State        *kusionState `json:"state"`
	Phase        string       `json:"phase"`
	CreateTime   time.Time    `json:"createTime"`
	ModifiedTime time.Time    `json:"modifiedTime"`

	Origin  json.RawMessage `json:"origin"`
	Message string          `json:"message"`
}

type kusionSpec struct {
	Resources   []kusionResource `json:"resources"`
	SecretStore json.RawMessage  `json:"secretStore"`
	Context     map[string]any   `json:"context"`
}

type kusionState struct {
	Resources []kusionResource `json:"resources"`
}

type kusionResource struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	Attributes map[string]any `json:"attributes"`
	DependsOn  []string       `json:"dependsOn"`
	Extensions map[string]any `json:"extensions"`
}

// TestReleasesHaveKusionsFormat: every release kusionpr writes (an apply,
// a failed apply, an unlocked one, a destroy) decodes with a strict decoder
// that knows only Kusion's fields and our origin and message, with times to
// the nanosecond, modifiedTime never before createTime, and a destroy's
// spec listing what it destroyed.
func TestReleasesHaveKusionsFormat(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := backend.Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rt := newFakeRuntime()
	e := &engine.Engine{Runtimes: map[model.ResourceType]engine.Driver{model.Terraform: engine.Built(rt)}, Store: store, Parallelism: 4}
	st := stack(res("a", map[string]any{"size": 1}), res("b", map[string]any{"size": 2}, id("a")))
	st.Origin = &model.Origin{User: "alice", Command: "apply"}
	if _, err := e.Apply(ctx, st, engine.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	rt.failOn[id("b")] = true
	e.Apply(ctx, stack(res("a", map[string]any{"size": 1}), res("b", map[string]any{"size": 3}, id("a"))), engine.ApplyOptions{})
	rt.failOn[id("b")] = false
	// A release left running, then unlocked.
	prior, err := store.Latest(ctx, "p", "w")
	if err != nil {
		t.Fatal(err)
	}
	held := &model.Release{Project: "p", Workspace: "w", Stack: "s", Spec: &model.Spec{}, State: prior.State, Phase: model.PhaseApplying}
	if _, err := store.Begin(ctx, held); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Unlock(ctx, "p", "w", "bob", "stuck"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Destroy(ctx, st, engine.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}

	phases := map[uint64]string{}
	for rev := uint64(1); rev <= 4; rev++ {
		path := filepath.Join(dir, "releases", "p", "w", fmt.Sprintf("%d.yaml", rev))
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		dec := json.NewDecoder(bytes.NewReader(j))
		dec.DisallowUnknownFields()
		var r kusionRelease
		if err := dec.Decode(&r); err != nil {
			t.Errorf("%s is not Kusion's format: %v\n%s", path, err, data)
			continue
		}
		phases[rev] = r.Phase
		if r.ModifiedTime.Before(r.CreateTime) || r.CreateTime.Nanosecond() == 0 && r.ModifiedTime.Nanosecond() == 0 {
			t.Errorf("release %d: created %s, modified %s; want nanoseconds, modified not before created",
				rev, r.CreateTime.Format(time.RFC3339Nano), r.ModifiedTime.Format(time.RFC3339Nano))
		}
		if rev == 4 && (r.Spec == nil || len(r.Spec.Resources) != 2 || len(r.State.Resources) != 0) {
			t.Errorf("the destroy's release: spec %+v, state %+v; want the two destroyed resources, an empty state", r.Spec, r.State)
		}
	}
	if phases[1] != "succeeded" || phases[2] != "failed" || phases[3] != "failed" || phases[4] != "succeeded" {
		t.Errorf("phases %v, want an apply, a failed apply, an unlocked release and a destroy", phases)
	}
}
