package githubfake

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Review is a pull request review as GitHub keeps it.
type Review struct {
	User string
	// State is APPROVED, CHANGES_REQUESTED or COMMENTED; DISMISSED and
	// PENDING (listed to its author only, as GitHub does) also exist.
	State string
	// CommitID is the commit reviewed; "" is the pull request's head.
	CommitID string
	// CommitGone answers commit_id null, as GitHub does once the commit
	// reviewed has left the repository (a force-push).
	CommitGone bool
}

type review struct {
	Review
	id int64
	at time.Time
}

var reviewStates = map[string]bool{
	"APPROVED": true, "CHANGES_REQUESTED": true, "COMMENTED": true, "DISMISSED": true, "PENDING": true,
}

// SetReviews sets the reviews of a pull request, oldest first, replacing
// any set before.
func (s *Server) SetReviews(owner, repo string, number int, reviews []Review) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var rs []*review
	for _, r := range reviews {
		// The REST API spells states in capitals; a test planting
		// "approved" would test a bot against answers GitHub never gives.
		if !reviewStates[r.State] {
			panic(fmt.Sprintf("githubfake: GitHub has no review state %q (APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED, PENDING)", r.State))
		}
		rs = append(rs, &review{Review: r, id: s.st.id(), at: now})
	}
	key := pullKey(repoKey(owner, repo), number)
	s.st.reviews[key] = rs
	if p := s.st.pulls[key]; p != nil {
		s.st.touch(p)
	}
}

func (s *Server) listReviews(rq *request) response {
	n := int(intParam(rq, "pull_number"))
	key := pullKey(rq.repo, n)
	all, ok := s.st.reviews[key]
	p := s.st.pulls[key]
	if !ok && p == nil {
		return notFound()
	}
	var rs []*review
	for _, r := range all {
		if r.State != "PENDING" || strings.EqualFold(r.User, rq.user) {
			rs = append(rs, r)
		}
	}
	from, to, h := page(rq, len(rs))
	out := []any{}
	owner, name := rq.params["owner"], rq.params["repo"]
	for _, r := range rs[from:to] {
		m := s.template(rq.op.id, "200")
		html := fmt.Sprintf("https://github.com/%s/%s/pull/%d#pullrequestreview-%d", owner, name, n, r.id)
		pullURL := s.apiURL("/repos/%s/%s/pulls/%d", owner, name, n)
		set(m, "id", r.id)
		set(m, "node_id", fmt.Sprintf("PRR_fake%d", r.id))
		withUser(m, "user", r.User)
		set(m, "body", "")
		set(m, "state", r.State)
		set(m, "html_url", html)
		set(m, "pull_request_url", pullURL)
		set(m, "_links.html.href", html)
		set(m, "_links.pull_request.href", pullURL)
		set(m, "submitted_at", stamp(r.at))
		if r.State == "PENDING" {
			delete(m, "submitted_at")
		}
		commit := r.CommitID
		if commit == "" && p != nil {
			commit = p.head
		}
		if r.CommitGone {
			commit = ""
		}
		set(m, "commit_id", nullable(commit))
		set(m, "author_association", s.association(rq, r.User))
		out = append(out, m)
	}
	return response{status: http.StatusOK, body: out, header: h}
}

// association is the author_association the fake can tell: the owner, a
// collaborator SetPermission named, or no relation. GitHub also knows
// MEMBER and CONTRIBUTOR, which need organisations and history.
func (s *Server) association(rq *request, login string) string {
	switch {
	case strings.EqualFold(login, rq.params["owner"]):
		return "OWNER"
	case s.st.perms[rq.repo+"/"+strings.ToLower(login)] != "":
		return "COLLABORATOR"
	}
	return "NONE"
}
