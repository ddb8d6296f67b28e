package workflow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing/fstest"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/policy"
	"github.com/kusionpr/kusionpr/report"
)

// Policies are the rules a run's stacks are judged by: the Rego files of a
// repository's policy folder, read as the commit the change was made onto
// holds them (what was there before it: a change never judges itself), and
// the operator's own. They are data: an executor away from this process is
// handed them with the request, and compiles them there.
//
// The two are sealed from each other: compiled and evaluated apart, each
// with only its own packages and data. Compiled together, a repository's
// file in the operator's package could define lower or count (a rule
// named like a builtin wins over it in its package), add to a set an
// operator's rule reads, or print the operator's data into a comment. A
// repository's rules can only add denials.
type Policies struct {
	// Files are the repository's policy files by path (slash-separated);
	// Source says where they were read, for people ("policy/ at 1a2b3c4,
	// the head of main").
	Files  map[string]string `json:"files,omitempty"`
	Source string            `json:"source"`
	// Operator are the operator's policy files, keyed by a path that
	// tells them apart from the repository's (operator/<folder>/<file>).
	Operator map[string]string `json:"operator,omitempty"`
	// Packages are the packages whose deny, violation and warn rules count
	// (default main).
	Packages []string `json:"packages,omitempty"`
	// LoadError is why the repository's folder could not be read: every
	// plan is refused (fail closed).
	LoadError string `json:"loadError,omitempty"`
	// Overrides are the rules an authorised person let an apply pass.
	Overrides   []string            `json:"overrides,omitempty"`
	PullRequest *policy.PullRequest `json:"pullRequest,omitempty"`
	// Folder is the policy folder in the repository ("policy"): a change
	// that edits it is told it is judged by the rules it was based on.
	Folder string `json:"folder,omitempty"`
	// Changed: the change edits the policy folder itself.
	Changed bool `json:"changed,omitempty"`

	once sync.Once
	sets []judgingSet
}

// OperatorSource names the operator's rules in comments and errors.
const OperatorSource = "the operator's"

// judgingSet is one sealed set of rules, compiled, or why it could not be.
type judgingSet struct {
	source string
	set    *policy.Set
	err    error
}

// MaxPolicyFiles and MaxPolicyBytes bound a policy folder: rules, not a
// dump.
const (
	MaxPolicyFiles = 200
	MaxPolicyBytes = 4 << 20
)

// compiled is the operator's rules and the repository's, each compiled on
// its own, once for every stack of the run.
func (p *Policies) compiled(ctx context.Context, sb *policy.Sandbox) []judgingSet {
	p.once.Do(func() {
		if len(p.Operator) > 0 {
			set, err := compileFiles(ctx, p.Operator, p.Packages, sb)
			p.sets = append(p.sets, judgingSet{source: OperatorSource, set: set, err: err})
		}
		switch {
		case p.LoadError != "":
			p.sets = append(p.sets, judgingSet{source: p.Source, err: errors.New(p.LoadError)})
		case len(p.Files) > 0:
			set, err := compileFiles(ctx, p.Files, p.Packages, sb)
			p.sets = append(p.sets, judgingSet{source: p.Source, set: set, err: err})
		}
	})
	return p.sets
}

// compileFiles compiles files as one policy folder, to be evaluated in sb
// (nil: here).
func compileFiles(ctx context.Context, files map[string]string, packages []string, sb *policy.Sandbox) (*policy.Set, error) {
	fsys := fstest.MapFS{}
	for name, body := range files {
		if !fs.ValidPath(name) {
			return nil, fmt.Errorf("policy file %q: not a path inside the folder", name)
		}
		fsys[name] = &fstest.MapFile{Data: []byte(body), Mode: 0o644}
	}
	return policy.Load(ctx, fsys, policy.Options{Packages: packages, Sandbox: sb})
}

// sources names every set of rules, for people.
func (p *Policies) sources() string {
	var out []string
	if len(p.Operator) > 0 {
		out = append(out, OperatorSource)
	}
	if p.LoadError != "" || len(p.Files) > 0 {
		out = append(out, p.Source)
	}
	return strings.Join(out, " and ")
}

