package githubapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

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

// FolderAt reads every file under dir as the repository holds it at ref
// (a folder of policies): keyed by their path below dir, slash-separated.
// It is nil when there is no such folder. Past lim's files or bytes, or
// past 8 folders deep, it fails naming the limit: a folder read this way
// is small by design.
func (c *Client) FolderAt(ctx context.Context, dir, ref string, lim ArchiveLimits) (map[string][]byte, error) {
	out := map[string][]byte{}
	var total int64
	var walk func(p string, depth int) (bool, error)
	walk = func(p string, depth int) (bool, error) {
		if depth > 8 {
			return false, fmt.Errorf("read %s at %s: folders nested deeper than 8", p, ref)
		}
		_, entries, resp, err := c.gh.Repositories.GetContents(ctx, c.owner, c.repo, p, &github.RepositoryContentGetOptions{Ref: ref})
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read %s at %s: %w", p, ref, err)
		}
		if entries == nil {
			return false, fmt.Errorf("read %s at %s: a file, not a folder", p, ref)
		}
		for _, e := range entries {
			switch e.GetType() {
			case "dir":
				if _, err := walk(e.GetPath(), depth+1); err != nil {
					return false, err
				}
			case "file":
				if lim.MaxFiles > 0 && int64(len(out)) >= lim.MaxFiles {
					return false, fmt.Errorf("read %s at %s: more than %d files", dir, ref, lim.MaxFiles)
				}
				if total += int64(e.GetSize()); lim.MaxBytes > 0 && total > lim.MaxBytes {
					return false, fmt.Errorf("read %s at %s: more than %s in all", dir, ref, FormatBytes(lim.MaxBytes))
				}
				fc, _, _, err := c.gh.Repositories.GetContents(ctx, c.owner, c.repo, e.GetPath(), &github.RepositoryContentGetOptions{Ref: ref})
				if err != nil {
					return false, fmt.Errorf("read %s at %s: %w", e.GetPath(), ref, err)
				}
				s, err := fc.GetContent()
				if err != nil {
					return false, fmt.Errorf("read %s at %s: %w", e.GetPath(), ref, err)
				}
				rel := strings.TrimPrefix(strings.TrimPrefix(e.GetPath(), strings.Trim(dir, "/")), "/")
				out[rel] = []byte(s)
			}
		}
		return true, nil
	}
	found, err := walk(strings.Trim(dir, "/"), 0)
	if err != nil || !found {
		return nil, err
	}
	return out, nil
}
