// Package githubfake plays api.github.com for integration tests, GitHub
// being the one service the project fakes. Every request is checked against
// GitHub's published REST description (@octokit/openapi) and answered with
// its documented example, overlaid with the state tests set and requests
// built; every answer is checked against the documented response schema
// too, so the fake cannot drift from GitHub unnoticed. Webhook events come
// from GitHub's published payloads (@octokit/webhooks-examples).
//
// hack/testenv.sh installs both packages and "env" points
// KUSIONPR_TEST_OCTOKIT_DIR at them. Without them (a plain go test) the
// fake serves the same answers from a cut of them kept in offline/, without
// the check (offline.go); make test requires them.
package githubfake

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a fake api.github.com. Every request is checked against the
// OpenAPI description: an unknown method+path, a missing required
// parameter, or a body that does not match the operation's request schema
// is answered 404/422 and recorded as a violation, which fails the test at
// its end.
type Server struct {
	// URL is the base URL, ending in "/", for go-github's BaseURL or
	// WithEnterpriseURLs (whose "api/v3/" suffix the fake accepts too).
	URL string

	// CAPEM is, for a fake of NewTLS, the PEM certificate of the authority
	// that signed its certificate.
	CAPEM []byte

	desc *description
	// checked: desc is GitHub's whole description, and requests and answers
	// are checked against its schemas; false for the offline cut.
	checked          bool
	hs               *httptest.Server
	failOnViolations bool

	mu         sync.Mutex
	calls      []Call
	violations []string
	expected   []string // substrings of violations a test makes on purpose (ExpectViolation)
	st         state
	faults     faults
}

// faults are GitHub's documented transient answers, injected per test.
type faults struct {
	secondaryAt int    // the Nth content-creating request (1-based) is rate limited
	writes      int    // content-creating requests seen
	serverError string // the next request of this method is answered 502
	secondaryOp string // the next request of this operation is rate limited
}

// SecondaryLimitOnOperation makes the next request of the operation
// (GitHub's operationId, as "issues/create-comment") answer as
// SecondaryLimitOn's does, once: for a test whose other writes come at
// times it does not control.
func (s *Server) SecondaryLimitOnOperation(op string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.secondaryOp = op
}

// SecondaryLimitOn makes the nth content-creating request (POST, PATCH,
// PUT, DELETE; counted from 1, retries included) answer as GitHub's
// secondary rate limit does: 403, Retry-After: 1, and its message.
func (s *Server) SecondaryLimitOn(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.secondaryAt = n
}

// ServerErrorOnce makes the next request of method answer 502 Bad Gateway,
// once.
func (s *Server) ServerErrorOnce(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.serverError = method
}

// fault is the injected answer to a valid request, if any.
func (s *Server) fault(method, op string) (response, bool) {
	if method == s.faults.serverError {
		s.faults.serverError = ""
		return ghError(http.StatusBadGateway, "Server Error"), true
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		return response{}, false
	}
	s.faults.writes++
	if op != "" && op == s.faults.secondaryOp {
		s.faults.secondaryOp = ""
	} else if s.faults.writes != s.faults.secondaryAt {
		return response{}, false
	}
	r := ghError(http.StatusForbidden, "You have exceeded a secondary rate limit and have been temporarily blocked from content creation. Please retry your request again later. If you reach out to GitHub Support for help, please include the request ID.")
	r.header = http.Header{"Retry-After": {"1"}}
	return r, true
}

// Call is one request the fake received.
type Call struct {
	Method, Path string // Path without the query, and without an "/api/v3" prefix
	Query        url.Values
	Body         []byte
	Operation    string // operationId in GitHub's description; "" if none matched
	At           time.Time
}

// New starts a fake. The test fails at its end if any request broke
// GitHub's description. When hack/testenv.sh did not install the
// description the fake serves unchecked, and says so in the test's log;
// under KUSIONPR_REQUIRE_TESTENV (make test) that fails the test instead.
func New(t testing.TB) *Server {
	t.Helper()
	return newServer(t, true, nil)
}

// NewTLS starts a fake that answers over HTTPS only, with a certificate for
// 127.0.0.1 signed by a certificate authority of the test's own, which
// clients must be told to trust: CAPEM is that authority's certificate.
func NewTLS(t testing.TB) *Server {
	t.Helper()
	ca, err := newTestCA()
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, true, ca)
	s.CAPEM = ca.pem
	return s
}

// newServer with failOnViolations false lets the package's own tests make
// bad requests on purpose and read Violations.
func newServer(t testing.TB, failOnViolations bool, ca *testCA) *Server {
	t.Helper()
	d, checked := descriptionFor(t)
	return serveDescription(t, d, checked, failOnViolations, ca)
}

