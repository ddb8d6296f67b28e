package workflow

import (
	"fmt"
	"path"
	"strings"

	"github.com/kusionpr/kusionpr/internal/mdsafe"
)

// DefaultBranchToken in an apply-branch list stands for each repository's
// own default branch, whatever its name.
const DefaultBranchToken = "@default"

// AppliesFrom reports whether what merges into branch is applied: branch
// is the repository's default branch (defaultBranch) when patterns is
// empty, else one patterns names (a name, a glob such as release/*, or
// @default). One rule for the bot and the action: a pull request into any
// other branch, whose rules and protection a writer may set at will, is
// previewed, never applied.
func AppliesFrom(branch, defaultBranch string, patterns []string) bool {
	if branch == "" {
		return false
	}
	if len(patterns) == 0 {
		return branch == defaultBranch
	}
	for _, p := range patterns {
		if p == DefaultBranchToken {
			if branch == defaultBranch {
				return true
			}
			continue
		}
		if ok, err := path.Match(p, branch); err == nil && ok {
			return true
		}
	}
	return false
}

// CheckApplyBranches checks a list of apply branches (names, globs or
// @default), naming setting in the error.
func CheckApplyBranches(setting string, patterns []string) error {
	for _, p := range patterns {
		if p == DefaultBranchToken {
			continue
		}
		if _, err := path.Match(p, ""); err != nil || p == "" || strings.ContainsAny(p, " \t~^:\\") {
			return fmt.Errorf("%s: %q is not a branch name or pattern (such as main, release/* or %s)", setting, p, DefaultBranchToken)
		}
	}
	return nil
}

// ApplyBranchesText names the branches that apply, as Markdown code.
func ApplyBranchesText(defaultBranch string, patterns []string) string {
	if len(patterns) == 0 {
		return mdsafe.Code(defaultBranch)
	}
	named := make([]string, len(patterns))
	for i, p := range patterns {
		if p == DefaultBranchToken {
			p = defaultBranch
		}
		named[i] = mdsafe.Code(p)
	}
	return strings.Join(named, ", ")
}
