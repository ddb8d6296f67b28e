package generate

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kusionpr/kusionpr/engine/generate/module"
	"github.com/kusionpr/kusionpr/model"
)

// fakeModule answers with what its function makes of the request.
type fakeModule func(req module.Request) (*module.Response, error)

func (f fakeModule) Generate(_ context.Context, req module.Request) (*module.Response, error) {
	return f(req)
}

func kube(apiVersion, kind, ns, name string, extra map[string]any) model.Resource {
	meta := map[string]any{"name": name}
	if ns != "" {
		meta["namespace"] = ns
	}
	attrs := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta}
	for k, v := range extra {
		attrs[k] = v
	}
	return model.Resource{ID: model.KubernetesIDOf(apiVersion, kind, ns, name), Type: model.Kubernetes, Attributes: attrs}
}

// fakeModules: a workload module making a Deployment (and a ConfigMap,
// marking the Deployment), a cache accessory making a Service and patching
// the workload, a broken one, and one that checks its platform config.
func fakeModules() map[string]module.Generator {
	return map[string]module.Generator{
		"service": fakeModule(func(req module.Request) (*module.Response, error) {
			var w struct {
				Replicas any `json:"replicas"`
			}
			if err := yaml.Unmarshal(req.Workload, &w); err != nil {
				return nil, err
			}
			if _, isNum := w.Replicas.(float64); w.Replicas != nil && !isNum {
				return nil, module.Invalid(module.DevConfig, "replicas", "want an integer")
			}
			name := req.Project + "-" + req.Stack + "-" + req.App
			d := kube("apps/v1", "Deployment", req.Project, name, map[string]any{"spec": map[string]any{
				"template": map[string]any{"spec": map[string]any{"containers": []any{
					map[string]any{"name": "main", "image": "nginx", "env": []any{map[string]any{"name": "OWN", "value": "1"}}},
				}}},
			}})
			d.Extensions = map[string]any{isWorkloadExtension: true}
			cm := kube("v1", "ConfigMap", req.Project, name+"-files", nil)
			return &module.Response{Resources: model.Resources{cm, d}}, nil
		}),
		"cache": fakeModule(func(req module.Request) (*module.Response, error) {
			svc := kube("v1", "Service", req.Project, req.App+"-cache", nil)
			return &module.Response{
				Resources: model.Resources{svc},
				Patcher: &module.Patcher{
					Environments: []corev1.EnvVar{{Name: "CACHE_HOST", Value: req.App + "-cache"}, {Name: "CACHE_PORT", Value: "6379"}},
					Labels:       map[string]string{"cache": "on"},
					PodLabels:    map[string]string{"cache-pod": "on"},
					JSONPatchers: map[string]module.JSONPatcher{svc.ID: {Type: module.MergePatch, Payload: []byte(`{"spec":{"type":"ClusterIP"}}`)}},
				},
			}, nil
		}),
		"sized": fakeModule(func(req module.Request) (*module.Response, error) {
			var p struct {
				Size any `json:"size"`
			}
			if err := yaml.Unmarshal(req.PlatformConfig, &p); err != nil {
				return nil, err
			}
			if p.Size == "huge" {
				return nil, module.Invalid(module.PlatformConfig, "size", "want a number of GiB")
			}
			return &module.Response{}, nil
		}),
		"broken": fakeModule(func(module.Request) (*module.Response, error) {
			return nil, errors.New("backend unreachable")
		}),
	}
}

const workspaceYAML = `modules:
  sized:
    configs:
      default:
        size: 10
      big:
        size: huge
        projectSelector: [shop]
  cache:
    configs:
      default:
        importedResources:
          v1:Service:shop:web-cache: shop/existing-cache
context:
  KUBECONFIG_PATH: /etc/kube/config
`

func generateFrom(t *testing.T, apps string) (*model.Spec, error) {
	t.Helper()
	ws, err := ParseWorkspace("workspaces/dev.yaml", "dev", []byte(workspaceYAML))
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ParseApps("shop/dev/main.yaml", []byte(apps))
	if err != nil {
		return nil, err
	}
	g := &Generator{Builtins: fakeModules()}
	return g.Generate(context.Background(), Input{Project: "shop", Stack: "dev", AppFile: "shop/dev/main.yaml", Apps: parsed, Workspace: ws})
}

