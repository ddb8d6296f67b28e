package githubapi

import (
	"strings"
	"time"

	"github.com/google/go-github/v60/github"
)

// PullRequest is a pull request as the workflow decides on it. The action's
// event file, the bot's webhook payload and the REST API all give it, in
// the same shape (ParseEvent, PullRequestDetail), so both
// binaries decide alike.
type PullRequest struct {
	Number           int
	HeadSHA, BaseRef string
	// HeadRef is the head's branch, in the head's repository.
	HeadRef string
	// BaseSHA is the base branch's commit the pull request was last
	// compared with: what judges it (its policies) is read there.
	BaseSHA string
	// HeadRepoID and BaseRepoID are GitHub's ids of the repositories the
	// head and base branches are in, HeadRepo and BaseRepo their names;
	// the head's are zero once its repository is deleted.
	HeadRepoID, BaseRepoID int64
	HeadRepo, BaseRepo     string
	Merged, Draft          bool
	Author                 string
	// MergeCommitSHA, MergedAt and MergedBy say how a merged pull request
	// was merged: the commit on the base, when, by whom.
	MergeCommitSHA string
	MergedAt       time.Time
	MergedBy       string
	// Commits is how many commits the pull request has: how far back a
	// rebase merge replayed them.
	Commits int
}

// Fork reports whether the head comes from another repository than the
// base, and so whether its code is anyone's: by repository id, which no
// rename or transfer changes. It fails closed: a deleted head repository,
// an id missing, or one repository named two ways (names ignore case)
// counts as a fork. GitHub's fork flag says nothing of the pull request: a
// fork's own branches, proposed into the fork itself, come from the same
// repository.
func (p PullRequest) Fork() bool {
	return p.HeadRepoID == 0 || p.HeadRepoID != p.BaseRepoID || !strings.EqualFold(p.HeadRepo, p.BaseRepo)
}

// pullRequestOf reads what PullRequest holds of GitHub's pull request.
func pullRequestOf(pr *github.PullRequest) PullRequest {
	return PullRequest{
		Number: pr.GetNumber(), HeadSHA: pr.GetHead().GetSHA(), HeadRef: pr.GetHead().GetRef(), BaseRef: pr.GetBase().GetRef(), BaseSHA: pr.GetBase().GetSHA(),
		HeadRepoID: pr.GetHead().GetRepo().GetID(), BaseRepoID: pr.GetBase().GetRepo().GetID(),
		HeadRepo: pr.GetHead().GetRepo().GetFullName(), BaseRepo: pr.GetBase().GetRepo().GetFullName(),
		Merged: pr.GetMerged(), Draft: pr.GetDraft(), Author: pr.GetUser().GetLogin(),
		MergeCommitSHA: pr.GetMergeCommitSHA(), MergedAt: pr.GetMergedAt().Time, MergedBy: pr.GetMergedBy().GetLogin(),
		Commits: pr.GetCommits(),
	}
}
