package githubfake

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// maxIssueBodyLength is the most characters GitHub takes in an issue's
// body, as in a comment's.
const maxIssueBodyLength = 65536

type issue struct {
	repo, owner, name string
	Issue
	created, updated, closed time.Time
}

// Issue is an issue as GitHub keeps it (not a pull request).
type Issue struct {
	Number             int
	Title, Body, User  string
	State, StateReason string
	Labels             []string
	ClosedBy           string
	HTMLURL            string
	Created, Updated   time.Time
	ClosedAt           time.Time
}

// issueHandler answers the issue operations.
func issueHandler(opID string) func(*Server, *request) response {
	switch opID {
	case "issues/create":
		return (*Server).createIssue
	case "issues/get":
		return (*Server).getIssue
	case "issues/update":
		return (*Server).updateIssue
	case "issues/list-for-repo":
		return (*Server).listIssues
	}
	return nil
}

// Issues returns the repository's issues, in the order they were opened.
func (s *Server) Issues(owner, repo string) []Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Issue
	for _, is := range s.st.issues {
		if is.repo == repoKey(owner, repo) {
			c := is.Issue
			c.Labels = slices.Clone(is.Labels)
			out = append(out, c)
		}
	}
	return out
}

// OpenIssue is user opening an issue (as a person would, through the web).
func (s *Server) OpenIssue(owner, repo, user, title, body string, labels []string) Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addIssue(owner, repo, user, title, body, labels).Issue
}

// CloseIssue is user closing an issue by hand.
func (s *Server) CloseIssue(owner, repo string, number int, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is := s.findIssue(repoKey(owner, repo), number); is != nil {
		now := time.Now()
		is.State, is.StateReason, is.ClosedBy, is.closed, is.updated = "closed", "completed", user, now, now
	}
}

func (s *Server) addIssue(owner, name, user, title, body string, labels []string) *issue {
	repo := repoKey(owner, name)
	// Issues and pull requests share their numbers.
	n := 0
	for _, p := range s.st.pulls {
		n = max(n, p.number)
	}
	for k := range s.st.files {
		var num int
		if _, err := fmt.Sscanf(k[strings.LastIndex(k, "#"):], "#%d", &num); err == nil {
			n = max(n, num)
		}
	}
	for _, is := range s.st.issues {
		if is.repo == repo {
			n = max(n, is.Number)
		}
	}
	now := time.Now()
	is := &issue{repo: repo, owner: owner, name: name, created: now, updated: now}
	is.Number, is.Title, is.Body, is.User, is.State = n+1, title, body, user, "open"
	is.Labels = slices.Clone(labels)
	is.HTMLURL = fmt.Sprintf("https://github.com/%s/%s/issues/%d", owner, name, is.Number)
	is.Created, is.Updated = now, now
	s.st.issues = append(s.st.issues, is)
	return is
}

func (s *Server) findIssue(repo string, number int) *issue {
	for _, is := range s.st.issues {
		if is.repo == repo && is.Number == number {
			return is
		}
	}
	return nil
}

func (s *Server) issueJSON(is *issue) map[string]any {
	m := s.template("issues/get", "200")
	if _, ok := m["$ref"]; ok {
		// The operation's example is a reference to GitHub's shared one.
		if e := s.desc.resolve(m); e != nil {
			m, _ = deepCopy(e["value"]).(map[string]any)
		}
	}
	if m == nil {
		m = map[string]any{}
	}
	delete(m, "pull_request")
	set(m, "id", int64(is.Number)+900000)
	set(m, "node_id", fmt.Sprintf("I_fake%d", is.Number))
	set(m, "number", is.Number)
	set(m, "title", is.Title)
	set(m, "body", is.Body)
	set(m, "state", is.State)
	if is.StateReason != "" {
		set(m, "state_reason", is.StateReason)
	} else {
		set(m, "state_reason", nil)
	}
	set(m, "url", s.apiURL("/repos/%s/%s/issues/%d", is.owner, is.name, is.Number))
	set(m, "repository_url", s.apiURL("/repos/%s/%s", is.owner, is.name))
	set(m, "comments_url", s.apiURL("/repos/%s/%s/issues/%d/comments", is.owner, is.name, is.Number))
	set(m, "events_url", s.apiURL("/repos/%s/%s/issues/%d/events", is.owner, is.name, is.Number))
	set(m, "labels_url", s.apiURL("/repos/%s/%s/issues/%d/labels{/name}", is.owner, is.name, is.Number))
	set(m, "html_url", is.HTMLURL)
	set(m, "created_at", stamp(is.created))
	set(m, "updated_at", stamp(is.updated))
	if is.State == "closed" {
		set(m, "closed_at", stamp(is.closed))
	} else {
		set(m, "closed_at", nil)
	}
	set(m, "closed_by", nil)
	set(m, "assignee", nil)
	set(m, "assignees", []any{})
	set(m, "milestone", nil)
	comments := 0
	for _, c := range s.st.comments {
		if c.repo == is.repo && c.issue == is.Number {
			comments++
		}
	}
	set(m, "comments", comments)
	labels := []any{}
	for i, l := range is.Labels {
		labels = append(labels, map[string]any{
			"id": 7000 + i, "node_id": fmt.Sprintf("LA_fake%d", i), "name": l, "color": "ededed", "default": false, "description": nil,
			"url": s.apiURL("/repos/%s/%s/labels/%s", is.owner, is.name, l),
		})
	}
	set(m, "labels", labels)
	withUser(m, "user", is.User)
	return m
}

