package module

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/testenv"
	corev1 "k8s.io/api/core/v1"
)

// installModule puts bin into home in Kusion's layout and returns its path.
func installModule(t *testing.T, home, ns, name, version string, write func(dst string)) string {
	t.Helper()
	dir := filepath.Join(home, ns, name, version, runtime.GOOS, runtime.GOARCH)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "kusion-module-"+name+"_"+version)
	write(dst)
	return dst
}

func buildEcho(t *testing.T) func(dst string) {
	return func(dst string) {
		t.Helper()
		cmd := exec.Command("go", "build", "-o", dst, "./testdata/kusion-module-echo")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the test module: %v\n%s", err, out)
		}
	}
}

func copyFile(t *testing.T, src string) func(dst string) {
	return func(dst string) {
		t.Helper()
		b, err := os.ReadFile(src)
		if err != nil {
			// A platform check, not the test environment: /bin/true is on
			// every Linux and macOS, where this test runs under make test.
			t.Skipf("no %s to stand in for a non-module binary: %v", src, err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestGenerate(t *testing.T) {
	// Not about the test environment: -short asks for quick tests only, and
	// make test never passes it (a skip there fails the run).
	if testing.Short() {
		t.Skip("builds and runs a module binary")
	}
	home := t.TempDir()
	t.Setenv("KUSION_MODULE_PATH", home)
	installModule(t, home, "kusionstack", "echo", "0.1.0", buildEcho(t))
	installModule(t, home, "kusionstack", "notplugin", "0.1.0", copyFile(t, "/bin/true"))

	logs := &testenv.LogBuffer{}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })

	req := Request{
		Project:        "shop",
		Stack:          "dev",
		App:            "cart",
		Workload:       []byte("service:\n  replicas: 2\n"),
		PlatformConfig: []byte("region: eu-west-1\ntier: gold\n"),
	}

	tests := []struct {
		name    string
		path    string
		app     string
		wantErr []string // substrings; none means success
	}{
		{name: "oci path", path: "oci://ghcr.io/kusionstack/echo"},
		{name: "short path", path: "kusionstack/echo"},
		{
			name:    "binary missing",
			path:    "oci://ghcr.io/kusionstack/absent",
			wantErr: []string{"kusionstack/absent@0.1.0", filepath.Join(home, "kusionstack", "absent", "0.1.0", runtime.GOOS, runtime.GOARCH, "kusion-module-absent_0.1.0")},
		},
		{
			name:    "not a plugin",
			path:    "kusionstack/notplugin",
			wantErr: []string{"kusion-module-notplugin_0.1.0", "handshake failed"},
		},
		{
			name:    "module returns an error",
			path:    "kusionstack/echo",
			app:     "fail",
			wantErr: []string{"kusion-module-echo_0.1.0", "Generate returned an error", `app "fail" is not allowed by this module`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := req
			if tt.app != "" {
				r.App = tt.app
			}
			resp, err := func() (*Response, error) {
				bin, err := Find("", tt.path, "0.1.0")
				if err != nil {
					return nil, err
				}
				return Generate(ctx, bin, r, Environ(nil))
			}()
			t.Logf("err: %v", err)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("got no error, want one containing %q", tt.wantErr)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkEchoResponse(t, resp)
		})
	}

	if got := logs.String(); !strings.Contains(got, "generating") || !strings.Contains(got, "module=") {
		t.Errorf("the module's stderr did not reach slog; log:\n%s", got)
	}
}

// TestModuleEnvironment: a module binary sees PATH and the like, and the
// variables the operator passes, never the rest of its host's environment
// (the bot's App key and webhook secret, a store's credentials).
func TestModuleEnvironment(t *testing.T) {
	// Not about the test environment: -short asks for quick tests only, and
	// make test never passes it (a skip there fails the run).
	if testing.Short() {
		t.Skip("builds and runs a module binary")
	}
	home := t.TempDir()
	bin := installModule(t, home, "kusionstack", "echo", "0.1.0", buildEcho(t))
	const key, secret, store = "-----BEGIN RSA PRIVATE KEY-----\nMIIkey", "webhook-secret-value", "store-secret-value"
	t.Setenv("KUSIONPR_APP_PRIVATE_KEY", key)
	t.Setenv("KUSIONPR_WEBHOOK_SECRET", secret)
	t.Setenv("AWS_SECRET_ACCESS_KEY", store)
	t.Setenv("VAULT_ADDR", "https://vault.example")
	t.Setenv("HTTPS_PROXY", "http://proxy.example:3128")
	dump := filepath.Join(t.TempDir(), "env")
	req := Request{Project: "shop", Stack: "dev", App: "cart", PlatformConfig: []byte("dumpEnvTo: " + dump + "\nregion: eu-west-1\ntier: gold\n")}
	resp, err := Generate(context.Background(), bin, req, Environ([]string{"VAULT_ADDR"}))
	if err != nil {
		t.Fatal(err)
	}
	checkEchoResponse(t, resp)
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	env := string(b)
	for _, want := range []string{"PATH=" + os.Getenv("PATH") + "\n", "VAULT_ADDR=https://vault.example\n", "HTTPS_PROXY=http://proxy.example:3128\n", "MODULE_PLUGIN=ON\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("the module's environment lacks %q:\n%s", want, env)
		}
	}
	for _, leaked := range []string{"MIIkey", secret, store, "KUSIONPR_", "AWS_"} {
		if strings.Contains(env, leaked) {
			t.Errorf("the module's environment holds %q:\n%s", leaked, env)
		}
	}
}

func checkEchoResponse(t *testing.T, resp *Response) {
	t.Helper()
	if len(resp.Resources) != 1 {
		t.Fatalf("got %d resources, want 1: %+v", len(resp.Resources), resp.Resources)
	}
	cm := resp.Resources[0]
	if cm.ID != "v1:ConfigMap:shop:cart-echo" || cm.Type != "Kubernetes" {
		t.Errorf("resource id/type = %q/%q", cm.ID, cm.Type)
	}
	wantAttrs := map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": "cart-echo", "namespace": "shop"},
		"data":       map[string]any{"region": "eu-west-1", "tier": "gold"},
	}
	if !reflect.DeepEqual(cm.Attributes, wantAttrs) {
		t.Errorf("attributes = %#v, want %#v", cm.Attributes, wantAttrs)
	}
	if !reflect.DeepEqual(cm.DependsOn, []string{"v1:Namespace:shop"}) {
		t.Errorf("dependsOn = %q", cm.DependsOn)
	}
	wantPatcher := &Patcher{
		Environments: []corev1.EnvVar{{Name: "ECHO_STACK", Value: "dev"}},
		Labels:       map[string]string{"echo.kusionpr.io/app": "cart"},
		JSONPatchers: map[string]JSONPatcher{
			"v1:ConfigMap:shop:cart-echo": {Type: MergePatch, Payload: []byte(`{"data":{"patched":"yes"}}`)},
		},
	}
	if !reflect.DeepEqual(resp.Patcher, wantPatcher) {
		t.Errorf("patcher = %#v, want %#v", resp.Patcher, wantPatcher)
	}
}

