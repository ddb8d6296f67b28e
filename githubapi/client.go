// Package githubapi is what the pull-request workflow asks of GitHub: the
// files a pull request changes, the pull requests of a commit, comments kept
// one per stack and edited in place, and check runs. It wraps go-github.
package githubapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/google/go-github/v60/github"
)

// Client talks to one repository.
type Client struct {
	gh          *github.Client
	owner, repo string
	// self is the login the client writes comments as: only comments of
	// this user are ours to edit, mark outdated or delete.
	self func(context.Context) (string, error)
	// me keeps the account self names, read once (Self); an App's clients
	// share their App's.
	me *account

	commentsMu sync.Mutex
	// listed are the client's marker comments per issue (ours).
	listed map[int][]comment
}

// ActionsLogin is the user GitHub Actions' GITHUB_TOKEN acts as: the token
// is an installation token of GitHub's "GitHub Actions" App, whose bot
// user is github-actions[bot].
const ActionsLogin = "github-actions[bot]"

// New returns a client for owner/repo with token. apiURL is the REST API
// root (https://api.github.com/ or a GitHub Enterprise one); empty means
// api.github.com. Its comments are taken to be ActionsLogin's, the user of a
// workflow's GITHUB_TOKEN; WriteAs names another.
func New(token, apiURL, owner, repo string, hc *http.Client) (*Client, error) {
	if token == "" {
		return nil, errors.New("github: no token: set the action's github-token input (default the workflow's GITHUB_TOKEN)")
	}
	c, err := newClient(github.NewClient(hc).WithAuthToken(token), apiURL, owner, repo)
	if err != nil {
		return nil, err
	}
	c.WriteAs(ActionsLogin)
	return c, nil
}

// WriteAs names the user the client's token writes comments as (a personal
// access token's owner, "<slug>[bot]" for another App's token): comments of
// other users are never edited, marked outdated or deleted.
func (c *Client) WriteAs(login string) {
	c.self = func(context.Context) (string, error) { return login, nil }
	c.me = &account{}
}

// account is a user read once by its login.
type account struct {
	mu sync.Mutex
	u  User
}

// Self is the account the client's token acts as: the user it writes
// comments as (WriteAs; an App's bot user, "<slug>[bot]"), with the id
// GitHub gives that login, read once. What a user started is told by id
// as well as login: a login can be renamed and taken by someone else.
func (c *Client) Self(ctx context.Context) (User, error) {
	if c.self == nil || c.me == nil {
		return User{}, errors.New("own account: the client does not know its own login")
	}
	login, err := c.self(ctx)
	if err != nil {
		return User{}, fmt.Errorf("own account: %w", err)
	}
	c.me.mu.Lock()
	defer c.me.mu.Unlock()
	if c.me.u.ID != 0 && strings.EqualFold(c.me.u.Login, login) {
		return c.me.u, nil
	}
	// A bot's login holds brackets: escaped, as a path segment.
	u, _, err := c.gh.Users.Get(ctx, url.PathEscape(login))
	if err != nil {
		return User{}, fmt.Errorf("own account: read user %s: %w", login, err)
	}
	if !strings.EqualFold(u.GetLogin(), login) || u.GetID() == 0 {
		return User{}, fmt.Errorf("own account: GitHub answered user %q (id %d) for %s", u.GetLogin(), u.GetID(), login)
	}
	c.me.u = User{Login: u.GetLogin(), ID: u.GetID()}
	return c.me.u, nil
}

func newClient(gh *github.Client, apiURL, owner, repo string) (*Client, error) {
	if apiURL != "" {
		// The URL as given (GITHUB_API_URL: api.github.com, or a GitHub
		// Enterprise server's .../api/v3).
		u, err := url.Parse(strings.TrimSuffix(apiURL, "/") + "/")
		if err != nil {
			return nil, fmt.Errorf("github: api url %q: %w", apiURL, err)
		}
		gh.BaseURL = u
	}
	return &Client{gh: gh, owner: owner, repo: repo}, nil
}

// File is one file a pull request changes.
type File struct {
	Path, Status, PreviousPath string
}

// PullRequestFiles lists every file the pull request changes, page by page
// (GitHub lists at most 3,000).
func (c *Client) PullRequestFiles(ctx context.Context, number int) ([]File, error) {
	var out []File
	err := eachPage(100, func(lo github.ListOptions) (*github.Response, bool, error) {
		files, resp, err := c.gh.PullRequests.ListFiles(ctx, c.owner, c.repo, number, &lo)
		if err != nil {
			return nil, false, fmt.Errorf("list files of pull request #%d: %w", number, err)
		}
		for _, f := range files {
			out = append(out, File{Path: f.GetFilename(), Status: f.GetStatus(), PreviousPath: f.GetPreviousFilename()})
		}
		return resp, false, nil
	})
	return out, err
}

// PullRequest reads one pull request.
func (c *Client) PullRequest(ctx context.Context, number int) (*PullRequest, error) {
	pr, _, err := c.gh.PullRequests.Get(ctx, c.owner, c.repo, number)
	if err != nil {
		return nil, fmt.Errorf("read pull request #%d: %w", number, err)
	}
	out := pullRequestOf(pr)
	return &out, nil
}

// PullRequestsOfCommit lists the pull requests a commit belongs to (the one
// merged into the default branch among them).
func (c *Client) PullRequestsOfCommit(ctx context.Context, sha string) ([]int, error) {
	prs, _, err := c.gh.PullRequests.ListPullRequestsWithCommit(ctx, c.owner, c.repo, sha, &github.ListOptions{PerPage: 100})
	if err != nil {
		return nil, fmt.Errorf("pull requests of commit %s: %w", sha, err)
	}
	out := make([]int, 0, len(prs))
	for _, pr := range prs {
		out = append(out, pr.GetNumber())
	}
	return out, nil
}
