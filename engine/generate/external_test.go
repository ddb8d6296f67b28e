package generate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/model"
)

// TestGenerateThroughModuleBinary builds a Kusion module binary that speaks
// the plugin protocol (module/testdata/kusion-module-echo), installs it in
// Kusion's module layout, and generates a stack whose workspace points an
// accessory at it: its resources land in the Spec, and its patcher changes
// the workload and its own ConfigMap.
func TestGenerateThroughModuleBinary(t *testing.T) {
	// Not about the test environment: -short asks for quick tests only, and
	// make test never passes it (a skip there fails the run).
	if testing.Short() {
		t.Skip("builds and runs a module binary")
	}
	home := t.TempDir()
	dir := filepath.Join(home, "acme", "echo", "0.1.0", runtime.GOOS, runtime.GOARCH)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "kusion-module-echo_0.1.0")
	if out, err := exec.Command("go", "build", "-o", bin, "./module/testdata/kusion-module-echo").CombinedOutput(); err != nil {
		t.Fatalf("building the module: %v\n%s", err, out)
	}
	ws, err := ParseWorkspace("workspaces/dev.yaml", "dev", []byte(`modules:
  echo:
    path: oci://ghcr.io/acme/echo
    version: 0.1.0
    configs:
      default:
        region: eu-west-1
        tier: gold
`))
	if err != nil {
		t.Fatal(err)
	}
	g := &Generator{Builtins: fakeModules(), ModuleHome: home}
	gen := func(apps string) (*model.Spec, error) {
		parsed, err := ParseApps("shop/dev/main.yaml", []byte(apps))
		if err != nil {
			t.Fatal(err)
		}
		return g.Generate(context.Background(), Input{Project: "shop", Stack: "dev", AppFile: "shop/dev/main.yaml", Apps: parsed, Workspace: ws})
	}

	s, err := gen("web:\n  workload: {_type: service.Service}\n  accessories:\n    echo: {_type: echo.Echo}\n")
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]model.Resource{}
	for _, r := range s.Resources {
		byID[r.ID] = r
	}
	cm, ok := byID["v1:ConfigMap:shop:web-echo"]
	if !ok {
		t.Fatalf("the module's ConfigMap is not in the spec: %v", s.Resources)
	}
	// The platform config crossed the protocol, and the module's merge
	// patch of its own ConfigMap was applied.
	if want := map[string]any{"region": "eu-west-1", "tier": "gold", "patched": "yes"}; !reflect.DeepEqual(cm.Attributes["data"], want) {
		t.Errorf("ConfigMap data = %v, want %v", cm.Attributes["data"], want)
	}
	d := byID["apps/v1:Deployment:shop:shop-dev-web"]
	env, _ := model.Lookup(d.Attributes, "spec.template.spec.containers.0.env")
	if want := []any{map[string]any{"name": "ECHO_STACK", "value": "dev"}, map[string]any{"name": "OWN", "value": "1"}}; !reflect.DeepEqual(env, want) {
		t.Errorf("workload env = %v, want %v", env, want)
	}
	if v, _ := model.Lookup(d.Attributes, "metadata.labels"); !reflect.DeepEqual(v, map[string]any{"echo.kusionpr.io/app": "web"}) {
		t.Errorf("workload labels = %v", v)
	}

	_, err = gen("fail:\n  workload: {_type: service.Service}\n  accessories:\n    echo: {_type: echo.Echo}\n")
	for _, want := range []string{"shop/dev/main.yaml: fail.accessories.echo: module ghcr.io/acme/echo@0.1.0", `app "fail" is not allowed by this module`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error = %v, want one containing %q", err, want)
		}
	}

	// A workspace naming a version that is not installed.
	ws.Modules["echo"].Version = "0.2.0"
	_, err = gen("web:\n  workload: {_type: service.Service}\n  accessories:\n    echo: {_type: echo.Echo}\n")
	for _, want := range []string{"workspaces/dev.yaml: modules.echo: finding module oci://ghcr.io/acme/echo@0.2.0: no binary at", "(used by shop/dev/main.yaml: web.accessories.echo)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error = %v, want one containing %q", err, want)
		}
	}
}
