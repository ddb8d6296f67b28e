package githubfake

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// mergeableStates are the values GitHub gives mergeable_state (GraphQL's
// MergeStateStatus, lower-case), so a test cannot plant one a bot would
// never see.
var mergeableStates = map[string]bool{
	"behind": true, "blocked": true, "clean": true, "dirty": true, "draft": true,
	"has_hooks": true, "unknown": true, "unstable": true,
}

// SetPullRequestDetails sets what SetPullRequest leaves to the documented
// example: the author (user.login) and whether the pull request merges
// without conflicts: mergeable_state "clean" if mergeable, else "dirty".
// SetMergeableState plants the other states.
func (s *Server) SetPullRequestDetails(owner, repo string, number int, author string, mergeable bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.mustPull("SetPullRequestDetails", owner, repo, number)
	p.author = author
	p.mergeableState = map[bool]string{true: "clean", false: "dirty"}[mergeable]
	s.st.touch(p)
}

// SetMergeableState sets mergeable_state to one of GitHub's values: clean,
// dirty (conflicts), blocked (a rule such as a required review or check
// is not met), behind, unstable (a non-required check failed), draft,
// has_hooks, or unknown (not computed yet, as right after a push). mergeable
// follows it as GitHub's does: null while unknown, false when dirty, else
// true.
func (s *Server) SetMergeableState(owner, repo string, number int, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !mergeableStates[state] {
		panic(fmt.Sprintf("githubfake: GitHub has no mergeable_state %q", state))
	}
	p := s.mustPull("SetMergeableState", owner, repo, number)
	p.mergeableState, p.unknownReads = state, 0
	s.st.touch(p)
}

// SetPullCommits sets how many commits the pull request has (commits),
// and its head's branch (head.ref): what a rebase merge replays, and
// where its head was pushed.
func (s *Server) SetPullCommits(owner, repo string, number, commits int, headRef string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.mustPull("SetPullCommits", owner, repo, number)
	p.commits, p.headRef = commits, headRef
	s.st.touch(p)
}

func (s *Server) mustPull(caller, owner, repo string, number int) *pull {
	p := s.st.pulls[pullKey(repoKey(owner, repo), number)]
	if p == nil {
		panic(fmt.Sprintf("githubfake: %s of %s/%s#%d before SetPullRequest", caller, owner, repo, number))
	}
	return p
}

func mergeable(state string) any {
	switch state {
	case "unknown":
		return nil
	case "dirty":
		return false
	}
	return true
}

func (s *Server) commentCount(repo string, issue int) int {
	n := 0
	for _, c := range s.st.comments {
		if c.repo == repo && c.issue == issue {
			n++
		}
	}
	return n
}

func (s *Server) listPulls(rq *request) response {
	state, by, dir := rq.query.Get("state"), rq.query.Get("sort"), rq.query.Get("direction")
	if state == "" {
		state = "open"
	}
	if by == "" {
		by = "created"
	}
	// GitHub: "Default: desc when sort is created or sort is not specified,
	// otherwise asc."
	if dir == "" {
		dir = map[bool]string{true: "desc", false: "asc"}[by == "created"]
	}
	type item struct {
		p   *pull
		key int64
		m   map[string]any
	}
	var items []item
	for k, p := range s.st.pulls {
		if !strings.HasPrefix(k, rq.repo+"#") || (state != "all" && p.state != state) {
			continue
		}
		if b := rq.query.Get("base"); b != "" && p.base != b {
			continue
		}
		m := s.pullJSON(rq, rq.op.id, p.number)
		if h := rq.query.Get("head"); h != "" && !headMatches(m, h) {
			continue
		}
		var key int64
		switch by {
		case "created":
			key = p.createdSeq
		case "updated":
			key = p.touchSeq
		case "popularity":
			key = int64(s.commentCount(rq.repo, p.number))
		case "long-running":
			// "sorts by age": the oldest is the longest running.
			key = -p.createdSeq
		}
		items = append(items, item{p, key, m})
	}
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if a.key != b.key {
			return (a.key < b.key) == (dir == "asc")
		}
		return (a.p.number < b.p.number) == (dir == "asc")
	})
	from, to, h := page(rq, len(items))
	out := []any{}
	for _, it := range items[from:to] {
		out = append(out, it.m)
	}
	return response{status: http.StatusOK, body: out, header: h}
}

// headMatches filters by head as GitHub documents it, "user:ref-name",
// against the head the fake answers with.
func headMatches(m map[string]any, filter string) bool {
	head, _ := m["head"].(map[string]any)
	user, ref, ok := strings.Cut(filter, ":")
	if !ok {
		return str(head["ref"]) == filter
	}
	label := str(head["label"])
	lu, _, _ := strings.Cut(label, ":")
	return strings.EqualFold(lu, user) && str(head["ref"]) == ref
}
