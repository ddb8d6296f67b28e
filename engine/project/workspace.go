package project

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// WorkspacesDir is the folder that holds workspace files, one per workspace
// (<name>.yaml), in a project folder or any folder above it.
const WorkspacesDir = "workspaces"

// DefaultWorkspace is Kusion's default workspace name.
const DefaultWorkspace = "default"

// ErrNoWorkspaceFile is wrapped by WorkspaceFile's error when no folder
// holds a file for the workspace.
var ErrNoWorkspaceFile = errors.New("no file for it")

// workspaceName is what Kusion accepts as a workspace name; it also keeps a
// name from a flag or stack.yaml from steering the file lookup elsewhere.
var workspaceName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$`)

// WorkspaceName is the workspace the stack is generated and released with:
// explicit if given (a flag, an input), else stack.yaml's workspace, else
// the stack's own name when a workspace file of that name exists (stacks
// dev and prod with workspaces dev and prod, as Kusion's examples lay them
// out), else "default".
func (s *Stack) WorkspaceName(explicit string) string {
	switch {
	case explicit != "":
		return explicit
	case s.Workspace != "":
		return s.Workspace
	}
	if _, _, err := s.WorkspaceFile(s.Name); err == nil {
		return s.Name
	}
	return DefaultWorkspace
}

// WorkspaceFile finds the file of workspace name: workspaces/<name>.yaml
// (or .yml) in the project folder, else in the nearest folder above it up
// to the checkout's root (Stack.Root), or without one the repository root
// (the folder holding .git). tried lists where it looked (the .yaml
// names), for the message when nothing is found.
func (s *Stack) WorkspaceFile(name string) (path string, tried []string, err error) {
	if !workspaceName.MatchString(name) {
		return "", nil, fmt.Errorf("workspace name %q: want letters, digits, '-', '_' or '.', starting and ending with a letter or digit", name)
	}
	start := s.Path
	if s.Project != nil {
		start = s.Project.Path
	}
	for dir := range upTo(s.Root, start) {
		tried = append(tried, filepath.Join(dir, WorkspacesDir, name+".yaml"))
		for _, ext := range []string{".yaml", ".yml"} {
			p := filepath.Join(dir, WorkspacesDir, name+ext)
			ok, err := present(s.Root, p)
			if err != nil {
				return "", tried, fmt.Errorf("workspace %s: %w", name, err)
			}
			if info, serr := os.Stat(p); ok && serr == nil && !info.IsDir() {
				return p, tried, nil
			}
		}
		if s.Root == "" && isRepositoryRoot(dir) {
			break
		}
	}
	return "", tried, fmt.Errorf("workspace %s: %w (looked for %s)", name, ErrNoWorkspaceFile, strings.Join(tried, ", "))
}

func isRepositoryRoot(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ".git"))
	return err == nil
}