// PolicyOutcome is what the policies said of one stack's plan.
type PolicyOutcome struct {
	Source   string           `json:"source"`
	Denies   []policy.Finding `json:"denies,omitempty"`
	Warnings []policy.Finding `json:"warnings,omitempty"`
	// Err: the rules could not be evaluated; the plan is refused.
	Err string `json:"error,omitempty"`
	// Overrides are the rules an override let the plan pass.
	Overrides []string `json:"overrides,omitempty"`
	Changed   bool     `json:"changed,omitempty"`
}

// Refused is the error of a plan the outcome refuses, nil if it passes: a
// denial an override does not cover, or rules that could not be
// evaluated.
func (o *PolicyOutcome) Refused() error {
	if o == nil {
		return nil
	}
	if o.Err != "" {
		return fmt.Errorf("the policies (%s) could not be evaluated: %s", o.Source, o.Err)
	}
	var left []string
	for _, d := range o.Denies {
		if !slices.Contains(o.Overrides, d.Rule) {
			left = append(left, d.Rule+": "+d.Message)
		}
	}
	if len(left) == 0 {
		return nil
	}
	return &PolicyDenied{Source: o.Source, Denials: left}
}

// PolicyDenied is the error of a plan the policies deny.
type PolicyDenied struct {
	Source  string
	Denials []string
}

func (e *PolicyDenied) Error() string {
	return fmt.Sprintf("denied by the policies of %s: %s", e.Source, strings.Join(e.Denials, "; "))
}

// Report is the outcome as a comment shows it.
func (o *PolicyOutcome) Report() *report.PolicyReport {
	if o == nil {
		return nil
	}
	r := &report.PolicyReport{Source: o.Source, Err: o.Err, Changed: o.Changed}
	for _, d := range o.Denies {
		r.Denies = append(r.Denies, report.PolicyFinding{Rule: d.Rule, Message: d.Message, Overridden: slices.Contains(o.Overrides, d.Rule), Operator: d.Source == OperatorSource})
	}
	for _, w := range o.Warnings {
		r.Warnings = append(r.Warnings, report.PolicyFinding{Rule: w.Rule, Message: w.Message, Operator: w.Source == OperatorSource})
	}
	return r
}

// judge evaluates the rules on one stack's plan, in sb (nil: here).
// Whatever fails, the outcome says so and refuses the plan: rules never
// pass by error.
func (p *Policies) judge(ctx context.Context, sb *policy.Sandbox, pv *engine.Preview, spec *model.Spec, dir string) *PolicyOutcome {
	o := &PolicyOutcome{Source: p.sources(), Overrides: slices.Clone(p.Overrides), Changed: p.Changed}
	in := policy.Input{Preview: pv, Spec: spec, Dir: path.Clean(dir), PullRequest: p.PullRequest}
	if pv != nil {
		in.Project, in.Stack, in.Workspace = pv.Project, pv.Stack, pv.Workspace
	}
	sets := p.compiled(ctx, sb)
	var errs []string
	for _, js := range sets {
		err := js.err
		var res policy.Result
		if err == nil {
			res, err = js.set.Eval(ctx, in)
		}
		if err != nil {
			// One set failing refuses the plan; the other's findings
			// are still shown.
			msg := err.Error()
			if len(sets) > 1 {
				msg = js.source + ": " + msg
			}
			errs = append(errs, model.MaskFingerprints(msg))
			continue
		}
		for _, f := range res.Denies {
			f.Source = js.source
			o.Denies = append(o.Denies, f)
		}
		for _, f := range res.Warnings {
			f.Source = js.source
			o.Warnings = append(o.Warnings, f)
		}
	}
	o.Err = strings.Join(errs, "\n")
	return o
}

