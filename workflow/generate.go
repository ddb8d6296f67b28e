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
// Spec. Module binaries run with opts.ModuleEnv; opts.Logger logs.
func StackSpec(ctx context.Context, st *project.Stack, workspace string, store WorkspaceStore, where string, opts Options) (*model.Spec, *StackWorkspace, error) {
	in, err := st.Input()
	if err != nil {
		return nil, nil, err
	}
	ws, err := ResolveWorkspace(ctx, st, workspace, in == project.SpecInput, store, where, opts.CheckoutRoot)
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
		if opts.KCL == nil {
			return nil, ws, fmt.Errorf("stack %s: %s: KCL is not enabled here", st.Name, filepath.Join(st.Path, project.KCLFile))
		}
		if compiled, err = opts.KCL.Compile(ctx, st); err != nil {
			return nil, ws, err
		}
	}
	g := &generate.Generator{Builtins: builtin.Modules(), ModuleEnv: opts.ModuleEnv, Logger: opts.Logger}
	if opts.KusionHome != "" {
		g.ModuleHome = module.HomeIn(opts.KusionHome)
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
