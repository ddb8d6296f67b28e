package workflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
)

// GitHub is what the pull-request workflow needs of GitHub; githubapi.Client
// is the implementation.
type GitHub interface {
	PullRequestFiles(ctx context.Context, number int) ([]githubapi.File, error)
	PullRequestsOfCommit(ctx context.Context, sha string) ([]int, error)
	Publish(ctx context.Context, issue int, key string, parts []string) ([]string, error)
	MarkOutdated(ctx context.Context, issue int, kind string, current map[string]bool, why func(key string) string) ([]string, error)
	SetCheck(ctx context.Context, sha string, ck githubapi.Check) error
}

// StackRunner runs one stack's request: *Runner in this process, an
// executor away from it.
type StackRunner interface {
	Run(ctx context.Context, req Request) *StackResult
}

// Change is one pull request's work: which stacks it touches, what to do with
// them, and where to report.
type Change struct {
	// Root is the repository checkout.
	Root string
	// Number is the pull request; SHA the commit the checks go on.
	Number int
	SHA    string
	// Command is Preview (on a pull request) or Apply (after a merge).
	Command   Command
	Selection Selection
	// Runner runs each stack's request: Request, with the stack's folder
	// and command (Workspace, Origin, Policy... are every stack's).
	Runner  StackRunner
	Request Request
	// MaxParallel bounds the stacks worked on at once (default 4).
	MaxParallel int
	// MaxParts caps the comments of one stack (default 10).
	MaxParts int
	// Files, when set, are the changed files (a push with no pull request);
	// otherwise, with Base, GitHub's comparison of Base with SHA (a merge
	// queue's group against its base branch); otherwise the pull
	// request's are listed.
	Files []ChangedFile
	Base  string
	// Comment is always (default: a comment per stack), on-change (only
	// stacks with changes, drift or errors), combined (one comment for the
	// whole pull request, a section per stack) or never.
	Comment string
	// CombineAbove: a run touching more stacks than this reports them
	// together, as combined does (one comment unless never, and one check
	// run), to stay within GitHub's limits on content creation; 0 never
	// switches. CombineSetting names where it is set, for the comment's
	// note saying why.
	CombineAbove   int
	CombineSetting string
	GitHub         GitHub
	Renderer       *report.Renderer
	// Deployments records each stack's apply and destroy as a GitHub
	// deployment of the commit (environment kusion/<project>/<workspace>),
	// when the GitHub client can (Deployer).
	Deployments bool
	// ApplyAction offers an Apply button on the check runs of a
	// preview's stacks with changes (and on the overview): set by the bot,
	// which hears the press; never offered for a fork.
	ApplyAction bool
	// OverviewCheck names the overview check run, kusion/<command> if
	// empty; set, the overview is set even when no stack is touched. A
	// merge queue's apply sets PreviewCheck, the check branch protection
	// requires of the group.
	OverviewCheck string
	// Log takes the run's lines. Its caller names the pull request and
	// the command in it (the bot's logger does, With); Change adds only
	// the stack, so no key appears twice in one JSON line.
	Log *slog.Logger
	// Prepare, if set, runs for each touched stack that still exists,
	// before the stack is loaded, with its folder (absolute, and as the
	// repository names it): the action's generate-command, writing the
	// stack's spec.yaml. Its error fails the stack alone, reported as the
	// stack's error; nothing else runs for it.
	Prepare func(ctx context.Context, dir, stack string) error
}

// StackOutcome is what happened to one stack.
type StackOutcome struct {
	Dir     string
	Deleted bool
	Result  *StackResult
	Summary engine.Summary
	// Markdown is the whole comment, before splitting (for the job summary).
	Markdown string
	Comments []string
	// Skipped is why the merge order left the stack alone: nothing was
	// reported for it.
	Skipped string
	Err     error
	// Unreported: posting its comment or setting its check run failed and
	// neither is on the pull request; its result is only in the log.
	Unreported bool

	deployment *deployment
}

// failed says whether the stack failed: its run, or the policies, which
// refused its plan.
func (so *StackOutcome) failed() bool {
	return so.Err != nil || so.policy().Refused() != nil
}