// serveDescription starts a fake serving from d.
func serveDescription(t testing.TB, d *description, checked, failOnViolations bool, ca *testCA) *Server {
	t.Helper()
	s := &Server{desc: d, checked: checked, failOnViolations: failOnViolations, st: newState(d)}
	s.hs = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	if ca != nil {
		s.hs.TLS = &tls.Config{Certificates: []tls.Certificate{ca.leaf}}
		s.hs.StartTLS()
	} else {
		s.hs.Start()
	}
	s.URL = s.hs.URL + "/"
	t.Cleanup(func() {
		s.hs.Close()
		v, unmet := s.unexpected()
		if failOnViolations && len(v) > 0 {
			t.Errorf("githubfake: %d request(s) broke GitHub's REST description:\n  %s", len(v), strings.Join(v, "\n  "))
		}
		for _, e := range unmet {
			t.Errorf("githubfake: the test expected a request GitHub refuses (%q), and none came", e)
		}
	})
	return s
}

// Calls returns every request received, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// ExpectViolation tells the fake that the test breaks one of GitHub's
// limits on purpose, to see the caller handle GitHub's refusal (a comment
// past 65,536 characters): violations containing substr do not fail the
// test, and the test fails if none comes.
func (s *Server) ExpectViolation(substr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expected = append(s.expected, substr)
}

// unexpected returns the violations no ExpectViolation expected, and the
// expectations no violation met.
func (s *Server) unexpected() (v, unmet []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	met := make([]bool, len(s.expected))
	for _, x := range s.violations {
		ok := false
		for i, e := range s.expected {
			if strings.Contains(x, e) {
				ok, met[i] = true, true
			}
		}
		if !ok {
			v = append(v, x)
		}
	}
	for i, e := range s.expected {
		if !met[i] {
			unmet = append(unmet, e)
		}
	}
	return v, unmet
}

// Violations returns what requests did that GitHub's description does not
// allow, and answers of the fake that its response schemas do not allow.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

func (s *Server) violate(format string, args ...any) {
	s.violations = append(s.violations, fmt.Sprintf(format, args...))
}

// request is a request that matched an operation of the description.
type request struct {
	r      *http.Request
	op     *operation
	params map[string]string
	query  url.Values
	body   map[string]any // the JSON body, numbers as json.Number; nil if none
	user   string         // the login the token acts as
	repo   string         // "owner/repo", lower-case: GitHub's names are case-insensitive
}

// response is what a handler answers; body is marshalled as JSON.
type response struct {
	status int
	body   any
	header http.Header
	// refusal: a 422 GitHub answers a well-formed request for what the
	// repository holds (a dispatch of a ref it lacks), not the caller's
	// slip, so not a violation.
	refusal bool
}

const docsURL = "https://docs.github.com/rest"

func ghError(status int, message string) response {
	return response{status: status, body: map[string]any{
		"message": message, "documentation_url": docsURL, "status": strconv.Itoa(status),
	}}
}

func notFound() response { return ghError(http.StatusNotFound, "Not Found") }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	path := r.URL.EscapedPath()
	// GitHub Enterprise serves the same API under /api/v3, and go-github's
	// WithEnterpriseURLs adds it.
	if strings.HasPrefix(path, "/api/v3/") {
		path = strings.TrimPrefix(path, "/api/v3")
	}
	decoded, err := url.PathUnescape(path)
	if err != nil {
		decoded = path
	}
	call := Call{Method: r.Method, Path: decoded, Query: r.URL.Query(), Body: raw, At: time.Now()}
	where := r.Method + " " + decoded

	s.mu.Lock()
	defer s.mu.Unlock()
	idx := len(s.calls)
	s.calls = append(s.calls, call)

	// Codeload URLs are pre-signed: no token, and no REST description.
	if strings.HasPrefix(path, codeloadPrefix) {
		s.serveCodeload(w, r, decoded)
		return
	}
	if strings.HasPrefix(path, artifactPrefix) {
		s.serveArtifact(w, r, decoded)
		return
	}
	token := bearer(r.Header.Get("Authorization"))
	if token == "" {
		s.violate("%s: no Authorization: Bearer/token header", where)
		s.write(w, nil, ghError(http.StatusUnauthorized, "Requires authentication"))
		return
	}
	op, params, allowed := s.desc.match(r.Method, strings.Split(strings.TrimPrefix(path, "/"), "/"))
	if op == nil {
		if allowed != nil {
			s.violate("%s: the description has this path only for %s", where, strings.Join(allowed, ", "))
		} else {
			s.violate("%s: no such operation in GitHub's REST description", where)
		}
		s.write(w, nil, notFound())
		return
	}
	s.calls[idx].Operation = op.id
	where = fmt.Sprintf("%s (%s)", where, op.id)
	rq := &request{r: r, op: op, params: params, query: r.URL.Query(), user: s.st.userOf(token)}
	rq.repo = strings.ToLower(params["owner"] + "/" + params["repo"])

	if resp, ok := s.checkAuth(rq, token); !ok {
		s.violate("%s: %s", where, errorText(resp.body))
		s.write(w, op, resp)
		return
	}
	if resp, ok := s.checkRequest(rq, raw); !ok {
		s.violate("%s: %s", where, errorText(resp.body))
		s.write(w, op, resp)
		return
	}
	if resp, ok := s.fault(r.Method, op.id); ok {
		// Not checked against the operation: GitHub answers these to any.
		s.write(w, nil, resp)
		return
	}
	resp := s.answer(rq)
	if resp.status == http.StatusUnprocessableEntity && !resp.refusal {
		// A limit GitHub enforces beyond the schema (a comment's length): the
		// caller should have kept to it.
		s.violate("%s: %s", where, errorText(resp.body))
	}
	s.write(w, op, resp)
}

