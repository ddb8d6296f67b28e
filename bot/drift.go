package bot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/workflow"
)

// ScheduleDrift scans, until ctx ends, the stacks of every repository
// KUSIONPR_DRIFT_REPOSITORIES names for drift, every KUSIONPR_DRIFT_EVERY
// give or take KUSIONPR_DRIFT_JITTER, keeping one GitHub issue per drifted
// stack. Every replica runs the schedule; a lease per repository in the
// release store lets one scan at a time, and a scan taken less than the
// interval after the last one (by any replica) is left out.
func (b *Bot) ScheduleDrift(ctx context.Context) {
	if b.cfg.DriftEvery <= 0 {
		return
	}
	holder := driftHolder()
	// The first scan comes soon after a start: the last one, by a bot
	// gone since, may be long ago.
	wait := time.Duration(mrand.Int64N(int64(b.cfg.DriftJitter) + 1))
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		b.scanRepositories(ctx, holder)
		wait = b.cfg.DriftEvery - b.cfg.DriftJitter + time.Duration(mrand.Int64N(2*int64(b.cfg.DriftJitter)+1))
	}
}

// driftHolder names this replica in the leases it takes.
func driftHolder() string {
	host, _ := os.Hostname()
	var r [4]byte
	rand.Read(r[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(r[:]))
}

// scanRepositories scans every repository due a scan.
func (b *Bot) scanRepositories(ctx context.Context, holder string) {
	ids, err := b.app.Installations(ctx)
	if err != nil {
		b.log.Error("drift scan: listing the App's installations failed", "error", err)
		return
	}
	for _, id := range ids {
		repos, err := b.app.Repositories(ctx, id)
		if err != nil {
			b.log.Error("drift scan: listing an installation's repositories failed", "installation", id, "error", err)
			continue
		}
		for _, r := range repos {
			name := r.Owner + "/" + r.Name
			if !b.cfg.allowed(name) || !b.cfg.scansDrift(name) {
				continue
			}
			j := job{installation: id, owner: r.Owner, repo: r.Name, repoID: r.ID, defaultBranch: r.DefaultBranch}
			if err := b.scanRepository(ctx, j, holder); err != nil {
				b.m.driftScans.WithLabelValues("failure").Inc()
				b.log.Error("drift scan failed", "repository", name, "error", err)
			}
		}
	}
}

// errScannedRecently leaves a repository another replica scanned within
// the interval.
var errScannedRecently = errors.New("scanned recently")

// scanRepository scans one repository's default branch, if its lease is
// free and the last scan old enough, and brings its drift issues in line.
func (b *Bot) scanRepository(ctx context.Context, j job, holder string) error {
	log := b.log.With("repository", j.owner+"/"+j.repo)
	store, err := backend.Open(ctx, b.cfg.Backend)
	if err != nil {
		return fmt.Errorf("open the release store: %w", err)
	}
	defer store.Close()
	ttl := store.HeartbeatInterval() * 5
	due := b.cfg.DriftEvery - b.cfg.DriftJitter
	lease, err := store.TakeLease(ctx, fmt.Sprintf("drift-%d", j.repoID), holder, ttl, func(last *backend.Lease) error {
		if last != nil && time.Since(last.Taken) < due {
			return errScannedRecently
		}
		return nil
	})
	var held *backend.LeaseHeldError
	switch {
	case errors.Is(err, errScannedRecently), errors.As(err, &held):
		log.Debug("drift scan left to another replica", "reason", err)
		return nil
	case err != nil:
		return fmt.Errorf("take the drift scan's lease: %w", err)
	}
	// The lease is kept while the scan runs, and given up when it ends.
	renew, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		tick := time.NewTicker(store.HeartbeatInterval())
		defer tick.Stop()
		for {
			select {
			case <-renew.Done():
				return
			case <-tick.C:
				if err := store.RenewLease(ctx, lease, ttl); err != nil {
					log.Warn("renewing the drift scan's lease failed", "error", err)
				}
			}
		}
	}()
	defer func() {
		stop()
		if err := store.ReleaseLease(context.WithoutCancel(ctx), lease); err != nil {
			log.Warn("giving up the drift scan's lease failed", "error", err)
		}
	}()

	started := time.Now()
	stacks, issues, err := b.scanOnce(ctx, j, log, nil)
	if err != nil {
		return err
	}
	ended := time.Now()
	drifted := 0
	for _, st := range stacks {
		c := st.Counts()
		b.m.driftResources.WithLabelValues(j.owner+"/"+j.repo, st.Dir).Set(float64(c.Resources))
		if st.Status == workflow.Drifted {
			drifted++
		}
	}
	b.m.driftDuration.Observe(ended.Sub(started).Seconds())
	b.m.driftLast.Set(float64(ended.Unix()))
	b.m.driftScans.WithLabelValues("success").Inc()
	log.Info("drift scan finished", "stacks", len(stacks), "drifted", drifted, "issues", len(issues),
		"started", started.UTC().Format(time.RFC3339Nano), "ended", ended.UTC().Format(time.RFC3339Nano), "lease", lease.Generation)
	return nil
}