func (so *StackOutcome) policy() *PolicyOutcome {
	if so.Result == nil {
		return nil
	}
	return so.Result.Policy
}

// Outcome is what a Change did.
type Outcome struct {
	Stacks []*StackOutcome
	// Changed: some stack has something to create, update or delete, or a
	// change cannot be ruled out because a preview is not Complete. A
	// workflow that gates on "nothing changes" (skip a review, merge by
	// itself) must not read an unknown as a no: it fails closed.
	Changed bool
	// Complete: every touched stack was previewed in full; false when a
	// resource could not be previewed or a stack got no preview at all (a
	// bad spec, no store). Changed && Complete is "known changes".
	Complete bool
	// Failed: some stack could not be previewed, applied or reported.
	Failed bool
	// Unreported are the stacks with neither a comment nor a check run,
	// as GitHub refused both (StackOutcome.Unreported).
	Unreported []string
	// Combined: the stacks were reported together, in one comment and one
	// check run.
	Combined bool
	// Err is what failed in reporting the run as a whole (its overview
	// check run, the combined comment, marking comments outdated); each
	// stack's own failures are in its StackOutcome.
	Err error
}

// Run previews (or applies) every stack the pull request touches, each in
// its own comment and check run, and marks the comments of stacks it no
// longer touches outdated. A failing stack fails alone.
func (c *Change) Run(ctx context.Context) (*Outcome, error) {
	if c.Runner == nil {
		return nil, errors.New("workflow: the Change has no Runner")
	}
	changed, sel, err := c.changedFiles(ctx)
	if err != nil {
		return nil, err
	}
	stacks, err := AffectedStacks(c.Root, changed, sel)
	if err != nil {
		return nil, err
	}
	c.notePolicyChange(changed)
	c.log().Info("stacks touched", "files", len(changed), "stacks", len(stacks))
	// A workspace file the change edits is named in the report of each
	// stack that uses it (or would, but for the store's copy).
	edited := map[string]bool{}
	for _, f := range changed {
		edited[f.Path] = true
	}

	out := &Outcome{Stacks: make([]*StackOutcome, len(stacks)), Combined: c.combined(len(stacks))}
	if out.Combined && c.Comment != "combined" {
		c.log().Info("reporting the stacks in one comment and one check run", "stacks", len(stacks), "combineAbove", c.CombineAbove)
	}
	parallel := c.MaxParallel
	if parallel <= 0 {
		parallel = 4
	}
	// A failing stack fails alone: its error is in its outcome.
	var runs errgroup.Group
	runs.SetLimit(parallel)
	for i, st := range stacks {
		runs.Go(func() error {
			so := c.run(ctx, st, edited)
			if !out.Combined {
				c.report(ctx, so)
			}
			out.Stacks[i] = so
			return nil
		})
	}
	runs.Wait()
	c.finish(ctx, out)
	return out, nil
}

// notePolicyChange marks the request's policies changed when the change
// touches their folder: the report then says the rules changed too.
func (c *Change) notePolicyChange(changed []ChangedFile) {
	p := c.Request.Policy
	if p == nil || p.Folder == "" {
		return
	}
	prefix := strings.Trim(p.Folder, "/") + "/"
	for _, f := range changed {
		if strings.HasPrefix(f.Path, prefix) || strings.HasPrefix(f.PreviousPath, prefix) {
			p.Changed = true
		}
	}
}