// errorText is the messages of a GitHub error answer, one line.
func errorText(body any) string {
	m, _ := body.(map[string]any)
	var msgs []string
	for _, e := range list(m["errors"]) {
		if em, _ := e.(map[string]any); str(em["message"]) != "" {
			msgs = append(msgs, str(em["message"]))
		}
	}
	if len(msgs) == 0 {
		return strings.ReplaceAll(str(m["message"]), "\n\n", ": ")
	}
	return strings.Join(msgs, "; ")
}

func bearer(h string) string {
	for _, scheme := range []string{"Bearer ", "bearer ", "token ", "Token "} {
		if t, ok := strings.CutPrefix(h, scheme); ok {
			return strings.TrimSpace(t)
		}
	}
	return ""
}

// checkRequest checks path and query parameters and the JSON body against
// the operation; on failure it returns GitHub's 400/422 answer, whose
// errors say what was wrong. Without the whole description it only reads
// the body, which a body that is not JSON still fails.
func (s *Server) checkRequest(rq *request, raw []byte) (response, bool) {
	v := &validator{d: s.desc, strict: true}
	declared := map[string]bool{}
	for _, p := range rq.op.params {
		if !s.checked {
			break
		}
		name, in := str(p["name"]), str(p["in"])
		schema := s.desc.resolve(p["schema"])
		required, _ := p["required"].(bool)
		switch in {
		case "path":
			v.check(schema, paramValue(schema, []string{rq.params[name]}), "path parameter "+name, nil)
		case "query":
			declared[name] = true
			vals, ok := rq.query[name]
			if !ok {
				if required {
					v.fail("query", "missing required parameter %q", name)
				}
				continue
			}
			v.check(schema, paramValue(schema, vals), "query parameter "+name, nil)
		}
	}
	for name := range rq.query {
		if s.checked && !declared[name] {
			v.fail("query", "unknown parameter %q", name)
		}
	}
	trimmed := bytes.TrimSpace(raw)
	// go-github sends "null" for an optional body it was given no options
	// for, and GitHub takes that as no body.
	if len(trimmed) == 0 || (!rq.op.bodyReq && string(trimmed) == "null") {
		if rq.op.bodyReq && s.checked {
			v.fail("body", "missing: the operation requires a request body")
		}
	} else if rq.op.bodyJSON {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var body any
		if err := dec.Decode(&body); err != nil {
			msg := "Problems parsing JSON"
			return response{status: http.StatusBadRequest, body: map[string]any{
				"message": msg, "documentation_url": docsURL, "status": "400",
				"errors": []any{map[string]any{"code": "invalid", "message": "body: " + err.Error()}},
			}}, false
		}
		if s.checked {
			v.check(rq.op.body, body, "body", nil)
		}
		rq.body, _ = body.(map[string]any)
	}
	if len(v.errs) == 0 {
		return response{}, true
	}
	errs := make([]any, len(v.errs))
	for i, e := range v.errs {
		errs[i] = map[string]any{"code": "invalid", "message": e}
	}
	return response{status: http.StatusUnprocessableEntity, body: map[string]any{
		"message": "Invalid request.\n\n" + strings.Join(v.errs, "\n"), "documentation_url": docsURL,
		"status": "422", "errors": errs,
	}}, false
}

