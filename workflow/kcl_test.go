package workflow

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine/kcl"
	"github.com/kusionpr/kusionpr/engine/kcl/deps"
	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/engine/spec"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

var updateKCL = flag.Bool("update-kcl", false, "rewrite testdata/kcl/quickstart.spec.yaml from the current output")

// kclStacks is a compiler for the checkout root, its dependencies served
// by the test environment's git server and registry under Kusion's names.
func kclStacks(t *testing.T, root string) *kcl.Stacks {
	t.Helper()
	rt := testenv.KCLRuntime(t)
	served := testenv.KCLSettings(t)
	res, err := deps.New(deps.Options{CacheDir: t.TempDir(), Allow: served.Allow, Mirrors: served.Mirrors})
	if err != nil {
		t.Fatal(err)
	}
	s := &kcl.Stacks{Compiler: kcl.Compiler{Runtime: rt}, Resolver: res, Root: root}
	t.Cleanup(func() { s.Close() })
	return s
}

func specOf(t *testing.T, root string, r *Runner) []byte {
	t.Helper()
	st, err := project.LoadStack(root, filepath.Join(root, "quickstart", "default"))
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := r.StackSpec(context.Background(), Request{Root: root}, st, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := spec.Write(&buf, s, "yaml"); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestKCLQuickstartSpecIsTheYAMLOnes: the quickstart `kusion init` writes
// (main.k, its kcl.mod naming kam from git and service and network from
// OCI), compiled by KCL's runtime with its dependencies fetched, gives the
// Spec the same app written as main.yaml gives, byte for byte; and that
// Spec is the reviewed one in testdata/kcl/quickstart.spec.yaml.
func TestKCLQuickstartSpecIsTheYAMLOnes(t *testing.T) {
	kclRoot, _ := filepath.Abs("testdata/kcl/kcl")
	yamlRoot, _ := filepath.Abs("testdata/kcl/yaml")
	fromKCL := specOf(t, kclRoot, &Runner{KCL: kclStacks(t, kclRoot)})
	fromYAML := specOf(t, yamlRoot, &Runner{})
	if !bytes.Equal(fromKCL, fromYAML) {
		t.Errorf("the Spec of main.k differs from main.yaml's:\n--- main.k\n%s\n--- main.yaml\n%s", fromKCL, fromYAML)
	}
	golden := "testdata/kcl/quickstart.spec.yaml"
	if *updateKCL {
		if err := os.WriteFile(golden, fromKCL, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestKCLQuickstart -update-kcl writes it)", err)
	}
	if !bytes.Equal(fromKCL, want) {
		t.Errorf("the quickstart's Spec differs from %s (-update-kcl rewrites it after review):\n%s", golden, fromKCL)
	}
}

// TestKCLOffWithoutACompiler: with no compiler, a main.k stack fails
// naming the file.
func TestKCLOffWithoutACompiler(t *testing.T) {
	root, _ := filepath.Abs("testdata/kcl/kcl")
	st, err := project.LoadStack(root, filepath.Join(root, "quickstart", "default"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = (&Runner{}).StackSpec(context.Background(), Request{Root: root}, st, nil, "")
	want := filepath.Join(root, "quickstart", "default", "main.k") + ": KCL is not enabled here"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want it to hold %q", err, want)
	}
}

// TestKCLExamplesMergeTheirBase: examples/kcl's stacks compile base.k and
// their main.k as one program, as KCL does: dev adds to base.k's values
// with ":" and overrides with "=" (one replica, debug logs, the rest of
// base.k's env kept); prod replaces base.k's network whole with "=".
func TestKCLExamplesMergeTheirBase(t *testing.T) {
	root, _ := filepath.Abs("../examples/kcl")
	stacks := kclStacks(t, root)
	for _, tc := range []struct {
		stack string
		want  []string
		not   []string
	}{
		{stack: "dev",
			want: []string{"replicas: 1\n", "value: debug\n", "value: hello\n", "image: nginx:1.27\n", "hello-dev-hello-private-80-tcp"},
			not:  []string{"value: info\n", "8080"}},
		{stack: "prod",
			want: []string{"replicas: 3\n", "value: info\n", "value: hello\n", "hello-prod-hello-private-8080-tcp", "targetPort: 80\n"},
			not:  []string{"value: debug\n", "-80-tcp"}},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			st, err := project.LoadStack(root, filepath.Join(root, tc.stack))
			if err != nil {
				t.Fatal(err)
			}
			s, _, err := (&Runner{KCL: stacks}).StackSpec(context.Background(), Request{Root: root}, st, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := spec.Write(&buf, s, "yaml"); err != nil {
				t.Fatal(err)
			}
			got := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("the Spec lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("the Spec holds %q:\n%s", n, got)
				}
			}
		})
	}
}
