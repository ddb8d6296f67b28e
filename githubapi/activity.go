package githubapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// maxActivityPages bounds the pages of a branch's activity Pusher reads:
// the push looked for is a pull request's head, recent by nature.
const maxActivityPages = 3

// Pusher is who made branch point at sha: the actor of the newest push,
// force-push or creation of the branch whose result is sha, from GitHub's
// repository activity. A commit's author or committer says nothing of who
// pushed it (anyone may push anyone's commits); GitHub's rule "approval of
// the most recent reviewable push" is by pusher too. An error when GitHub
// lists no such push: the caller cannot tell who it was.
func (c *Client) Pusher(ctx context.Context, branch, sha string) (string, error) {
	q := url.Values{"ref": {"refs/heads/" + branch}, "per_page": {"100"}}
	path := fmt.Sprintf("repos/%s/%s/activity?%s", url.PathEscape(c.owner), url.PathEscape(c.repo), q.Encode())
	for range maxActivityPages {
		req, err := c.gh.NewRequest(http.MethodGet, path, nil)
		if err != nil {
			return "", fmt.Errorf("the pushes to %s: %w", branch, err)
		}
		// go-github v60 does not know the activity API.
		var list []struct {
			After        string `json:"after"`
			ActivityType string `json:"activity_type"`
			Actor        *struct {
				Login string `json:"login"`
			} `json:"actor"`
		}
		resp, err := c.gh.Do(ctx, req, &list)
		if err != nil {
			return "", fmt.Errorf("the pushes to %s: %w", branch, err)
		}
		// Newest first, as GitHub lists them by default.
		for _, a := range list {
			switch a.ActivityType {
			case "push", "force_push", "branch_creation":
			default:
				continue
			}
			if a.After == sha {
				if a.Actor == nil || a.Actor.Login == "" {
					return "", fmt.Errorf("the push of %s to %s: GitHub names no one who made it", short(sha), branch)
				}
				return a.Actor.Login, nil
			}
		}
		// The activity API pages by cursor: the next page's address is
		// in the Link header.
		if resp == nil || resp.After == "" {
			break
		}
		q.Set("after", resp.After)
		path = fmt.Sprintf("repos/%s/%s/activity?%s", url.PathEscape(c.owner), url.PathEscape(c.repo), q.Encode())
	}
	return "", fmt.Errorf("GitHub lists no push of %s to %s among the branch's recent activity, so who pushed it cannot be told", short(sha), branch)
}
