package githubfake

// SetParents records sha's parent commits in owner/repo: a comparison
// answers ahead, behind or diverged by this graph, as GitHub answers by
// the repository's history.
func (s *Server) SetParents(owner, repo, sha string, parents ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.parents == nil {
		s.st.parents = map[string][]string{}
	}
	s.st.parents[repoKey(owner, repo)+"@"+sha] = append([]string(nil), parents...)
}

// SetBranch points branch of owner/repo at sha: a merge queue fast-forwards
// the base branch to a group's commit when the group passes.
func (s *Server) SetBranch(owner, repo, branch, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.branches == nil {
		s.st.branches = map[string]string{}
	}
	s.st.branches[repoKey(owner, repo)+"@"+shortRef(branch)] = sha
}

// resolve is the commit ref names in repo: a branch's commit, else ref.
func (st *state) resolve(repo, ref string) string {
	if sha, ok := st.branches[repo+"@"+shortRef(ref)]; ok {
		return sha
	}
	return shortRef(ref)
}

// ancestors is every commit reachable from sha, sha included, by the
// recorded graph.
func (st *state) ancestors(repo, sha string) map[string]bool {
	seen := map[string]bool{}
	next := []string{sha}
	for len(next) > 0 {
		c := next[len(next)-1]
		next = next[:len(next)-1]
		if seen[c] {
			continue
		}
		seen[c] = true
		next = append(next, st.parents[repo+"@"+c]...)
	}
	return seen
}

// known reports whether the graph holds sha (as a commit or a parent).
func (st *state) known(repo, sha string) bool {
	if _, ok := st.parents[repo+"@"+sha]; ok {
		return true
	}
	for k, ps := range st.parents {
		if len(k) > len(repo) && k[:len(repo)+1] == repo+"@" {
			for _, p := range ps {
				if p == sha {
					return true
				}
			}
		}
	}
	return false
}

// comparison is GitHub's status of head against base (identical, ahead,
// behind or diverged) with the commits each has that the other lacks;
// ok is false when the graph holds neither.
func (st *state) comparison(repo, base, head string) (status string, aheadBy, behindBy int, ok bool) {
	if !st.known(repo, base) && !st.known(repo, head) {
		return "", 0, 0, false
	}
	if base == head {
		return "identical", 0, 0, true
	}
	b, h := st.ancestors(repo, base), st.ancestors(repo, head)
	for c := range h {
		if !b[c] {
			aheadBy++
		}
	}
	for c := range b {
		if !h[c] {
			behindBy++
		}
	}
	switch {
	case behindBy == 0:
		status = "ahead"
	case aheadBy == 0:
		status = "behind"
	default:
		status = "diverged"
	}
	return status, aheadBy, behindBy, true
}
