package workflow

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/kusionpr/kusionpr/engine/generate"
	"github.com/kusionpr/kusionpr/engine/generate/builtin"
	"github.com/kusionpr/kusionpr/engine/generate/module"
	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/model"
)

// StackSpec is the Spec a stack runs with, and the workspace it runs
// with (ResolveWorkspace: the release store's, the repository's, or an
// empty default): its ready spec.yaml, or the one generated from its
// main.yaml with that workspace. store may be nil (the repository's
// workspaces only); where names it in messages. Both the action and the
// bot come through here, so a preview and the apply after it see one
// Spec. The workspace is the request's (or the stack's own), the checkout
// its Root; module binaries run with the runner's ModuleEnv.
func (r *Runner) StackSpec(ctx context.Context, req Request, st *project.Stack, store WorkspaceStore, where string) (*model.Spec, *StackWorkspace, error) {
	in, err := st.Input()
	if err != nil {
		return nil, nil, err
	}
	ws, err := ResolveWorkspace(ctx, st, st.WorkspaceName(req.Workspace), in == project.SpecInput, store, where, req.Root)
	if err != nil {
		return nil, nil, err
	}
	if in == project.SpecInput {
		s, err := st.Spec()
		if err != nil {
			return nil, ws, err
		}
		if ws.Workspace != nil {
			ws.Origin.ContextDiffers = contextDiffers(s.Context, ws.Workspace.Context)
		}
		return s, ws, nil
	}
	var compiled []byte
	if in == project.KCLInput {
		if r.KCL == nil {
			return nil, ws, fmt.Errorf("stack %s: %s: KCL is not enabled here", st.Name, filepath.Join(st.Path, project.KCLFile))
		}
		if compiled, err = r.KCL.Compile(ctx, st); err != nil {
			return nil, ws, err
		}
	}
	g := &generate.Generator{Builtins: builtin.Modules(), ModuleEnv: r.ModuleEnv, Logger: r.log(req)}
	if r.Store.KusionHome != "" {
		g.ModuleHome = module.HomeIn(r.Store.KusionHome)
	}
	if in == project.KCLInput {
		s, err := g.StackCompiled(ctx, st, ws.Workspace, filepath.Join(st.Path, project.KCLFile), compiled)
		return s, ws, err
	}
	s, err := g.StackWith(ctx, st, ws.Workspace)
	return s, ws, err
}

// KCLCompiler compiles a stack's main.k, with its kcl.mod, to its
// AppConfigurations in YAML, as Kusion runs KCL.
type KCLCompiler interface {
	Compile(ctx context.Context, st *project.Stack) ([]byte, error)
}
