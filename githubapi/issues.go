package githubapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v60/github"
)

// Issue is an issue of ours: one the client's own user opened, whose body
// starts with a Marker.
type Issue struct {
	Number      int
	Title, Body string
	// State is open or closed.
	State string
	URL   string
	// Key is the marker's, as Marker wrote it.
	Key string
}

// MaxIssueBodyLength is the most characters GitHub takes in an issue's
// body; a longer one is refused with 422.
const MaxIssueBodyLength = 65536

// MarkedIssues lists the issues, open and closed, labelled label that the
// client's own user opened with a marker. Anyone who may label an issue
// can start one with our marker; a stranger's is never edited or closed.
// Pull requests, which GitHub lists among issues, are left out.
func (c *Client) MarkedIssues(ctx context.Context, label string) ([]Issue, error) {
	if c.self == nil {
		return nil, fmt.Errorf("issues labelled %q: the client does not know its own login", label)
	}
	self, err := c.self(ctx)
	if err != nil {
		return nil, fmt.Errorf("issues labelled %q: own login: %w", label, err)
	}
	var out []Issue
	err = eachPage(100, func(lo github.ListOptions) (*github.Response, bool, error) {
		is, resp, err := c.gh.Issues.ListByRepo(ctx, c.owner, c.repo, &github.IssueListByRepoOptions{
			State: "all", Labels: []string{label}, ListOptions: lo,
		})
		if err != nil {
			return nil, false, fmt.Errorf("list issues labelled %q: %w", label, err)
		}
		for _, is := range is {
			if is.IsPullRequest() || !strings.EqualFold(is.GetUser().GetLogin(), self) {
				continue
			}
			if key, part, ok := parseMarker(is.GetBody()); ok && part == 1 {
				out = append(out, issueOf(is, key))
			}
		}
		return resp, false, nil
	})
	return out, err
}

func issueOf(is *github.Issue, key string) Issue {
	return Issue{Number: is.GetNumber(), Title: is.GetTitle(), Body: is.GetBody(), State: is.GetState(), URL: is.GetHTMLURL(), Key: key}
}

// CreateIssue opens an issue with labels; body must start with its
// Marker.
func (c *Client) CreateIssue(ctx context.Context, title, body string, labels []string) (Issue, error) {
	key, _, ok := parseMarker(body)
	if !ok {
		return Issue{}, fmt.Errorf("issue %q: the body does not start with a marker", title)
	}
	req := &github.IssueRequest{Title: &title, Body: &body}
	if labels != nil {
		// GitHub refuses "labels": null; no labels is no field.
		req.Labels = &labels
	}
	is, _, err := c.gh.Issues.Create(ctx, c.owner, c.repo, req)
	if err != nil {
		return Issue{}, fmt.Errorf("open issue %q: %w", title, err)
	}
	return issueOf(is, key), nil
}

// IssueEdit is what EditIssue changes; an empty field is left as it is.
type IssueEdit struct {
	Title, Body string
	// State is open or closed; StateReason is GitHub's (completed,
	// not_planned, reopened).
	State, StateReason string
}

// EditIssue changes an issue. An issue deleted meanwhile is an error
// saying so (ErrIssueGone).
func (c *Client) EditIssue(ctx context.Context, number int, e IssueEdit) (Issue, error) {
	req := &github.IssueRequest{}
	if e.Title != "" {
		req.Title = &e.Title
	}
	if e.Body != "" {
		req.Body = &e.Body
	}
	if e.State != "" {
		req.State = &e.State
	}
	if e.StateReason != "" {
		req.StateReason = &e.StateReason
	}
	is, resp, err := c.gh.Issues.Edit(ctx, c.owner, c.repo, number, req)
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone) {
			return Issue{}, fmt.Errorf("edit issue #%d: %w", number, ErrIssueGone)
		}
		return Issue{}, fmt.Errorf("edit issue #%d: %w", number, err)
	}
	key, _, _ := parseMarker(is.GetBody())
	return issueOf(is, key), nil
}

// ErrIssueGone is an issue deleted or transferred away.
var ErrIssueGone = errors.New("the issue is gone (deleted or transferred)")
