package githubapi

import (
	"context"
	"fmt"
	"net/http"
)

// Claim marks a comment as taken by this App, with its "eyes" reaction,
// and reports whether this call was the one that took it. GitHub answers
// 201 when the reaction is new and 200 when this App's user had already
// left it: one reaction per user and content, kept by GitHub, is a
// create-only write shared by every replica and every restart, so a
// comment's command is taken once whatever delivered it (a redelivery, a
// signed body replayed under another delivery id, a second replica).
func (c *Client) Claim(ctx context.Context, commentID int64) (bool, error) {
	_, resp, err := c.gh.Reactions.CreateIssueCommentReaction(ctx, c.owner, c.repo, commentID, "eyes")
	if err != nil {
		return false, fmt.Errorf("react eyes to comment %d: %w", commentID, err)
	}
	switch resp.StatusCode {
	case http.StatusCreated:
		return true, nil
	case http.StatusOK:
		return false, nil
	}
	return false, fmt.Errorf("react eyes to comment %d: GitHub answered %s, neither created nor already there", commentID, resp.Status)
}
