package githubapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Access is a user's permission on the repository, as GitHub's
// "get repository permissions for a user" answers it.
type Access struct {
	// Permission is the legacy base role: admin, write, read or none.
	// GitHub maps maintain to write and triage to read, and a custom
	// role to the base role it extends.
	Permission string
	// Role is role_name: admin, maintain, write, triage, read, a custom
	// role's name, or none for a user who is no collaborator.
	Role string
}

// CanWrite: the user may push to the repository (write, maintain, admin,
// or a custom role extending them).
func (a Access) CanWrite() bool { return a.Permission == "admin" || a.Permission == "write" }

// AtLeast reports whether the access reaches level: admin, maintain or
// write. A custom role counts as the base role it extends, as GitHub maps
// it, so only GitHub's own maintain role is maintain.
func (a Access) AtLeast(level string) bool {
	switch level {
	case "admin":
		return a.Permission == "admin"
	case "maintain":
		return a.Permission == "admin" || (a.Permission == "write" && a.Role == "maintain")
	case "write":
		return a.CanWrite()
	}
	return false
}

// String names the role as GitHub shows it.
func (a Access) String() string {
	if a.Role != "" {
		return a.Role
	}
	return a.Permission
}

// Permission reads the user's permission on the repository; a user who is
// no collaborator (GitHub answers 404) has none.
func (c *Client) Permission(ctx context.Context, user string) (Access, error) {
	// go-github v60 does not read role_name.
	req, err := c.gh.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/collaborators/%s/permission",
		url.PathEscape(c.owner), url.PathEscape(c.repo), url.PathEscape(user)), nil)
	if err != nil {
		return Access{}, fmt.Errorf("permission of %s: %w", user, err)
	}
	var body struct {
		Permission string `json:"permission"`
		RoleName   string `json:"role_name"`
	}
	resp, err := c.gh.Do(ctx, req, &body)
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return Access{Permission: "none", Role: "none"}, nil
	}
	if err != nil {
		return Access{}, fmt.Errorf("permission of %s: %w", user, err)
	}
	return Access{Permission: body.Permission, Role: body.RoleName}, nil
}

// Approval is a reviewer's standing approval of a pull request: their
// latest review that decides is APPROVED.
type Approval struct {
	User string
	// CommitID is the commit approved; "" when GitHub answers null (the
	// commit left the pull request, as after a force-push).
	CommitID string
	// Access is the reviewer's permission, read only for an approval of
	// the head by someone other than the author.
	Access Access
	// Why is "" for an approval that counts, else why it does not.
	Why string
}

