package workflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/engine/project"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/model"
)

// Request is one run's work as data: what to do, to which stack, at which
// commit, for whom. The Runner holds what every run shares; the Request,
// what this one is. An executor that runs the work outside this process (a
// Kubernetes Job, a workflow run) is handed a Request as JSON, and runs it
// exactly as this process would have.
type Request struct {
	Command Command `json:"command"`
	// Stack is the stack's folder, slash-separated, relative to Root.
	Stack string `json:"stack"`
	// Commit is the commit the stack runs at.
	Commit string `json:"commit"`
	// Workspace is the workspace the stack is generated and released
	// with; empty lets the stack name its own (project.Stack.WorkspaceName:
	// stack.yaml's workspace, else the workspace named after the stack,
	// else "default").
	Workspace string `json:"workspace,omitempty"`
	// DryRun shows what an apply or destroy would do, changing nothing.
	DryRun bool `json:"dryRun,omitempty"`
	// Offline previews against the prior release only, reading nothing
	// live (no credentials: a pull request from a fork). Apply and destroy
	// refuse.
	Offline bool `json:"offline,omitempty"`
	// RecordUnchanged writes a release for an apply or destroy that has
	// nothing to change, as an audit trail of every run; by default such a
	// run writes none (engine.ApplyOptions.SkipUnchanged) and
	// StackResult.Unchanged says so.
	RecordUnchanged bool `json:"recordUnchanged,omitempty"`
	// Origin is who asked, from which pull request and repository; the
	// release records it. Nil: a run from nowhere in particular.
	Origin *model.Origin `json:"origin,omitempty"`
	// Trigger tells apart two requests of the same work at the same commit:
	// "merge" for a merge's apply, "comment <id>" for a command. The same
	// trigger delivered twice, or handled by two bots, is one request.
	Trigger string `json:"trigger,omitempty"`
	// Merge is set for a merge's apply: merges apply in merge order, and a
	// merge the stack's latest release outdates or did already is skipped.
	Merge *MergeOrder `json:"merge,omitempty"`
	// Policy are the rules the plan is judged by, as data: the worker
	// compiles them where it runs.
	Policy *Policies `json:"policy,omitempty"`
	// RollbackTo, with Preview or Apply, runs the spec release RollbackTo
	// recorded instead of generating one: the stack is put back as that
	// release left it (see stackRun.recall).
	RollbackTo uint64 `json:"rollbackTo,omitempty"`

	// Root is the repository checkout the stack lies in, on this machine:
	// project.yaml and workspaces/ are not looked for above it, and files
	// a spec's context names must lie in it. Empty: a stack on one's own
	// machine (see project.LoadStack), Stack as given. Each process has its
	// own: it is not sent.
	Root string `json:"-"`
	// Log takes the run's lines (default the Runner's); not sent.
	Log *slog.Logger `json:"-"`
}

// NewRequest is the request of running cmd on the stack in dir, a folder
// of the checkout at root (or, root empty, a folder of one's machine).
func NewRequest(cmd Command, root, dir string) (Request, error) {
	r := Request{Command: cmd, Root: root, Stack: filepath.ToSlash(dir)}
	if root == "" {
		return r, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return r, fmt.Errorf("request for %s: %w", dir, err)
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return r, fmt.Errorf("request for %s: not inside the checkout %s", dir, root)
	}
	r.Stack = filepath.ToSlash(rel)
	return r, nil
}

// For is the request of running cmd on the stack in dir, with everything
// else as r's (the template a change or a scan runs each stack with).
func (r Request) For(cmd Command, dir string) (Request, error) {
	out, err := NewRequest(cmd, r.Root, dir)
	if err != nil {
		return out, err
	}
	r.Command, r.Stack = out.Command, out.Stack
	if r.Commit == "" && r.Origin != nil {
		r.Commit = r.Origin.SHA
	}
	return r, nil
}

// Dir is the stack's folder on this machine.
func (r Request) Dir() string {
	if r.Root == "" {
		return filepath.FromSlash(r.Stack)
	}
	return filepath.Join(r.Root, filepath.FromSlash(r.Stack))
}

// repository is the repository the run comes from, nil outside GitHub.
func (r Request) repository() *model.Repository {
	if r.Origin == nil {
		return nil
	}
	return r.Origin.Repository
}

// HandOver is where an executor that runs the stack away from this process
// starts: the request checked, and the run as far as this process takes it
// (the stack read, and its workspace, which may pick the executor's
// settings). A request no worker may take, or a stack that cannot be read,
// fails here (run.Err), as it would where it runs, with nothing handed
// over.
func HandOver(req Request) *StackResult {
	run := &StackResult{}
	if req.Root == "" {
		run.Err = fmt.Errorf("request for %s: no checkout to hand over", req.Stack)
		return run
	}
	if err := req.Check(); err != nil {
		run.Err = err
		return run
	}
	st, err := loadStack(req.Command, req.Root, req.Dir())
	if err != nil {
		run.Err = err
		return run
	}
	run.Stack, run.Workspace = st, st.WorkspaceName(req.Workspace)
	return run
}

