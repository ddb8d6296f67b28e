package main

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/policy"
	"github.com/kusionpr/kusionpr/workflow"
)

// actionPolicies are the rules the run's plans are judged by: the input
// policy's folder as the change's base holds it (a pull request's base
// commit, a merge queue group's base, read through the API: the change
// cannot loosen the rules it is judged by), or as the checkout holds it on
// a push (the commit applied is its own base).
func actionPolicies(ctx context.Context, in func(string) string, gh *githubapi.Client, pr *githubapi.PullRequest, change *workflow.Change, checkout string) (*workflow.Policies, error) {
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
	case change.Base != "":
		src.Ref = change.Base
	}
	p := workflow.LoadPolicies(ctx, src)
	return p, nil
}