// finish sums the stacks' outcomes up and reports the change as a whole:
// the overview (or the combined comment), the deployments' ends, and the
// comments of stacks no longer touched marked outdated.
func (c *Change) finish(ctx context.Context, out *Outcome) {
	current := map[string]bool{}
	out.Complete = true
	for _, so := range out.Stacks {
		current[c.key(so.Dir)] = true
		if so.failed() {
			out.Failed = true
		}
		if so.Unreported {
			out.Unreported = append(out.Unreported, so.Dir)
		}
		if so.Summary.Create+so.Summary.Update+so.Summary.Delete > 0 {
			out.Changed = true
		}
		if so.Summary.Errors > 0 || (so.Err != nil && (so.Result == nil || so.Result.Preview == nil)) {
			out.Complete = false
		}
	}
	if !out.Complete {
		out.Changed = true
	}
	if out.Combined {
		current = map[string]bool{c.combinedKey(): true}
		c.reportCombined(ctx, out)
	} else {
		c.reportOverview(ctx, out)
	}
	for _, so := range out.Stacks {
		url := ""
		if len(so.Comments) > 0 {
			url = so.Comments[0]
		}
		c.endDeployment(ctx, so, url)
	}
	if c.Command == Preview && c.Number > 0 && c.Comment != "never" {
		if _, err := c.GitHub.MarkOutdated(ctx, c.Number, c.kind(), current, c.outdatedWhy(out.Combined)); err != nil {
			out.Err = errors.Join(out.Err, err)
		}
	}
	if out.Err != nil {
		out.Failed = true
	}
}

// Comparer lists the files that differ between two commits;
// *githubapi.Client is the implementation.
type Comparer interface {
	CompareFiles(ctx context.Context, base, head string) (files []githubapi.File, complete bool, err error)
}

// changedFiles is what the change changes, and the selection to map it
// with: Files if given; else GitHub's comparison of Base with SHA, every
// stack taken as changed when GitHub's list may be cut short; else the
// pull request's files.
func (c *Change) changedFiles(ctx context.Context) ([]ChangedFile, Selection, error) {
	sel := c.Selection
	if c.Files != nil {
		return c.Files, sel, nil
	}
	var files []githubapi.File
	var err error
	if c.Base != "" {
		cmp, ok := c.GitHub.(Comparer)
		if !ok {
			return nil, sel, errors.New("workflow: the change has a base commit but its GitHub client cannot compare commits")
		}
		var complete bool
		if files, complete, err = cmp.CompareFiles(ctx, c.Base, c.SHA); err != nil {
			return nil, sel, fmt.Errorf("compare the group with its base: %w", err)
		}
		if !complete {
			// GitHub lists at most 300 files of a comparison: past that,
			// every stack rather than one missed.
			sel.Shared = append(slices.Clone(sel.Shared), "**")
		}
	} else if files, err = c.GitHub.PullRequestFiles(ctx, c.Number); err != nil {
		return nil, sel, err
	}
	changed := make([]ChangedFile, len(files))
	for i, f := range files {
		changed[i] = ChangedFile{Path: f.Path, Status: f.Status, PreviousPath: f.PreviousPath}
	}
	return changed, sel, nil
}

// combined says whether a run of n stacks reports them together.
func (c *Change) combined(n int) bool {
	return c.Comment == "combined" || (c.CombineAbove > 0 && n > c.CombineAbove)
}

// outdatedWhy says why a comment of ours is outdated: its stack is no
// longer touched, or the run reports its stacks the other way (together,
// or one comment each).
func (c *Change) outdatedWhy(combined bool) func(key string) string {
	asOf := ""
	if c.SHA != "" {
		asOf = " (as of " + shortSHA(c.SHA) + ")"
	}
	return func(key string) string {
		switch {
		case combined && strings.HasPrefix(key, c.kind()+" stack="):
			return "the stacks of this pull request are now reported together, in one comment" + asOf + "."
		case !combined && !strings.HasPrefix(key, c.kind()+" stack="):
			return "the stacks of this pull request are now reported one comment each" + asOf + "."
		}
		return "this pull request no longer changes this stack" + asOf + "."
	}
}

func (c *Change) log() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.New(slog.DiscardHandler)
}

func (c *Change) kind() string {
	if c.Command == Preview {
		return "preview"
	}
	return "apply"
}

// workspace names the workspace in a stack's comment key: the one given,
// or "default" when each stack names its own (the folder alone keeps keys
// apart then).
func (c *Change) workspace() string {
	if c.Request.Workspace != "" {
		return c.Request.Workspace
	}
	return project.DefaultWorkspace
}

