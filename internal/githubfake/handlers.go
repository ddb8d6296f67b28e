package githubfake

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// handler is the stateful answer of an operation; the others answer with
// their documented example.
func handler(opID string) func(*Server, *request) response {
	switch opID {
	case "issues/list-comments":
		return (*Server).listComments
	case "issues/create-comment":
		return (*Server).createComment
	case "issues/get-comment":
		return (*Server).getComment
	case "issues/update-comment":
		return (*Server).updateComment
	case "issues/delete-comment":
		return (*Server).deleteComment
	case "reactions/create-for-issue-comment":
		return (*Server).createReaction
	case "checks/create":
		return (*Server).createCheckRun
	case "checks/update":
		return (*Server).updateCheckRun
	case "checks/get":
		return (*Server).getCheckRun
	case "checks/list-for-ref":
		return (*Server).listCheckRuns
	case "repos/create-commit-status":
		return (*Server).createStatus
	case "pulls/get":
		return (*Server).getPull
	case "pulls/list-files":
		return (*Server).listFiles
	case "repos/list-pull-requests-associated-with-commit":
		return (*Server).commitPulls
	case "repos/get-collaborator-permission-level":
		return (*Server).permission
	case "apps/create-installation-access-token":
		return (*Server).accessToken
	case "pulls/list":
		return (*Server).listPulls
	case "pulls/list-reviews":
		return (*Server).listReviews
	case "repos/get-combined-status-for-ref":
		return (*Server).combinedStatus
	case "repos/list-commit-statuses-for-ref":
		return (*Server).listStatuses
	case "apps/get-authenticated":
		return (*Server).authenticatedApp
	case "repos/download-tarball-archive":
		return (*Server).tarball
	case "repos/get-content":
		return (*Server).content
	case "repos/compare-commits":
		return (*Server).compare
	case "repos/get-commit":
		return (*Server).getCommit
	case "git/get-ref":
		return (*Server).getRef
	case "repos/list-activities":
		return (*Server).listActivities
	case "repos/create-deployment":
		return (*Server).createDeployment
	case "repos/create-deployment-status":
		return (*Server).createDeploymentStatus
	case "apps/list-repos-accessible-to-installation":
		return (*Server).installationRepos
	case "apps/get-repo-installation", "apps/get-installation":
		return (*Server).installation
	case "apps/list-installations":
		return (*Server).listInstallations
	case "apps/list-webhook-deliveries":
		return (*Server).listHookDeliveries
	case "apps/redeliver-webhook-delivery":
		return (*Server).redeliverHookDelivery
	case "actions/create-workflow-dispatch":
		return (*Server).dispatch
	case "actions/list-workflow-runs":
		return (*Server).listRuns
	case "actions/get-workflow-run":
		return (*Server).getRun
	case "actions/list-workflow-run-artifacts":
		return (*Server).listArtifacts
	case "actions/download-artifact":
		return (*Server).downloadArtifact
	case "users/get-by-username":
		return (*Server).getUser
	}
	return nil
}