func TestGenerateAssemblesAndPatches(t *testing.T) {
	s, err := generateFrom(t, `web:
  workload: {_type: service.Service}
  accessories:
    cache: {_type: cache.Cache}
  labels: {team: shop}
`)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range s.Resources {
		ids = append(ids, r.ID)
	}
	// Namespace, the workload first among its module's resources, then
	// the accessory's.
	want := []string{"v1:Namespace:shop", "apps/v1:Deployment:shop:shop-dev-web", "v1:ConfigMap:shop:shop-dev-web-files", "v1:Service:shop:web-cache"}
	if !reflect.DeepEqual(ids, want) {
		t.Fatalf("ids = %q, want %q", ids, want)
	}
	d := s.Resources[1]
	env, _ := model.Lookup(d.Attributes, "spec.template.spec.containers.0.env")
	wantEnv := []any{
		map[string]any{"name": "CACHE_HOST", "value": "web-cache"},
		map[string]any{"name": "CACHE_PORT", "value": "6379"},
		map[string]any{"name": "OWN", "value": "1"},
	}
	if !reflect.DeepEqual(env, wantEnv) {
		t.Errorf("env = %v, want the patch's in its order, then the developer's: %v", env, wantEnv)
	}
	if v, _ := model.Lookup(d.Attributes, "metadata.labels.cache"); v != "on" {
		t.Errorf("workload label = %v", v)
	}
	if v, _ := model.Lookup(d.Attributes, "spec.template.metadata.labels.cache-pod"); v != "on" {
		t.Errorf("pod label = %v", v)
	}
	if v, _ := model.Lookup(d.Attributes, "metadata.labels.team"); v != "shop" {
		t.Errorf("the app's label is not on its objects: %v", v)
	}
	if d.Extensions[isWorkloadExtension] != true {
		t.Errorf("workload not marked: %v", d.Extensions)
	}
	svc := s.Resources[3]
	if v, _ := model.Lookup(svc.Attributes, "spec.type"); v != "ClusterIP" {
		t.Errorf("merge patch not applied: %v", svc.Attributes)
	}
	if svc.Extensions[model.ImportIDExtension] != "shop/existing-cache" {
		t.Errorf("import id = %v", svc.Extensions)
	}
	if _, ok := model.Lookup(svc.Attributes, "metadata.name"); !ok {
		t.Errorf("an imported resource keeps its attributes: %v", svc.Attributes)
	}
	if s.Context["KUBECONFIG_PATH"] != "/etc/kube/config" {
		t.Errorf("context = %v", s.Context)
	}
	// Kind order: the Deployment waits for the ConfigMap and the Service,
	// everything for the Namespace, nothing for what comes later.
	if want := []string{"v1:Namespace:shop", "v1:ConfigMap:shop:shop-dev-web-files", "v1:Service:shop:web-cache"}; !reflect.DeepEqual(d.DependsOn, want) {
		t.Errorf("workload dependsOn = %q, want %q", d.DependsOn, want)
	}
	if len(s.Resources[0].DependsOn) != 0 {
		t.Errorf("namespace dependsOn = %q", s.Resources[0].DependsOn)
	}
}