// key names a stack's comment: its folder is unique in the repository and
// known even when the stack cannot be loaded. The folder's name is the
// repository's: it is escaped for the hidden marker it lands in.
func (c *Change) key(dir string) string {
	return fmt.Sprintf("%s stack=%s workspace=%s", c.kind(), mdsafe.CommentValue(dir), mdsafe.CommentValue(c.workspace()))
}

// run runs one stack and renders its report. edited are the files the
// change touches, relative to the repository root.
func (c *Change) run(ctx context.Context, st AffectedStack, edited map[string]bool) *StackOutcome {
	so := &StackOutcome{Dir: st.Dir, Deleted: st.Deleted}
	log := c.log().With("stack", st.Dir)
	cmd, dryRun := c.Command, c.Request.DryRun
	if st.Deleted {
		cmd, dryRun = Destroy, c.Command == Preview
	}
	if cmd == Preview {
		dryRun = false
	}
	log.Info("running", "operation", cmd, "dryRun", dryRun)
	dir := filepath.Join(c.Root, filepath.FromSlash(st.Dir))
	req, err := c.Request.For(cmd, dir)
	req.DryRun = dryRun
	var run *StackResult
	if err != nil {
		run = &StackResult{Err: err}
	}
	if run == nil && c.Prepare != nil && !st.Deleted {
		if err := c.Prepare(ctx, dir, st.Dir); err != nil {
			run = &StackResult{Err: err}
		}
	}
	if run == nil {
		so.deployment = c.beginDeployment(ctx, req, st.Dir, log)
		run = c.Runner.Run(ctx, req)
	}
	so.Result, so.Err = run, c.relative(run.Err)
	if run.Skipped != "" {
		log.Info("skipped", "reason", run.Skipped)
		so.Skipped = run.Skipped
		return so
	}
	if run.ReportedElsewhere != "" {
		log.Info("not reported here", "reason", run.ReportedElsewhere)
		return so
	}

	p := run.Preview
	if p == nil {
		// The stack did not get as far as a plan: its comment is the error.
		p = &engine.Preview{Stack: st.Dir, Workspace: c.workspace(), ChangeSteps: map[string]*engine.Step{}}
		if run.Stack != nil {
			p.Project, p.Stack, p.Workspace = run.Stack.Project.Name, run.Stack.Name, run.Workspace
		}
		p.WorkspaceOrigin = run.WorkspaceOrigin
	}
	if o := p.WorkspaceOrigin; o != nil {
		o = editedWorkspace(o, edited)
		p.WorkspaceOrigin = o
	}
	so.Summary = p.Summary()
	var release *model.Release
	if c.Command != Preview {
		release = run.Release
	}
	body, err := c.Renderer.Comment(p, so.Err, report.CommentOptions{Marker: githubapi.Marker(c.key(st.Dir), 1), Release: release, Location: st.Dir, Destroy: cmd == Destroy, RunURL: run.RunURL,
		Policy: run.Policy.Report(), MaxDetail: MaxShown(c.maxParts())})
	if err != nil {
		so.Err = errors.Join(so.Err, err)
		return so
	}
	so.Markdown = body
	return so
}

// editedWorkspace is o with the workspace's repository files that the
// change edits (the one used, or the one the store's copy won over). A
// copy: the preview may be shared.
func editedWorkspace(o *engine.WorkspaceOrigin, edited map[string]bool) *engine.WorkspaceOrigin {
	c := *o
	c.Edited = nil
	for _, f := range []string{o.Unused, o.File} {
		if f != "" && (o.Source == engine.WorkspaceFromRepository || f == o.Unused) && edited[f] && !slices.Contains(c.Edited, f) {
			c.Edited = append(c.Edited, f)
		}
	}
	return &c
}

