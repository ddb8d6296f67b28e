package bot

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/policy"
	"github.com/kusionpr/kusionpr/workflow"
)

// operatorPolicies reads the operator's policy folders (KUSIONPR_POLICIES)
// once, at start: they judge every repository's stacks, keyed
// operator/<folder's name>/<path> so that an error names them apart from a
// repository's.
func operatorPolicies(dirs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, dir := range dirs {
		files, err := workflow.ReadPolicyFolder(os.DirFS(dir))
		if err != nil {
			return nil, fmt.Errorf("KUSIONPR_POLICIES: %s: %w", dir, err)
		}
		for name, body := range files {
			out[path.Join("operator", filepath.Base(dir), name)] = body
		}
	}
	return out, nil
}

// policies are the rules the command's stacks are judged by: the
// repository's policy folder as the commit the change was made onto holds
// it (a pull request's base branch now, a merge queue group's base, the
// commit a merge was made onto: never the change's own), and the
// operator's, sealed from it.
func (b *Bot) policies(ctx context.Context, c *command, cmd workflow.Command) *workflow.Policies {
	src := workflow.PolicySource{Checkout: c.dir, SHA: c.ref, Operator: b.operatorRules, Packages: b.cfg.PolicyPackages}
	if b.cfg.PolicyDir != "none" {
		src.Folder = b.cfg.PolicyDir
	}
	if pr, ok := c.gh.(workflow.PolicyReader); ok {
		src.GitHub = pr
	}
	switch {
	case c.j.queueBase != "":
		src.Base, src.BaseWhat = c.j.queueBase, "the merge group's base"
	case c.j.afterMerge:
		src.Merge = &workflow.MergedChange{SHA: c.ref}
		if c.pr != nil {
			src.Merge.Head, src.Merge.Commits = c.pr.HeadSHA, c.pr.Commits
		}
	case c.pr != nil:
		src.PullRequest = &policy.PullRequest{Number: c.pr.Number, Author: c.pr.Author, Base: c.pr.BaseSHA, Head: c.ref}
		src.BaseBranch = c.pr.BaseRef
	}
	p := workflow.LoadPolicies(ctx, src)
	if p == nil {
		return nil
	}
	if cmd == workflow.Apply {
		p.Overrides = c.j.command.OverridePolicy
	}
	return p
}

// mayOverride is the authorisation of /kusion apply --override-policy:
// the permission KUSIONPR_POLICY_OVERRIDE names (admin by default).
func (b *Bot) mayOverride(ctx context.Context, c *command) bool {
	rules := c.j.command.OverridePolicy
	if len(rules) == 0 {
		return true
	}
	level := b.cfg.PolicyOverride
	if level == "none" {
		c.refuse(ctx, "this bot lets no one override a policy (KUSIONPR_POLICY_OVERRIDE=none)")
		return false
	}
	access, err := c.gh.Permission(ctx, c.j.actor)
	if err != nil {
		c.refuseErr(ctx, "the permission check failed", err)
		return false
	}
	if !access.AtLeast(level) {
		c.refuse(ctx, fmt.Sprintf("%s needs %s permission on the repository; @%s has %s",
			mdsafe.Code("--override-policy"), mdsafe.Plain(level), c.j.actor, mdsafe.Plain(access.String())))
		return false
	}
	return true
}
