package terraform

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

func jobOf(t *testing.T, id string, ext map[string]any, state []byte) *job {
	t.Helper()
	res := model.Resource{ID: id, Type: model.Terraform, Attributes: map[string]any{"input": id}, Extensions: ext}
	tg, err := parseTarget(res)
	if err != nil {
		t.Fatal(err)
	}
	return &job{op: &operation{res: res, t: tg, state: state}}
}

func ownState(t *testing.T, tfVersion, lineage, typ, name, provider string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"version": 4, "terraform_version": tfVersion, "serial": 3, "lineage": lineage, "outputs": map[string]any{},
		"resources": []any{map[string]any{"mode": "managed", "type": typ, "name": name, "provider": provider,
			"instances": []any{map[string]any{"schema_version": 0, "attributes": map[string]any{"id": name}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestModuleAndStates: a group's root module holds every resource at its
// own address, resources of one provider with other settings get an
// aliased provider configuration, and the merged state splits back into
// each resource's own state as it was.
func TestModuleAndStates(t *testing.T) {
	aws := func(region string) map[string]any {
		return map[string]any{"provider": "registry.terraform.io/hashicorp/aws/5.0.1", "providerMeta": map[string]any{"region": region}}
	}
	east := ownState(t, "1.11.4", "lineage-east", "aws_s3_bucket", "east", `provider["registry.terraform.io/hashicorp/aws"]`)
	west := ownState(t, "1.5.7", "lineage-west", "aws_s3_bucket", "west", `provider["registry.terraform.io/hashicorp/aws"]`)
	g := []*job{
		jobOf(t, "hashicorp:aws:aws_s3_bucket:east", aws("us-east-1"), east),
		jobOf(t, "hashicorp:aws:aws_s3_bucket:west", aws("eu-west-1"), west),
		jobOf(t, "hashicorp:terraform:terraform_data:seed", nil, nil),
	}
	g[2].importID = "seed-1"
	r := &Runtime{cfg: Config{Binary: "terraform"}}
	m, err := r.module(g, true)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(m.config, &cfg); err != nil {
		t.Fatal(err)
	}
	wantProviders := map[string]any{"aws": []any{map[string]any{"region": "us-east-1"}, map[string]any{"region": "eu-west-1", "alias": "a1"}}}
	if !reflect.DeepEqual(cfg["provider"], wantProviders) {
		t.Errorf("providers = %v, want %v", cfg["provider"], wantProviders)
	}
	buckets := cfg["resource"].(map[string]any)["aws_s3_bucket"].(map[string]any)
	if buckets["east"].(map[string]any)["provider"] != nil || buckets["west"].(map[string]any)["provider"] != "aws.a1" {
		t.Errorf("resources = %v: want east on the default provider, west on aws.a1", buckets)
	}
	if want := []any{map[string]any{"to": "terraform_data.seed", "id": "seed-1"}}; !reflect.DeepEqual(cfg["import"], want) {
		t.Errorf("imports = %v", cfg["import"])
	}

	var merged stateFile4
	if err := json.Unmarshal(m.state, &merged); err != nil {
		t.Fatal(err)
	}
	if merged.TerraformVersion != "1.5.7" || len(merged.Resources) != 2 {
		t.Errorf("merged state: version %s, %d resources; want the oldest version and both", merged.TerraformVersion, len(merged.Resources))
	}
	if !strings.Contains(string(merged.Resources[1]), `"provider":"provider[\"registry.terraform.io/hashicorp/aws\"].a1"`) {
		t.Errorf("west's state is not on its aliased provider: %s", merged.Resources[1])
	}
	for i, j := range g[:2] {
		own, found, err := splitState(m.state, j)
		if err != nil || !found {
			t.Fatalf("split %s: %v %v", j.op.res.ID, found, err)
		}
		var got, want stateFile4
		json.Unmarshal(own, &got)
		json.Unmarshal([]byte([][]byte{east, west}[i]), &want)
		if got.Lineage != want.Lineage || len(got.Resources) != 1 || !jsonSame(t, got.Resources[0], want.Resources[0]) {
			t.Errorf("%s split back as %s, want %s", j.op.res.ID, own, [][]byte{east, west}[i])
		}
	}
	if _, found, _ := splitState(m.state, g[2]); found {
		t.Error("a resource the state does not hold was found in it")
	}
}

func jsonSame(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	json.Unmarshal(a, &x)
	json.Unmarshal(b, &y)
	return reflect.DeepEqual(x, y)
}

func TestGroups(t *testing.T) {
	local := func(v string) map[string]any {
		return map[string]any{"provider": "registry.terraform.io/hashicorp/local/" + v}
	}
	tests := []struct {
		name string
		a, b *job
		fit  bool
	}{
		{"different addresses", jobOf(t, "hashicorp:local:local_file:a", local("1.4.0"), nil), jobOf(t, "hashicorp:local:local_file:b", local("1.4.0"), nil), true},
		{"one address", jobOf(t, "hashicorp:local:local_file:a", local("1.4.0"), nil), jobOf(t, "other:local:local_file:a", local("1.4.0"), nil), false},
		{"two versions of a provider", jobOf(t, "hashicorp:local:local_file:a", local("1.4.0"), nil), jobOf(t, "hashicorp:local:local_file:b", local("2.0.0"), nil), false},
		{"two sources of one local name", jobOf(t, "hashicorp:local:local_file:a", local("1.4.0"), nil),
			jobOf(t, "acme:local:local_thing:b", map[string]any{"provider": "registry.terraform.io/acme/local/1.0.0"}, nil), false},
	}
	for _, tt := range tests {
		if got := fits([]*job{tt.a}, tt.b); got != tt.fit {
			t.Errorf("%s: fits = %v, want %v", tt.name, got, tt.fit)
		}
	}
}

func TestDiagnosticsByAddress(t *testing.T) {
	var d diagnostics
	fmt.Fprintln(&d, `{"@level":"info","type":"apply_start","hook":{"resource":{"addr":"local_file.ok"}}}`)
	fmt.Fprintln(&d, `{"@level":"error","type":"diagnostic","diagnostic":{"severity":"error","summary":"Create local file error","detail":"open /forbidden/x: permission denied","address":"local_file.bad"}}`)
	fmt.Fprintln(&d, `{"@level":"warn","type":"diagnostic","diagnostic":{"severity":"warning","summary":"deprecated","address":"local_file.ok"}}`)
	if err := d.about("local_file.ok"); err != nil {
		t.Errorf("a warning counted as the error of local_file.ok: %v", err)
	}
	if err := d.about("local_file.bad"); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("error of local_file.bad = %v", err)
	}
	if err := d.or(fmt.Errorf("exit status 1")); !strings.Contains(err.Error(), "Create local file error") {
		t.Errorf("the run's error = %v, want Terraform's own words", err)
	}
}

// TestDiagnosticsUnattributed: a failed apply run whose every error names
// its resource applied the others; one with an error naming none (a
// configuration refused whole), or with no account at all, may not have.
func TestDiagnosticsUnattributed(t *testing.T) {
	for _, tt := range []struct {
		name  string
		lines []string
		want  bool
	}{
		{"every error names its resource", []string{
			`{"@level":"error","type":"diagnostic","diagnostic":{"severity":"error","summary":"Create local file error","address":"local_file.bad"}}`,
			`{"@level":"warn","type":"diagnostic","diagnostic":{"severity":"warning","summary":"deprecated"}}`,
		}, false},
		{"a configuration refused whole", []string{
			`{"@level":"error","type":"diagnostic","diagnostic":{"severity":"error","summary":"Extraneous JSON object property","detail":"No argument or block type is named \"no_such_argument\"."}}`,
		}, true},
		{"nothing said", nil, true},
	} {
		var d diagnostics
		for _, l := range tt.lines {
			fmt.Fprintln(&d, l)
		}
		if got := d.unattributed(); got != tt.want {
			t.Errorf("%s: unattributed = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestIntegrationBatch: resources planned and applied together share one
// Terraform run each; a resource whose plan fails fails alone, the others
// of its batch still get their plans; each applied resource has a state of
// its own that its next plan continues from; destroys asked together are
// one run too, and a resource that stops that run fails alone.
func TestIntegrationBatch(t *testing.T) {
	for _, bin := range testenv.TerraformBinaries(t) {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			ctx := context.Background()
			var logs testenv.LogBuffer
			rt, err := New(Config{Binary: bin, CacheDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			if err != nil {
				t.Fatal(err)
			}
			// The calls below start together; on a loaded machine their
			// goroutines may still come milliseconds apart.
			rt.batches.quiet, rt.batches.window = 300*time.Millisecond, 2*time.Second
			files := t.TempDir()
			var rs []model.Resource
			for i := range 6 {
				rs = append(rs, model.Resource{ID: fmt.Sprintf("hashicorp:terraform:terraform_data:d%d", i), Type: model.Terraform,
					Attributes: map[string]any{"input": fmt.Sprintf("value-%d", i)}})
			}
			rs = append(rs, model.Resource{ID: "hashicorp:local:local_file:note", Type: model.Terraform,
				Attributes: map[string]any{"filename": filepath.Join(files, "note.txt"), "content": "hello"},
				Extensions: map[string]any{"provider": "registry.terraform.io/hashicorp/local/1.4.0"}})
			broken := model.Resource{ID: "hashicorp:terraform:terraform_data:broken", Type: model.Terraform,
				Attributes: map[string]any{"input": "x", "no_such_argument": true}}

			all := func(list []model.Resource, fn func(model.Resource) (*model.Resource, error)) ([]*model.Resource, []error) {
				out, errs := make([]*model.Resource, len(list)), make([]error, len(list))
				var wg sync.WaitGroup
				for i, r := range list {
					wg.Add(1)
					go func() { defer wg.Done(); out[i], errs[i] = fn(r) }()
				}
				wg.Wait()
				return out, errs
			}
			cache := rt.cfg.CacheDir
			// Working folders that held resources (the others hold a
			// provider's schema).
			folders := func() int {
				entries, _ := os.ReadDir(filepath.Join(cache, "work"))
				n := 0
				for _, e := range entries {
					b, _ := os.ReadFile(filepath.Join(cache, "work", e.Name(), configFile))
					if strings.Contains(string(b), `"resource"`) {
						n++
					}
				}
				return n
			}
			// With the providers' schemas known (each is fetched once, on
			// first use, and resources of a provider whose schema comes
			// later miss the batch of the first), a clean batch: seven
			// resources, one plan in one folder.
			for _, r := range []model.Resource{rs[0], rs[6]} {
				if _, err := rt.SensitivePaths(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			if _, errs := all(rs, func(r model.Resource) (*model.Resource, error) { return rt.Apply(ctx, nil, r, true) }); errs[0] != nil {
				t.Fatal(errs[0])
			}
			if n := folders(); n != 1 {
				t.Errorf("seven plans used %d working folders, want one batch", n)
			}
			planned, errs := all(append(append([]model.Resource(nil), rs...), broken), func(r model.Resource) (*model.Resource, error) {
				return rt.Apply(ctx, nil, r, true)
			})
			for i, r := range rs {
				if errs[i] != nil || planned[i] == nil {
					t.Fatalf("plan of %s beside a broken resource: %v", r.ID, errs[i])
				}
			}
			if err := errs[len(rs)]; err == nil || !strings.Contains(err.Error(), "plan "+broken.ID) || !strings.Contains(err.Error(), "no_such_argument") {
				t.Errorf("the broken resource's error = %v, want one naming it and its argument", err)
			}

			applied, errs := all(rs, func(r model.Resource) (*model.Resource, error) { return rt.Apply(ctx, nil, r, false) })
			for i, r := range rs {
				if errs[i] != nil {
					t.Fatalf("apply %s: %v", r.ID, errs[i])
				}
				st, _ := applied[i].Extensions[model.StateExtension].(string)
				var s stateFile4
				if err := json.Unmarshal([]byte(st), &s); err != nil || len(s.Resources) != 1 {
					t.Fatalf("%s records %d resources in its state (%v), want its own only", r.ID, len(s.Resources), err)
				}
			}
			if n := folders(); n != 1+len(rs)+1 {
				t.Errorf("%d working folders after the apply, want the batches' (plans and applies share it) and one per resource of the failed batch", n)
			}
			if got := applied[0].Attributes["output"]; got != "value-0" {
				t.Errorf("terraform_data output = %v", got)
			}
			again, errs := all(rs, func(r model.Resource) (*model.Resource, error) {
				for i := range rs {
					if rs[i].ID == r.ID {
						return rt.Apply(ctx, applied[i], r, true)
					}
				}
				return nil, nil
			})
			for i, r := range rs {
				if errs[i] != nil || again[i].Attributes["id"] != applied[i].Attributes["id"] {
					t.Errorf("plan of %s from its own state: %v, id %v → %v", r.ID, errs[i], applied[i].Attributes["id"], again[i].Attributes["id"])
				}
			}

			// Destroyed together: one Terraform run. Beside them a resource
			// whose recorded state Terraform cannot decode stops that run,
			// and one whose recorded state is not JSON cannot join it: each
			// fails alone, naming itself, and the others are still destroyed.
			ghost := model.Resource{ID: "hashicorp:terraform:terraform_data:ghost", Type: model.Terraform,
				Attributes: map[string]any{"input": "x"},
				Extensions: map[string]any{model.StateExtension: string(ghostState(t))}}
			torn := model.Resource{ID: "hashicorp:terraform:terraform_data:torn", Type: model.Terraform,
				Attributes: map[string]any{"input": "x"},
				Extensions: map[string]any{model.StateExtension: `{"version": 4, "resources": [`}}
			gone := func(list []*model.Resource) []error {
				_, errs := all(derefs(list), func(r model.Resource) (*model.Resource, error) { return nil, rt.Delete(ctx, r) })
				return errs
			}
			for i, err := range gone(applied) {
				if err != nil {
					t.Fatalf("destroy %s: %v", rs[i].ID, err)
				}
			}
			// (A batch takes what arrives within its window: a loaded
			// machine may split one in two.)
			if n := strings.Count(logs.String(), `folder="state `); n < 1 || n > 2 {
				t.Errorf("%d destroy runs for %d resources, want one:\n%s", n, len(rs), logs.String())
			}
			if _, err := os.Stat(filepath.Join(files, "note.txt")); !os.IsNotExist(err) {
				t.Errorf("the local file is still there after its destroy: %v", err)
			}

			again, errs = all(rs, func(r model.Resource) (*model.Resource, error) { return rt.Apply(ctx, nil, r, false) })
			for i, err := range errs {
				if err != nil {
					t.Fatalf("apply %s again: %v", rs[i].ID, err)
				}
			}
			errs = gone(append(again, &ghost, &torn))
			for i, err := range errs[:len(rs)] {
				if err != nil {
					t.Errorf("destroy %s beside a broken resource: %v", rs[i].ID, err)
				}
			}
			if err := errs[len(rs)]; err == nil || !strings.HasPrefix(err.Error(), "destroy "+ghost.ID+": ") || !strings.Contains(err.Error(), ".input") {
				t.Errorf("the broken resource's error = %v, want one naming it and what is wrong", err)
			}
			if err := errs[len(rs)+1]; err == nil || !strings.HasPrefix(err.Error(), "destroy "+torn.ID+": state of "+torn.ID) {
				t.Errorf("the torn state's error = %v, want one naming it and its state", err)
			}
			if _, err := os.Stat(filepath.Join(files, "note.txt")); !os.IsNotExist(err) {
				t.Errorf("the local file is still there after a destroy beside a broken resource: %v", err)
			}
		})
	}
}

// TestIntegrationStalePlanNotApplied: a plan another process left in a
// working folder was made against the world as it was then. A file edited
// by hand since must be written again by the next apply, which the plan
// (made while the file was as applied) says nothing about.
func TestIntegrationStalePlanNotApplied(t *testing.T) {
	for _, bin := range testenv.TerraformBinaries(t) {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			ctx := context.Background()
			cache, files := t.TempDir(), t.TempDir()
			note := filepath.Join(files, "note.txt")
			res := model.Resource{ID: "hashicorp:local:local_file:note", Type: model.Terraform,
				Attributes: map[string]any{"filename": note, "content": "as applied\n"},
				Extensions: map[string]any{"provider": "registry.terraform.io/hashicorp/local/1.4.0"}}
			// Each process of the action (preview, then apply) has a
			// runtime of its own over one cache.
			process := func() *Runtime {
				rt, err := New(Config{Binary: bin, CacheDir: cache})
				if err != nil {
					t.Fatal(err)
				}
				return rt
			}
			prior, err := process().Apply(ctx, nil, res, false)
			if err != nil {
				t.Fatal(err)
			}
			// A preview: the file is as applied, the plan changes nothing.
			if got, err := process().Read(ctx, prior, res); err != nil || got == nil {
				t.Fatalf("read after apply = %v, %v; want the file", got, err)
			}
			if err := os.WriteFile(note, []byte("edited by hand\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := process().Apply(ctx, prior, res, false); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(note); string(b) != "as applied\n" {
				t.Errorf("note.txt = %q after apply, want %q: the apply used the plan a preview left before the edit", b, "as applied\n")
			}
		})
	}
}

func derefs(list []*model.Resource) []model.Resource {
	out := make([]model.Resource, len(list))
	for i, r := range list {
		out[i] = *r
	}
	return out
}

// ghostState is a terraform_data state Terraform cannot decode: its input
// lacks the type a dynamic value is stored with.
func ghostState(t *testing.T) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"version": 4, "terraform_version": "1.5.7", "serial": 1, "lineage": "ghost", "outputs": map[string]any{},
		"resources": []any{map[string]any{"mode": "managed", "type": "terraform_data", "name": "ghost", "provider": `provider["terraform.io/builtin/terraform"]`,
			"instances": []any{map[string]any{"schema_version": 0, "attributes": map[string]any{"id": "ghost", "input": "x", "output": "x"}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSamePlan: a saved plan is applied only when the folder's
// configuration and state are exactly what it was made from.
func TestSamePlan(t *testing.T) {
	config, state := []byte(`{"resource":{}}`), []byte(`{"version":4}`)
	tests := []struct {
		name          string
		files         map[string][]byte
		config, state []byte
		want          bool
	}{
		{"as planned", map[string][]byte{configFile: config, stateFile: state, planFile: []byte("p")}, config, state, true},
		{"as planned, no state", map[string][]byte{configFile: config, planFile: []byte("p")}, config, nil, true},
		{"no plan", map[string][]byte{configFile: config, stateFile: state}, config, state, false},
		{"another configuration", map[string][]byte{configFile: []byte(`{}`), stateFile: state, planFile: []byte("p")}, config, state, false},
		{"the state moved", map[string][]byte{configFile: config, stateFile: []byte(`{"version":4,"serial":2}`), planFile: []byte("p")}, config, state, false},
		{"a state where none was planned", map[string][]byte{configFile: config, stateFile: state, planFile: []byte("p")}, config, nil, false},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		for name, b := range tt.files {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if got := samePlan(dir, tt.config, tt.state); got != tt.want {
			t.Errorf("%s: samePlan = %v, want %v", tt.name, got, tt.want)
		}
	}
}
