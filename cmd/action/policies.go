package main

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/policy"
	"github.com/kusionpr/kusionpr/workflow"
)

// actionPolicies are the rules the run's plans are judged by: the input
// policy's folder as the commit the change was made onto holds it (a pull
// request's base branch as it is now, a merge queue group's base, the
// commit before a push, read through the API), never as the change has
// it: a change cannot loosen the rules it is judged by.
func actionPolicies(ctx context.Context, in func(string) string, gh *githubapi.Client, pr *githubapi.PullRequest, change *workflow.Change, checkout, before string) (*workflow.Policies, error) {
	dir := strings.Trim(in("policy"), "/")
	if dir == "" || dir == "none" {
		return nil, nil
	}
	if path.IsAbs(dir) || path.Clean(dir) != dir || dir == ".." || strings.HasPrefix(dir, "../") {
		return nil, fmt.Errorf("input policy: %q is not a folder inside the repository (or none)", in("policy"))
	}
	src := workflow.PolicySource{Folder: dir, GitHub: gh, Checkout: checkout, SHA: change.SHA, Packages: list(in("policy-packages"))}
	switch {
	case pr != nil:
		src.PullRequest = &policy.PullRequest{Number: pr.Number, Author: pr.Author, Base: pr.BaseSHA, Head: pr.HeadSHA}
		src.BaseBranch = pr.BaseRef
	case change.Base != "":
		src.Base, src.BaseWhat = change.Base, "the merge group's base"
	case before != "":
		src.Base, src.BaseWhat = before, "the commit before the push"
	default:
		// A push that made its branch: the commit it was made onto is
		// its first parent.
		src.Merge = &workflow.MergedChange{SHA: change.SHA}
	}
	return workflow.LoadPolicies(ctx, src), nil
}

// fullSHA is a commit's full name, as events give it.
var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)
