package workflow

import (
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/model"
)

// TestRevertTakesSensitiveValuesFromTheCheckout: a release holds a
// Secret's values as fingerprints; reverting to it takes each from the
// checkout's spec when that holds the very value, and refuses naming the
// field when it does not, rather than apply a fingerprint.
func TestRevertTakesSensitiveValuesFromTheCheckout(t *testing.T) {
	secret := func(data map[string]any) model.Resource {
		return model.Resource{ID: "v1:Secret:shop:creds", Type: model.Kubernetes, Attributes: map[string]any{
			"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "creds", "namespace": "shop"}, "data": data,
		}}
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	recorded := &model.Spec{Resources: model.Resources{model.Redact(secret(map[string]any{"password": b64("hunter2"), "user": b64("admin")}))}}
	tests := []struct {
		name     string
		checkout map[string]any
		want     map[string]any
		wantErr  string
	}{
		{name: "the same values", checkout: map[string]any{"password": b64("hunter2"), "user": b64("admin")},
			want: map[string]any{"password": b64("hunter2"), "user": b64("admin")}},
		{name: "a value changed since", checkout: map[string]any{"password": b64("newer"), "user": b64("admin")},
			wantErr: "v1:Secret:shop:creds.data.password holds a sensitive value the release recorded only by its fingerprint"},
		{name: "a value gone", checkout: map[string]any{"user": b64("admin")},
			wantErr: "v1:Secret:shop:creds.data.password"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := releaseSpecWithValues(recorded, &model.Spec{Resources: model.Resources{secret(tc.checkout)}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), b64("newer")) {
					t.Errorf("the error shows a value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			data := got.Resources[0].Attributes["data"].(map[string]any)
			for k, v := range tc.want {
				if data[k] != v {
					t.Errorf("data.%s = %v, want the checkout's value", k, data[k])
				}
			}
			if s, _ := recorded.Resources[0].Attributes["data"].(map[string]any)["password"].(string); !model.IsFingerprint(s) {
				t.Error("the release's spec was changed in place")
			}
		})
	}
}

// panicRuntimes fails the test if a stack's runtimes are asked for.
type panicRuntimes struct{ t *testing.T }

func (p panicRuntimes) Runtimes(_ context.Context, t RuntimeTarget) (map[model.ResourceType]engine.Driver, error) {
	p.t.Errorf("runtimes built for %s: nothing of it should be compared", t.Stack.Path)
	return nil, errors.New("no runtimes here")
}

// TestDriftScanSaysWhatItCannotCompare: a stack never applied, one whose
// release runs, one whose release failed, and one whose folder is broken
// are reported as such, nothing live is read for them, and the scan
// writes nothing to the store.
func TestDriftScanSaysWhatItCannotCompare(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	store := "file://" + filepath.Join(t.TempDir(), "releases")
	writeFile := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := "resources:\n- id: v1:Namespace:x\n  type: Kubernetes\n  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: x}}\n"
	for _, p := range []string{"fresh", "running", "failed"} {
		writeFile(p+"/project.yaml", "name: "+p+"\n")
		writeFile(p+"/prod/stack.yaml", "name: prod\n")
		writeFile(p+"/prod/spec.yaml", spec)
	}
	writeFile("broken/prod/stack.yaml", "name: prod\n") // no project.yaml above it
	s, err := backend.Open(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"running", "failed"} {
		rel := &model.Release{Project: p, Workspace: "default", Stack: "prod", Spec: &model.Spec{}, Phase: model.PhaseApplying}
		if _, err := s.Begin(ctx, rel); err != nil {
			t.Fatal(err)
		}
		if p == "failed" {
			rel.Phase, rel.Message = model.PhaseFailed, "apply x: refused"
			if err := s.Update(ctx, rel); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.Close()
	listing := func() string {
		var out []string
		filepath.WalkDir(strings.TrimPrefix(store, "file://"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(p)
				out = append(out, p+" "+string(b))
			}
			return err
		})
		return strings.Join(out, "\n")
	}
	before := listing()
	scan := &DriftScan{Runner: &Runner{Runtimes: panicRuntimes{t}, Store: StoreConfig{Backend: store}}, Request: Request{Root: root}, Root: root}
	got, err := scan.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]DriftStatus{"broken/prod": ScanFailed, "failed/prod": ReleaseFailed, "fresh/prod": NeverApplied, "running/prod": ReleaseRunning}
	for _, st := range got {
		if want[st.Dir] != st.Status {
			t.Errorf("%s: %s, want %s (%v)", st.Dir, st.Status, want[st.Dir], st.Err)
		}
		if st.Status == ScanFailed && (st.Err == nil || !strings.Contains(st.Err.Error(), "broken/prod")) {
			t.Errorf("%s: error %v does not name the stack", st.Dir, st.Err)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d stacks scanned, want %d", len(got), len(want))
	}
	if AnyDrift(got) {
		t.Error("drift claimed where nothing was compared")
	}
	if listing() != before {
		t.Error("the scan changed the release store")
	}
}
