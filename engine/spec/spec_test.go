package spec

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/model"
)

const file = "examples/app/dev/spec.yaml"

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{
			name: "empty document",
			doc:  "",
			want: []string{file + ": not a Spec: the document is empty, want a mapping with resources"},
		},
		{
			name: "top-level list",
			doc:  "- id: a\n  type: Kubernetes\n",
			want: []string{file + ": not a Spec: the document is a list, want a mapping with resources"},
		},
		{
			name: "top-level JSON list",
			doc:  `[{"id": "a"}]`,
			want: []string{file + ": not a Spec: the document is a list, want a mapping with resources"},
		},
		{
			name: "scalar document",
			doc:  "hello",
			want: []string{file + ": not a Spec: the document is a string, want a mapping with resources"},
		},
		{
			name: "a Release is not a Spec",
			doc:  "project: p\nspec:\n  resources: []\n",
			want: []string{
				file + `: not a Spec: unknown field "project" (want resources, secretStore, context)`,
				file + `: not a Spec: unknown field "spec" (want resources, secretStore, context)`,
			},
		},
		{
			name: "resources not a list",
			doc:  "resources:\n  id: a\n",
			want: []string{file + ": resources is a mapping, want a list of resources"},
		},
		{
			name: "context not a mapping",
			doc:  "resources: []\ncontext: [1]\nsecretStore: x\n",
			want: []string{
				file + ": secretStore is a string, want a mapping",
				file + ": context is a list, want a mapping",
			},
		},
		{
			name: "resource fields of the wrong kind",
			doc: `resources:
- id: v1:ConfigMap:ns:a
  type: Kubernetes
- just a string
- id: v1:ConfigMap:ns:c
  Type: Kubernetes
  attributes: [1, 2]
  dependsOn: v1:ConfigMap:ns:a
  extensions: 3
- id: 7
  type: true
  dependsOn: [a, {b: c}]
`,
			want: []string{
				file + ": resource 2 is a string, want a mapping with id, type and attributes",
				file + `: resource 3 (v1:ConfigMap:ns:c): unknown field "Type" (want id, type, attributes, dependsOn, extensions)`,
				file + ": resource 3 (v1:ConfigMap:ns:c): attributes is a list, want a mapping",
				file + ": resource 3 (v1:ConfigMap:ns:c): extensions is a number, want a mapping",
				file + ": resource 3 (v1:ConfigMap:ns:c): dependsOn is a string, want a list of resource ids",
				file + ": resource 4: id is a number, want a string",
				file + ": resource 4: type is a boolean, want a string",
				file + ": resource 4: dependsOn entry 2 is a mapping, want a resource id",
			},
		},
		{
			name: "duplicate key",
			doc:  "resources:\n- id: a\n  id: b\n",
			want: []string{file + `: parsing spec: yaml: unmarshal errors:` + "\n" + `  line 3: key "id" already set in map`},
		},
		{
			name: "not YAML",
			doc:  "resources: [\n",
			want: []string{file + ": parsing spec: yaml: line 1: did not find expected node content"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(file, []byte(tt.doc))
			if err == nil {
				t.Fatalf("Parse succeeded, want:\n%s", strings.Join(tt.want, "\n"))
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("Parse error:\n got  %s\n want %s", got, want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string // nil: valid
	}{
		{
			name: "valid, ids with dots and colons in references",
			doc: `resources:
- id: v1:Namespace:ns
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: ns}}
- id: v1:Service:ns:web
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Service, metadata: {name: web, namespace: ns}}
- id: apps/v1:Deployment:ns:web
  type: Kubernetes
  attributes:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: ns}
    spec: {ip: $kusion_path.v1:Service:ns:web.spec.clusterIP}
  dependsOn: [v1:Service:ns:web]
- id: hashicorp:aws:aws_s3_bucket:b.v2
  type: Terraform
  attributes: {name: $kusion_path.apps/v1:Deployment:ns:web.metadata.name}
`,
		},
		{
			name: "duplicate ids",
			doc: `resources:
- {id: "hashicorp:aws:aws_s3_bucket:a", type: Terraform}
- {id: "hashicorp:aws:aws_s3_bucket:b", type: Terraform}
- {id: "hashicorp:aws:aws_s3_bucket:a", type: Terraform}
- {id: "hashicorp:aws:aws_s3_bucket:a", type: Terraform}
`,
			want: []string{
				file + `: duplicate resource id "hashicorp:aws:aws_s3_bucket:a" (resources 1 and 3)`,
				file + `: duplicate resource id "hashicorp:aws:aws_s3_bucket:a" (resources 1 and 4)`,
			},
		},
		{
			name: "missing id, missing and unknown type",
			doc: `resources:
- {type: Terraform}
- {id: "hashicorp:aws:aws_s3_bucket:a"}
- {id: "helm:chart:nginx", type: Helm}
`,
			want: []string{
				file + ": resource 1: missing id",
				file + ": resource 2 (hashicorp:aws:aws_s3_bucket:a): missing type: want Kubernetes or Terraform",
				file + `: resource 3 (helm:chart:nginx): unknown type "Helm": want Kubernetes or Terraform`,
			},
		},
		{
			name: "malformed ids",
			doc: `resources:
- {id: "v1:ConfigMap", type: Kubernetes, attributes: {}}
- {id: "v1::ns:a", type: Kubernetes, attributes: {}}
- {id: "aws:aws_s3_bucket:a", type: Terraform}
- {id: "hashicorp::aws_s3_bucket:a", type: Terraform}
`,
			want: []string{
				file + `: resource 1 (v1:ConfigMap): malformed Kubernetes id "v1:ConfigMap": want apiVersion:kind:namespace:name or apiVersion:kind:name`,
				file + `: resource 2 (v1::ns:a): malformed Kubernetes id "v1::ns:a": part 2 is empty`,
				file + `: resource 3 (aws:aws_s3_bucket:a): malformed Terraform id "aws:aws_s3_bucket:a": want providerNamespace:providerName:resourceType:name`,
				file + `: resource 4 (hashicorp::aws_s3_bucket:a): malformed Terraform id "hashicorp::aws_s3_bucket:a": part 2 is empty`,
			},
		},
		{
			name: "Kubernetes id disagrees with attributes",
			doc: `resources:
- id: v1:ConfigMap:ns:a
  type: Kubernetes
  attributes: {apiVersion: apps/v1, kind: ConfigMap, metadata: {name: b, namespace: ns}}
- id: v1:ConfigMap:ns:a2
  type: Kubernetes
  attributes: {apiVersion: v1, metadata: {name: a2, namespace: other}}
- id: v1:Namespace:ns
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: ns, namespace: ns}}
- id: v1:ConfigMap:ns:c
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: 5}}
- id: v1:ConfigMap:ns:d
  type: Kubernetes
`,
			want: []string{
				file + `: resource 1 (v1:ConfigMap:ns:a): id apiVersion "v1" differs from attributes.apiVersion "apps/v1"`,
				file + `: resource 1 (v1:ConfigMap:ns:a): id name "a" differs from attributes.metadata.name "b"`,
				file + `: resource 2 (v1:ConfigMap:ns:a2): id kind "ConfigMap" differs from attributes.kind (missing)`,
				file + `: resource 2 (v1:ConfigMap:ns:a2): id namespace "ns" differs from attributes.metadata.namespace "other"`,
				file + `: resource 3 (v1:Namespace:ns): id has no namespace but attributes.metadata.namespace is "ns"`,
				file + `: resource 4 (v1:ConfigMap:ns:c): id namespace "ns" differs from attributes.metadata.namespace (missing)`,
				file + `: resource 4 (v1:ConfigMap:ns:c): id name "c" differs from attributes.metadata.name (a number: 5)`,
				file + `: resource 5 (v1:ConfigMap:ns:d): attributes are missing: a Kubernetes resource needs apiVersion, kind and metadata.name`,
			},
		},
		{
			name: "dependsOn and $kusion_path to nowhere",
			doc: `resources:
- id: v1:Service:ns:web
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Service, metadata: {name: web, namespace: ns}}
- id: apps/v1:Deployment:ns:web
  type: Kubernetes
  attributes:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: ns}
    spec:
      a: $kusion_path.v1:Service:ns:missing.spec.clusterIP
      b: [$kusion_path.v1:Service:ns:web]
      c: $kusion_path.v1:Service:ns:missing.spec.clusterIP
      d: $kusion_path.v1:Service:ns:web.spec.clusterIP
  dependsOn: [v1:Service:ns:web, v1:Namespace:ns]
`,
			want: []string{
				file + `: resource 2 (apps/v1:Deployment:ns:web): dependsOn "v1:Namespace:ns" names no resource in the spec`,
				file + `: resource 2 (apps/v1:Deployment:ns:web): $kusion_path.v1:Service:ns:missing.spec.clusterIP refers to no resource in the spec`,
				file + `: resource 2 (apps/v1:Deployment:ns:web): $kusion_path.v1:Service:ns:web refers to no resource in the spec`,
			},
		},
		{
			name: "cycle, found despite other problems",
			doc: `resources:
- {id: "hashicorp:aws:aws_s3_bucket:a", type: Terraform, dependsOn: ["hashicorp:aws:aws_s3_bucket:b", "nope"]}
- {id: "hashicorp:aws:aws_s3_bucket:b", type: Terraform, attributes: {x: "$kusion_path.hashicorp:aws:aws_s3_bucket:c.arn"}}
- {id: "hashicorp:aws:aws_s3_bucket:c", type: Terraform, dependsOn: ["hashicorp:aws:aws_s3_bucket:a"]}
- {id: "hashicorp:aws:aws_s3_bucket:a", type: Terraform}
`,
			want: []string{
				file + `: resource 1 (hashicorp:aws:aws_s3_bucket:a): dependsOn "nope" names no resource in the spec`,
				file + `: duplicate resource id "hashicorp:aws:aws_s3_bucket:a" (resources 1 and 4)`,
				file + `: dependency cycle: hashicorp:aws:aws_s3_bucket:a -> hashicorp:aws:aws_s3_bucket:b -> hashicorp:aws:aws_s3_bucket:c -> hashicorp:aws:aws_s3_bucket:a`,
			},
		},
		{
			name: "self cycle",
			doc: `resources:
- {id: "hashicorp:aws:aws_s3_bucket:a", type: Terraform, dependsOn: ["hashicorp:aws:aws_s3_bucket:a"]}
`,
			want: []string{file + `: dependency cycle: hashicorp:aws:aws_s3_bucket:a -> hashicorp:aws:aws_s3_bucket:a`},
		},
		{
			name: "cycle through the implicit Namespace edge",
			doc: `resources:
- id: v1:Namespace:ns
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: ns}}
  dependsOn: [v1:ConfigMap:ns:a]
- id: v1:ConfigMap:ns:a
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: ns}}
`,
			want: []string{file + `: dependency cycle: v1:Namespace:ns -> v1:ConfigMap:ns:a -> v1:Namespace:ns`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(file, []byte(tt.doc))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			err = Validate(file, s)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate succeeded, want:\n%s", strings.Join(tt.want, "\n"))
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("Validate error:\n got\n%s\n want\n%s", got, want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(bad, []byte("resources:\n- {id: a, type: Helm}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		wantErr string
	}{
		{name: "kusion generate YAML", path: "testdata/kusion-generate.yaml"},
		{name: "kusion generate JSON", path: "testdata/kusion-generate.json"},
		{name: "validation runs", path: bad, wantErr: bad + `: resource 1 (a): unknown type "Helm": want Kubernetes or Terraform`},
		{name: "missing file", path: filepath.Join(dir, "nope.yaml"), wantErr: "reading spec: open " + filepath.Join(dir, "nope.yaml") + ": no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Load(tt.path)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Load error = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if len(s.Resources) != 5 {
				t.Fatalf("got %d resources, want 5", len(s.Resources))
			}
			deploy := s.Resources[3]
			if deploy.ID != "apps/v1:Deployment:helloworld:helloworld-dev-helloworld" || deploy.Type != model.Kubernetes {
				t.Errorf("resource 4 = %s (%s)", deploy.ID, deploy.Type)
			}
			if got := deploy.Extensions["GVK"]; got != "apps/v1, Kind=Deployment" {
				t.Errorf("GVK extension = %v", got)
			}
			if got := deploy.Extensions["kusion.io/is-workload"]; got != true {
				t.Errorf("is-workload extension = %v", got)
			}
			if s.SecretStore != nil || s.Context != nil {
				t.Errorf("secretStore = %v, context = %v, want both empty", s.SecretStore, s.Context)
			}
			db := s.Resources[2]
			if got := db.Extensions["providerMeta"]; !reflect.DeepEqual(got, map[string]any{"region": "us-east-1"}) {
				t.Errorf("providerMeta = %v", got)
			}
			if got := db.Attributes["engine_version"]; got != "8.0" {
				t.Errorf("engine_version = %#v, want the string 8.0", got)
			}
		})
	}
}

// full exercises every field of Spec and Resource, with values YAML could
// misread if written carelessly.
func full() *model.Spec {
	return &model.Spec{
		Resources: model.Resources{
			{
				ID:   "v1:ConfigMap:default:cfg",
				Type: model.Kubernetes,
				Attributes: map[string]any{
					"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": "cfg", "namespace": "default", "labels": map[string]any{}},
					"data": map[string]any{
						"yes": "yes", "no": "no", "on": "on", "num": "8.0", "int": "10", "null": "null",
						"empty": "", "multi": "line one\nline two\n", "html": "<a href=\"x\">&</a>",
						"ref": "$kusion_path.v1:Service:default:web.spec.clusterIP", "colon": "a: b", "dash": "- x",
					},
					"n": float64(3), "f": 2.5, "neg": float64(-1), "b": true, "nil": nil,
					"list": []any{"a", float64(1), false, nil, map[string]any{"k": "v"}, []any{}},
				},
				DependsOn: []string{"v1:Namespace:default", "v1:Service:default:web"},
				Extensions: map[string]any{
					"GVK":                   "/v1, Kind=ConfigMap",
					model.ImportIDExtension: "default/cfg",
				},
			},
			{ID: "v1:Namespace:default", Type: model.Kubernetes, Attributes: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "default"}}},
			{ID: "v1:Service:default:web", Type: model.Kubernetes, Attributes: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "web", "namespace": "default"}}},
			{
				ID:         "hashicorp:aws:aws_s3_bucket:logs",
				Type:       model.Terraform,
				Attributes: map[string]any{"bucket": "logs"},
				Extensions: map[string]any{
					"provider":     "registry.terraform.io/hashicorp/aws/5.0.1",
					"providerMeta": map[string]any{"region": "us-east-1"},
					"resourceType": "aws_s3_bucket",
				},
			},
			{ID: "hashicorp:null:null_resource:noop", Type: model.Terraform},
		},
		SecretStore: map[string]any{"provider": map[string]any{"aws": map[string]any{"region": "us-east-1"}}},
		Context:     map[string]any{"KUBECONFIG_PATH": "/home/me/.kube/config", "replicas": float64(2)},
	}
}

