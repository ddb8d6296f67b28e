package generate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/model"
)

// Stack generates the Spec of a stack folder holding main.yaml, with the
// named workspace's file in the repository (project.Stack.WorkspaceFile),
// or, for the default workspace without one, an empty workspace, as
// Kusion's backends give. Where workspaces may also come from the release
// store, resolve the workspace first and call StackWith.
func (g *Generator) Stack(ctx context.Context, st *project.Stack, workspace string) (*model.Spec, error) {
	appFile := filepath.Join(st.Path, project.AppFile)
	wsFile, _, err := st.WorkspaceFile(workspace)
	var ws *Workspace
	switch {
	case errors.Is(err, project.ErrNoWorkspaceFile) && workspace == project.DefaultWorkspace:
		ws = EmptyWorkspace(workspace)
	case err != nil:
		return nil, fmt.Errorf("%s: generating needs a workspace: %w", appFile, err)
	default:
		if ws, err = LoadWorkspace(wsFile); err != nil {
			return nil, err
		}
	}
	return g.StackWith(ctx, st, ws)
}

// EmptyWorkspace is a workspace with nothing in it: what Kusion's backends
// create as "default" by themselves, so that a stack needing no platform
// settings generates without one.
func EmptyWorkspace(name string) *Workspace {
	return &Workspace{Name: name, Path: "the empty workspace " + name, Modules: map[string]*ModuleConfig{}}
}

// StackWith generates the Spec of a stack folder holding main.yaml with
// the workspace ws.
func (g *Generator) StackWith(ctx context.Context, st *project.Stack, ws *Workspace) (*model.Spec, error) {
	appFile := filepath.Join(st.Path, project.AppFile)
	apps, err := LoadApps(appFile)
	if err != nil {
		return nil, err
	}
	return g.stackApps(ctx, st, ws, appFile, apps)
}

// StackCompiled generates the Spec of a stack from AppConfigurations its
// main.k compiled to (data, YAML), with the workspace ws; file, the
// main.k, is what messages name.
func (g *Generator) StackCompiled(ctx context.Context, st *project.Stack, ws *Workspace, file string, data []byte) (*model.Spec, error) {
	apps, err := ParseApps(file, data)
	if err != nil {
		return nil, err
	}
	return g.stackApps(ctx, st, ws, file, apps)
}

func (g *Generator) stackApps(ctx context.Context, st *project.Stack, ws *Workspace, appFile string, apps []App) (*model.Spec, error) {
	ns, err := namespaceOf(st)
	if err != nil {
		return nil, err
	}
	return g.Generate(ctx, Input{
		Project: st.Project.Name, Stack: st.Name, Namespace: ns,
		AppFile: appFile, Apps: apps, Workspace: ws,
	})
}

// namespaceOf is the namespace a stack's apps live in: the first
// kubernetesNamespace extension, the stack's before the project's, else
// the project's name, as Kusion decides it.
func namespaceOf(st *project.Stack) (string, error) {
	for _, src := range []struct {
		file string
		ext  []map[string]any
	}{
		{filepath.Join(st.Path, project.StackFile), st.Extensions},
		{filepath.Join(st.Project.Path, project.ProjectFile), st.Project.Extensions},
	} {
		for i, e := range src.ext {
			if e["kind"] != "kubernetesNamespace" {
				continue
			}
			spec, _ := e["kubernetesNamespace"].(map[string]any)
			ns, _ := spec["namespace"].(string)
			if ns == "" {
				return "", fmt.Errorf("%s: extensions[%d].kubernetesNamespace.namespace: required: the namespace the stack's apps live in", src.file, i)
			}
			return ns, nil
		}
	}
	return st.Project.Name, nil
}
