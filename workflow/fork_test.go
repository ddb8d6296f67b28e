package workflow

import (
	"testing"

	"github.com/kusionpr/kusionpr/githubapi"
)

// TestDecideFork: a fork's head is never applied before its merge and is
// previewed offline unless trusted; anything else, and a fork once merged,
// runs as it is.
func TestDecideFork(t *testing.T) {
	same := &githubapi.PullRequest{HeadRepoID: 1, BaseRepoID: 1, HeadRepo: "o/r", BaseRepo: "o/r"}
	fork := &githubapi.PullRequest{HeadRepoID: 2, BaseRepoID: 1, HeadRepo: "x/r", BaseRepo: "o/r"}
	for _, tc := range []struct {
		name            string
		pr              *githubapi.PullRequest
		merged, trusted bool
		want            Forks
	}{
		{"a push", nil, false, false, Forks{MayApply: true}},
		{"a branch of the repository", same, false, false, Forks{MayApply: true}},
		{"a fork", fork, false, false, Forks{Fork: true, Offline: true}},
		{"a trusted fork", fork, false, true, Forks{Fork: true}},
		{"a fork once merged", fork, true, false, Forks{MayApply: true}},
	} {
		if got := DecideFork(tc.pr, tc.merged, tc.trusted); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