// Check refuses a request no run may take: an unknown command, a stack
// outside the repository, no commit.
func (r Request) Check() error {
	if _, err := ParseCommand(string(r.Command)); err != nil {
		return fmt.Errorf("request: %w", err)
	}
	if !InRepository(r.Stack) {
		return fmt.Errorf("request: stack %q is not a folder inside the repository", r.Stack)
	}
	if !commitName.MatchString(r.Commit) {
		return fmt.Errorf("request: commit %q is not a commit's hex name", r.Commit)
	}
	return nil
}

// InRepository says whether p names a folder inside a repository, as a
// request's stack or a policy folder is given: a clean, relative,
// slash-separated path that does not climb out.
func InRepository(p string) bool {
	return p != "" && !path.IsAbs(p) && path.Clean(p) == p && p != ".." && !strings.HasPrefix(p, "../")
}

var commitName = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// ID names the request: the same repository, stack, workspace, commit,
// command and trigger give the same id, in every process. It is a valid
// Kubernetes name and work file name.
func (r Request) ID() string {
	var repo int64
	if rp := r.repository(); rp != nil {
		repo = rp.ID
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%s\x00%s\x00%s\x00%s\x00%t\x00%s", repo, r.Stack, r.Workspace, r.Commit, r.Command, r.DryRun, r.Trigger)
	return string(r.Command) + "-" + hex.EncodeToString(h.Sum(nil))[:24]
}

// CheckoutID names the work files of r's checkout: one per repository and
// commit, shared by the requests of every stack at that commit.
func (r Request) CheckoutID() string {
	var repo int64
	if rp := r.repository(); rp != nil {
		repo = rp.ID
	}
	return fmt.Sprintf("checkout-%d-%s", repo, strings.ToLower(r.Commit))
}

// MergeOrder is a merge's place in the order merges apply in.
type MergeOrder struct {
	SHA      string    `json:"sha"`
	MergedAt time.Time `json:"mergedAt"`
	// Recovering: the apply was found undone after a restart, not
	// delivered.
	Recovering bool `json:"recovering,omitempty"`
}

// maxQueueWalk bounds how far back a merge looks for its commit among the
// releases a merge queue applied: a queue lands its groups in minutes, so
// the merge of a group is never far behind the release that applied it.
const maxQueueWalk = 32

// appliedInQueue says why the merge at sha is not applied: a merge queue
// applied it already (the group's commit is the merge's), and other groups
// may have applied over it since; "" when no release of the queue applied
// it. It reads back from latest over the releases the queue applied, and
// no further: a merge is applied after the release before it.
func appliedInQueue(ctx context.Context, get func(ctx context.Context, revision uint64) (*model.Release, error), latest *model.Release, sha string) (string, error) {
	r := latest
	for range maxQueueWalk {
		if r == nil || r.Origin == nil || !r.Origin.MergeQueue {
			return "", nil
		}
		if r.Origin.SHA == sha && r.Phase == model.PhaseSucceeded {
			return fmt.Sprintf("release %d applied this commit in the merge queue", r.Revision), nil
		}
		if r.Revision <= 1 {
			return "", nil
		}
		prev, err := get(ctx, r.Revision-1)
		if err != nil {
			return "", fmt.Errorf("read release %d, looking for the merge queue's apply of %s: %w", r.Revision-1, shortSHA(sha), err)
		}
		r = prev
	}
	return "", nil
}

// Skip says why the merge is not applied over the stack's latest release
// (nil if none), "" to apply it.
//
// A merge older than the one the stack's latest release applied is never
// applied over it: deliveries and queues do not keep merge order. A
// recovery pass also leaves alone a merge whose apply failed and was
// reported, and a stack someone applied by other means since the merge; a
// delivery, which GitHub redelivers only when asked, retries.
func (m MergeOrder) Skip(latest *model.Release) string {
	if latest == nil {
		return ""
	}
	o := latest.Origin
	if o == nil {
		o = &model.Origin{}
	}
	ours := o.SHA == m.SHA
	switch {
	case ours && latest.Phase == model.PhaseSucceeded:
		return fmt.Sprintf("release %d applied this merge already", latest.Revision)
	case ours && m.Recovering && latest.Phase == model.PhaseFailed && !Interrupted(latest.Message):
		return fmt.Sprintf("release %d of this merge failed and was reported; apply again with /kusion apply", latest.Revision)
	case ours:
		// Running (its holder may be dead: the backend's lease decides)
		// or interrupted: do it again.
		return ""
	case !o.MergedAt.IsZero() && o.MergedAt.After(m.MergedAt):
		return fmt.Sprintf("release %d applied a newer merge (#%d, %s)", latest.Revision, o.PullRequest, mdsafe.Code(shortSHA(o.SHA)))
	case m.Recovering && o.MergedAt.IsZero() && latest.CreateTime.After(m.MergedAt):
		return fmt.Sprintf("release %d, made after this merge, applied the stack since", latest.Revision)
	}
	return ""
}

// Interrupted tells a release its run's cancellation ended (a drain past
// its deadline) from one that failed by itself or was unlocked by hand.
func Interrupted(msg string) bool {
	return strings.Contains(msg, context.Canceled.Error()) || strings.Contains(msg, context.DeadlineExceeded.Error())
}

// RequestResult is what a request's run leaves for the process that asked
// for it: enough to report the stack as if it had run there. It holds what
// a comment may show and nothing more (previews are public views; the
// release is read from the store by its revision).
type RequestResult struct {
	Request string `json:"request"`
	// Stack, Commit and Command are the request's, as the run read them:
	// a result is taken only for the request it answers.
	Stack     string  `json:"stack,omitempty"`
	Commit    string  `json:"commit,omitempty"`
	Command   Command `json:"command,omitempty"`
	Project   string  `json:"project,omitempty"`
	StackName string  `json:"stackName,omitempty"`
	Workspace string  `json:"workspace,omitempty"`
	// WorkspaceOrigin is where the workspace came from.
	WorkspaceOrigin *engine.WorkspaceOrigin `json:"workspaceOrigin,omitempty"`
	Preview         *engine.Preview         `json:"preview,omitempty"`
	// Revision is the release the run wrote, 0 for none; Phase is how it
	// ended, for an asker that cannot read the store.
	Revision  uint64      `json:"revision,omitempty"`
	Phase     model.Phase `json:"phase,omitempty"`
	Skipped   string      `json:"skipped,omitempty"`
	Unchanged bool        `json:"unchanged,omitempty"`
	// Error is the run's error, its paths relative to the checkout.
	Error string `json:"error,omitempty"`
	// Started is when the worker began the run.
	Started time.Time `json:"started,omitzero"`
	// Policy is what the request's policies said of the plan.
	Policy *PolicyOutcome `json:"policy,omitempty"`
}

// ResultFile is the work file a request's result is written to;
// ReportFile the one the process reporting it takes, written once.
const (
	ResultFile = "result.json"
	ReportFile = "report"
)

// NewRequestResult is what run, of req in the checkout at root, leaves.
func NewRequestResult(req Request, root string, run *StackResult) RequestResult {
	res := RequestResult{Request: req.ID(), Stack: req.Stack, Commit: req.Commit, Command: req.Command, Workspace: run.Workspace, WorkspaceOrigin: run.WorkspaceOrigin, Preview: run.Preview, Skipped: run.Skipped, Unchanged: run.Unchanged, Started: run.Started, Policy: run.Policy}
	if run.Stack != nil && run.Stack.Project != nil {
		res.Project, res.StackName = run.Stack.Project.Name, run.Stack.Name
	}
	if run.Release != nil {
		res.Revision, res.Phase = run.Release.Revision, run.Release.Phase
	}
	if run.Err != nil {
		res.Error = relativeTo(root, run.Err).Error()
	}
	return res
}

// StackResult is the result as the workflow reports it; release is the one
// it names, read from the store (nil if none).
func (res RequestResult) StackResult(release *model.Release) *StackResult {
	run := &StackResult{Workspace: res.Workspace, WorkspaceOrigin: res.WorkspaceOrigin, Preview: res.Preview, Release: release, Skipped: res.Skipped, Unchanged: res.Unchanged, Started: res.Started, Policy: res.Policy}
	if res.Project != "" {
		run.Stack = &project.Stack{Name: res.StackName, Project: &project.Project{Name: res.Project}}
	}
	if res.Error != "" {
		run.Err = errors.New(res.Error)
	}
	return run
}

// Encode is the result as stored.
func (res RequestResult) Encode() ([]byte, error) { return json.Marshal(res) }

// DecodeRequestResult reads a stored result of req, refusing one that
// names another request, stack, commit or command: whoever wrote it
// answered something else than what was asked.
func DecodeRequestResult(req Request, data []byte) (RequestResult, error) {
	id := req.ID()
	var res RequestResult
	if err := json.Unmarshal(data, &res); err != nil {
		return res, fmt.Errorf("result of %s: %w", id, err)
	}
	if res.Request != id {
		return res, fmt.Errorf("result of %s names request %q", id, res.Request)
	}
	if res.Stack == "" && res.Commit == "" && res.Command == "" {
		return res, fmt.Errorf("result of %s names no stack, commit or command (written by a runner older than the asker?)", id)
	}
	var bad []string
	for _, f := range []struct{ name, got, want string }{
		{"stack", res.Stack, req.Stack}, {"commit", res.Commit, req.Commit}, {"command", string(res.Command), string(req.Command)},
	} {
		if f.got != f.want {
			bad = append(bad, fmt.Sprintf("%s %q, not %q", f.name, f.got, f.want))
		}
	}
	if len(bad) > 0 {
		return res, fmt.Errorf("result of %s names %s", id, strings.Join(bad, ", "))
	}
	return res, nil
}

// relativeTo shows paths inside the checkout at root relative to it.
func relativeTo(root string, err error) error {
	prefix := strings.TrimSuffix(filepath.ToSlash(root), "/") + "/"
	return errors.New(model.MaskFingerprints(strings.ReplaceAll(err.Error(), prefix, "")))
}
