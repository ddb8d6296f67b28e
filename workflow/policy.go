package workflow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
// policy folder, read from where the change cannot have altered them (the
// base branch's commit for a pull request, the commit itself once
// merged), and the operator's own. They are data: an executor away from
// this process is handed them with the request, and compiles them there.
type Policies struct {
	// Files are the policy files by path (slash-separated); Source says
	// where they were read, for people.
	Files  map[string]string `json:"files,omitempty"`
	Source string            `json:"source"`
	// Packages are the packages whose deny, violation and warn rules count
	// (default main).
	Packages []string `json:"packages,omitempty"`
	// LoadError is why the folder could not be read: every plan is
	// refused (fail closed).
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
	set  *policy.Set
	err  error
}

// MaxPolicyFiles and MaxPolicyBytes bound a policy folder: rules, not a
// dump.
const (
	MaxPolicyFiles = 200
	MaxPolicyBytes = 4 << 20
)

// compiled is the rules, compiled once for every stack of the run.
func (p *Policies) compiled(ctx context.Context) (*policy.Set, error) {
	p.once.Do(func() {
		if p.LoadError != "" {
			p.err = errors.New(p.LoadError)
			return
		}
		fsys := fstest.MapFS{}
		for name, body := range p.Files {
			if !fs.ValidPath(name) {
				p.err = fmt.Errorf("policy file %q: not a path inside the folder", name)
				return
			}
			fsys[name] = &fstest.MapFile{Data: []byte(body), Mode: 0o644}
		}
		p.set, p.err = policy.Load(ctx, fsys, policy.Options{Packages: p.Packages})
	})
	return p.set, p.err
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
		r.Denies = append(r.Denies, report.PolicyFinding{Rule: d.Rule, Message: d.Message, Overridden: slices.Contains(o.Overrides, d.Rule)})
	}
	for _, w := range o.Warnings {
		r.Warnings = append(r.Warnings, report.PolicyFinding{Rule: w.Rule, Message: w.Message})
	}
	return r
}

// judge evaluates the rules on one stack's plan. Whatever fails, the
// outcome says so and refuses the plan: rules never pass by error.
func (p *Policies) judge(ctx context.Context, pv *engine.Preview, spec *model.Spec, dir string) *PolicyOutcome {
	o := &PolicyOutcome{Source: p.Source, Overrides: slices.Clone(p.Overrides), Changed: p.Changed}
	set, err := p.compiled(ctx)
	if err != nil {
		o.Err = model.MaskFingerprints(err.Error())
		return o
	}
	in := policy.Input{Preview: pv, Spec: spec, Dir: path.Clean(dir), PullRequest: p.PullRequest}
	if pv != nil {
		in.Project, in.Stack, in.Workspace = pv.Project, pv.Stack, pv.Workspace
	}
	res, err := set.Eval(ctx, in)
	if err != nil {
		o.Err = model.MaskFingerprints(err.Error())
		return o
	}
	o.Denies, o.Warnings = res.Denies, res.Warnings
	return o
}

// FolderReader reads a folder as a commit holds it; *githubapi.Client is
// the implementation.
type FolderReader interface {
	FolderAt(ctx context.Context, dir, ref string, lim githubapi.ArchiveLimits) (map[string][]byte, error)
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

// PolicySource is where a run's rules come from.
type PolicySource struct {
	// Folder is the repository's policy folder ("policy"; "" for none).
	Folder string
	// Ref is the commit whose policy folder judges the change, read
	// through GitHub: a pull request's base, a merge queue group's base,
	// never the change's own head. Empty: Checkout holds it (a merge, or
	// a push: the commit applied is its own base).
	Ref    string
	GitHub FolderReader
	// Checkout is the repository's folder, and SHA its commit, for people.
	Checkout, SHA string
	// Extra are rules of the operator's, judging every repository: keyed
	// by a name that tells them apart from the repository's.
	Extra map[string]string
	// Packages are the packages whose rules count (default main).
	Packages []string
	// PullRequest is the pull request judged: its rules are read at its
	// base commit (Ref is its Base), never at its head, and rules see it.
	PullRequest *policy.PullRequest
}

// LoadPolicies reads the rules src names: nil when there are none. A folder
// that cannot be read refuses every plan (LoadError): rules never pass by
// error.
func LoadPolicies(ctx context.Context, src PolicySource) *Policies {
	p := &Policies{Files: map[string]string{}, Packages: src.Packages, Folder: src.Folder}
	var sources []string
	for name, body := range src.Extra {
		p.Files[name] = body
	}
	if len(src.Extra) > 0 {
		sources = append(sources, "the operator's")
	}
	if pr := src.PullRequest; pr != nil {
		src.Ref = pr.Base
	}
	if dir := strings.Trim(src.Folder, "/"); dir != "" {
		if src.PullRequest != nil && src.Ref == "" {
			// Never the head's own rules in the base's place.
			return &Policies{Folder: src.Folder, Source: dir + "/", PullRequest: src.PullRequest,
				LoadError: "GitHub named no base commit of the pull request to read the policies at"}
		}
		var files map[string]string
		var err error
		at := src.Ref
		switch {
		case src.Ref != "" && src.GitHub == nil:
			err = errors.New("no GitHub client to read it with")
		case src.Ref != "":
			var raw map[string][]byte
			raw, err = src.GitHub.FolderAt(ctx, dir, src.Ref, githubapi.ArchiveLimits{MaxFiles: MaxPolicyFiles, MaxBytes: MaxPolicyBytes})
			files = map[string]string{}
			for name, body := range raw {
				if strings.HasSuffix(name, ".rego") {
					files[name] = string(body)
				}
			}
		default:
			at = src.SHA
			files, err = ReadPolicyFolder(os.DirFS(filepath.Join(src.Checkout, filepath.FromSlash(dir))))
		}
		where := dir + "/"
		if at != "" {
			where += " at " + shortSHA(at)
		}
		if err != nil {
			p.Source, p.LoadError = where, fmt.Sprintf("reading %s: %v", where, err)
			return p
		}
		for name, body := range files {
			p.Files[path.Join(dir, name)] = body
		}
		if len(files) > 0 {
			sources = append(sources, where)
		}
	}
	if len(p.Files) == 0 {
		return nil
	}
	p.Source = strings.Join(sources, " and ")
	p.PullRequest = src.PullRequest
	return p
}
