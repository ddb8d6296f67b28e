package githubapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/google/go-github/v60/github"
)

// FileAt reads the file at path as the repository holds it at ref; nil
// when there is none. A file over limit bytes is refused unread beyond
// what GitHub sends.
func (c *Client) FileAt(ctx context.Context, path, ref string, limit int) ([]byte, error) {
	fc, _, resp, err := c.gh.Repositories.GetContents(ctx, c.owner, c.repo, path, &github.RepositoryContentGetOptions{Ref: ref})
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", path, ref, err)
	}
	if fc == nil {
		return nil, fmt.Errorf("read %s at %s: a folder, not a file", path, ref)
	}
	if fc.GetSize() > limit {
		return nil, fmt.Errorf("read %s at %s: %s is over the %s a file of settings may hold", path, ref, FormatBytes(int64(fc.GetSize())), FormatBytes(int64(limit)))
	}
	s, err := fc.GetContent()
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", path, ref, err)
	}
	return []byte(s), nil
}
