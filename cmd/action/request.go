package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/sethvargo/go-githubactions"

	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
	"github.com/kusionpr/kusionpr/settings"
	"github.com/kusionpr/kusionpr/workflow"
)

// runRequest is the action in a workflow the bot dispatched (its executor
// github-actions): it runs the one request of the input request on the
// checkout in the workspace (the workflow checked out the request's
// commit) and writes the result to a file in the workspace, named by the
// output result-file, for actions/upload-artifact. The bot reports; the
// action comments on nothing.
func runRequest(ctx context.Context, ga *githubactions.Action, gctx *githubactions.GitHubContext, raw string, runner *workflow.Runner, job workflow.Request, workspace string, log *slog.Logger) int {
	if gctx.EventName != "workflow_dispatch" {
		ga.Errorf("input request: it is the bot's, for a workflow it dispatches (on: workflow_dispatch), not for a %s event", gctx.EventName)
		return 2
	}
	var req workflow.Request
	if err := json.Unmarshal([]byte(raw), &req); err != nil {
		ga.Errorf("input request: %v", err)
		return 2
	}
	if err := req.Check(); err != nil {
		ga.Errorf("input request: %v", err)
		return 2
	}
	// The job's repository is the one GitHub says (GITHUB_REPOSITORY_ID),
	// whatever the input claims: a request of another repository would
	// reach that repository's projects in a shared store.
	if req.Origin == nil {
		req.Origin = &model.Origin{}
	}
	if own := job.Origin.Repository; own != nil {
		if r := req.Origin.Repository; r != nil && r.ID != 0 && own.ID != 0 && r.ID != own.ID {
			ga.Errorf("input request: it names repository %s (id %d), but this job runs in %s (id %d)", r.FullName, r.ID, own.FullName, own.ID)
			return 2
		}
		req.Origin.Repository = own
	}
	id := req.ID()
	if _, err := stackInCheckout(workspace, req.Stack); err != nil {
		ga.Errorf("input request: %v", err)
		return 2
	}
	if err := checkedOutAt(workspace, req.Commit); err != nil {
		ga.Errorf("%v", err)
		return 2
	}
	log.Info("running the request", "request", id, "command", req.Command, "stack", req.Stack, "commit", req.Commit)
	req.Root, req.Log = workspace, log
	// Runs of merges close together overlap: a run finding its stack held
	// by another waits for it, as the bot's own runs and action execute
	// do, and then asks again whether its work is still to do (merge
	// order).
	runner.WaitHeld = requestHoldWait()
	run := runner.Run(ctx, req)
	data, err := workflow.NewRequestResult(req, workspace, run).Encode()
	if err != nil {
		ga.Errorf("the result: %v", err)
		return 1
	}
	name := ".kusionpr-result-" + id + ".json"
	if err := writeNew(workspace, name, data); err != nil {
		ga.Errorf("the result: %v", err)
		return 1
	}
	ga.SetOutput("result-file", name)

	// The log shows the stack's report as text; the bot comments.
	if renderer, err := report.New(); err == nil && run.Preview != nil {
		var text strings.Builder
		if renderer.Render(&text, report.Text, run.Preview, run.Err) == nil {
			ga.Group("stack " + req.Stack)
			ga.Infof("%s", text.String())
			ga.EndGroup()
		}
	}
	switch {
	case run.Err != nil:
		ga.WithFieldsMap(map[string]string{"title": "kusion: " + req.Stack}).Errorf("%s", model.MaskFingerprints(run.Err.Error()))
		return 1
	case run.Skipped != "":
		ga.Noticef("%s: skipped: %s", req.Stack, run.Skipped)
	case run.Release != nil:
		ga.Infof("%s: release %d %s", req.Stack, run.Release.Revision, run.Release.Phase)
	}
	return 0
}

// stackInCheckout is the stack's folder, which must lie inside the
// checkout once links are followed. A folder the commit deleted (a
// destroy's) is judged by the nearest folder above it that is there.
func stackInCheckout(root, stack string) (string, error) {
	dir := filepath.Join(root, filepath.FromSlash(stack))
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	there := dir
	for {
		if _, err := os.Lstat(there); err == nil || there == root {
			break
		}
		there = filepath.Dir(there)
	}
	real, err := filepath.EvalSymlinks(there)
	if err != nil {
		return "", fmt.Errorf("stack %q: %w", stack, err)
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return "", fmt.Errorf("stack %q leads out of the checkout", stack)
	}
	if there == dir {
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("stack %q: not a folder of the checkout", stack)
		}
	}
	return dir, nil
}

// requestHoldWait is how long a request waits for another run holding
// its stack: action execute's default (its --hold-wait).
func requestHoldWait() time.Duration {
	d, _ := time.ParseDuration(settings.Must("hold-wait").Default)
	return d
}

var detachedHead = regexp.MustCompile(`^[0-9a-f]{40}(?:[0-9a-f]{24})?$`)

// checkedOutAt refuses a checkout actions/checkout left at another commit
// than the request's (its .git/HEAD names the commit it checked out); a
// checkout without git's folder is taken as it is.
func checkedOutAt(root, commit string) error {
	b, err := os.ReadFile(filepath.Join(root, ".git", "HEAD"))
	if err != nil {
		return nil
	}
	head := strings.TrimSpace(string(b))
	if !detachedHead.MatchString(head) {
		return fmt.Errorf("the checkout is on %q, not at the request's commit %s: check out the input commit (actions/checkout's ref: ${{ inputs.commit }})", head, commit)
	}
	if !strings.HasPrefix(head, strings.ToLower(commit)) {
		return fmt.Errorf("the checkout is at %s, not at the request's commit %s: check out the input commit (actions/checkout's ref: ${{ inputs.commit }})", head, commit)
	}
	return nil
}

// writeNew writes a new file name in dir, never through a file or link
// the checkout already has there.
func writeNew(dir, name string, data []byte) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
