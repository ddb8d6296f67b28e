package githubfake

import (
	"net/http"
	"slices"
	"strings"
	"time"
)

// Deployment is a deployment as GitHub keeps it, with its statuses in
// order.
type Deployment struct {
	ID                            int64
	Ref, Environment, Description string
	Statuses                      []DeploymentStatus
}

// DeploymentStatus is one state a deployment went through.
type DeploymentStatus struct {
	State, Description, LogURL string
}

type deployment struct {
	repo string
	Deployment
}

// Deployments returns the repository's deployments in creation order.
func (s *Server) Deployments(owner, repo string) []Deployment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Deployment
	for _, d := range s.st.deployments {
		if d.repo == repoKey(owner, repo) {
			cp := d.Deployment
			cp.Statuses = slices.Clone(d.Statuses)
			out = append(out, cp)
		}
	}
	return out
}

func (s *Server) createDeployment(rq *request) response {
	d := &deployment{repo: rq.repo, Deployment: Deployment{ID: s.st.id(), Ref: str(rq.body["ref"]), Environment: str(rq.body["environment"]),
		Description: str(rq.body["description"])}}
	if d.Environment == "" {
		d.Environment = "production"
	}
	// GitHub merges the default branch into the ref unless told not to,
	// and waits for every required context unless given none: an answer
	// the bot must never depend on.
	if am, ok := rq.body["auto_merge"].(bool); !ok || am {
		return ghError(http.StatusConflict, "Conflict merging main into "+d.Ref+".")
	}
	if rc, ok := rq.body["required_contexts"].([]any); !ok || len(rc) > 0 {
		return ghError(http.StatusConflict, "Conflict: Commit status checks failed for "+d.Ref+".")
	}
	s.st.deployments = append(s.st.deployments, d)
	m := s.template("repos/create-deployment", "201")
	owner, name, _ := strings.Cut(rq.repo, "/")
	set(m, "id", d.ID)
	set(m, "sha", d.Ref)
	set(m, "ref", d.Ref)
	set(m, "environment", d.Environment)
	set(m, "description", nullable(d.Description))
	set(m, "url", s.apiURL("/repos/%s/%s/deployments/%d", owner, name, d.ID))
	set(m, "statuses_url", s.apiURL("/repos/%s/%s/deployments/%d/statuses", owner, name, d.ID))
	set(m, "created_at", stamp(time.Now()))
	set(m, "updated_at", stamp(time.Now()))
	return response{status: http.StatusCreated, body: m}
}

func (s *Server) createDeploymentStatus(rq *request) response {
	id := intParam(rq, "deployment_id")
	for _, d := range s.st.deployments {
		if d.repo != rq.repo || d.ID != id {
			continue
		}
		st := DeploymentStatus{State: str(rq.body["state"]), Description: str(rq.body["description"]), LogURL: str(rq.body["log_url"])}
		d.Statuses = append(d.Statuses, st)
		m := s.template("repos/create-deployment-status", "201")
		owner, name, _ := strings.Cut(rq.repo, "/")
		set(m, "id", s.st.id())
		set(m, "state", st.State)
		set(m, "description", st.Description)
		set(m, "environment", d.Environment)
		if st.LogURL != "" {
			set(m, "log_url", st.LogURL)
		} else {
			delete(m, "log_url") // the example's: a status with none has none
		}
		set(m, "deployment_url", s.apiURL("/repos/%s/%s/deployments/%d", owner, name, d.ID))
		set(m, "created_at", stamp(time.Now()))
		set(m, "updated_at", stamp(time.Now()))
		return response{status: http.StatusCreated, body: m}
	}
	return notFound()
}
