package githubapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"
)

// WorkflowRun is a GitHub Actions run, as a dispatcher follows it.
type WorkflowRun struct {
	ID int64
	// Name is the run's name (the workflow's run-name, once GitHub has
	// evaluated it); DisplayTitle is what the Actions tab shows.
	Name, DisplayTitle string
	// Status is queued, in_progress, completed...; Conclusion, once
	// completed, is success, failure, cancelled, timed_out...
	Status, Conclusion string
	HTMLURL            string
	CreatedAt          time.Time
	// Event is what started the run (workflow_dispatch, push...);
	// HeadBranch the branch it runs the workflow of; Path the workflow
	// file, ".github/workflows/<file>" (GitHub may add "@<ref>").
	Event, HeadBranch, Path string
	// Actor started the run; TriggeringActor started its latest attempt
	// (whoever re-ran it).
	Actor, TriggeringActor User
}

// User is a GitHub account as GitHub's answers name it. Its login can be
// renamed and then taken by another account; its id is never reused.
type User struct {
	Login string
	ID    int64
}

func userOf(u *github.User) User { return User{Login: u.GetLogin(), ID: u.GetID()} }

// Is reports whether u is the account o: the same id, and the same login
// (case-insensitive on GitHub).
func (u User) Is(o User) bool {
	return u.ID != 0 && u.ID == o.ID && strings.EqualFold(u.Login, o.Login)
}

// runWire is a run as GitHub sends it: go-github v60's WorkflowRun has no
// field for the run's workflow path.
type runWire struct {
	github.WorkflowRun
	Path *string `json:"path,omitempty"`
}

func workflowRun(r *runWire) WorkflowRun {
	return WorkflowRun{ID: r.GetID(), Name: r.GetName(), DisplayTitle: r.GetDisplayTitle(), Status: r.GetStatus(),
		Conclusion: r.GetConclusion(), HTMLURL: r.GetHTMLURL(), CreatedAt: r.GetCreatedAt().Time,
		Event: r.GetEvent(), HeadBranch: r.GetHeadBranch(), Path: ptr(r.Path),
		Actor: userOf(r.Actor), TriggeringActor: userOf(r.TriggeringActor)}
}

func ptr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// DispatchError is GitHub's refusal of a workflow dispatch: 404 when the
// workflow file is not on the ref (or the token may not see it), 422 when
// it has no workflow_dispatch trigger or the inputs do not fit it.
type DispatchError struct {
	Workflow, Ref string
	Status        int
	Message       string
}

func (e *DispatchError) Error() string {
	return fmt.Sprintf("dispatch of workflow %s on %s refused: GitHub answered %d: %s", e.Workflow, e.Ref, e.Status, e.Message)
}

// DefaultBranch is the repository's default branch.
func (c *Client) DefaultBranch(ctx context.Context) (string, error) {
	r, _, err := c.gh.Repositories.Get(ctx, c.owner, c.repo)
	if err != nil {
		return "", fmt.Errorf("read repository %s/%s: %w", c.owner, c.repo, err)
	}
	if r.GetDefaultBranch() == "" {
		return "", fmt.Errorf("read repository %s/%s: GitHub named no default branch", c.owner, c.repo)
	}
	return r.GetDefaultBranch(), nil
}

// Dispatched is GitHub's answer to a dispatch: the run it made, or none
// (RunID 0) from a GitHub that answers a dispatch without its run (204, a
// GitHub Enterprise Server older than return_run_details).
type Dispatched struct {
	RunID   int64  `json:"workflow_run_id"`
	HTMLURL string `json:"html_url"`
}

// dispatchRequest is go-github's dispatch with return_run_details, which
// v60 has no field for.
type dispatchRequest struct {
	github.CreateWorkflowDispatchEventRequest
	ReturnRunDetails bool `json:"return_run_details"`
}

// DispatchWorkflow starts the workflow file (its name under
// .github/workflows) at ref with inputs (workflow_dispatch), and says
// which run GitHub made of it when GitHub says so.
func (c *Client) DispatchWorkflow(ctx context.Context, workflow, ref string, inputs map[string]any) (Dispatched, error) {
	u := fmt.Sprintf("repos/%v/%v/actions/workflows/%v/dispatches", c.owner, c.repo, url.PathEscape(workflow))
	body := dispatchRequest{CreateWorkflowDispatchEventRequest: github.CreateWorkflowDispatchEventRequest{Ref: ref, Inputs: inputs}, ReturnRunDetails: true}
	req, err := c.gh.NewRequest(http.MethodPost, u, body)
	if err != nil {
		return Dispatched{}, fmt.Errorf("dispatch workflow %s on %s: %w", workflow, ref, err)
	}
	var d Dispatched
	_, err = c.gh.Do(ctx, req, &d)
	if er, ok := errors.AsType[*github.ErrorResponse](err); ok && er.Response != nil {
		switch er.Response.StatusCode {
		case http.StatusNotFound, http.StatusUnprocessableEntity:
			return Dispatched{}, &DispatchError{Workflow: workflow, Ref: ref, Status: er.Response.StatusCode, Message: er.Message}
		}
	}
	if err != nil {
		return Dispatched{}, fmt.Errorf("dispatch workflow %s on %s: %w", workflow, ref, err)
	}
	return d, nil
}

