package githubapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v60/github"
	// ghinstallation takes its token options in the go-github it is built on.
	tokenopts "github.com/google/go-github/v88/github"
)

// App authenticates as a GitHub App: a JWT signed with its private key for
// the App's own endpoints, an installation token per installation
// otherwise. Installation tokens are kept and refreshed per installation,
// so runs share them.
type App struct {
	ID         int64
	PrivateKey []byte
	// APIURL is the REST root (GitHub Enterprise Server, tests); empty for api.github.com.
	APIURL string
	// Transport carries the requests (default http.DefaultTransport): the
	// bot counts calls and the rate limit there.
	Transport http.RoundTripper
	// Log gets a line per wait for GitHub's rate limits; nil: none.
	Log *slog.Logger
	// MaxWait bounds one request's waits for rate limits (0:
	// DefaultMaxWait); OnWait hears of each wait.
	MaxWait time.Duration
	OnWait  func(time.Duration)

	mu         sync.Mutex
	transports map[string]*ghinstallation.Transport
	login      string  // the App's bot user, once read
	user       account // and its account, once read (Client.Self)
}

// limits is a new rate-limit transport over the App's base transport.
func (a *App) limits() *Transport {
	return &Transport{Next: a.base(), Log: a.Log, MaxWait: a.MaxWait, OnWait: a.OnWait}
}

func (a *App) maxWait() time.Duration {
	if a.MaxWait > 0 {
		return a.MaxWait
	}
	return DefaultMaxWait
}

func (a *App) base() http.RoundTripper {
	if a.Transport == nil {
		return http.DefaultTransport
	}
	return a.Transport
}

// installation is a client acting as installation id. With repo set, its
// token reaches that one repository of the owner only, whatever else the
// installation reaches: a run for one repository cannot touch another.
func (a *App) installation(id int64, repo string) (*github.Client, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := fmt.Sprintf("%d/%s", id, repo)
	tr := a.transports[key]
	if tr == nil {
		var err error
		// One rate-limit transport per installation token, the token's own
		// requests included: GitHub limits and serializes per token.
		limits := a.limits()
		if tr, err = ghinstallation.New(limits, a.ID, id, a.PrivateKey); err != nil {
			return nil, fmt.Errorf("github app %d: %w", a.ID, err)
		}
		if a.APIURL != "" {
			tr.BaseURL = strings.TrimSuffix(a.APIURL, "/")
		}
		if repo != "" {
			tr.InstallationTokenOptions = &tokenopts.InstallationTokenOptions{Repositories: []string{repo}}
		}
		if a.transports == nil {
			a.transports = map[string]*ghinstallation.Transport{}
		}
		a.transports[key] = tr
	}
	// The timeout leaves room for a request's waits for rate limits.
	return github.NewClient(&http.Client{Transport: tr, Timeout: 2*time.Minute + a.maxWait()}), nil
}

// Installation returns a client for owner/repo acting as the App's
// installation, with a token for that repository only. Its comments are
// the App's bot user's (Login).
func (a *App) Installation(installationID int64, owner, repo string) (*Client, error) {
	gh, err := a.installation(installationID, repo)
	if err != nil {
		return nil, err
	}
	c, err := newClient(gh, a.APIURL, owner, repo)
	if err != nil {
		return nil, err
	}
	c.self, c.me = a.Login, &a.user
	return c, nil
}

// appsClient is a client authenticated as the App itself (its JWT).
func (a *App) appsClient() (*Client, error) {
	tr, err := ghinstallation.NewAppsTransport(a.limits(), a.ID, a.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("github app %d: %w", a.ID, err)
	}
	if a.APIURL != "" {
		tr.BaseURL = strings.TrimSuffix(a.APIURL, "/")
	}
	return newClient(github.NewClient(&http.Client{Transport: tr, Timeout: time.Minute + a.maxWait()}), a.APIURL, "", "")
}

// Login is the user the App's installations write as: its bot user,
// "<slug>[bot]", with the slug GitHub gave the App (GET /app, with the
// App's JWT). It is read once and kept.
func (a *App) Login(ctx context.Context) (string, error) {
	a.mu.Lock()
	login := a.login
	a.mu.Unlock()
	if login != "" {
		return login, nil
	}
	c, err := a.appsClient()
	if err != nil {
		return "", err
	}
	app, _, err := c.gh.Apps.Get(ctx, "")
	if err != nil {
		return "", fmt.Errorf("read github app %d: %w", a.ID, err)
	}
	if app.GetSlug() == "" {
		return "", fmt.Errorf("read github app %d: no slug in GitHub's answer", a.ID)
	}
	login = app.GetSlug() + "[bot]"
	a.mu.Lock()
	a.login = login
	a.mu.Unlock()
	return login, nil
}

// Installations lists the ids of the App's installations.
func (a *App) Installations(ctx context.Context) ([]int64, error) {
	c, err := a.appsClient()
	if err != nil {
		return nil, err
	}
	var ids []int64
	err = eachPage(100, func(lo github.ListOptions) (*github.Response, bool, error) {
		list, resp, err := c.gh.Apps.ListInstallations(ctx, &lo)
		if err != nil {
			return nil, false, fmt.Errorf("list installations of app %d: %w", a.ID, err)
		}
		for _, in := range list {
			ids = append(ids, in.GetID())
		}
		return resp, false, nil
	})
	return ids, err
}

