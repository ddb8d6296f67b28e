package main

import (
	"context"
	"regexp"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/policy"
	"github.com/kusionpr/kusionpr/workflow"
)

// actionPolicies are the rules the run's plans are judged by: the input
// policy's folder as the commit the change was made onto holds it (a pull
// request's base branch as it is now, a merge queue group's base, the
// commit before a push, read through the API), never as the change has
// it: a change cannot loosen the rules it is judged by.
func actionPolicies(ctx context.Context, in inputSettings, gh *githubapi.Client, pr *githubapi.PullRequest, change *workflow.Change, checkout, before string) *workflow.Policies {
	// The input's declaration has checked the folder is the repository's.
	dir := in.Policy
	if dir == "" || dir == "none" {
		return nil
	}
	src := workflow.PolicySource{Folder: dir, GitHub: gh, Checkout: checkout, SHA: change.SHA, Packages: in.PolicyPackages}
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
	return workflow.LoadPolicies(ctx, src)
}

// fullSHA is a commit's full name, as events give it.
var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)
