package githubfake

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// What an apply before merge is judged on: who made a check run or status,
// whether GitHub has computed mergeability yet, and pull requests whose
// fork is gone.

// CheckApp is the GitHub App a check run belongs to (its "app").
type CheckApp struct {
	ID   int64
	Slug string
	Name string
}

// GitHubActions is the App behind every check run a workflow's
// GITHUB_TOKEN makes (app id 15368 on github.com).
func GitHubActions() CheckApp {
	return CheckApp{ID: 15368, Slug: "github-actions", Name: "GitHub Actions"}
}

// App is the App SetAppKey named, as its check runs show it: the tokens
// the fake issues for its installations make check runs as it.
func (s *Server) App() CheckApp {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.app()
}

func (st *state) app() CheckApp {
	slug := strings.TrimSuffix(st.appLogin, "[bot]")
	return CheckApp{ID: st.appID, Slug: slug, Name: slug}
}

// appOf is the App a token makes check runs as: the App for its
// installation tokens, GitHub Actions for any other (a workflow's token).
func (st *state) appOf(token string) CheckApp {
	if _, ok := st.tokenInstall[token]; ok {
		return st.app()
	}
	return GitHubActions()
}

// SetCheckRunBy is SetCheckRun for a check run app made.
func (s *Server) SetCheckRunBy(owner, repo, sha, name, conclusion string, app CheckApp) {
	s.SetCheckRun(owner, repo, sha, name, conclusion)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.checkRuns[len(s.st.checkRuns)-1].app = app
}

// setCheckApp overlays the check run's app.
func setCheckApp(m map[string]any, app CheckApp) {
	set(m, "app.id", app.ID)
	set(m, "app.slug", app.Slug)
	set(m, "app.name", app.Name)
	set(m, "app.node_id", fmt.Sprintf("A_fake%d", app.ID))
}

// SetStatus sets a commit status on sha as creator would (a CI's user, or
// "<slug>[bot]" for an App), as POST /repos/{owner}/{repo}/statuses/{sha}
// does with creator's token.
func (s *Server) SetStatus(owner, repo, sha, context, state, creator string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch state {
	case "error", "failure", "pending", "success":
	default:
		panic(fmt.Sprintf("githubfake: GitHub has no commit status state %q", state))
	}
	st := &status{repo: repoKey(owner, repo), sha: sha, id: s.st.id(), creator: creator, at: stamp(time.Now())}
	st.Context, st.State = context, state
	s.st.statuses = append(s.st.statuses, st)
}

// listStatuses answers GET /repos/{owner}/{repo}/commits/{ref}/statuses:
// every status of the commit, newest first, with its creator. As with the
// combined status, ref must be the sha the statuses were set on.
func (s *Server) listStatuses(rq *request) response {
	ref, owner, name := rq.params["ref"], rq.params["owner"], rq.params["repo"]
	var sts []*status
	for i := len(s.st.statuses) - 1; i >= 0; i-- {
		if st := s.st.statuses[i]; st.repo == rq.repo && st.sha == ref {
			sts = append(sts, st)
		}
	}
	from, to, h := page(rq, len(sts))
	out := []any{}
	for _, st := range sts[from:to] {
		m := s.template(rq.op.id, "200")
		s.statusJSON(m, st, owner, name)
		withUser(m, "creator", st.creator)
		out = append(out, m)
	}
	return response{status: http.StatusOK, body: out, header: h}
}

// authenticatedApp answers GET /app: the App SetAppKey named.
func (s *Server) authenticatedApp(rq *request) response {
	m := s.template(rq.op.id, "200")
	app := s.st.app()
	set(m, "id", app.ID)
	set(m, "slug", app.Slug)
	set(m, "name", app.Name)
	set(m, "node_id", fmt.Sprintf("A_fake%d", app.ID))
	return response{status: http.StatusOK, body: m}
}

// SetMergeableAfter makes the pull request's next reads answer as GitHub
// does while it computes mergeability in the background (mergeable null,
// mergeable_state unknown), reads times, then state (see
// SetMergeableState).
func (s *Server) SetMergeableAfter(owner, repo string, number, reads int, state string) {
	s.SetMergeableState(owner, repo, number, state)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mustPull("SetMergeableAfter", owner, repo, number).unknownReads = reads
}

// SetHeadRepoDeleted makes the pull request's head repository gone, as
// when its fork was deleted: GitHub answers head.repo null.
func (s *Server) SetHeadRepoDeleted(owner, repo string, number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.mustPull("SetHeadRepoDeleted", owner, repo, number)
	p.fork, p.headGone = true, true
	s.st.touch(p)
}

// SetRepositoryIsFork makes the repository of the pull request a fork
// itself: its head and base repositories are one, flagged fork, as in a
// pull request between two branches of someone's fork.
func (s *Server) SetRepositoryIsFork(owner, repo string, number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.mustPull("SetRepositoryIsFork", owner, repo, number)
	p.repoIsFork = true
	s.st.touch(p)
}

// descriptionGap: GitHub gives this answer though its REST description
// does not allow it. Each gap is named with where GitHub says so, and the
// fake gives it only where a test asks for it.
func descriptionGap(opID, violation string) bool {
	switch opID {
	case "pulls/get", "pulls/list", "repos/list-pull-requests-associated-with-commit":
		// head.repo is null once the fork is deleted (SetHeadRepoDeleted):
		// GitHub's webhook schema for the same pull request object says
		// so (@octokit/webhooks-types: "head: {... repo: Repository |
		// null}"); the REST description requires a repository.
		return strings.HasSuffix(violation, "head.repo: is null, and the schema does not allow null")
	}
	return false
}

// overlayComputing answers one read of p as GitHub does before it has
// computed mergeability, if reads of that kind are left.
func overlayComputing(m map[string]any, p *pull) {
	if p.unknownReads <= 0 {
		return
	}
	p.unknownReads--
	set(m, "mergeable", nil)
	set(m, "mergeable_state", "unknown")
}