func TestWireRoundTrip(t *testing.T) {
	req := generatorRequest{Request{
		Project: "p", Stack: "s", App: "a",
		Workload: []byte("w"), DevConfig: []byte("d"), PlatformConfig: []byte("pc"),
		Context: []byte("c"), SecretStore: []byte("ss"),
	}}
	var gotReq generatorRequest
	if err := gotReq.unmarshal(req.marshal()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotReq, req) {
		t.Errorf("request round trip: got %+v, want %+v", gotReq, req)
	}

	resp := generatorResponse{Resources: [][]byte{[]byte("r1"), {}, []byte("r3")}, Patcher: []byte("p")}
	var gotResp generatorResponse
	if err := gotResp.unmarshal(resp.marshal()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotResp, resp) {
		t.Errorf("response round trip: got %q, want %q", gotResp, resp)
	}

	// Field numbers are the contract: project is field 1, a string.
	if got := (&generatorRequest{Request{Project: "x"}}).marshal(); !bytes.Equal(got, []byte{0x0a, 0x01, 'x'}) {
		t.Errorf("project encodes as % x, want 0a 01 78", got)
	}
	if err := new(generatorResponse).unmarshal([]byte{0x0a, 0x05, 'x'}); err == nil {
		t.Error("a truncated message decoded without error")
	}
}

