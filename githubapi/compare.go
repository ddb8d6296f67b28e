package githubapi

import (
	"context"
	"fmt"
	"time"

	"github.com/google/go-github/v60/github"
)

// MaxCompareFiles is the most files GitHub's comparison of two commits
// lists; a comparison that lists this many may have left some out.
const MaxCompareFiles = 300

// CompareFiles lists the files that differ from base to head (a merge
// queue's group against its base branch). complete is false when GitHub
// may have left files out: the caller must then take every file as
// changed.
func (c *Client) CompareFiles(ctx context.Context, base, head string) (files []File, complete bool, err error) {
	cmp, _, err := c.gh.Repositories.CompareCommits(ctx, c.owner, c.repo, base, head, &github.ListOptions{PerPage: 100})
	if err != nil {
		return nil, false, fmt.Errorf("compare %s...%s: %w", base, head, err)
	}
	for _, f := range cmp.Files {
		files = append(files, File{Path: f.GetFilename(), Status: f.GetStatus(), PreviousPath: f.GetPreviousFilename()})
	}
	return files, len(cmp.Files) < MaxCompareFiles, nil
}

// Contains reports whether the branch holds sha: sha is the branch's
// commit or one of its ancestors (GitHub's comparison of the branch with
// sha is identical or behind).
func (c *Client) Contains(ctx context.Context, branch, sha string) (bool, error) {
	cmp, _, err := c.gh.Repositories.CompareCommits(ctx, c.owner, c.repo, branch, sha, &github.ListOptions{PerPage: 1})
	if err != nil {
		return false, fmt.Errorf("compare %s...%s: %w", branch, sha, err)
	}
	switch s := cmp.GetStatus(); s {
	case "identical", "behind":
		return true, nil
	case "ahead", "diverged":
		return false, nil
	default:
		return false, fmt.Errorf("compare %s...%s: GitHub answered status %q", branch, sha, s)
	}
}

// Commit is what the bot reads of a commit: its parents, and what tells a
// rebased commit from the one it replays (a rebase keeps the author, the
// author's date and the message).
type Commit struct {
	SHA         string
	Parents     []string
	Message     string
	AuthorEmail string
	AuthorDate  time.Time
}

// Commit reads the commit sha.
func (c *Client) Commit(ctx context.Context, sha string) (*Commit, error) {
	rc, _, err := c.gh.Repositories.GetCommit(ctx, c.owner, c.repo, sha, &github.ListOptions{PerPage: 1})
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", sha, err)
	}
	out := &Commit{SHA: rc.GetSHA(), Message: rc.GetCommit().GetMessage(),
		AuthorEmail: rc.GetCommit().GetAuthor().GetEmail(), AuthorDate: rc.GetCommit().GetAuthor().GetDate().Time}
	for _, p := range rc.Parents {
		out.Parents = append(out.Parents, p.GetSHA())
	}
	return out, nil
}

// BranchHead is the commit branch points at now.
func (c *Client) BranchHead(ctx context.Context, branch string) (string, error) {
	ref, _, err := c.gh.Git.GetRef(ctx, c.owner, c.repo, "heads/"+branch)
	if err != nil {
		return "", fmt.Errorf("read the head of branch %s: %w", branch, err)
	}
	if sha := ref.GetObject().GetSHA(); ref.GetObject().GetType() == "commit" && sha != "" {
		return sha, nil
	}
	return "", fmt.Errorf("read the head of branch %s: GitHub named no commit", branch)
}