func TestRoundTrip(t *testing.T) {
	generated, err := Load("testdata/kusion-generate.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	specs := map[string]*model.Spec{"all fields": full(), "kusion generate": generated, "empty": {}}
	for _, format := range []string{"yaml", "json"} {
		for name, s := range specs {
			t.Run(format+"/"+name, func(t *testing.T) {
				var first bytes.Buffer
				if err := Write(&first, s, format); err != nil {
					t.Fatalf("Write: %v", err)
				}
				back, err := Parse("first."+format, first.Bytes())
				if err != nil {
					t.Fatalf("Parse:\n%s\n%v", first.String(), err)
				}
				want := *s
				if want.Resources == nil {
					want.Resources = model.Resources{}
				}
				if !reflect.DeepEqual(back, &want) {
					t.Errorf("round trip changed the spec:\n got  %#v\n want %#v\n%s", back, &want, first.String())
				}
				var second bytes.Buffer
				if err := Write(&second, back, format); err != nil {
					t.Fatalf("Write again: %v", err)
				}
				if first.String() != second.String() {
					t.Errorf("second write differs:\n%s\n---\n%s", first.String(), second.String())
				}
			})
		}
	}
}

func TestWriteYAMLKeepsKusionFieldOrder(t *testing.T) {
	var buf bytes.Buffer
	s := &model.Spec{Resources: model.Resources{{
		ID: "v1:Namespace:a", Type: model.Kubernetes,
		Attributes: map[string]any{"kind": "Namespace", "apiVersion": "v1"},
		DependsOn:  []string{"x"}, Extensions: map[string]any{"GVK": "/v1, Kind=Namespace"},
	}}, Context: map[string]any{"k": "v"}}
	if err := Write(&buf, s, "yaml"); err != nil {
		t.Fatal(err)
	}
	want := `resources:
- id: v1:Namespace:a
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: Namespace
  dependsOn:
  - x
  extensions:
    GVK: /v1, Kind=Namespace
context:
  k: v
`
	if buf.String() != want {
		t.Errorf("Write yaml:\n%s\nwant\n%s", buf.String(), want)
	}
	if err := Write(&buf, s, "toml"); err == nil || err.Error() != `writing spec: unknown format "toml": want yaml or json` {
		t.Errorf("Write toml error = %v", err)
	}
}