// template is the documented example of opID's success answer, the first
// item of it for a list, as a fresh map to overlay.
func (s *Server) template(opID, status string) map[string]any {
	op := s.desc.ops[opID]
	if op == nil {
		return map[string]any{}
	}
	if op.responses[status] == nil && !s.checked {
		s.violate("%s", offlineGap(opID))
	}
	_, ex, _ := s.desc.example(op, status)
	if l, ok := ex.([]any); ok && len(l) > 0 {
		ex = l[0]
	}
	if m, ok := ex.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

// set overlays value at a dotted path, making the objects on the way.
func set(m map[string]any, path string, value any) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = value
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func (s *Server) apiURL(format string, args ...any) string {
	return strings.TrimSuffix(s.URL, "/") + fmt.Sprintf(format, args...)
}

func intParam(rq *request, name string) int64 {
	n, _ := strconv.ParseInt(rq.params[name], 10, 64)
	return n
}

func withUser(m map[string]any, field, login string) {
	set(m, field+".login", login)
	typ := "User"
	if strings.HasSuffix(login, "[bot]") {
		typ = "Bot"
	}
	set(m, field+".type", typ)
}

// userID is the account id of login: one per login, the same every time.
func (st *state) userID(login string) int64 {
	key := strings.ToLower(login)
	if st.userIDs == nil {
		st.userIDs = map[string]int64{}
	}
	if st.userIDs[key] == 0 {
		st.userIDs[key] = st.id()
	}
	return st.userIDs[key]
}

// withAccount overlays the account login, with its id and addresses, at
// field.
func (s *Server) withAccount(m map[string]any, field, login string) {
	sub, _ := m[field].(map[string]any)
	if sub == nil {
		sub = map[string]any{}
		m[field] = sub
	}
	s.account(sub, login)
}

// account overlays the account login on m, a user object.
func (s *Server) account(m map[string]any, login string) {
	typ := "User"
	if strings.HasSuffix(login, "[bot]") {
		typ = "Bot"
	}
	id := s.st.userID(login)
	set(m, "login", login)
	set(m, "type", typ)
	set(m, "id", id)
	set(m, "node_id", fmt.Sprintf("U_fake%d", id))
	set(m, "url", s.apiURL("/users/%s", url.PathEscape(login)))
	set(m, "html_url", "https://github.com/"+login)
}

// getUser answers GET /users/{username}: every login is an account, its
// id the one runs and other answers name it by.
func (s *Server) getUser(rq *request) response {
	m := s.template(rq.op.id, "200")
	s.account(m, rq.params["username"])
	return response{status: http.StatusOK, body: m}
}

// --- issue comments ---

func (s *Server) commentJSON(c *comment) map[string]any {
	m := s.template("issues/get-comment", "200")
	set(m, "id", c.ID)
	set(m, "node_id", fmt.Sprintf("IC_fake%d", c.ID))
	set(m, "body", c.Body)
	set(m, "url", s.apiURL("/repos/%s/%s/issues/comments/%d", c.owner, c.name, c.ID))
	set(m, "html_url", c.HTMLURL)
	set(m, "issue_url", s.apiURL("/repos/%s/%s/issues/%d", c.owner, c.name, c.issue))
	set(m, "created_at", stamp(c.created))
	set(m, "updated_at", stamp(c.updated))
	withUser(m, "user", c.User)
	return m
}

// commentTooLong is GitHub's answer to a body over its limit.
func commentTooLong() response {
	return response{status: http.StatusUnprocessableEntity, body: map[string]any{
		"message": "Validation Failed",
		"errors": []any{map[string]any{
			"resource": "IssueComment", "code": "custom", "field": "body",
			"message": fmt.Sprintf("body is too long (maximum is %d characters)", maxCommentLength),
		}},
		"documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
		"status":            "422",
	}}
}

func (s *Server) listComments(rq *request) response {
	issue := int(intParam(rq, "issue_number"))
	var since time.Time
	if v := rq.query.Get("since"); v != "" {
		since, _ = time.Parse(time.RFC3339, v)
	}
	var cs []*comment
	for _, c := range s.st.comments {
		if c.repo == rq.repo && c.issue == issue && !c.updated.Before(since) {
			cs = append(cs, c)
		}
	}
	from, to, h := page(rq, len(cs))
	out := []any{}
	for _, c := range cs[from:to] {
		out = append(out, s.commentJSON(c))
	}
	return response{status: http.StatusOK, body: out, header: h}
}

func (s *Server) createComment(rq *request) response {
	body := str(rq.body["body"])
	if utf8.RuneCountInString(body) > maxCommentLength {
		return commentTooLong()
	}
	c := s.addComment(rq.params["owner"], rq.params["repo"], int(intParam(rq, "issue_number")), rq.user, body)
	m := s.commentJSON(c)
	return response{status: http.StatusCreated, body: m, header: http.Header{"Location": {str(m["url"])}}}
}

func (s *Server) addComment(owner, name string, issue int, user, body string) *comment {
	repo := repoKey(owner, name)
	kind := "issues"
	if s.st.pulls[pullKey(repo, issue)] != nil || s.st.files[pullKey(repo, issue)] != nil {
		kind = "pull"
	}
	now := time.Now()
	c := &comment{repo: repo, owner: owner, name: name, issue: issue, created: now, updated: now}
	c.ID, c.Body, c.User = s.st.id(), body, user
	c.HTMLURL = fmt.Sprintf("https://github.com/%s/%s/%s/%d#issuecomment-%d", c.owner, c.name, kind, issue, c.ID)
	s.st.comments = append(s.st.comments, c)
	if p := s.st.pulls[pullKey(repo, issue)]; p != nil {
		s.st.touch(p)
	}
	return c
}

// PostComment is user commenting on an issue or pull request, as the
// issue_comment event that tells of it would say; it returns the comment.
func (s *Server) PostComment(owner, repo string, issue int, user, body string) Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addComment(owner, repo, issue, user, body).Comment
}