// Approvals lists the standing approvals of the pull request and says
// which count: an approval counts when it is of headSHA exactly, by
// someone other than author (and than pusher, who pushed the head, when
// not ""), who may write to the repository. Each
// reviewer's latest review that decides is theirs, as on GitHub: a
// COMMENTED review changes nothing, a later CHANGES_REQUESTED takes an
// approval back, and a dismissed approval is DISMISSED.
func (c *Client) Approvals(ctx context.Context, number int, author, pusher, headSHA string) ([]Approval, error) {
	latest := map[string]*github.PullRequestReview{}
	var order []string
	err := eachPage(100, func(lo github.ListOptions) (*github.Response, bool, error) {
		// GitHub lists reviews oldest first.
		rs, resp, err := c.gh.PullRequests.ListReviews(ctx, c.owner, c.repo, number, &lo)
		if err != nil {
			return nil, false, fmt.Errorf("reviews of #%d: %w", number, err)
		}
		for _, r := range rs {
			u := strings.ToLower(r.GetUser().GetLogin())
			switch r.GetState() {
			case "APPROVED", "CHANGES_REQUESTED", "DISMISSED":
			default:
				// COMMENTED decides nothing; PENDING is not submitted.
				continue
			}
			if u == "" {
				// A deleted account (GitHub's "ghost") approves nothing.
				continue
			}
			if _, ok := latest[u]; !ok {
				order = append(order, u)
			}
			latest[u] = r
		}
		return resp, false, nil
	})
	if err != nil {
		return nil, err
	}
	var out []Approval
	for _, u := range order {
		r := latest[u]
		if r.GetState() != "APPROVED" {
			continue
		}
		a := Approval{User: r.GetUser().GetLogin(), CommitID: r.GetCommitID()}
		switch {
		case strings.EqualFold(a.User, author):
			a.Why = "is the author"
		case pusher != "" && strings.EqualFold(a.User, pusher):
			a.Why = "pushed the head"
		case a.CommitID == "":
			a.Why = "approved a commit no longer in the pull request (force-pushed away)"
		case a.CommitID != headSHA:
			a.Why = fmt.Sprintf("approved %s, not the head %s", short(a.CommitID), short(headSHA))
		default:
			access, err := c.Permission(ctx, a.User)
			if err != nil {
				return nil, err
			}
			a.Access = access
			if !access.CanWrite() {
				a.Why = fmt.Sprintf("has %s permission on the repository, not write", access)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// PullRequestDetail adds what authorising an apply needs.
type PullRequestDetail struct {
	PullRequest
	// Mergeable is nil while GitHub computes it: GitHub starts computing
	// when the pull request is read after a push, and answers null
	// until it is done.
	Mergeable *bool
	// MergeableState is GitHub's mergeable_state: clean, unstable,
	// has_hooks, blocked, behind, dirty, draft or unknown.
	MergeableState string
	State          string
}

// Computed: GitHub has worked out whether the pull request merges.
func (d *PullRequestDetail) Computed() bool {
	return d.Mergeable != nil && d.MergeableState != "" && d.MergeableState != "unknown"
}

// PullRequestDetail reads a pull request with its author and mergeability.
func (c *Client) PullRequestDetail(ctx context.Context, number int) (*PullRequestDetail, error) {
	pr, _, err := c.gh.PullRequests.Get(ctx, c.owner, c.repo, number)
	if err != nil {
		return nil, fmt.Errorf("read pull request #%d: %w", number, err)
	}
	return &PullRequestDetail{
		PullRequest: pullRequestOf(pr), Mergeable: pr.Mergeable, MergeableState: pr.GetMergeableState(), State: pr.GetState(),
	}, nil
}

// WaitMergeable reads the pull request until GitHub has computed its
// mergeability, pausing between reads as b steps. It stops before a pause
// that would end past within, or when ctx ends, and returns the last read,
// not computed; an error only when a read fails.
func (c *Client) WaitMergeable(ctx context.Context, number int, b wait.Backoff, within time.Duration) (*PullRequestDetail, error) {
	// The bound is checked before each pause, not set on ctx: a deadline
	// there would cut the last read short after a pause spent for nothing.
	deadline := time.Now().Add(within)
	for {
		d, err := c.PullRequestDetail(ctx, number)
		if err != nil || d.Computed() {
			return d, err
		}
		pause := b.Step()
		if pause <= 0 || time.Now().Add(pause).After(deadline) {
			return d, nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return d, nil
		case <-t.C:
		}
	}
}

// Own is what the gate leaves out: the check runs this App made and the
// commit statuses its bot user set. Every other check run and status
// counts, whatever its name.
type Own struct {
	// AppID is the App's id: its check runs' app.id.
	AppID int64
	// Login is the App's bot user, "<slug>[bot]": its statuses' creator.
	Login string
}

// ChecksGreen reports whether every check run and commit status on sha
// passed, leaving out the App's own, and names the ones that did not.
func (c *Client) ChecksGreen(ctx context.Context, sha string, own Own) (bool, []string, error) {
	var bad []string
	err := eachPage(100, func(lo github.ListOptions) (*github.Response, bool, error) {
		res, resp, err := c.gh.Checks.ListCheckRunsForRef(ctx, c.owner, c.repo, sha, &github.ListCheckRunsOptions{ListOptions: lo})
		if err != nil {
			return nil, false, fmt.Errorf("check runs of %s: %w", sha, err)
		}
		for _, cr := range res.CheckRuns {
			if own.AppID != 0 && cr.GetApp().GetID() == own.AppID {
				continue
			}
			switch cr.GetConclusion() {
			case "success", "neutral", "skipped":
			default:
				bad = append(bad, checkName(cr.GetName(), cr.GetApp().GetSlug()))
			}
		}
		return resp, false, nil
	})
	if err != nil {
		return false, nil, err
	}
	// The combined status does not say who set each status; the list
	// does, newest first, so the first of each context is its state.
	seen := map[string]bool{}
	err = eachPage(100, func(lo github.ListOptions) (*github.Response, bool, error) {
		sts, resp, err := c.gh.Repositories.ListStatuses(ctx, c.owner, c.repo, sha, &lo)
		if err != nil {
			return nil, false, fmt.Errorf("statuses of %s: %w", sha, err)
		}
		for _, s := range sts {
			if seen[s.GetContext()] {
				continue
			}
			seen[s.GetContext()] = true
			if own.Login != "" && strings.EqualFold(s.GetCreator().GetLogin(), own.Login) {
				continue
			}
			if s.GetState() != "success" {
				bad = append(bad, checkName(s.GetContext(), s.GetCreator().GetLogin()))
			}
		}
		return resp, false, nil
	})
	if err != nil {
		return false, nil, err
	}
	return len(bad) == 0, bad, nil
}

// checkName is a check's name with who made it, so that a check named like
// the bot's own is told apart.
func checkName(name, by string) string {
	if by == "" {
		return name
	}
	return name + " (by " + by + ")"
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
