package githubfake

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

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

// Commit is what a test says of a commit beyond its parents (SetParents):
// what tells a rebased commit from the one it replays.
type Commit struct {
	Message, AuthorEmail string
	AuthorDate           time.Time
}

// SetCommit records sha's message and author in owner/repo, with its
// parents: a commit read answers them.
func (s *Server) SetCommit(owner, repo, sha string, c Commit, parents ...string) {
	s.SetParents(owner, repo, sha, parents...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.commits == nil {
		s.st.commits = map[string]Commit{}
	}
	s.st.commits[repoKey(owner, repo)+"@"+sha] = c
}

// getCommit answers a commit with the parents and author the test set, else
// GitHub's example under its name.
func (s *Server) getCommit(rq *request) response {
	sha := s.st.resolve(rq.repo, rq.params["ref"])
	out := s.template("repos/get-commit", "200")
	set(out, "sha", sha)
	set(out, "url", s.apiURL("/repos/%s/%s/commits/%s", rq.params["owner"], rq.params["repo"], sha))
	if parents, ok := s.st.parents[rq.repo+"@"+sha]; ok {
		list := make([]any, 0, len(parents))
		for _, p := range parents {
			list = append(list, map[string]any{"sha": p, "url": s.apiURL("/repos/%s/%s/commits/%s", rq.params["owner"], rq.params["repo"], p)})
		}
		out["parents"] = list
	}
	if c, ok := s.st.commits[rq.repo+"@"+sha]; ok {
		set(out, "commit.message", c.Message)
		set(out, "commit.author.email", c.AuthorEmail)
		set(out, "commit.author.date", stamp(c.AuthorDate))
	}
	return response{status: http.StatusOK, body: out}
}

// getRef answers a branch's reference: the commit SetBranch pointed it at,
// else, for the default branch or the base branch of a pull request, the
// base commit GitHub's example pull request shows; no other branch exists.
func (s *Server) getRef(rq *request) response {
	ref := rq.params["ref"]
	branch, ok := strings.CutPrefix(ref, "heads/")
	if !ok {
		return notFound()
	}
	sha, ok := s.st.branches[rq.repo+"@"+branch]
	if !ok {
		exists := branch == s.defaultBranch()
		for key, p := range s.st.pulls {
			exists = exists || strings.HasPrefix(key, rq.repo+"#") && p.base == branch
		}
		if exists {
			base, _ := s.template("pulls/get", "200")["base"].(map[string]any)
			sha, ok = str(base["sha"]), true
		}
	}
	if !ok {
		return notFound()
	}
	out := s.template("git/get-ref", "200")
	set(out, "ref", "refs/"+ref)
	set(out, "url", s.apiURL("/repos/%s/%s/git/refs/%s", rq.params["owner"], rq.params["repo"], ref))
	set(out, "object.sha", sha)
	set(out, "object.type", "commit")
	set(out, "object.url", s.apiURL("/repos/%s/%s/git/commits/%s", rq.params["owner"], rq.params["repo"], sha))
	return response{status: http.StatusOK, body: out}
}

// activity is one update of a branch, as the repository's activity lists it.
type activity struct {
	id                  int64
	repo, ref           string
	before, after, kind string
	actor               string
	at                  time.Time
}

// Push records that actor moved branch of owner/repo from before to after
// (before "" makes the branch): the repository's activity lists it, and
// the branch points at after.
func (s *Server) Push(owner, repo, branch, before, after, actor string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.nextID++
	kind := "push"
	if before == "" {
		kind, before = "branch_creation", "0000000000000000000000000000000000000000"
	}
	s.st.activities = append(s.st.activities, &activity{id: s.st.nextID, repo: repoKey(owner, repo), ref: "refs/heads/" + branch,
		before: before, after: after, kind: kind, actor: actor, at: time.Now()})
	if s.st.branches == nil {
		s.st.branches = map[string]string{}
	}
	s.st.branches[repoKey(owner, repo)+"@"+branch] = after
}

// listActivities answers the repository's activity, newest first, of the
// ref asked for (a branch's full or short name) and activity type.
func (s *Server) listActivities(rq *request) response {
	ref := rq.query.Get("ref")
	if ref != "" && !strings.HasPrefix(ref, "refs/") {
		ref = "refs/heads/" + ref
	}
	out := []any{}
	for i := len(s.st.activities) - 1; i >= 0; i-- {
		a := s.st.activities[i]
		if a.repo != rq.repo || (ref != "" && a.ref != ref) || (rq.query.Get("activity_type") != "" && a.kind != rq.query.Get("activity_type")) {
			continue
		}
		m := s.template("repos/list-activities", "200")
		set(m, "id", a.id)
		set(m, "node_id", fmt.Sprintf("RA_%d", a.id))
		set(m, "before", a.before)
		set(m, "after", a.after)
		set(m, "ref", a.ref)
		set(m, "timestamp", stamp(a.at))
		set(m, "activity_type", a.kind)
		if _, ok := m["actor"].(map[string]any); !ok {
			// The example's actor is null: a user as GitHub writes one.
			m["actor"] = s.template("issues/get-comment", "200")["user"]
		}
		withUser(m, "actor", a.actor)
		out = append(out, m)
	}
	return response{status: http.StatusOK, body: out}
}
