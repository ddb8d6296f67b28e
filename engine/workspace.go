package engine

// Where a stack's workspace came from (WorkspaceOrigin.Source).
const (
	// WorkspaceFromStore: the release store's workspaces/<name>.yaml,
	// listed in its workspaces/.metadata.yml, as Kusion keeps them: the
	// operator's, made with `kusion workspace create` or `update`.
	WorkspaceFromStore = "store"
	// WorkspaceFromRepository: a workspaces/<name>.yaml of the repository,
	// as the change under review has it.
	WorkspaceFromRepository = "repository"
	// WorkspaceFromDefault: the default workspace exists nowhere, and an
	// empty one stands for it, as Kusion's backends create it.
	WorkspaceFromDefault = "empty default"
	// WorkspaceFromNowhere: the stack's spec is ready (spec.yaml) and no
	// workspace of that name exists; the name only files its releases.
	WorkspaceFromNowhere = "none"
)

// WorkspaceOrigin says where a stack's workspace came from and what a
// reader of its preview must know of it. Values are the repository's and
// the store's: renderers escape them.
type WorkspaceOrigin struct {
	// Source is one of the WorkspaceFrom constants.
	Source string `json:"source"`
	// File is where the workspace was read: the store's location and key,
	// or the repository file, relative to the checkout.
	File string `json:"file,omitempty"`
	// Unused is the repository file of the same name that was not used,
	// because the store holds the workspace: the store's copy is the
	// operator's, a repository file can be anyone's pull request.
	Unused string `json:"unused,omitempty"`
	// Edited are this workspace's repository files the change under review
	// edits (the one used, or the one not used).
	Edited []string `json:"edited,omitempty"`
	// StoreHasStack names the store's workspace named after the stack,
	// when the stack runs with another one without naming it: the name
	// comes from the repository (stack.yaml's workspace), so a Kusion
	// user's stack dev does not take the store's dev by itself.
	StoreHasStack string `json:"storeHasStack,omitempty"`
	// ContextDiffers, for a ready spec, are the keys of its context that
	// differ from the workspace's (kusion generate copies the workspace's
	// context into the Spec): a spec generated with another workspace, or
	// before this one changed. Keys only: a value may be a secret.
	ContextDiffers []string `json:"contextDiffers,omitempty"`
}
