package testenv

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob" // s3:// for the MinIO buckets
	"gopkg.in/yaml.v3"
)

// KusionWorkspace has the fields and YAML tags of Kusion v0.15's Workspace
// (pkg/apis/api.kusion.io/v1), so that yaml.v3 writes what `kusion
// workspace create` writes, byte for byte. Its name is not written: Kusion
// takes it from the file's name.
type KusionWorkspace struct {
	Modules     map[string]*KusionModuleConfig `yaml:"modules,omitempty"`
	SecretStore *KusionSecretStore             `yaml:"secretStore,omitempty"`
	Context     map[string]any                 `yaml:"context,omitempty"`
}

// KusionModuleConfig is Kusion's ModuleConfig: path, version and configs
// are written even when empty, as Kusion writes them.
type KusionModuleConfig struct {
	Path    string        `yaml:"path"`
	Version string        `yaml:"version"`
	Configs KusionConfigs `yaml:"configs"`
}

// KusionConfigs is Kusion's Configs: the default block, and the named
// (patcher) blocks inline beside it.
type KusionConfigs struct {
	Default  map[string]any                  `yaml:"default"`
	Patchers map[string]*KusionPatcherConfig `yaml:",inline,omitempty"`
}

// KusionPatcherConfig is a named block: its settings inline, and the
// projects it applies to.
type KusionPatcherConfig struct {
	Config          map[string]any `yaml:",inline"`
	ProjectSelector []string       `yaml:"projectSelector"`
}

// KusionSecretStore is Kusion's SecretStore, its provider as a mapping.
type KusionSecretStore struct {
	Provider map[string]any `yaml:"provider"`
}

// kusionWorkspacesMetadata is Kusion's workspaces/.metadata.yml.
type kusionWorkspacesMetadata struct {
	Current             string   `yaml:"current,omitempty"`
	AvailableWorkspaces []string `yaml:"availableWorkspaces,omitempty"`
}

// KusionWorkspaceFiles are the files Kusion's workspace storage leaves
// after it is first opened (it creates an empty default workspace and makes
// it current) and `kusion workspace create` is run for each of names in
// order, with the workspaces of ws: their keys under the storage's folder
// (workspaces/<name>.yaml and workspaces/.metadata.yml) and contents.
func KusionWorkspaceFiles(t testing.TB, names []string, ws map[string]*KusionWorkspace) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	meta := kusionWorkspacesMetadata{Current: "default", AvailableWorkspaces: []string{"default"}}
	put := func(name string, w *KusionWorkspace) {
		data, err := yaml.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		files["workspaces/"+name+".yaml"] = data
	}
	put("default", &KusionWorkspace{})
	for _, n := range names {
		put(n, ws[n])
		if n != "default" {
			meta.AvailableWorkspaces = append(meta.AvailableWorkspaces, n)
		}
	}
	data, err := yaml.Marshal(&meta)
	if err != nil {
		t.Fatal(err)
	}
	files["workspaces/.metadata.yml"] = data
	return files
}

// WriteKusionFiles writes files (keys as KusionWorkspaceFiles gives them)
// where Kusion would for the backend at storeURL: under the folder of a
// file:// URL, or under the prefix= of a bucket's URL, in the bucket.
func WriteKusionFiles(t testing.TB, storeURL string, files map[string][]byte) {
	t.Helper()
	u, err := url.Parse(storeURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	prefix := strings.Trim(q.Get("prefix"), "/")
	if prefix != "" {
		prefix += "/"
	}
	if u.Scheme == "file" {
		for key, data := range files {
			p := filepath.Join(filepath.FromSlash(u.Path), filepath.FromSlash(prefix+key))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	q.Del("prefix")
	u.RawQuery = q.Encode()
	ctx := context.Background()
	b, err := blob.OpenBucket(ctx, u.String())
	if err != nil {
		t.Fatalf("open %s: %v", u.Scheme+"://"+u.Host, err)
	}
	defer b.Close()
	for key, data := range files {
		if err := b.WriteAll(ctx, prefix+key, data, nil); err != nil {
			t.Fatalf("write %s: %v", prefix+key, err)
		}
	}
}