// answer runs the operation's stateful handler, or answers with the
// documented example.
func (s *Server) answer(rq *request) response {
	if h := handler(rq.op.id); h != nil {
		return h(s, rq)
	}
	if h := issueHandler(rq.op.id); h != nil {
		return h(s, rq)
	}
	status := rq.op.successStatus()
	if status == "" && !s.checked {
		s.violate("%s %s: %s", rq.r.Method, rq.op.template, offlineGap(rq.op.id))
		return ghError(http.StatusNotImplemented, offlineGap(rq.op.id))
	}
	code, _ := strconv.Atoi(status)
	if code == 0 {
		code = http.StatusOK
	}
	_, ex, _ := s.desc.example(rq.op, status)
	return response{status: code, body: ex}
}

// write sends resp, after checking it against the operation's documented
// response for its status. An answer may differ from the schema only where
// GitHub's own example does, so a faulty overlay is caught while the
// examples' known slips are not blamed on the fake.
func (s *Server) write(w http.ResponseWriter, op *operation, resp response) {
	for k, vs := range resp.header {
		w.Header()[k] = vs
	}
	var out []byte
	if resp.body != nil {
		var err error
		if out, err = json.Marshal(resp.body); err != nil {
			s.violate("githubfake: cannot marshal its answer: %v", err)
			resp.status, out = http.StatusInternalServerError, nil
		}
	}
	if op != nil && s.checked {
		s.checkResponse(op, resp.status, out)
	}
	h := w.Header()
	h.Set("X-GitHub-Media-Type", "github.v3; format=json")
	h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", "4999")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	if out != nil {
		h.Set("Content-Type", "application/json; charset=utf-8")
	}
	w.WriteHeader(resp.status)
	_, _ = w.Write(out)
}

func (s *Server) checkResponse(op *operation, status int, out []byte) {
	code := strconv.Itoa(status)
	schema, example, documented := s.desc.example(op, code)
	where := fmt.Sprintf("answer %d to %s %s (%s)", status, op.method, op.template, op.id)
	if !documented {
		if status < 300 {
			s.violate("%s: GitHub does not document this status", where)
		}
		return
	}
	if schema == nil {
		if len(out) > 0 && status < 300 {
			s.violate("%s: GitHub documents no body, the fake sent one", where)
		}
		return
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var got any
	if err := dec.Decode(&got); err != nil {
		s.violate("%s: not JSON: %v", where, err)
		return
	}
	base := &validator{d: s.desc}
	if example != nil {
		base.check(schema, normalize(example), "response", nil)
	}
	known := map[string]bool{}
	for _, e := range base.errs {
		known[anyIndex(e)] = true
	}
	v := &validator{d: s.desc}
	v.check(schema, got, "response", nil)
	for _, e := range v.errs {
		if !known[anyIndex(e)] && !descriptionGap(op.id, e) {
			s.violate("%s: %s", where, e)
		}
	}
}

// anyIndex drops the list indices of a validation error, so that a slip of
// the example's one list item excuses the same slip in every item built
// from it.
func anyIndex(e string) string {
	var b strings.Builder
	skip := false
	for _, r := range e {
		switch {
		case r == '[':
			skip = true
			b.WriteRune(r)
		case r == ']':
			skip = false
			b.WriteRune(r)
		case skip && r >= '0' && r <= '9':
		default:
			skip = false
			b.WriteRune(r)
		}
	}
	return b.String()
}

// normalize gives a Go value the shape decoding with UseNumber gives it.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	_ = dec.Decode(&out)
	return out
}

// page cuts a list of total items as GitHub paginates it (per_page, at
// most 100, default 30; page from 1) and returns the Link header GitHub
// sends with it.
func page(rq *request, total int) (from, to int, header http.Header) {
	per := 30
	if n, err := strconv.Atoi(rq.query.Get("per_page")); err == nil && n > 0 {
		per = min(n, 100)
	}
	p := 1
	if n, err := strconv.Atoi(rq.query.Get("page")); err == nil && n > 0 {
		p = n
	}
	last := max(1, (total+per-1)/per)
	from, to = min((p-1)*per, total), min(p*per, total)
	link := func(n int, rel string) string {
		q := url.Values{}
		for k, v := range rq.query {
			q[k] = v
		}
		q.Set("page", strconv.Itoa(n))
		u := url.URL{Scheme: "http", Host: rq.r.Host, Path: rq.r.URL.Path, RawQuery: q.Encode()}
		return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
	}
	var links []string
	if p > 1 {
		links = append(links, link(min(p-1, last), "prev"))
	}
	if p < last {
		links = append(links, link(p+1, "next"), link(last, "last"))
	}
	if p > 1 {
		links = append(links, link(1, "first"))
	}
	header = http.Header{}
	if len(links) > 0 {
		header.Set("Link", strings.Join(links, ", "))
	}
	return from, to, header
}
