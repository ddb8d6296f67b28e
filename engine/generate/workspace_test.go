package generate

import (
	"reflect"
	"strings"
	"testing"
)

func TestProjectConfig(t *testing.T) {
	ws, err := ParseWorkspace("ws.yaml", "prod", []byte(`modules:
  mysql:
    path: oci://ghcr.io/kusionstack/mysql
    version: 0.2.0
    configs:
      default:
        cloud: aws
        size: 20
        tags: {a: "1", b: "2"}
      large:
        size: 100
        tags: {c: "3"}
        projectSelector: [shop, search]
  empty:
    configs:
      default: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		module, project string
		want            map[string]any
		block           string
	}{
		// The named block is laid over the default one level deep: its
		// map replaces the default's, it is not merged into it.
		{"mysql", "shop", map[string]any{"cloud": "aws", "size": 100, "tags": map[string]any{"c": "3"}}, "large"},
		{"mysql", "blog", map[string]any{"cloud": "aws", "size": 20, "tags": map[string]any{"a": "1", "b": "2"}}, ""},
		{"empty", "shop", nil, ""},
		{"absent", "shop", nil, ""},
	}
	for _, tt := range tests {
		got, block := ws.ProjectConfig(tt.module, tt.project)
		if !reflect.DeepEqual(got, tt.want) || block != tt.block {
			t.Errorf("ProjectConfig(%s, %s) = %v, %q; want %v, %q", tt.module, tt.project, got, block, tt.want, tt.block)
		}
	}
	if got := ws.ConfigPath("mysql", "shop", "size"); got != "modules.mysql.configs.large" {
		t.Errorf("ConfigPath(size) = %s", got)
	}
	if got := ws.ConfigPath("mysql", "shop", "cloud"); got != "modules.mysql.configs.default" {
		t.Errorf("ConfigPath(cloud) = %s", got)
	}
}

func TestParseWorkspaceErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"selector in default", "modules:\n  m:\n    configs:\n      default: {projectSelector: [a]}\n", "ws.yaml: modules.m.configs.default.projectSelector: not allowed in the default block"},
		{"block without selector", "modules:\n  m:\n    configs:\n      big: {size: 1}\n", "ws.yaml: modules.m.configs.big.projectSelector: required"},
		{"block with only a selector", "modules:\n  m:\n    configs:\n      big: {projectSelector: [a]}\n", "ws.yaml: modules.m.configs.big: a block with nothing but its projectSelector"},
		{"project in two blocks", "modules:\n  m:\n    configs:\n      a: {x: 1, projectSelector: [shop]}\n      b: {x: 2, projectSelector: [shop]}\n", `project "shop" is selected by both a and b`},
		{"path without version", "modules:\n  m:\n    path: oci://ghcr.io/acme/m\n", "ws.yaml: modules.m.version: required with modules.m.path"},
		{"unknown field", "module:\n  m: {}\n", "ws.yaml:1: module: unknown field"},
		{"wrong kind", "context: [a]\n", "ws.yaml:1: context: want a mapping, got a list"},
		{"two secret store providers", "secretStore:\n  provider:\n    aws: {region: x}\n    vault: {server: y}\n", "ws.yaml: secretStore.provider: want exactly one provider, got 2 (aws, vault)"},
		{"name differs from the file", "name: staging\n", `ws.yaml: name: "staging", but the file names workspace "prod"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseWorkspace("ws.yaml", "prod", []byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v\nwant one containing %q", err, tt.want)
			}
		})
	}
}

func TestImportedResourcesConflict(t *testing.T) {
	ws, err := ParseWorkspace("ws.yaml", "prod", []byte(`modules:
  a:
    configs:
      default:
        importedResources: {"hashicorp:aws:aws_db_instance:db": "db-1"}
  b:
    configs:
      default:
        importedResources: {"hashicorp:aws:aws_db_instance:db": "db-2"}
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ws.ImportedResources("shop")
	if err == nil || !strings.Contains(err.Error(), `ws.yaml: modules.b.configs.default.importedResources.hashicorp:aws:aws_db_instance:db: imports "db-2", but another module imports "db-1"`) {
		t.Fatalf("error = %v", err)
	}
}
