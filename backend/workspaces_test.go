package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

// TestKusionWorkspacesRead: on every store (a folder, memory, and the test
// environment's S3, GCS and Azure, with and without a prefix), workspaces
// written as Kusion v0.15 writes them are listed from their metadata and
// read back byte for byte; a file the metadata does not list is no
// workspace; a metadata file that does not parse is an error naming its
// key; reading writes nothing.
func TestKusionWorkspacesRead(t *testing.T) {
	ctx := context.Background()
	dev := &testenv.KusionWorkspace{
		Modules: map[string]*testenv.KusionModuleConfig{
			"service": {Configs: testenv.KusionConfigs{Default: map[string]any{"replicas": 2}}},
		},
		Context: map[string]any{"KUBECONFIG_PATH": "/etc/kube/dev"},
	}
	kusion := testenv.KusionWorkspaceFiles(t, []string{"dev"}, map[string]*testenv.KusionWorkspace{"dev": dev})
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		// names the metadata lists; err, if set, is in WorkspaceNames' error.
		names []string
		err   string
		// unlisted has a file but no metadata entry.
		unlisted string
	}{
		{name: "empty store"},
		{name: "as Kusion writes them", files: kusion, names: []string{"default", "dev"}},
		{name: "a file without an entry", files: map[string][]byte{
			"workspaces/.metadata.yml": []byte("current: default\navailableWorkspaces:\n    - default\n"),
			"workspaces/default.yaml":  []byte("{}\n"),
			"workspaces/prod.yaml":     kusion["workspaces/dev.yaml"],
		}, names: []string{"default"}, unlisted: "prod"},
		{name: "an empty metadata file", files: map[string][]byte{"workspaces/.metadata.yml": nil}},
		{name: "metadata that does not parse", files: map[string][]byte{
			"workspaces/.metadata.yml": []byte("availableWorkspaces: {dev: [\n"),
		}, err: "decode workspaces metadata "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range allBackends(t) {
				t.Run(k.name, func(t *testing.T) {
					s := openURL(t, k.url(t))
					for key, data := range tc.files {
						if err := s.obj.write(ctx, s.prefix+key, data, false); err != nil {
							t.Fatal(err)
						}
					}
					before := listAll(t, s)
					names, err := s.WorkspaceNames(ctx)
					switch {
					case tc.err != "":
						if err == nil || !strings.Contains(err.Error(), tc.err+s.prefix+"workspaces/.metadata.yml") {
							t.Fatalf("WorkspaceNames error %v, want one naming the key after %q", err, tc.err)
						}
						return
					case err != nil:
						t.Fatal(err)
					case !slices.Equal(names, tc.names):
						t.Errorf("WorkspaceNames = %q, want %q", names, tc.names)
					}
					for _, n := range tc.names {
						data, err := s.ReadWorkspace(ctx, n)
						if err != nil || string(data) != string(tc.files["workspaces/"+n+".yaml"]) {
							t.Errorf("ReadWorkspace(%s) = %q, %v; want the file as written", n, data, err)
						}
					}
					if tc.unlisted != "" {
						if ok, err := s.HasWorkspaceFile(ctx, tc.unlisted); !ok || err != nil {
							t.Errorf("HasWorkspaceFile(%s) = %t, %v; want true", tc.unlisted, ok, err)
						}
					}
					if _, err := s.ReadWorkspace(ctx, "staging"); !errors.Is(err, ErrWorkspaceNotFound) || !strings.Contains(err.Error(), s.prefix+"workspaces/staging.yaml") {
						t.Errorf("ReadWorkspace of a missing workspace: %v, want ErrWorkspaceNotFound naming its key", err)
					}
					if _, err := s.ReadWorkspace(ctx, "../releases/x"); err == nil {
						t.Error("ReadWorkspace took a name holding a slash")
					}
					if after := listAll(t, s); !slices.Equal(after, before) {
						t.Errorf("reading workspaces changed the store: %q, then %q", before, after)
					}
				})
			}
		})
	}
}

// listAll lists every key of the store with its size and time.
func listAll(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	if s.bucket == nil {
		// A database or an HTTP service: the objects and their contents
		// (a rewrite of the same bytes does not show).
		for k, v := range snapshot(t, s) {
			out = append(out, fmt.Sprintf("%s %d %q", k, len(v), v))
		}
		slices.Sort(out)
		return out
	}
	it := s.bucket.List(nil)
	for {
		o, err := it.Next(context.Background())
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %d %s", o.Key, o.Size, o.ModTime.Format(time.RFC3339Nano)))
	}
	slices.Sort(out)
	return out
}
