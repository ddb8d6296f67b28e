package githubapi

import (
	"context"
	"fmt"

	"github.com/google/go-github/v60/github"
)

// maxDeploymentDescription is the most characters GitHub takes in a
// deployment's or a deployment status's description.
const maxDeploymentDescription = 140

func shortDescription(s string) string {
	if r := []rune(s); len(r) > maxDeploymentDescription {
		return string(r[:maxDeploymentDescription-1]) + "…"
	}
	return s
}

// CreateDeployment records a deployment of the commit sha to environment
// and returns its id. It never merges the default branch into sha and
// asks for no status checks first: the apply it stands for has run its
// own gates.
func (c *Client) CreateDeployment(ctx context.Context, sha, environment, description string) (int64, error) {
	d, _, err := c.gh.Repositories.CreateDeployment(ctx, c.owner, c.repo, &github.DeploymentRequest{
		Ref: github.String(sha), Environment: github.String(environment), Description: github.String(shortDescription(description)),
		AutoMerge: github.Bool(false), RequiredContexts: &[]string{}, Task: github.String("deploy"),
	})
	if err != nil {
		return 0, fmt.Errorf("create the deployment of %s to %s: %w", sha, environment, err)
	}
	return d.GetID(), nil
}

// SetDeploymentStatus records where deployment id is: in_progress,
// success, failure, error or inactive. logURL points at its report.
func (c *Client) SetDeploymentStatus(ctx context.Context, id int64, state, description, logURL string) error {
	req := &github.DeploymentStatusRequest{State: github.String(state), Description: github.String(shortDescription(description))}
	if logURL != "" {
		req.LogURL = github.String(logURL)
	}
	if _, _, err := c.gh.Repositories.CreateDeploymentStatus(ctx, c.owner, c.repo, id, req); err != nil {
		return fmt.Errorf("set deployment %d %s: %w", id, state, err)
	}
	return nil
}