// PolicyReader reads, through GitHub, what judges a change: the commit
// it was made onto (a branch's head, a merge's parents) and the policy
// folder there; *githubapi.Client is the implementation.
type PolicyReader interface {
	FolderAt(ctx context.Context, dir, ref string, lim githubapi.ArchiveLimits) (map[string][]byte, error)
	BranchHead(ctx context.Context, branch string) (string, error)
	Commit(ctx context.Context, sha string) (*githubapi.Commit, error)
}

// ReadPolicyFolder reads the .rego files of fsys, bounded as a policy
// folder is; a folder that does not exist holds none.
func ReadPolicyFolder(fsys fs.FS) (map[string]string, error) {
	out := map[string]string{}
	var total int64
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".rego") {
			return nil
		}
		if !d.Type().IsRegular() {
			// A link could name a file outside the folder (a credential
			// of the runner's), whose text a parse error would quote; the
			// policy package refuses one for the same reason, but sees
			// only what is read here.
			return fmt.Errorf("policy %s: not a regular file (a symbolic link?): refused", p)
		}
		if len(out) >= MaxPolicyFiles {
			return fmt.Errorf("more than %d policy files", MaxPolicyFiles)
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if total += int64(len(data)); total > MaxPolicyBytes {
			return fmt.Errorf("more than %s of policies", githubapi.FormatBytes(MaxPolicyBytes))
		}
		out[p] = string(data)
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return out, err
}

// PolicySource is where a run's rules come from. What the change is (at
// most one of PullRequest, Merge and Base) says which commit's policy
// folder judges it: always one from before the change, so that a change
// to the rules is judged by the rules it changes.
type PolicySource struct {
	// Folder is the repository's policy folder ("policy"; "" for none).
	Folder string
	GitHub PolicyReader
	// Checkout is the repository's folder, and SHA its commit: the rules
	// are read there when the source names no change (a run away from
	// GitHub).
	Checkout, SHA string
	// Operator are rules of the operator's, judging every repository,
	// keyed by a name that tells them apart from the repository's: sealed
	// from them (see Policies).
	Operator map[string]string
	// Packages are the packages whose rules count (default main).
	Packages []string

	// PullRequest is a pull request before its merge, into BaseBranch:
	// judged by the rules at the branch's head as GitHub says it is now,
	// not at the base commit the pull request recorded, which may be
	// older. Rules see it.
	PullRequest *policy.PullRequest
	BaseBranch  string
	// Merge is a pull request's merge: judged by the rules of the commit
	// it was merged onto.
	Merge *MergedChange
	// Base is the commit the event says the change was made onto (a
	// merge queue group's base, the commit before a push), and BaseWhat
	// what it is, for people.
	Base, BaseWhat string
}

// MergedChange is a pull request's merge: the commit it made on its base
// branch, the pull request's head and how many commits it had.
type MergedChange struct {
	SHA, Head string
	Commits   int
}

// rulesCommit is the commit whose policy folder judges the change src
// names, and what it is, for people; "" with no error when the source
// names no change (the checkout's own rules).
func (src PolicySource) rulesCommit(ctx context.Context) (sha, what string, err error) {
	switch {
	case src.PullRequest != nil:
		if src.BaseBranch == "" {
			return "", "", errors.New("GitHub named no base branch of the pull request to read the policies at")
		}
		if src.GitHub == nil {
			return "", "", errors.New("no GitHub client to read the base branch with")
		}
		sha, err := src.GitHub.BranchHead(ctx, src.BaseBranch)
		if err != nil {
			return "", "", err
		}
		return sha, "the head of " + src.BaseBranch, nil
	case src.Merge != nil:
		if src.GitHub == nil {
			return "", "", errors.New("no GitHub client to read the merge with")
		}
		return mergedOnto(ctx, src.GitHub, *src.Merge)
	case src.Base != "":
		return src.Base, src.BaseWhat, nil
	}
	return "", "", nil
}

// maxRebasedCommits bounds the walk back over a rebase merge's commits:
// GitHub lists at most 250 commits of a pull request, and rebases no more.
const maxRebasedCommits = 250