// ErrNoWorkflow: GitHub answered 404 for the workflow file: the
// repository has no such workflow, or the token may not read its Actions.
var ErrNoWorkflow = errors.New("GitHub knows no such workflow in the repository (404), or the App may not read its Actions")

// maxRunPages bounds the pages of runs DispatchedRuns reads: the runs it
// looks for were dispatched recently, and GitHub lists the newest first.
const maxRunPages = 3

// DispatchedRuns lists the workflow's runs started by workflow_dispatch
// on branch (any branch if "") that match says are wanted, newest first,
// from the first few pages (GitHub lists the newest first; the runs looked
// for are recent).
func (c *Client) DispatchedRuns(ctx context.Context, workflow, branch string, match func(WorkflowRun) bool) ([]WorkflowRun, error) {
	var found []WorkflowRun
	pages := 0
	err := eachPage(100, func(lo github.ListOptions) (*github.Response, bool, error) {
		pages++
		q := url.Values{"event": {"workflow_dispatch"}, "per_page": {strconv.Itoa(lo.PerPage)}}
		if branch != "" {
			q.Set("branch", branch)
		}
		if lo.Page > 0 {
			q.Set("page", strconv.Itoa(lo.Page))
		}
		u := fmt.Sprintf("repos/%v/%v/actions/workflows/%v/runs?%s", c.owner, c.repo, url.PathEscape(workflow), q.Encode())
		req, err := c.gh.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			return nil, false, fmt.Errorf("list the runs of workflow %s: %w", workflow, err)
		}
		var list struct {
			WorkflowRuns []*runWire `json:"workflow_runs"`
		}
		resp, err := c.gh.Do(ctx, req, &list)
		if er, ok := errors.AsType[*github.ErrorResponse](err); ok && er.Response != nil && er.Response.StatusCode == http.StatusNotFound {
			return nil, false, fmt.Errorf("list the runs of workflow %s: %w", workflow, ErrNoWorkflow)
		}
		if err != nil {
			return nil, false, fmt.Errorf("list the runs of workflow %s: %w", workflow, err)
		}
		for _, r := range list.WorkflowRuns {
			if run := workflowRun(r); match(run) {
				found = append(found, run)
			}
		}
		return resp, pages >= maxRunPages, nil
	})
	return found, err
}

// WorkflowRun reads the run id.
func (c *Client) WorkflowRun(ctx context.Context, id int64) (WorkflowRun, error) {
	req, err := c.gh.NewRequest(http.MethodGet, fmt.Sprintf("repos/%v/%v/actions/runs/%v", c.owner, c.repo, id), nil)
	if err != nil {
		return WorkflowRun{}, fmt.Errorf("read workflow run %d: %w", id, err)
	}
	var r runWire
	if _, err := c.gh.Do(ctx, req, &r); err != nil {
		return WorkflowRun{}, fmt.Errorf("read workflow run %d: %w", id, err)
	}
	return workflowRun(&r), nil
}

// ErrNoArtifact: the run has no unexpired artifact of that name.
var ErrNoArtifact = errors.New("no such artifact")

// ArtifactTooLarge is an artifact refused for its size, before or while
// it is read.
type ArtifactTooLarge struct {
	Name string
	Max  int64
}

func (e *ArtifactTooLarge) Error() string {
	return fmt.Sprintf("artifact %s is larger than %s", e.Name, FormatBytes(e.Max))
}

// RunArtifact downloads the zip of the run's artifact name, at most limit
// bytes of it. GitHub answers the download with a redirect to a
// short-lived address on another host: it is followed without our token.
func (c *Client) RunArtifact(ctx context.Context, runID int64, name string, limit int64) ([]byte, error) {
	var id int64
	err := eachPage(100, func(lo github.ListOptions) (*github.Response, bool, error) {
		list, resp, err := c.gh.Actions.ListWorkflowRunArtifacts(ctx, c.owner, c.repo, runID, &lo)
		if err != nil {
			return nil, false, fmt.Errorf("list the artifacts of run %d: %w", runID, err)
		}
		for _, a := range list.Artifacts {
			if a.GetName() == name && !a.GetExpired() {
				if a.GetSizeInBytes() > limit {
					return nil, false, &ArtifactTooLarge{Name: name, Max: limit}
				}
				id = a.GetID()
				return resp, true, nil
			}
		}
		return resp, false, nil
	})
	if err != nil {
		return nil, err
	}
	if id == 0 {
		return nil, fmt.Errorf("run %d: artifact %s: %w", runID, name, ErrNoArtifact)
	}
	u, _, err := c.gh.Actions.DownloadArtifact(ctx, c.owner, c.repo, id, 3)
	if err != nil {
		return nil, fmt.Errorf("download artifact %s of run %d: %w", name, runID, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	// A client of its own: the token stays with GitHub's API, and the
	// pre-signed address needs none.
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		// The address carries a download token: kept out of the error.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return nil, fmt.Errorf("download artifact %s of run %d: %w", name, runID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download artifact %s of run %d: %s", name, runID, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("download artifact %s of run %d: %w", name, runID, err)
	}
	if int64(len(b)) > limit {
		return nil, &ArtifactTooLarge{Name: name, Max: limit}
	}
	return b, nil
}
