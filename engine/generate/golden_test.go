package generate_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kusionpr/kusionpr/engine/generate"
	"github.com/kusionpr/kusionpr/engine/generate/builtin"
	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/engine/spec"
)

var update = flag.Bool("update", false, "rewrite the golden specs in testdata/golden")

// generateStack generates an example stack and writes it as `action
// generate` does.
func generateStack(t *testing.T, dir string) []byte {
	t.Helper()
	st, err := project.LoadStack("", dir)
	if err != nil {
		t.Fatal(err)
	}
	g := &generate.Generator{Builtins: builtin.Modules()}
	s, err := g.Stack(context.Background(), st, st.WorkspaceName(""))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := spec.Write(&buf, s, "yaml"); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestExamplesGolden generates the example project's stacks and compares
// them with the reviewed specs in testdata/golden (go test -update rewrites
// them): a change to a module or to the generator shows as a diff there.
func TestExamplesGolden(t *testing.T) {
	// Nothing from the environment may change what is generated.
	t.Setenv("AWS_REGION", "us-west-2")
	t.Setenv("KUSION_MODULE_PATH", t.TempDir())
	for _, stack := range []string{"dev", "prod"} {
		t.Run(stack, func(t *testing.T) {
			got := generateStack(t, filepath.Join("..", "..", "examples", "shop", stack))
			golden := filepath.Join("testdata", "golden", "shop-"+stack+".yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the spec generated from examples/shop/%s differs from %s (go test -update rewrites it after review):\n%s", stack, golden, firstDifference(got, want))
			}
			if _, err := spec.Parse(golden, want); err != nil {
				t.Errorf("the golden spec does not read back: %v", err)
			}
		})
	}
}

// TestGenerateIsDeterministic generates one stack many times at once: Go
// randomises map order on every range, so any map walked unsorted on the
// way shows here as a difference.
func TestGenerateIsDeterministic(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "shop", "prod")
	first := generateStack(t, dir)
	var wg sync.WaitGroup
	outs := make([][]byte, 20)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = generateStack(t, dir)
		}()
	}
	wg.Wait()
	for i, out := range outs {
		if !bytes.Equal(out, first) {
			t.Fatalf("run %d differs from the first:\n%s", i+1, firstDifference(out, first))
		}
	}
}

func firstDifference(got, want []byte) string {
	gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w []byte
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if !bytes.Equal(g, w) {
			return fmt.Sprintf("line %d:\n  got:  %s\n  want: %s", i+1, g, w)
		}
	}
	return "(same lines)"
}

// TestStackWithoutWorkspace: a stack whose workspace is default and has
// no file generates with an empty workspace, as Kusion's backends give
// one; any other workspace without a file is an error naming the
// AppConfigurations and where it looked.
func TestStackWithoutWorkspace(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"project.yaml", "dev/stack.yaml", "dev/main.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "shop", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := project.LoadStack(root, filepath.Join(root, "dev"))
	if err != nil {
		t.Fatal(err)
	}
	g := &generate.Generator{Builtins: builtin.Modules()}
	for _, tc := range []struct {
		name string
		// err starts the error; "" for a Spec.
		err string
	}{
		{st.WorkspaceName(""), ""},
		{"staging", filepath.Join(root, "dev", "main.yaml") + ": generating needs a workspace: workspace staging: no file for it (looked for " + filepath.Join(root, "workspaces", "staging.yaml")},
	} {
		s, err := g.Stack(context.Background(), st, tc.name)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("workspace %s: %v, want a Spec generated with an empty workspace", tc.name, err)
		case tc.err == "" && (len(s.Resources) == 0 || len(s.Context) > 0 || s.SecretStore != nil):
			t.Errorf("workspace %s: %d resources, context %v, secret store %v; want the apps' resources and nothing of a workspace", tc.name, len(s.Resources), s.Context, s.SecretStore)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("workspace %s: error = %v\nwant it to start with %q", tc.name, err, tc.err)
		}
	}
}
