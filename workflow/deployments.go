package workflow

import (
	"context"
	"fmt"
	"log/slog"
)

// Deployer records applies as GitHub deployments; *githubapi.Client is
// the implementation. A GitHub without it records none.
type Deployer interface {
	CreateDeployment(ctx context.Context, sha, environment, description string) (int64, error)
	SetDeploymentStatus(ctx context.Context, id int64, state, description, logURL string) error
}

// deployment is one stack's apply or destroy as a GitHub deployment.
type deployment struct {
	id          int64
	environment string
	destroy     bool
}

// Environment is the GitHub environment of a project's workspace: where
// its deployments are listed.
func Environment(project, workspace string) string {
	return "kusion/" + project + "/" + workspace
}

// beginDeployment records the stack's apply or destroy as a deployment of
// the commit, in progress; nil when it cannot be (no Deployer, a stack
// that cannot be read, GitHub's refusal: the run goes on without one, and
// the log says why).
func (c *Change) beginDeployment(ctx context.Context, req Request, stack string, log *slog.Logger) *deployment {
	d, ok := c.GitHub.(Deployer)
	if !ok || !c.Deployments || req.Command == Preview || req.DryRun || c.SHA == "" {
		return nil
	}
	cmd := req.Command
	st, err := loadStack(cmd, req.Root, req.Dir())
	if err != nil {
		return nil // the run says why
	}
	dep := &deployment{environment: Environment(st.Project.Name, st.WorkspaceName(req.Workspace)), destroy: cmd == Destroy}
	what := string(cmd) + " of " + stack
	if req.Origin != nil && req.Origin.Actor != "" {
		what += " by " + req.Origin.Actor
	}
	if dep.id, err = d.CreateDeployment(ctx, c.SHA, dep.environment, what); err != nil {
		log.Warn("the deployment could not be recorded (a GitHub token needs deployments: write)", "environment", dep.environment, "error", err)
		return nil
	}
	if err := d.SetDeploymentStatus(ctx, dep.id, "in_progress", what, ""); err != nil {
		log.Warn("the deployment's start could not be recorded", "environment", dep.environment, "error", err)
	}
	return dep
}

// endDeployment records how the stack's run ended: success (a destroy's
// then inactive: nothing is deployed there any more), failure when the
// run changed something and failed, error when it failed before, inactive
// when it was not run. logURL is its report.
func (c *Change) endDeployment(ctx context.Context, so *StackOutcome, logURL string) {
	dep := so.deployment
	d, ok := c.GitHub.(Deployer)
	if dep == nil || !ok {
		return
	}
	s := so.Summary
	state, desc := "success", fmt.Sprintf("%d created, %d updated, %d deleted", s.Create, s.Update, s.Delete)
	if so.Result != nil && so.Result.Release != nil {
		desc = fmt.Sprintf("release %d: %s", so.Result.Release.Revision, desc)
	}
	switch {
	case so.Skipped != "":
		state, desc = "inactive", "not run: "+so.Skipped
	case so.Err != nil && so.Result != nil && so.Result.Release != nil:
		state, desc = "failure", firstLine(so.Err.Error())
	case so.Err != nil:
		state, desc = "error", firstLine(so.Err.Error())
	}
	log := c.log().With("stack", so.Dir, "environment", dep.environment)
	if err := d.SetDeploymentStatus(ctx, dep.id, state, desc, logURL); err != nil {
		log.Warn("the deployment's end could not be recorded", "error", err)
		return
	}
	if dep.destroy && state == "success" {
		if err := d.SetDeploymentStatus(ctx, dep.id, "inactive", "destroyed: "+desc, logURL); err != nil {
			log.Warn("the destroyed environment's deployment could not be marked inactive", "error", err)
		}
	}
}