// scanOnce checks out the default branch and scans its stacks (dirs, or
// every one), then publishes the drift issues.
func (b *Bot) scanOnce(ctx context.Context, j job, log *slog.Logger, dirs []string) ([]*workflow.StackDrift, []workflow.IssueOutcome, error) {
	gh, err := b.client(j.installation, j.owner, j.repo)
	if err != nil {
		return nil, nil, fmt.Errorf("installation client: %w", err)
	}
	tracker, ok := gh.(workflow.IssueTracker)
	if !ok {
		return nil, nil, errors.New("this bot's GitHub client cannot keep issues")
	}
	dir, err := os.MkdirTemp("", "kusionpr-drift")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	if err := gh.Checkout(ctx, j.defaultBranch, dir, githubapi.ArchiveLimits{MaxBytes: b.cfg.MaxCheckoutBytes, MaxFiles: b.cfg.MaxCheckoutFiles}); err != nil {
		return nil, nil, fmt.Errorf("check out %s: %w", j.defaultBranch, err)
	}
	scan := &workflow.DriftScan{Runner: b.runner, Request: b.driftRequest(j, dir, log), Root: filepath.Join(dir, b.cfg.Root), Dirs: dirs}
	stacks, err := scan.Run(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("scan %s: %w", j.defaultBranch, err)
	}
	for _, st := range stacks {
		if st.Status == workflow.ScanFailed {
			log.Warn("a stack could not be scanned for drift", "stack", st.Dir, "error", model.MaskFingerprints(st.Err.Error()))
		}
	}
	issues, err := (&workflow.DriftIssues{GitHub: tracker, Log: log}).Publish(ctx, stacks)
	if err != nil {
		return stacks, issues, fmt.Errorf("drift issues: %w", err)
	}
	return stacks, issues, nil
}

// driftRequest is the request of a scan or a revert of the repository
// checked out in dir.
func (b *Bot) driftRequest(j job, dir string, log *slog.Logger) workflow.Request {
	return workflow.Request{Workspace: b.cfg.Workspace, Log: log, Root: dir, RecordUnchanged: true,
		Origin: &model.Origin{PullRequest: j.number, Actor: j.actor, Command: "drift",
			Repository: &model.Repository{ID: j.repoID, FullName: j.owner + "/" + j.repo}}}
}

// revertDrift is /kusion apply on a drift issue of the bot's: the latest
// release's spec, which was reviewed and applied, is applied again over
// what changed outside of it. It needs write permission and no approval.
// The stack is scanned again after, which closes the issue when the drift
// is gone.
func (b *Bot) revertDrift(ctx context.Context, c *command) {
	if !b.canWrite(ctx, c) {
		return
	}
	if b.runner == nil || (b.cfg.Executor != "" && b.cfg.Executor != "in-process") || b.cfg.Backend == "" {
		c.refuse(ctx, "this bot runs stacks away from its own process or has no release store: revert the drift by applying the stack where it runs")
		return
	}
	tracker, ok := c.gh.(workflow.IssueTracker)
	if !ok {
		c.refuse(ctx, "this bot's GitHub client cannot read issues")
		return
	}
	issues, err := tracker.MarkedIssues(ctx, workflow.DriftLabel)
	if err != nil {
		c.refuseErr(ctx, "reading the drift issues failed", err)
		return
	}
	var is *githubapi.Issue
	for i := range issues {
		if issues[i].Number == c.j.number {
			is = &issues[i]
		}
	}
	if is == nil {
		c.refuse(ctx, "this is not a drift issue the bot opened")
		return
	}
	if is.State != "open" {
		c.refuse(ctx, "this drift issue is closed: the last scan found no drift to revert")
		return
	}
	stack, revision, err := workflow.DriftIssueStack(*is)
	if err != nil {
		c.refuseErr(ctx, "the issue's stack cannot be read", err)
		return
	}
	if !b.unpack(ctx, c, c.j.defaultBranch) {
		return
	}
	dir := c.dir
	root := filepath.Join(dir, b.cfg.Root)
	stackDir := filepath.Join(root, filepath.FromSlash(stack))
	if rel, err := filepath.Rel(root, stackDir); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		c.refuse(ctx, "the issue's stack is not a folder of the repository")
		return
	}
	start := time.Now()
	req, err := b.driftRequest(c.j, dir, c.log).For(workflow.Apply, stackDir)
	if err != nil {
		c.refuse(ctx, "the issue's stack is not a folder of the repository")
		return
	}
	run := b.runner.RevertDrift(ctx, req, revision, fmt.Sprintf("/kusion apply on drift issue #%d", c.j.number))
	b.m.durations.WithLabelValues("revert drift").Observe(time.Since(start).Seconds())
	if run.Err != nil {
		b.m.runs.WithLabelValues(stack, "revert drift", "failure").Inc()
		c.failed(ctx, "revert of "+mdsafe.Code(stack), run.Err)
		return
	}
	b.m.runs.WithLabelValues(stack, "revert drift", "success").Inc()
	c.react(ctx, "rocket")
	what := "nothing to change"
	if run.Release != nil {
		what = fmt.Sprintf("release %d %s", run.Release.Revision, mdsafe.Plain(string(run.Release.Phase)))
	}
	c.reply(ctx, fmt.Sprintf("@%s reverted the drift of %s: the spec of release %d applied again (%s).", c.j.actor, mdsafe.Code(stack), revision, what))
	if _, _, err := b.scanOnce(ctx, c.j, c.log, []string{stack}); err != nil {
		c.log.Warn("the scan after the revert failed: the next scheduled scan brings the issue in line", "error", err)
	}
}