func (s *Server) findComment(rq *request) (int, *comment) {
	id := intParam(rq, "comment_id")
	for i, c := range s.st.comments {
		if c.repo == rq.repo && c.ID == id {
			return i, c
		}
	}
	return -1, nil
}

func (s *Server) getComment(rq *request) response {
	_, c := s.findComment(rq)
	if c == nil {
		return notFound()
	}
	return response{status: http.StatusOK, body: s.commentJSON(c)}
}

func (s *Server) updateComment(rq *request) response {
	_, c := s.findComment(rq)
	if c == nil {
		return notFound()
	}
	body := str(rq.body["body"])
	if utf8.RuneCountInString(body) > maxCommentLength {
		return commentTooLong()
	}
	c.Body, c.updated = body, time.Now()
	return response{status: http.StatusOK, body: s.commentJSON(c)}
}

func (s *Server) deleteComment(rq *request) response {
	i, c := s.findComment(rq)
	if c == nil {
		return notFound()
	}
	s.st.comments = append(s.st.comments[:i:i], s.st.comments[i+1:]...)
	return response{status: http.StatusNoContent}
}

func (s *Server) createReaction(rq *request) response {
	_, c := s.findComment(rq)
	if c == nil {
		return notFound()
	}
	content := str(rq.body["content"])
	status := http.StatusOK
	var r *reaction
	for _, x := range s.st.reactions {
		if x.repo == rq.repo && x.commentID == c.ID && x.content == content && x.user == rq.user {
			r = x
		}
	}
	if r == nil {
		r = &reaction{repo: rq.repo, commentID: c.ID, id: s.st.id(), content: content, user: rq.user}
		s.st.reactions = append(s.st.reactions, r)
		status = http.StatusCreated
	}
	m := s.template(rq.op.id, strconv.Itoa(status))
	set(m, "id", r.id)
	set(m, "content", r.content)
	withUser(m, "user", r.user)
	return response{status: status, body: m}
}

// --- check runs ---

