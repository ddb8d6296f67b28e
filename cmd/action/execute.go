package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/report"
	"github.com/kusionpr/kusionpr/workflow"
)

// executeRequest is the worker of a request the bot hands over (a
// Kubernetes Job's container): the checkout and the result go through the
// release store, so the worker needs the store and the cluster, never
// GitHub. The log shows the stack's report as text.
func executeRequest(ctx context.Context, runner *workflow.Runner, raw string, stdout, stderr io.Writer) int {
	var req workflow.Request
	if err := json.Unmarshal([]byte(raw), &req); err != nil {
		fmt.Fprintf(stderr, "error: --request: %v\n", err)
		return 2
	}
	if err := req.Check(); err != nil {
		fmt.Fprintf(stderr, "error: --request: %v\n", err)
		return 2
	}
	store, where, err := runner.Open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	defer store.Close()
	runner.Log.Info("running the request", "request", req.ID(), "command", req.Command, "stack", req.Stack, "commit", req.Commit, "store", where)
	run, err := runner.Execute(ctx, req, store, githubapi.ArchiveLimits{})
	if run != nil {
		renderer, rerr := report.New()
		if rerr == nil && run.Preview != nil {
			_ = renderer.Render(stdout, report.Text, run.Preview, run.Err)
		}
		if run.Err != nil {
			fmt.Fprintf(stderr, "error: %s: %v\n", req.Stack, run.Err)
		}
		if run.Skipped != "" {
			fmt.Fprintf(stderr, "skipped: %s\n", run.Skipped)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	if run.Err != nil {
		return 1
	}
	return 0
}
