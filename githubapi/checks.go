package githubapi

import (
	"context"
	"fmt"

	"github.com/google/go-github/v60/github"
)

// maxCheckText is the most characters GitHub takes in a check run's output
// summary or text.
const maxCheckText = 65535

// Check is the outcome of one stack, shown as a check run on a commit.
type Check struct {
	// Name is what the checks list shows, e.g. "kusion/preview: apps/web/dev".
	Name string
	// Conclusion is success, failure or neutral.
	Conclusion     string
	Title, Summary string
	// DetailsURL points at the comment or the job.
	DetailsURL string
	// Actions are buttons the check run offers (at most 3): pressing one
	// sends the App that made the check run a check_run requested_action.
	Actions []CheckAction
}

// CheckAction is a button of a check run; GitHub takes a label and an
// identifier of at most 20 characters and a description of at most 40.
type CheckAction struct {
	Label, Description, Identifier string
}

// SetCheck records a completed check run on sha.
func (c *Client) SetCheck(ctx context.Context, sha string, ck Check) error {
	summary := ck.Summary
	if r := []rune(summary); len(r) > maxCheckText {
		summary = string(r[:maxCheckText-1]) + "…"
	}
	opts := github.CreateCheckRunOptions{
		Name:       ck.Name,
		HeadSHA:    sha,
		Status:     github.String("completed"),
		Conclusion: github.String(ck.Conclusion),
		Output:     &github.CheckRunOutput{Title: github.String(ck.Title), Summary: github.String(summary)},
	}
	if ck.DetailsURL != "" {
		opts.DetailsURL = github.String(ck.DetailsURL)
	}
	for _, a := range ck.Actions {
		opts.Actions = append(opts.Actions, &github.CheckRunAction{Label: a.Label, Description: a.Description, Identifier: a.Identifier})
	}
	if _, _, err := c.gh.Checks.CreateCheckRun(ctx, c.owner, c.repo, opts); err != nil {
		return fmt.Errorf("check run %q on %s: %w", ck.Name, sha, err)
	}
	return nil
}

// CheckRunState is where a check run stands: Status is queued,
// in_progress or completed, Conclusion set once completed; both empty
// when there is no such check run.
type CheckRunState struct {
	Status, Conclusion, Title string
}

// CheckRunOf is the latest check run named name on sha made by the App
// appID: only that App's check runs count, as anyone who may write checks
// can make one of the same name.
func (c *Client) CheckRunOf(ctx context.Context, sha, name string, appID int64) (CheckRunState, error) {
	res, _, err := c.gh.Checks.ListCheckRunsForRef(ctx, c.owner, c.repo, sha, &github.ListCheckRunsOptions{
		CheckName: github.String(name), AppID: github.Int64(appID), Filter: github.String("latest"),
		ListOptions: github.ListOptions{PerPage: 10},
	})
	if err != nil {
		return CheckRunState{}, fmt.Errorf("check run %q of %s: %w", name, sha, err)
	}
	for _, cr := range res.CheckRuns {
		if cr.GetName() == name && cr.GetApp().GetID() == appID {
			return CheckRunState{Status: cr.GetStatus(), Conclusion: cr.GetConclusion(), Title: cr.GetOutput().GetTitle()}, nil
		}
	}
	return CheckRunState{}, nil
}
