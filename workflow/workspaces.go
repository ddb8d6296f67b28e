package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/engine/generate"
	"github.com/kusionpr/kusionpr/engine/project"
)

// WorkspaceStore is where the operator's workspaces are kept, in Kusion's
// layout: the release store (*backend.Store), read only.
type WorkspaceStore interface {
	WorkspaceNames(ctx context.Context) ([]string, error)
	ReadWorkspace(ctx context.Context, name string) ([]byte, error)
	HasWorkspaceFile(ctx context.Context, name string) (bool, error)
	WorkspaceKey(name string) string
	WorkspacesMetadataKey() string
}

// StackWorkspace is the workspace a stack runs with.
type StackWorkspace struct {
	Name string
	// Workspace is nil only for a stack whose spec is ready and whose
	// workspace exists nowhere: the name then only files its releases.
	Workspace *generate.Workspace
	Origin    *engine.WorkspaceOrigin
}

// ResolveWorkspace finds workspace name of st. The precedence is a
// control: the release store's copy is the operator's (written by `kusion
// workspace create` or `update`, with the store's credentials), a
// repository file is whatever the pull request under review says. So:
//
//  1. the store's workspaces/<name>.yaml when its workspaces/.metadata.yml
//     lists the name (a file it does not list is no workspace, as for
//     Kusion); a repository file of the same name is then not used, and
//     the origin says so;
//  2. else the repository's workspaces/<name>.yaml (project.Stack.WorkspaceFile);
//  3. else, for default, an empty workspace, as Kusion's backends create;
//  4. else, for a stack whose spec is ready (it needs no workspace to be
//     generated), none; otherwise an error naming where it looked.
//
// store may be nil (no store: the repository only); where names it in
// messages (backend.Location, never a URL's query). root, when set, is
// the checkout: repository files are named relative to it.
func ResolveWorkspace(ctx context.Context, st *project.Stack, name string, ready bool, store WorkspaceStore, where, root string) (*StackWorkspace, error) {
	sw := &StackWorkspace{Name: name, Origin: &engine.WorkspaceOrigin{}}
	repoFile, tried, repoErr := st.WorkspaceFile(name)
	if repoErr != nil && !errors.Is(repoErr, project.ErrNoWorkspaceFile) {
		// A bad name, a link out of the checkout: refused whatever the store holds.
		return nil, repoErr
	}
	var listed []string
	if store != nil {
		var err error
		if listed, err = store.WorkspaceNames(ctx); err != nil {
			return nil, fmt.Errorf("workspace %s: the workspaces of the release store at %s: %w", name, where, err)
		}
	}
	if name != st.Name && st.Workspace == "" && slices.Contains(listed, st.Name) {
		sw.Origin.StoreHasStack = st.Name
	}
	switch {
	case slices.Contains(listed, name):
		key := store.WorkspaceKey(name)
		file := storeFile(where, key)
		data, err := store.ReadWorkspace(ctx, name)
		if errors.Is(err, backend.ErrWorkspaceNotFound) {
			return nil, fmt.Errorf("workspace %s: %s lists it, but %s does not exist in the release store at %s", name, store.WorkspacesMetadataKey(), key, where)
		}
		if err != nil {
			return nil, fmt.Errorf("workspace %s: the release store at %s: %w", name, where, err)
		}
		if sw.Workspace, err = generate.ParseWorkspace(file, name, data); err != nil {
			return nil, fmt.Errorf("workspace %s of the release store: %w", name, err)
		}
		sw.Origin.Source, sw.Origin.File = engine.WorkspaceFromStore, file
		if repoErr == nil {
			sw.Origin.Unused = relativePath(root, repoFile)
		}
	case repoErr == nil:
		ws, err := generate.LoadWorkspace(repoFile)
		if err != nil {
			return nil, err
		}
		sw.Workspace = ws
		sw.Origin.Source, sw.Origin.File = engine.WorkspaceFromRepository, relativePath(root, repoFile)
	case name == project.DefaultWorkspace:
		sw.Workspace = generate.EmptyWorkspace(name)
		sw.Origin.Source = engine.WorkspaceFromDefault
	case ready:
		sw.Origin.Source = engine.WorkspaceFromNowhere
	default:
		return nil, notFound(ctx, st, name, tried, store, where)
	}
	return sw, nil
}

// notFound says where workspace name was looked for, and why a file the
// store holds for it did not count.
func notFound(ctx context.Context, st *project.Stack, name string, tried []string, store WorkspaceStore, where string) error {
	msg := fmt.Sprintf("%s: generating needs a workspace: workspace %s: %s (looked for %s)",
		filepath.Join(st.Path, project.AppFile), name, project.ErrNoWorkspaceFile, strings.Join(tried, ", "))
	if store == nil {
		return errors.New(msg)
	}
	msg += fmt.Sprintf(", and the release store at %s does not list it in %s", where, store.WorkspacesMetadataKey())
	if ok, err := store.HasWorkspaceFile(ctx, name); err == nil && ok {
		msg += fmt.Sprintf(": %s is there, but a workspace exists only once the metadata lists it, as for Kusion (kusion workspace create adds it)", store.WorkspaceKey(name))
	}
	return errors.New(msg)
}

// storeFile names a key of the store at where for people.
func storeFile(where, key string) string {
	if strings.Contains(where, "://") {
		return strings.TrimSuffix(where, "/") + "/" + key
	}
	return key + " in " + where
}

// relativePath is path relative to the checkout at root, slash-separated;
// as it is without one.
func relativePath(root, path string) string {
	if root == "" {
		return path
	}
	if rel, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return path
}

// contextDiffers lists the keys whose values differ between a ready
// spec's context and its workspace's: `kusion generate` copies the
// workspace's context into the Spec, so a difference means the spec was
// generated with another workspace, or before this one changed. Values
// are compared as JSON sees them (a YAML integer and a float are one
// number) and never returned: one may be a secret.
func contextDiffers(spec, ws map[string]any) []string {
	a, b := jsonValues(spec), jsonValues(ws)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if v, ok := b[k]; !ok || !reflect.DeepEqual(a[k], v) {
			out = append(out, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func jsonValues(m map[string]any) map[string]any {
	out := map[string]any{}
	if len(m) == 0 {
		return out
	}
	data, err := json.Marshal(m)
	if err != nil {
		return m
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return m
	}
	return out
}
