package githubfake

import (
	"fmt"
	"net/http"
	"time"
)

// checkConclusions are the conclusions the description allows a check run.
var checkConclusions = map[string]bool{
	"success": true, "failure": true, "neutral": true, "cancelled": true,
	"skipped": true, "timed_out": true, "action_required": true,
}

// SetCheckRun plants a check run GitHub Actions made on commit sha: done
// with conclusion, or still in progress when conclusion is "". A later run
// of the same name supersedes it in the list (filter=latest), as a re-run
// does on GitHub.
func (s *Server) SetCheckRun(owner, repo, sha, name, conclusion string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := stamp(time.Now())
	c := &checkRun{repo: repoKey(owner, repo), started: now, app: GitHubActions()}
	c.ID, c.Name, c.HeadSHA, c.Status = s.st.id(), name, sha, "in_progress"
	if conclusion != "" {
		if !checkConclusions[conclusion] {
			panic(fmt.Sprintf("githubfake: GitHub has no check run conclusion %q", conclusion))
		}
		c.Status, c.Conclusion, c.completed = "completed", conclusion, now
	}
	s.st.checkRuns = append(s.st.checkRuns, c)
}

// combinedStatus answers from the statuses created on the commit. The
// fake does not resolve branch names: ref must be the sha they were
// created on, else the answer is GitHub's for a commit without statuses.
func (s *Server) combinedStatus(rq *request) response {
	ref, owner, name := rq.params["ref"], rq.params["owner"], rq.params["repo"]
	// Only the latest status of each context counts, in the order the
	// contexts first appeared.
	latest := map[string]*status{}
	var contexts []string
	for _, st := range s.st.statuses {
		if st.repo != rq.repo || st.sha != ref {
			continue
		}
		if latest[st.Context] == nil {
			contexts = append(contexts, st.Context)
		}
		latest[st.Context] = st
	}
	// GitHub: failure if any context reports error or failure; pending if
	// there are no statuses or one is pending; success otherwise.
	state := "success"
	if len(contexts) == 0 {
		state = "pending"
	}
	for _, c := range contexts {
		switch latest[c].State {
		case "error", "failure":
			state = "failure"
		case "pending":
			if state != "failure" {
				state = "pending"
			}
		}
	}
	from, to, h := page(rq, len(contexts))
	items := []any{}
	tmpl := s.template(rq.op.id, "200")
	var first map[string]any
	if l := list(tmpl["statuses"]); len(l) > 0 {
		first, _ = l[0].(map[string]any)
	}
	for _, c := range contexts[from:to] {
		st := latest[c]
		m, _ := deepCopy(first).(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		s.statusJSON(m, st, owner, name)
		items = append(items, m)
	}
	set(tmpl, "state", state)
	set(tmpl, "statuses", items)
	set(tmpl, "sha", ref)
	set(tmpl, "total_count", len(contexts))
	set(tmpl, "repository.name", name)
	set(tmpl, "repository.full_name", owner+"/"+name)
	set(tmpl, "repository.owner.login", owner)
	set(tmpl, "repository.url", s.apiURL("/repos/%s/%s", owner, name))
	set(tmpl, "repository.html_url", fmt.Sprintf("https://github.com/%s/%s", owner, name))
	set(tmpl, "commit_url", s.apiURL("/repos/%s/%s/commits/%s", owner, name, ref))
	set(tmpl, "url", s.apiURL("/repos/%s/%s/commits/%s/status", owner, name, ref))
	return response{status: http.StatusOK, body: tmpl, header: h}
}

// statusJSON fills m, a status as GitHub's documented example shows one,
// with st: the same fields wherever a status is answered (its creator only
// where the answer has one).
func (s *Server) statusJSON(m map[string]any, st *status, owner, repo string) {
	set(m, "id", st.id)
	set(m, "node_id", fmt.Sprintf("SC_fake%d", st.id))
	set(m, "state", st.State)
	set(m, "description", nullable(st.Description))
	set(m, "target_url", nullable(st.targetURL))
	set(m, "context", st.Context)
	set(m, "created_at", st.at)
	set(m, "updated_at", st.at)
	set(m, "url", s.apiURL("/repos/%s/%s/statuses/%s", owner, repo, st.sha))
}