func TestDecodeResponse(t *testing.T) {
	good := []byte("id: v1:Namespace:shop\ntype: Kubernetes\nattributes:\n  kind: Namespace\n")
	tests := []struct {
		name      string
		resources [][]byte
		patcher   string
		wantErr   string
		check     func(t *testing.T, r *Response)
	}{
		{
			name:      "invalid YAML names the resource",
			resources: [][]byte{good, []byte("id: [unclosed\n")},
			wantErr:   "module bin: resource 2 of 2 is not valid YAML",
		},
		{
			name:      "wrong shape names the resource",
			resources: [][]byte{good, []byte("id: x\ntype: Kubernetes\nattributes: [1]\n")},
			wantErr:   "resource 2",
		},
		{
			name:      "no patcher",
			resources: [][]byte{good},
			check: func(t *testing.T, r *Response) {
				if r.Patcher != nil || len(r.Resources) != 1 || r.Resources[0].ID != "v1:Namespace:shop" {
					t.Errorf("got %+v", r)
				}
			},
		},
		{
			// What Kusion's YAML libraries write for a []byte payload.
			name:    "payload as byte values",
			patcher: "jsonPatcher:\n  x:\n    type: JSONPatch\n    payload: [91, 93]\n",
			check:   wantPayload("[]"),
		},
		{
			name:    "payload as a string",
			patcher: "jsonPatcher:\n  x:\n    type: MergePatch\n    payload: '{\"a\":1}'\n",
			check:   wantPayload(`{"a":1}`),
		},
		{
			name:    "payload as base64",
			patcher: "jsonPatcher:\n  x:\n    type: MergePatch\n    payload: eyJhIjoxfQ==\n",
			check:   wantPayload(`{"a":1}`),
		},
		{
			name:    "patcher with an unknown field",
			patcher: "podLabel: {a: b}\n",
			wantErr: "module bin: decoding the patcher",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := decodeResponse("bin", &generatorResponse{Resources: tt.resources, Patcher: []byte(tt.patcher)})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, r)
		})
	}
}

func wantPayload(want string) func(t *testing.T, r *Response) {
	return func(t *testing.T, r *Response) {
		t.Helper()
		if r.Patcher == nil {
			t.Fatal("no patcher")
		}
		if got := string(r.Patcher.JSONPatchers["x"].Payload); got != want {
			t.Errorf("payload = %q, want %q", got, want)
		}
	}
}

func TestEncodeResponseIsKusionReadable(t *testing.T) {
	w, err := encodeResponse(&Response{Patcher: &Patcher{JSONPatchers: map[string]JSONPatcher{"x": {Type: JSONPatch, Payload: []byte("[]")}}}})
	if err != nil {
		t.Fatal(err)
	}
	// Kusion decodes the payload with yaml.v3 into []byte, which takes a
	// list of byte values and nothing else.
	if !strings.Contains(string(w.Patcher), "payload:\n    - 91\n    - 93") {
		t.Errorf("patcher encodes as\n%s", w.Patcher)
	}
}

func TestFind(t *testing.T) {
	home := t.TempDir()
	bin := installModule(t, home, "kusionstack", "mysql", "0.2.0", func(dst string) {
		if err := os.WriteFile(dst, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	})
	tests := []struct {
		path, version string
		wantErr       string
	}{
		{path: "oci://ghcr.io/kusionstack/mysql", version: "0.2.0"},
		{path: "kusionstack/mysql", version: "0.2.0"},
		{path: "https://github.com/kusionstack/mysql.git", version: "0.2.0"},
		{path: "kusionstack/mysql", version: "0.3.0", wantErr: "no binary at " + filepath.Join(home, "kusionstack", "mysql", "0.3.0")},
		{path: "mysql", version: "0.2.0", wantErr: "want <namespace>/<name>"},
		{path: "kusionstack/mysql", version: "../../x", wantErr: "not a valid path segment"},
	}
	for _, tt := range tests {
		t.Run(tt.path+"@"+tt.version, func(t *testing.T) {
			got, err := Find(home, tt.path, tt.version)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != bin {
				t.Errorf("Find = %s, want %s", got, bin)
			}
		})
	}
}

func TestHome(t *testing.T) {
	t.Setenv("KUSION_MODULE_PATH", "")
	t.Setenv("KUSION_HOME", "")
	t.Setenv("KUSION_PATH", "/opt/kusion")
	if got, _ := Home(); got != filepath.Join("/opt/kusion", "modules") {
		t.Errorf("Home with KUSION_PATH = %s", got)
	}
	// Where kusion generate copies module binaries: Kusion's data folder.
	t.Setenv("KUSION_HOME", "/srv/kusion")
	if got, _ := Home(); got != filepath.Join("/srv/kusion", "modules") {
		t.Errorf("Home with KUSION_HOME = %s", got)
	}
	t.Setenv("KUSION_MODULE_PATH", "/srv/modules")
	if got, _ := Home(); got != "/srv/modules" {
		t.Errorf("Home with KUSION_MODULE_PATH = %s", got)
	}
}