// Repository is a repository an installation reaches, or an event
// happened in.
type Repository struct {
	ID          int64
	Owner, Name string
	// FullName is owner/name as GitHub writes it.
	FullName      string
	DefaultBranch string
}

// Repositories lists the repositories an installation reaches.
func (a *App) Repositories(ctx context.Context, installationID int64) ([]Repository, error) {
	gh, err := a.installation(installationID, "")
	if err != nil {
		return nil, err
	}
	c, err := newClient(gh, a.APIURL, "", "")
	if err != nil {
		return nil, err
	}
	var out []Repository
	err = eachPage(100, func(lo github.ListOptions) (*github.Response, bool, error) {
		list, resp, err := c.gh.Apps.ListRepos(ctx, &lo)
		if err != nil {
			return nil, false, fmt.Errorf("repositories of installation %d: %w", installationID, err)
		}
		for _, r := range list.Repositories {
			out = append(out, Repository{ID: r.GetID(), Owner: r.GetOwner().GetLogin(), Name: r.GetName(), FullName: r.GetFullName(), DefaultBranch: r.GetDefaultBranch()})
		}
		return resp, false, nil
	})
	return out, err
}

// Merged is a merged pull request.
type Merged struct {
	Number   int
	SHA      string // the merge commit
	Base     string // the branch it was merged into
	MergedAt time.Time
	MergedBy string
}

// RecentlyMerged lists the pull requests merged into base (any branch when
// base is "") since the given time, newest first.
func (c *Client) RecentlyMerged(ctx context.Context, base string, since time.Time) ([]Merged, error) {
	var out []Merged
	opts := &github.PullRequestListOptions{State: "closed", Base: base, Sort: "updated", Direction: "desc"}
	err := eachPage(50, func(lo github.ListOptions) (*github.Response, bool, error) {
		opts.ListOptions = lo
		prs, resp, err := c.gh.PullRequests.List(ctx, c.owner, c.repo, opts)
		if err != nil {
			return nil, false, fmt.Errorf("list closed pull requests: %w", err)
		}
		for _, pr := range prs {
			// Sorted by update: a merge since "since" was an update since.
			if pr.GetUpdatedAt().Before(since) {
				return resp, true, nil
			}
			if pr.MergedAt == nil || pr.GetMergedAt().Before(since) {
				continue
			}
			// The list leaves out who merged.
			full, _, err := c.gh.PullRequests.Get(ctx, c.owner, c.repo, pr.GetNumber())
			if err != nil {
				return nil, false, fmt.Errorf("read pull request #%d: %w", pr.GetNumber(), err)
			}
			out = append(out, Merged{Number: pr.GetNumber(), SHA: full.GetMergeCommitSHA(), Base: full.GetBase().GetRef(), MergedAt: full.GetMergedAt().Time, MergedBy: full.GetMergedBy().GetLogin()})
		}
		return resp, false, nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].MergedAt.After(out[j].MergedAt) })
	return out, nil
}

// Reply comments on an issue or pull request (an answer to a command,
// not a per-stack report).
func (c *Client) Reply(ctx context.Context, issue int, body string) error {
	if _, _, err := c.gh.Issues.CreateComment(ctx, c.owner, c.repo, issue, &github.IssueComment{Body: github.String(body)}); err != nil {
		return fmt.Errorf("comment on #%d: %w", issue, err)
	}
	return nil
}

// React adds a reaction (eyes, +1, -1, rocket, confused) to a comment.
func (c *Client) React(ctx context.Context, commentID int64, content string) error {
	if _, _, err := c.gh.Reactions.CreateIssueCommentReaction(ctx, c.owner, c.repo, commentID, content); err != nil {
		return fmt.Errorf("react %s to comment %d: %w", content, commentID, err)
	}
	return nil
}

// Checkout downloads the repository at ref into dir (GitHub's tarball, its
// top folder stripped), within lim; past a limit the error is an
// *ArchiveLimitError, and on any error dir is left empty.
func (c *Client) Checkout(ctx context.Context, ref, dir string, lim ArchiveLimits) error {
	u, _, err := c.gh.Repositories.GetArchiveLink(ctx, c.owner, c.repo, github.Tarball, &github.RepositoryContentGetOptions{Ref: ref}, 3)
	if err != nil {
		return fmt.Errorf("archive of %s: %w", ref, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	// The pre-signed URL GitHub redirects to needs no credentials.
	resp, err := (&http.Client{Timeout: 10 * time.Minute}).Do(req)
	if err != nil {
		// The URL carries a short-lived download token: keep it out of
		// the error, which may end up in a comment.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("download %s at %s: %w", c.repo, ref, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("download %s at %s: %s", c.repo, ref, resp.Status)
	}
	return untar(resp.Body, dir, lim)
}