// issueTooLong is GitHub's answer to a body over its limit.
func issueTooLong() response {
	return response{status: http.StatusUnprocessableEntity, body: map[string]any{
		"message": "Validation Failed",
		"errors": []any{map[string]any{
			"resource": "Issue", "code": "custom", "field": "body",
			"message": fmt.Sprintf("body is too long (maximum is %d characters)", maxIssueBodyLength),
		}},
		"documentation_url": "https://docs.github.com/rest/issues/issues#create-an-issue",
		"status":            "422",
	}}
}

func labelNames(v any) []string {
	var out []string
	for _, l := range list(v) {
		switch t := l.(type) {
		case string:
			out = append(out, t)
		case map[string]any:
			if n := str(t["name"]); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

func (s *Server) createIssue(rq *request) response {
	body := str(rq.body["body"])
	if utf8.RuneCountInString(body) > maxIssueBodyLength {
		return issueTooLong()
	}
	is := s.addIssue(rq.params["owner"], rq.params["repo"], rq.user, str(rq.body["title"]), body, labelNames(rq.body["labels"]))
	m := s.issueJSON(is)
	return response{status: http.StatusCreated, body: m, header: http.Header{"Location": {str(m["url"])}}}
}

func (s *Server) getIssue(rq *request) response {
	is := s.findIssue(rq.repo, int(intParam(rq, "issue_number")))
	if is == nil {
		return notFound()
	}
	return response{status: http.StatusOK, body: s.issueJSON(is)}
}

func (s *Server) updateIssue(rq *request) response {
	is := s.findIssue(rq.repo, int(intParam(rq, "issue_number")))
	if is == nil {
		return notFound()
	}
	if v, ok := rq.body["body"]; ok {
		body := str(v)
		if utf8.RuneCountInString(body) > maxIssueBodyLength {
			return issueTooLong()
		}
		is.Body = body
	}
	if v, ok := rq.body["title"]; ok && str(v) != "" {
		is.Title = str(v)
	}
	if v, ok := rq.body["labels"]; ok {
		is.Labels = labelNames(v)
	}
	now := time.Now()
	if st := str(rq.body["state"]); st != "" && st != is.State {
		is.State = st
		if st == "closed" {
			is.closed, is.ClosedAt, is.ClosedBy = now, now, rq.user
		}
		is.StateReason = ""
	}
	if r := str(rq.body["state_reason"]); r != "" {
		is.StateReason = r
	}
	is.updated, is.Updated = now, now
	return response{status: http.StatusOK, body: s.issueJSON(is)}
}

// listIssues lists a repository's issues as GitHub does, newest first,
// filtered by state (default open), labels (all of them) and creator.
// GitHub lists pull requests among them too; the fake's pull requests
// carry no labels, so a list by label, the one the project makes, holds
// none.
func (s *Server) listIssues(rq *request) response {
	state := rq.query.Get("state")
	if state == "" {
		state = "open"
	}
	var want []string
	if l := rq.query.Get("labels"); l != "" {
		for _, n := range strings.Split(l, ",") {
			want = append(want, strings.TrimSpace(n))
		}
	}
	creator := rq.query.Get("creator")
	var found []*issue
	for i := len(s.st.issues) - 1; i >= 0; i-- {
		is := s.st.issues[i]
		if is.repo != rq.repo || (state != "all" && is.State != state) {
			continue
		}
		if creator != "" && !strings.EqualFold(creator, is.User) {
			continue
		}
		ok := true
		for _, w := range want {
			if !slices.ContainsFunc(is.Labels, func(l string) bool { return strings.EqualFold(l, w) }) {
				ok = false
			}
		}
		if ok {
			found = append(found, is)
		}
	}
	from, to, h := page(rq, len(found))
	out := []any{}
	for _, is := range found[from:to] {
		out = append(out, s.issueJSON(is))
	}
	return response{status: http.StatusOK, body: out, header: h}
}
