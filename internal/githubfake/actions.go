package githubfake

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// GitHub Actions: workflows a test declares, the runs a dispatch starts
// (queued until the test, playing the runner, completes them), their
// artifacts and the download GitHub redirects to another host.

// artifactPrefix is where the fake serves the artifact zips the download
// operation redirects to: a pre-signed address on another host on GitHub,
// outside the REST description.
const artifactPrefix = "/_artifacts/"

// Workflow is a workflow file of a repository, as far as a dispatch cares.
type Workflow struct {
	// Inputs are the names of its workflow_dispatch inputs; a dispatch
	// with another is refused, as GitHub does.
	Inputs []string
	// RunName is its run-name; "${{ inputs.NAME }}" is replaced with the
	// dispatch's input, as GitHub evaluates it.
	RunName string
}

// Dispatch is a workflow_dispatch the fake accepted, and the run it made.
type Dispatch struct {
	Owner, Repo, Workflow, Ref string
	Inputs                     map[string]string
	RunID                      int64
	// Actor is the login that dispatched: the user the token acts as (the
	// App's bot user for its installation tokens), or DispatchAs's.
	Actor string
}

type actionsRun struct {
	owner, name, repo  string
	id                 int64
	workflow, ref      string
	title              string
	status, conclusion string
	created, updated   time.Time
	artifacts          []*artifact
	dispatch           Dispatch
	// actor started the run; triggering started its latest attempt.
	actor, triggering string
	attempt           int
}

type artifact struct {
	id   int64
	name string
	zip  []byte
}

// SetWorkflow declares the workflow file (its name under
// .github/workflows) of owner/repo, dispatchable on the default branch
// and on any ref SetTree made.
func (s *Server) SetWorkflow(owner, repo, file string, w Workflow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.workflows == nil {
		s.st.workflows = map[string]Workflow{}
	}
	s.st.workflows[repoKey(owner, repo)+"/"+file] = w
}

// AnswerDispatchWithoutRun makes dispatches answer 204 without the run,
// return_run_details or not, as a GitHub Enterprise Server older than it
// does.
func (s *Server) AnswerDispatchWithoutRun() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.dispatchNoRun = true
}

// OnDispatch calls f, in a goroutine of its own, with each dispatch the
// fake accepts: the test plays the runner there.
func (s *Server) OnDispatch(f func(Dispatch)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.onDispatch = f
}

// Dispatches returns the dispatches accepted, in order.
func (s *Server) Dispatches() []Dispatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Dispatch, 0, len(s.st.runs))
	for _, r := range s.st.runs {
		out = append(out, r.dispatch)
	}
	return out
}

// AddArtifact uploads files, zipped as actions/upload-artifact does, as
// the run's artifact name.
func (s *Server) AddArtifact(owner, repo string, runID int64, name string, files map[string][]byte) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f, err := zw.Create(n)
		if err == nil {
			_, err = f.Write(files[n])
		}
		if err != nil {
			panic(fmt.Sprintf("githubfake: AddArtifact: %v", err))
		}
	}
	if err := zw.Close(); err != nil {
		panic(fmt.Sprintf("githubfake: AddArtifact: %v", err))
	}
	s.AddArtifactZip(owner, repo, runID, name, buf.Bytes())
}

// AddArtifactZip makes raw, as it is, the run's artifact name: what a
// hostile workflow's upload does to whoever downloads it.
func (s *Server) AddArtifactZip(owner, repo string, runID int64, name string, raw []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.run(owner, repo, runID)
	r.artifacts = append(r.artifacts, &artifact{id: s.st.id(), name: name, zip: raw})
}

// DispatchAs dispatches the workflow file of owner/repo on ref with
// inputs as login, a user with write access, as the Actions tab's "Run
// workflow" button does: any ref the repository has (a branch's copy of
// the workflow), any inputs the file declares. It returns the dispatch,
// or GitHub's refusal.
func (s *Server) DispatchAs(login, owner, repo, file, ref string, inputs map[string]any) (Dispatch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, refused := s.newRun(owner, repo, file, ref, inputs, login)
	if r == nil {
		return Dispatch{}, fmt.Errorf("githubfake: dispatch of %s on %s refused: %d %s", file, ref, refused.status, errorText(refused.body))
	}
	return r.dispatch, nil
}