func (s *Server) checkRunJSON(c *checkRun) map[string]any {
	m := s.template("checks/get", "200")
	owner, name, _ := strings.Cut(c.repo, "/")
	set(m, "id", c.ID)
	set(m, "node_id", fmt.Sprintf("CR_fake%d", c.ID))
	set(m, "name", c.Name)
	set(m, "head_sha", c.HeadSHA)
	set(m, "status", c.Status)
	set(m, "conclusion", nullable(c.Conclusion))
	set(m, "started_at", nullable(c.started))
	set(m, "completed_at", nullable(c.completed))
	set(m, "external_id", c.externalID)
	set(m, "details_url", c.detailsURL)
	set(m, "url", s.apiURL("/repos/%s/%s/check-runs/%d", owner, name, c.ID))
	set(m, "html_url", fmt.Sprintf("https://github.com/%s/%s/runs/%d", owner, name, c.ID))
	set(m, "output.title", nullable(c.Title))
	set(m, "output.summary", nullable(c.Summary))
	set(m, "output.text", nullable(c.Text))
	setCheckApp(m, c.app)
	return m
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// applyCheckRun takes the fields a create or update request sets.
// checkActions refuses a check run's actions as GitHub documents it does:
// at most 3, a label and an identifier of at most 20 characters, a
// description of at most 40.
func checkActions(b map[string]any) (response, bool) {
	acts, _ := b["actions"].([]any)
	if len(acts) > 3 {
		return ghError(http.StatusUnprocessableEntity, "Invalid request.\n\nA check run may have at most 3 actions."), true
	}
	for _, a := range acts {
		m, _ := a.(map[string]any)
		for field, most := range map[string]int{"label": 20, "identifier": 20, "description": 40} {
			if utf8.RuneCountInString(str(m[field])) > most {
				return ghError(http.StatusUnprocessableEntity, fmt.Sprintf("Invalid request.\n\nAn action's %s is longer than %d characters.", field, most)), true
			}
		}
	}
	return response{}, false
}

func applyCheckRun(c *checkRun, b map[string]any) {
	for field, dst := range map[string]*string{
		"name": &c.Name, "status": &c.Status, "conclusion": &c.Conclusion, "details_url": &c.detailsURL,
		"external_id": &c.externalID, "started_at": &c.started, "completed_at": &c.completed,
	} {
		if v, ok := b[field].(string); ok {
			*dst = v
		}
	}
	if acts, ok := b["actions"].([]any); ok {
		c.Actions = nil
		for _, a := range acts {
			m, _ := a.(map[string]any)
			c.Actions = append(c.Actions, CheckAction{Label: str(m["label"]), Description: str(m["description"]), Identifier: str(m["identifier"])})
		}
	}
	if out, ok := b["output"].(map[string]any); ok {
		for field, dst := range map[string]*string{"title": &c.Title, "summary": &c.Summary, "text": &c.Text} {
			if v, ok := out[field].(string); ok {
				*dst = v
			}
		}
	}
	// GitHub: "Providing conclusion will automatically set the status
	// parameter to completed."
	if c.Conclusion != "" {
		c.Status = "completed"
	}
	if c.Status == "completed" && c.completed == "" {
		c.completed = stamp(time.Now())
	}
}

func (s *Server) createCheckRun(rq *request) response {
	c := &checkRun{repo: rq.repo, started: stamp(time.Now()), app: s.st.appOf(bearer(rq.r.Header.Get("Authorization")))}
	c.ID, c.HeadSHA, c.Status = s.st.id(), str(rq.body["head_sha"]), "queued"
	if r, bad := checkActions(rq.body); bad {
		return r
	}
	applyCheckRun(c, rq.body)
	if c.Status == "completed" && c.Conclusion == "" {
		return ghError(http.StatusUnprocessableEntity, "Invalid request.\n\nNo conclusion provided for a check run with status completed.")
	}
	s.st.checkRuns = append(s.st.checkRuns, c)
	return response{status: http.StatusCreated, body: s.checkRunJSON(c)}
}

func (s *Server) findCheckRun(rq *request) *checkRun {
	id := intParam(rq, "check_run_id")
	for _, c := range s.st.checkRuns {
		if c.repo == rq.repo && c.ID == id {
			return c
		}
	}
	return nil
}

func (s *Server) updateCheckRun(rq *request) response {
	c := s.findCheckRun(rq)
	if c == nil {
		return notFound()
	}
	if r, bad := checkActions(rq.body); bad {
		return r
	}
	applyCheckRun(c, rq.body)
	return response{status: http.StatusOK, body: s.checkRunJSON(c)}
}

func (s *Server) getCheckRun(rq *request) response {
	c := s.findCheckRun(rq)
	if c == nil {
		return notFound()
	}
	return response{status: http.StatusOK, body: s.checkRunJSON(c)}
}

func (s *Server) listCheckRuns(rq *request) response {
	ref := rq.params["ref"]
	name, st, app := rq.query.Get("check_name"), rq.query.Get("status"), rq.query.Get("app_id")
	latest := rq.query.Get("filter") != "all"
	var runs []*checkRun
	seen := map[string]int{}
	for _, c := range s.st.checkRuns {
		if c.repo != rq.repo || c.HeadSHA != ref || (name != "" && c.Name != name) || (st != "" && c.Status != st) ||
			(app != "" && app != strconv.FormatInt(c.app.ID, 10)) {
			continue
		}
		// filter=latest (the default) keeps the most recent run of each name.
		if i, dup := seen[c.Name]; dup && latest {
			runs[i] = c
			continue
		}
		seen[c.Name] = len(runs)
		runs = append(runs, c)
	}
	from, to, h := page(rq, len(runs))
	items := []any{}
	for _, c := range runs[from:to] {
		items = append(items, s.checkRunJSON(c))
	}
	return response{status: http.StatusOK, header: h, body: map[string]any{"total_count": len(runs), "check_runs": items}}
}

// --- commit statuses ---

func (s *Server) createStatus(rq *request) response {
	b := rq.body
	st := &status{repo: rq.repo, sha: rq.params["sha"], id: s.st.id(), creator: rq.user, at: stamp(time.Now())}
	st.State, st.Description, st.targetURL, st.Context = str(b["state"]), str(b["description"]), str(b["target_url"]), str(b["context"])
	if st.Context == "" {
		st.Context = "default"
	}
	if utf8.RuneCountInString(st.Description) > maxStatusDescLen {
		return response{status: http.StatusUnprocessableEntity, body: map[string]any{
			"message": "Validation Failed",
			"errors": []any{map[string]any{"resource": "Status", "code": "custom", "field": "description",
				"message": fmt.Sprintf("description is too long (maximum is %d characters)", maxStatusDescLen)}},
			"documentation_url": "https://docs.github.com/rest/commits/statuses#create-a-commit-status", "status": "422",
		}}
	}
	s.st.statuses = append(s.st.statuses, st)
	m := s.template(rq.op.id, "201")
	s.statusJSON(m, st, rq.params["owner"], rq.params["repo"])
	withUser(m, "creator", st.creator)
	return response{status: http.StatusCreated, body: m}
}

// --- pull requests ---

// pullJSON overlays what the fake knows of pull request number onto the
// example of opID (pulls/get or the commit's pull list).
func (s *Server) pullJSON(rq *request, opID string, number int) map[string]any {
	m := s.template(opID, "200")
	owner, name := rq.params["owner"], rq.params["repo"]
	set(m, "number", number)
	set(m, "url", s.apiURL("/repos/%s/%s/pulls/%d", owner, name, number))
	set(m, "html_url", fmt.Sprintf("https://github.com/%s/%s/pull/%d", owner, name, number))
	set(m, "base.repo.name", name)
	set(m, "base.repo.full_name", owner+"/"+name)
	set(m, "base.repo.owner.login", owner)
	p := s.st.pulls[pullKey(rq.repo, number)]
	if p == nil {
		return m
	}
	set(m, "state", p.state)
	set(m, "head.sha", p.head)
	set(m, "base.ref", p.base)
	if sha := s.st.resolve(rq.repo, p.base); fullSHA.MatchString(sha) {
		// The base branch's commit, when the test pointed it at one
		// (SetBranch).
		set(m, "base.sha", sha)
	}
	set(m, "head.repo.fork", p.fork || p.repoIsFork)
	set(m, "base.repo.fork", p.repoIsFork)
	// A fork's head lives in the forker's repository, with an id of its
	// own, else in the base's.
	baseID := s.st.repoIDs[rq.repo]
	if baseID == 0 {
		baseID = 1296269 // GitHub's example repository
	}
	set(m, "base.repo.id", baseID)
	set(m, "head.repo.id", baseID)
	headOwner := owner
	if p.fork {
		headOwner = "forker-of-" + owner
		set(m, "head.repo.id", baseID+1_000_000)
	}
	set(m, "head.repo.name", name)
	set(m, "head.repo.full_name", headOwner+"/"+name)
	set(m, "head.repo.owner.login", headOwner)
	if head, ok := m["head"].(map[string]any); ok {
		set(m, "head.label", headOwner+":"+str(head["ref"]))
	}
	if p.headGone {
		set(m, "head.repo", nil)
	}
	set(m, "created_at", stamp(p.created))
	set(m, "updated_at", stamp(p.updated))
	if p.author != "" {
		withUser(m, "user", p.author)
	}
	// The list form (pull-request-simple) has no "merged", "mergeable" or
	// "comments".
	if _, ok := m["merged"]; ok {
		set(m, "merged", p.merged)
	}
	if _, ok := m["mergeable"]; ok && p.mergeableState != "" {
		set(m, "mergeable_state", p.mergeableState)
		set(m, "mergeable", mergeable(p.mergeableState))
	}
	if _, ok := m["comments"]; ok {
		set(m, "comments", s.commentCount(rq.repo, number))
	}
	if _, ok := m["commits"]; ok && p.commits > 0 {
		set(m, "commits", p.commits)
	}
	if p.headRef != "" {
		set(m, "head.ref", p.headRef)
		set(m, "head.label", headOwner+":"+p.headRef)
	}
	if p.merged {
		set(m, "merge_commit_sha", p.mergeSHA)
		set(m, "merged_at", stamp(p.mergedAt))
		set(m, "closed_at", stamp(p.mergedAt))
	} else {
		set(m, "merged_at", nil)
		set(m, "closed_at", nil)
	}
	return m
}

func (s *Server) getPull(rq *request) response {
	n := int(intParam(rq, "pull_number"))
	p := s.st.pulls[pullKey(rq.repo, n)]
	if p == nil {
		return notFound()
	}
	m := s.pullJSON(rq, rq.op.id, n)
	overlayComputing(m, p)
	return response{status: http.StatusOK, body: m}
}

func (s *Server) listFiles(rq *request) response {
	key := pullKey(rq.repo, int(intParam(rq, "pull_number")))
	files, ok := s.st.files[key]
	if !ok && s.st.pulls[key] == nil {
		return notFound()
	}
	files = files[:min(len(files), maxFilesListed)]
	from, to, h := page(rq, len(files))
	out := []any{}
	owner, name := rq.params["owner"], rq.params["repo"]
	for _, f := range files[from:to] {
		m := s.template(rq.op.id, "200")
		set(m, "filename", f.Filename)
		set(m, "status", f.Status)
		set(m, "blob_url", fmt.Sprintf("https://github.com/%s/%s/blob/HEAD/%s", owner, name, f.Filename))
		set(m, "raw_url", fmt.Sprintf("https://github.com/%s/%s/raw/HEAD/%s", owner, name, f.Filename))
		set(m, "contents_url", s.apiURL("/repos/%s/%s/contents/%s", owner, name, f.Filename))
		delete(m, "previous_filename")
		if f.PreviousFilename != "" {
			set(m, "previous_filename", f.PreviousFilename)
		}
		out = append(out, m)
	}
	return response{status: http.StatusOK, body: out, header: h}
}

func (s *Server) commitPulls(rq *request) response {
	numbers := s.st.commitPulls[rq.repo+"@"+rq.params["commit_sha"]]
	from, to, h := page(rq, len(numbers))
	out := []any{}
	for _, n := range numbers[from:to] {
		out = append(out, s.pullJSON(rq, rq.op.id, n))
	}
	return response{status: http.StatusOK, body: out, header: h}
}

// --- permissions and tokens ---

func (s *Server) permission(rq *request) response {
	role := s.st.perms[rq.repo+"/"+strings.ToLower(rq.params["username"])]
	if role == "" {
		return notFound()
	}
	// The legacy "permission" field knows only admin, write, read and none.
	perm := map[string]string{"maintain": "write", "triage": "read"}[role]
	if perm == "" {
		perm = role
	}
	m := s.template(rq.op.id, "200")
	set(m, "permission", perm)
	set(m, "role_name", role)
	set(m, "user.login", rq.params["username"])
	return response{status: http.StatusOK, body: m}
}

func (s *Server) accessToken(rq *request) response {
	inst := intParam(rq, "installation_id")
	if s.st.appKey != nil && !containsID(s.installations(), inst) {
		return notFound()
	}
	var scope []string
	for _, r := range list(rq.body["repositories"]) {
		name := strings.ToLower(str(r))
		if s.st.appKey != nil && !s.installedName(inst, name) {
			return ghError(http.StatusUnprocessableEntity, "There is at least one repository that does not exist or is not accessible to the parent installation.")
		}
		scope = append(scope, name)
	}
	token := fmt.Sprintf("ghs_fake%032d", s.st.id())
	s.st.tokens[token] = s.st.appLogin
	s.st.tokenInstall[token] = inst
	if len(scope) > 0 {
		s.st.tokenScope[token] = scope
	}
	m := s.template(rq.op.id, "201")
	set(m, "token", token)
	set(m, "expires_at", stamp(time.Now().Add(time.Hour)))
	return response{status: http.StatusCreated, body: m}
}