func TestGenerateErrorsNameFileAndField(t *testing.T) {
	tests := []struct {
		name string
		apps string
		want []string
	}{
		{
			name: "unknown module",
			apps: "web:\n  workload: {_type: service.Service}\n  accessories:\n    db: {_type: mysqll.MySQL}\n",
			want: []string{"shop/dev/main.yaml: web.accessories.db._type: unknown module \"mysqll\"", "workspaces/dev.yaml", "built in: broken, cache, service, sized"},
		},
		{
			name: "config the module rejects, in the app file",
			apps: "web:\n  workload:\n    _type: service.Service\n    replicas: two\n",
			want: []string{"shop/dev/main.yaml:4: web.workload.replicas: want an integer (built-in module service)"},
		},
		{
			name: "config the module rejects, in the workspace",
			apps: "web:\n  workload: {_type: service.Service}\n  accessories:\n    disk: {_type: sized.Disk}\n",
			want: []string{"workspaces/dev.yaml: modules.sized.configs.big.size: want a number of GiB (built-in module sized)"},
		},
		{
			name: "a module failing",
			apps: "web:\n  workload: {_type: service.Service}\n  accessories:\n    x: {_type: broken.X}\n",
			want: []string{"shop/dev/main.yaml: web.accessories.x: built-in module broken: backend unreachable"},
		},
		{
			name: "type error in the AppConfiguration",
			apps: "web:\n  workload: {_type: service.Service}\n  labels: [a, b]\n",
			want: []string{"shop/dev/main.yaml:3: web.labels: want a mapping, got a list"},
		},
		{
			name: "missing _type",
			apps: "web:\n  workload: {replicas: 1}\n",
			want: []string{"shop/dev/main.yaml: web.workload._type: required"},
		},
		{
			name: "bad app name",
			apps: "Web_App:\n  workload: {_type: service.Service}\n",
			want: []string{"shop/dev/main.yaml: Web_App: an app name must be lower-case"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := generateFrom(t, tt.apps)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestOrderByKindAvoidsCycles(t *testing.T) {
	ns := kube("v1", "Namespace", "", "shop", nil)
	cm := kube("v1", "ConfigMap", "shop", "cfg", nil)
	// The Service was made to wait for the Deployment (a module's own
	// choice); kind order must not add the reverse edge.
	svc := kube("v1", "Service", "shop", "web", nil)
	dep := kube("apps/v1", "Deployment", "shop", "web", nil)
	svc.DependsOn = []string{dep.ID}
	// A Secret refers to the Deployment through a $kusion_path.
	sec := kube("v1", "Secret", "shop", "s", map[string]any{"stringData": map[string]any{"x": "$kusion_path." + dep.ID + ".metadata.uid"}})
	job := kube("batch/v1", "Job", "shop", "migrate", nil)
	rs := model.Resources{ns, cm, svc, dep, sec, job}
	orderByKind(rs)
	got := map[string][]string{}
	for _, r := range rs {
		got[r.ID] = r.DependsOn
	}
	want := map[string][]string{
		ns.ID:  nil,
		cm.ID:  {ns.ID},
		svc.ID: {dep.ID, ns.ID, cm.ID, sec.ID},
		dep.ID: {ns.ID, cm.ID},
		sec.ID: {ns.ID, cm.ID},
		job.ID: {ns.ID, cm.ID, sec.ID, svc.ID, dep.ID},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dependsOn:\n got %q\nwant %q", got, want)
	}
}

func TestMoveNamespace(t *testing.T) {
	dep := kube("apps/v1", "Deployment", "shop", "web", nil)
	sec := kube("v1", "Secret", "shop", "db", map[string]any{"stringData": map[string]any{"host": "$kusion_path." + dep.ID + ".metadata.name"}})
	sec.DependsOn = []string{dep.ID}
	ns := kube("v1", "Namespace", "", "storefront", nil)
	rs := moveNamespace(model.Resources{ns, dep, sec}, "shop", "storefront")
	if rs[1].ID != "apps/v1:Deployment:storefront:web" || rs[2].DependsOn[0] != rs[1].ID {
		t.Fatalf("ids not moved: %s %q", rs[1].ID, rs[2].DependsOn)
	}
	if v, _ := model.Lookup(rs[2].Attributes, "stringData.host"); v != "$kusion_path.apps/v1:Deployment:storefront:web.metadata.name" {
		t.Errorf("reference = %v", v)
	}
	if v, _ := model.Lookup(rs[1].Attributes, "metadata.namespace"); v != "storefront" {
		t.Errorf("namespace = %v", v)
	}
}

func TestPatchWorkload(t *testing.T) {
	tests := []struct {
		name    string
		kind    string
		patch   module.Patcher
		wantEnv []any
		wantErr string
	}{
		{
			name:    "cron job containers are under the job template",
			kind:    "CronJob",
			patch:   module.Patcher{Environments: []corev1.EnvVar{{Name: "A", Value: "1"}}},
			wantEnv: []any{map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "OLD", "value": "x"}},
		},
		{
			name:    "a variable can be removed",
			kind:    "Deployment",
			patch:   module.Patcher{Environments: []corev1.EnvVar{{Name: "OLD", Value: removeEnv}}},
			wantEnv: nil,
		},
		{
			name:    "no containers",
			kind:    "Empty",
			patch:   module.Patcher{Environments: []corev1.EnvVar{{Name: "A", Value: "1"}}},
			wantErr: "has no containers",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			podSpec := map[string]any{"containers": []any{map[string]any{"name": "c", "env": []any{map[string]any{"name": "OLD", "value": "x"}}}}}
			tmpl := map[string]any{"spec": podSpec}
			spec := map[string]any{"template": tmpl}
			if tt.kind == "CronJob" {
				spec = map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": tmpl}}}
			}
			if tt.kind == "Empty" {
				spec = map[string]any{}
			}
			w := kube("apps/v1", tt.kind, "shop", "w", map[string]any{"spec": spec})
			err := patchWorkload(&w, &tt.patch)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			env := podSpec["containers"].([]any)[0].(map[string]any)["env"]
			if tt.wantEnv == nil {
				if env != nil {
					t.Errorf("env = %v, want none", env)
				}
				return
			}
			if !reflect.DeepEqual(env, tt.wantEnv) {
				t.Errorf("env = %v, want %v", env, tt.wantEnv)
			}
		})
	}
}