// report publishes one stack's comment and sets its check run.
func (c *Change) report(ctx context.Context, so *StackOutcome) {
	if so.Skipped != "" || so.Markdown == "" {
		return
	}
	key := c.key(so.Dir)
	ck := githubapi.Check{Name: c.stackCheck(so.Dir), Conclusion: "success", Title: c.title(so), Summary: so.Markdown}
	if so.failed() {
		ck.Conclusion = "failure"
	}
	if s := so.Summary; !so.failed() && s.Errors == 0 && s.Create+s.Update+s.Delete > 0 {
		ck.Actions = c.applyAction("Apply this stack, as /kusion apply")
	}
	r := c.publish(ctx, c.log().With("stack", so.Dir), reportPair{
		key: key, body: so.Markdown, split: func(body string) []string { return c.split(key, so.Dir, body) },
		comment: c.comments(so), check: ck,
		of: "stack " + so.Dir, this: "this stack", shown: "this stack",
	})
	so.Comments, so.Unreported = r.urls, r.unreported
	so.Err = errors.Join(so.Err, r.err)
}

// split cuts a stack's report into comments, on Markdown boundaries.
func (c *Change) split(key, dir, body string) []string {
	return report.Split(body, report.SplitOptions{
		Limit:    githubapi.MaxCommentLength,
		MaxParts: c.maxParts(),
		Header: func(i, n int) string {
			return githubapi.Marker(key, i) + "\n*Stack " + mdsafe.Code(dir) + fmt.Sprintf(", continued (%d of %d)*\n\n", i, n)
		},
		Footer:    func(i, n int) string { return fmt.Sprintf("\n\n*Continued in the next comment (%d of %d).*", i+1, n) },
		Truncated: "\n\n> [!NOTE]\n> This preview is too long for comments: the rest is in the workflow run's job summary.",
	})
}

// comments says whether the stack's comment is published: on-change keeps
// quiet about a stack with nothing to change, no drift and no error.
func (c *Change) comments(so *StackOutcome) bool {
	switch c.Comment {
	case "never":
		return false
	case "on-change":
		s := so.Summary
		return so.failed() || s.Create+s.Update+s.Delete+s.Drift > 0
	}
	return true
}

// MaxShown is the most of a stack's report anyone is shown when it is cut
// into parts comments: those, or the job summary the action writes it to.
func MaxShown(parts int) int {
	return max(parts*githubapi.MaxCommentLength, githubapi.MaxStepSummary)
}

func (c *Change) maxParts() int {
	if c.MaxParts > 0 {
		return c.MaxParts
	}
	return 10
}

// title is the one-line outcome a check run shows.
func (c *Change) title(so *StackOutcome) string {
	s := so.Summary
	t := fmt.Sprintf("%d to create, %d to update, %d to delete, %d unchanged, %d drifted", s.Create, s.Update, s.Delete, s.UnChanged, s.Drift)
	if s.Errors > 0 {
		t += fmt.Sprintf(", %d failed", s.Errors)
	}
	switch {
	case s.Errors > 0 && c.Command == Preview:
		// Resources that could not be previewed: the counts alone would
		// read as a complete plan.
		t = fmt.Sprintf("preview incomplete, %d of %d resources failed", s.Errors, s.Total())
		if so.Err != nil {
			t += ": " + firstLine(so.Err.Error())
		}
		return t
	case so.Err != nil && c.Command == Preview:
		return "preview failed: " + firstLine(so.Err.Error())
	case so.Err == nil && so.policy().Refused() != nil:
		return "denied by policy: " + firstLine(so.policy().Refused().Error())
	case so.Err != nil:
		return c.kind() + " failed: " + firstLine(so.Err.Error())
	case so.Result != nil && so.Result.Unchanged && c.Command != Preview:
		return "nothing to " + string(c.Command) + ", no release written: " + t
	case so.Result != nil && so.Result.Release != nil && c.Command != Preview:
		return fmt.Sprintf("release %d %s: %s", so.Result.Release.Revision, so.Result.Release.Phase, t)
	}
	return t
}

// relative shows paths inside the checkout relative to its root: the comment
// names apps/web/dev/spec.yaml, not the runner's folder.
func (c *Change) relative(err error) error {
	if err == nil {
		return nil
	}
	return relativeTo(c.Root, err)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	return line
}

func shortSHA(s string) string {
	if len(s) > 7 {
		return s[:7]
	}
	return s
}