// mergedOnto is the commit the merge m was made onto: a merge commit's
// first parent; a squash's parent; for a rebase, which replays each of
// the pull request's commits onto the base, the parent of the first one
// replayed. The commits between are the pull request's own, and one of
// them may be the change to the rules.
func mergedOnto(ctx context.Context, gh PolicyReader, m MergedChange) (string, string, error) {
	c, err := gh.Commit(ctx, m.SHA)
	if err != nil {
		return "", "", err
	}
	switch {
	case len(c.Parents) >= 2:
		return c.Parents[0], "the commit the merge was made onto", nil
	case len(c.Parents) == 0:
		return "", "", fmt.Errorf("the merge %s has no parent commit to read the policies at", shortSHA(m.SHA))
	}
	back := 1
	if m.Commits > 1 {
		// A squash makes one commit of its own; a rebase keeps each
		// commit's author, date and message, and fast-forwards when it
		// can: the merge is then the head itself.
		head, err := gh.Commit(ctx, m.Head)
		if err != nil {
			return "", "", err
		}
		if c.SHA == head.SHA || (c.Message == head.Message && c.AuthorDate.Equal(head.AuthorDate) && c.AuthorEmail == head.AuthorEmail) {
			if m.Commits > maxRebasedCommits {
				return "", "", fmt.Errorf("the rebase %s replayed %d commits, more than the %d the policies' commit is looked for behind", shortSHA(m.SHA), m.Commits, maxRebasedCommits)
			}
			back = m.Commits
		}
	}
	for i := 1; i < back; i++ {
		if c, err = gh.Commit(ctx, c.Parents[0]); err != nil {
			return "", "", err
		}
		if len(c.Parents) != 1 {
			return "", "", fmt.Errorf("the rebase %s: commit %s, %d behind it, is not one the rebase replayed", shortSHA(m.SHA), shortSHA(c.SHA), i)
		}
	}
	return c.Parents[0], "the commit the merge was made onto", nil
}

// LoadPolicies reads the rules src names: nil when there are none. A folder
// that cannot be read, or a commit to read it at that cannot be found,
// refuses every plan (LoadError): rules never pass by error.
func LoadPolicies(ctx context.Context, src PolicySource) *Policies {
	p := &Policies{Packages: src.Packages, Folder: src.Folder, PullRequest: src.PullRequest}
	if len(src.Operator) > 0 {
		p.Operator = maps.Clone(src.Operator)
	}
	dir := strings.Trim(src.Folder, "/")
	if dir == "" {
		if len(p.Operator) == 0 {
			return nil
		}
		return p
	}
	p.Source = dir + "/"
	at, what, err := src.rulesCommit(ctx)
	if err != nil {
		p.LoadError = fmt.Sprintf("finding the commit to read %s at: %v", p.Source, err)
		return p
	}
	var files map[string]string
	switch {
	case at != "":
		p.Source += " at " + shortSHA(at)
		if what != "" {
			p.Source += ", " + what
		}
		var raw map[string][]byte
		raw, err = src.GitHub.FolderAt(ctx, dir, at, githubapi.ArchiveLimits{MaxFiles: MaxPolicyFiles, MaxBytes: MaxPolicyBytes})
		files = map[string]string{}
		for name, body := range raw {
			if strings.HasSuffix(name, ".rego") {
				files[name] = string(body)
			}
		}
	default:
		if src.SHA != "" {
			p.Source += " at " + shortSHA(src.SHA)
		}
		files, err = ReadPolicyFolder(os.DirFS(filepath.Join(src.Checkout, filepath.FromSlash(dir))))
	}
	if err != nil {
		p.LoadError = fmt.Sprintf("reading %s: %v", p.Source, err)
		return p
	}
	if len(files) > 0 {
		p.Files = map[string]string{}
	}
	for name, body := range files {
		p.Files[path.Join(dir, name)] = body
	}
	if len(p.Files) == 0 && len(p.Operator) == 0 {
		return nil
	}
	return p
}
