package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"
)

// Kusion v0.15 keeps its workspaces beside the releases, in the same bucket
// and under the same prefix (pkg/workspace/storages: the local folder's
// <path>/workspaces, an object store's <prefix>/workspaces):
//
//	<prefix>/workspaces/<name>.yaml       (yaml.v3 of its Workspace type)
//	<prefix>/workspaces/.metadata.yml     (current, availableWorkspaces)
//
// They are read here and never written: a workspace is the operator's,
// made with `kusion workspace create` or `update`, and reading one (a
// preview) must leave the store as it was.
const (
	workspacesDir         = "workspaces"
	workspaceMetadataName = ".metadata.yml"
	workspaceExt          = ".yaml"
	// maxWorkspaceBytes bounds one read of a workspace file or of the
	// workspaces' metadata: a workspace is a few kilobytes of settings.
	maxWorkspaceBytes = 4 << 20
)

// ErrWorkspaceNotFound is wrapped by ReadWorkspace's error when the store
// holds no file for the workspace.
var ErrWorkspaceNotFound = errors.New("workspace not in the store")

// workspacesMetadata is Kusion's workspaces/.metadata.yml, read with
// gopkg.in/yaml.v3 as Kusion does.
type workspacesMetadata struct {
	Current             string   `yaml:"current,omitempty"`
	AvailableWorkspaces []string `yaml:"availableWorkspaces,omitempty"`
}

// WorkspaceKey is the key of workspace name's file, for messages.
func (s *Store) WorkspaceKey(name string) string {
	return s.prefix + workspacesDir + "/" + name + workspaceExt
}

// WorkspacesMetadataKey is the key of the file listing the workspaces.
func (s *Store) WorkspacesMetadataKey() string {
	return s.prefix + workspacesDir + "/" + workspaceMetadataName
}

// WorkspaceNames lists the workspaces the store holds: those its
// workspaces/.metadata.yml lists, as Kusion counts them (a file the
// metadata does not list is not a workspace). A store without the file
// holds none; one whose file does not parse is an error naming its key.
func (s *Store) WorkspaceNames(ctx context.Context) ([]string, error) {
	key := s.WorkspacesMetadataKey()
	data, err := s.readObject(ctx, key, maxWorkspaceBytes, "workspaces metadata")
	if errors.Is(err, errObjectMissing) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read workspaces metadata %s: %w", key, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		// Kusion's object stores read an empty file as no workspaces.
		return nil, nil
	}
	var meta workspacesMetadata
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return nil, fmt.Errorf("decode workspaces metadata %s: %w", key, err)
	}
	var names []string
	for _, n := range meta.AvailableWorkspaces {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names, nil
}

// ReadWorkspace returns the document of workspace name's file as stored.
// It does not ask the metadata (see WorkspaceNames); a missing file gives
// an error wrapping ErrWorkspaceNotFound.
func (s *Store) ReadWorkspace(ctx context.Context, name string) ([]byte, error) {
	if err := validName("workspace", name); err != nil {
		return nil, fmt.Errorf("read workspace: %w", err)
	}
	key := s.WorkspaceKey(name)
	data, err := s.readObject(ctx, key, maxWorkspaceBytes, "workspace")
	if errors.Is(err, errObjectMissing) {
		return nil, fmt.Errorf("read workspace %s: %w", key, ErrWorkspaceNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read workspace %s: %w", key, err)
	}
	return data, nil
}

// HasWorkspaceFile says whether workspace name has a file in the store,
// listed or not: for messages about a file the metadata leaves out.
func (s *Store) HasWorkspaceFile(ctx context.Context, name string) (bool, error) {
	if err := validName("workspace", name); err != nil {
		return false, fmt.Errorf("probe workspace: %w", err)
	}
	ok, err := s.obj.exists(ctx, s.WorkspaceKey(name))
	if err != nil {
		return false, fmt.Errorf("probe workspace %s: %w", s.WorkspaceKey(name), err)
	}
	return ok, nil
}
