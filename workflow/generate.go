package workflow

import (
	"context"

	"github.com/kusionpr/kusionpr/engine/generate"
	"github.com/kusionpr/kusionpr/engine/generate/builtin"
	"github.com/kusionpr/kusionpr/engine/generate/module"
	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/model"
)

// StackSpec is the Spec a stack runs with: its ready spec.yaml, or the one
// generated from its main.yaml with workspace. Both the action and the bot
// come through here, so a preview and the apply after it see one Spec.
// Module binaries run with opts.ModuleEnv; opts.Logger logs.
func StackSpec(ctx context.Context, st *project.Stack, workspace string, opts Options) (*model.Spec, error) {
	in, err := st.Input()
	if err != nil {
		return nil, err
	}
	if in == project.SpecInput {
		return st.Spec()
	}
	g := &generate.Generator{Builtins: builtin.Modules(), ModuleEnv: opts.ModuleEnv, Logger: opts.Logger}
	if opts.KusionHome != "" {
		g.ModuleHome = module.HomeIn(opts.KusionHome)
	}
	return g.Stack(ctx, st, workspace)
}