// RunReads are the calls that read the run runID of owner/repo: the run,
// its artifacts (listed, downloaded, or fetched at the address a download
// redirected to), anything under it.
func (s *Server) RunReads(owner, repo string, runID int64) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.run(owner, repo, runID)
	prefixes := []string{fmt.Sprintf("/repos/%s/actions/runs/%d", r.repo, runID)}
	for _, a := range r.artifacts {
		prefixes = append(prefixes, fmt.Sprintf("/repos/%s/actions/artifacts/%d", r.repo, a.id), fmt.Sprintf("%s%d", artifactPrefix, a.id))
	}
	var out []Call
	for _, c := range s.calls {
		p := strings.ToLower(c.Path)
		for _, prefix := range prefixes {
			if p == prefix || strings.HasPrefix(p, prefix+"/") {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// RerunAs runs the run again as login, as the "Re-run jobs" button does:
// the same run, a new attempt, queued, whose triggering actor is login.
func (s *Server) RerunAs(login, owner, repo string, runID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.run(owner, repo, runID)
	r.triggering, r.attempt = login, r.attempt+1
	r.status, r.conclusion, r.updated = "queued", "", time.Now()
}

// StartRun marks the run in progress, as a runner taking it does.
func (s *Server) StartRun(owner, repo string, runID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.run(owner, repo, runID)
	r.status, r.updated = "in_progress", time.Now()
}

// CompleteRun marks the run completed with conclusion (success, failure,
// cancelled, timed_out...).
func (s *Server) CompleteRun(owner, repo string, runID int64, conclusion string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.run(owner, repo, runID)
	r.status, r.conclusion, r.updated = "completed", conclusion, time.Now()
}

// WorkflowRunEvent is GitHub's published workflow_run payload of action
// (requested, in_progress, completed) about the run as it is now.
func (s *Server) WorkflowRunEvent(t testing.TB, owner, repo string, runID int64, action string) map[string]any {
	t.Helper()
	p := Event(t, "workflow_run", action)
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.run(owner, repo, runID)
	run, _ := p["workflow_run"].(map[string]any)
	if run == nil {
		run = map[string]any{}
		p["workflow_run"] = run
	}
	for k, v := range s.runJSON(r) {
		run[k] = v
	}
	set(p, "repository.name", r.name)
	set(p, "repository.full_name", r.owner+"/"+r.name)
	set(p, "repository.owner.login", r.owner)
	if id := s.st.repoIDs[r.repo]; id != 0 {
		set(p, "repository.id", id)
	}
	return p
}

func (s *Server) run(owner, repo string, id int64) *actionsRun {
	for _, r := range s.st.runs {
		if r.repo == repoKey(owner, repo) && r.id == id {
			return r
		}
	}
	panic(fmt.Sprintf("githubfake: no run %d in %s/%s", id, owner, repo))
}

var runNameInput = regexp.MustCompile(`\$\{\{\s*inputs\.([A-Za-z0-9_-]+)\s*\}\}`)

// dispatch answers as GitHub does: a queued run, 200 with the run's id and
// addresses when asked for them (return_run_details) and 204 otherwise;
// 404 for a workflow file the repository does not have, 422 for a ref it
// does not have or inputs the workflow does not declare. The run's actor
// is the user the token acts as.
func (s *Server) dispatch(rq *request) response {
	in, _ := rq.body["inputs"].(map[string]any)
	r, refused := s.newRun(rq.params["owner"], rq.params["repo"], rq.params["workflow_id"], str(rq.body["ref"]), in, rq.user)
	if r == nil {
		return refused
	}
	if details, _ := rq.body["return_run_details"].(bool); details && !s.st.dispatchNoRun {
		return response{status: http.StatusOK, body: map[string]any{
			"workflow_run_id": r.id,
			"run_url":         s.apiURL("/repos/%s/%s/actions/runs/%d", r.owner, r.name, r.id),
			"html_url":        s.runHTMLURL(r),
		}}
	}
	return response{status: http.StatusNoContent}
}

// newRun makes the run of a dispatch by actor, or says why GitHub refuses
// it.
func (s *Server) newRun(owner, name, file, ref string, in map[string]any, actor string) (*actionsRun, response) {
	repo := repoKey(owner, name)
	w, ok := s.st.workflows[repo+"/"+file]
	if !ok {
		return nil, notFound()
	}
	if ref != s.defaultBranch() && s.st.trees[repo+"@"+shortRef(ref)] == nil {
		r := ghError(http.StatusUnprocessableEntity, "No ref found for: "+ref)
		r.refusal = true
		return nil, r
	}
	inputs := map[string]string{}
	declared := map[string]bool{}
	for _, n := range w.Inputs {
		declared[n] = true
	}
	var unexpected []string
	for k, v := range in {
		if !declared[k] {
			unexpected = append(unexpected, k)
		}
		// GitHub takes every input as a string (numbers and booleans
		// as their text).
		inputs[k] = fmt.Sprint(v)
	}
	if len(unexpected) > 0 {
		sort.Strings(unexpected)
		r := ghError(http.StatusUnprocessableEntity, fmt.Sprintf("Unexpected inputs provided: [%q]", strings.Join(unexpected, `", "`)))
		r.refusal = true
		return nil, r
	}
	now := time.Now()
	r := &actionsRun{owner: owner, name: name, repo: repo, id: s.st.id(), workflow: file, ref: ref, status: "queued", created: now, updated: now,
		actor: actor, triggering: actor, attempt: 1}
	r.title = runNameInput.ReplaceAllStringFunc(w.RunName, func(m string) string {
		return inputs[runNameInput.FindStringSubmatch(m)[1]]
	})
	if r.title == "" {
		r.title = file
	}
	r.dispatch = Dispatch{Owner: owner, Repo: name, Workflow: file, Ref: ref, Inputs: inputs, RunID: r.id, Actor: actor}
	s.st.runs = append(s.st.runs, r)
	if f := s.st.onDispatch; f != nil {
		go f(r.dispatch)
	}
	return r, response{}
}

func (s *Server) runHTMLURL(r *actionsRun) string {
	return fmt.Sprintf("%s/%s/%s/actions/runs/%d", strings.TrimSuffix(s.hs.URL, "/"), r.owner, r.name, r.id)
}

// defaultBranch is the repositories' default branch, as GitHub's example
// repository (which the fake answers for every repository) names it.
func (s *Server) defaultBranch() string {
	if b := str(s.template("repos/get", "200")["default_branch"]); b != "" {
		return b
	}
	return "main"
}

func (s *Server) runJSON(r *actionsRun) map[string]any {
	m := s.template("actions/get-workflow-run", "200")
	set(m, "id", r.id)
	set(m, "name", r.title)
	set(m, "display_title", r.title)
	set(m, "event", "workflow_dispatch")
	set(m, "status", r.status)
	if r.conclusion == "" {
		m["conclusion"] = nil
	} else {
		m["conclusion"] = r.conclusion
	}
	set(m, "head_branch", shortRef(r.ref))
	set(m, "path", ".github/workflows/"+r.workflow+"@"+shortRef(r.ref))
	set(m, "html_url", s.runHTMLURL(r))
	set(m, "run_attempt", r.attempt)
	s.withAccount(m, "actor", r.actor)
	s.withAccount(m, "triggering_actor", r.triggering)
	set(m, "url", s.apiURL("/repos/%s/%s/actions/runs/%d", r.owner, r.name, r.id))
	set(m, "artifacts_url", s.apiURL("/repos/%s/%s/actions/runs/%d/artifacts", r.owner, r.name, r.id))
	set(m, "created_at", stamp(r.created))
	set(m, "updated_at", stamp(r.updated))
	set(m, "run_started_at", stamp(r.created))
	set(m, "repository.name", r.name)
	set(m, "repository.full_name", r.owner+"/"+r.name)
	set(m, "repository.owner.login", r.owner)
	return m
}

// listRuns lists a workflow's runs, newest first, as GitHub does, with
// its event filter.
func (s *Server) listRuns(rq *request) response {
	file := rq.params["workflow_id"]
	if _, ok := s.st.workflows[rq.repo+"/"+file]; !ok {
		return notFound()
	}
	var runs []*actionsRun
	for i := len(s.st.runs) - 1; i >= 0; i-- {
		r := s.st.runs[i]
		if r.repo != rq.repo || r.workflow != file {
			continue
		}
		if ev := rq.query.Get("event"); ev != "" && ev != "workflow_dispatch" {
			continue
		}
		if b := rq.query.Get("branch"); b != "" && b != shortRef(r.ref) {
			continue
		}
		if st := rq.query.Get("status"); st != "" && st != r.status && st != r.conclusion {
			continue
		}
		runs = append(runs, r)
	}
	from, to, header := page(rq, len(runs))
	items := []any{}
	for _, r := range runs[from:to] {
		items = append(items, s.runJSON(r))
	}
	return response{status: http.StatusOK, header: header, body: map[string]any{"total_count": len(runs), "workflow_runs": items}}
}

func (s *Server) getRun(rq *request) response {
	id := intParam(rq, "run_id")
	for _, r := range s.st.runs {
		if r.repo == rq.repo && r.id == id {
			return response{status: http.StatusOK, body: s.runJSON(r)}
		}
	}
	return notFound()
}

func (s *Server) artifactJSON(r *actionsRun, a *artifact) map[string]any {
	m := map[string]any{}
	if l, _ := s.template("actions/list-workflow-run-artifacts", "200")["artifacts"].([]any); len(l) > 0 {
		m, _ = deepCopy(l[0]).(map[string]any)
	}
	set(m, "id", a.id)
	set(m, "node_id", fmt.Sprintf("MDg6QXJ0aWZhY3Q%d", a.id))
	set(m, "name", a.name)
	set(m, "size_in_bytes", len(a.zip))
	set(m, "expired", false)
	set(m, "url", s.apiURL("/repos/%s/%s/actions/artifacts/%d", r.owner, r.name, a.id))
	set(m, "archive_download_url", s.apiURL("/repos/%s/%s/actions/artifacts/%d/zip", r.owner, r.name, a.id))
	set(m, "created_at", stamp(r.updated))
	set(m, "updated_at", stamp(r.updated))
	set(m, "expires_at", stamp(r.updated.Add(90*24*time.Hour)))
	set(m, "workflow_run.id", r.id)
	set(m, "workflow_run.head_branch", shortRef(r.ref))
	return m
}

func (s *Server) listArtifacts(rq *request) response {
	id := intParam(rq, "run_id")
	for _, r := range s.st.runs {
		if r.repo != rq.repo || r.id != id {
			continue
		}
		var list []*artifact
		for _, a := range r.artifacts {
			if n := rq.query.Get("name"); n == "" || n == a.name {
				list = append(list, a)
			}
		}
		from, to, header := page(rq, len(list))
		items := []any{}
		for _, a := range list[from:to] {
			items = append(items, s.artifactJSON(r, a))
		}
		return response{status: http.StatusOK, header: header, body: map[string]any{"total_count": len(list), "artifacts": items}}
	}
	return notFound()
}

// downloadArtifact answers as GitHub does: a redirect to a pre-signed
// address on another host, good for a minute, that needs no token.
func (s *Server) downloadArtifact(rq *request) response {
	if rq.params["archive_format"] != "zip" {
		return notFound()
	}
	id := intParam(rq, "artifact_id")
	for _, r := range s.st.runs {
		if r.repo != rq.repo {
			continue
		}
		for _, a := range r.artifacts {
			if a.id == id {
				b := make([]byte, 16)
				_, _ = rand.Read(b)
				token := hex.EncodeToString(b)
				if s.st.artifactDownloads == nil {
					s.st.artifactDownloads = map[string]*artifact{}
				}
				s.st.artifactDownloads[token] = a
				loc := fmt.Sprintf("%s%s%d?sig=%s", strings.TrimSuffix(s.hs.URL, "/"), artifactPrefix, a.id, token)
				return response{status: http.StatusFound, header: http.Header{"Location": {loc}}}
			}
		}
	}
	return notFound()
}

// serveArtifact serves a zip the download redirected to, under the lock.
// A token sent along is a violation: it would have gone to another host.
func (s *Server) serveArtifact(w http.ResponseWriter, r *http.Request, path string) {
	where := r.Method + " " + path
	if r.Header.Get("Authorization") != "" {
		s.violate("%s: the artifact's pre-signed address on another host was sent the GitHub token", where)
	}
	a := s.st.artifactDownloads[r.URL.Query().Get("sig")]
	if r.Method != http.MethodGet || a == nil || path != fmt.Sprintf("%s%d", artifactPrefix, a.id) {
		s.violate("%s: no artifact download was issued for this address (follow the Location of the download operation as it is)", where)
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(a.zip)
}

// ReadWorkflow reads a workflow file's dispatch inputs and run-name, so
// that the fake dispatches and names runs as the file operators copy would.
func ReadWorkflow(t testing.TB, path string) Workflow {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var wf map[string]any
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatal(err)
	}
	// YAML 1.1 reads the key on as true.
	on, _ := wf["on"].(map[string]any)
	if on == nil {
		on, _ = wf["true"].(map[string]any)
	}
	dispatch, _ := on["workflow_dispatch"].(map[string]any)
	inputs, _ := dispatch["inputs"].(map[string]any)
	w := Workflow{RunName: fmt.Sprint(wf["run-name"])}
	for name := range inputs {
		w.Inputs = append(w.Inputs, name)
	}
	sort.Strings(w.Inputs)
	if len(w.Inputs) == 0 || !strings.Contains(w.RunName, "inputs.id") {
		t.Fatalf("%s: no dispatch inputs or no request id in the run-name: %+v", path, w)
	}
	return w
}
