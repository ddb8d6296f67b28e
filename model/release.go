package model

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrSuperseded is wrapped by a release store's error when a release was
// ended by someone else while its holder ran (taken as abandoned after its
// lease, or unlocked by hand): the holder must stop.
var ErrSuperseded = errors.New("release was ended by another runner")

// Phase is where a release is in its life. The running phases hold the stack.
type Phase string

const (
	PhaseGenerating Phase = "generating"
	PhasePreviewing Phase = "previewing"
	PhaseApplying   Phase = "applying"
	PhaseDestroying Phase = "destroying"
	PhaseSucceeded  Phase = "succeeded"
	PhaseFailed     Phase = "failed"
)

// Ended reports whether the release no longer holds its stack.
func (p Phase) Ended() bool { return p == PhaseSucceeded || p == PhaseFailed }

// Release records one operation on a project's workspace: the spec it ran, the
// state it left and how it ended. Revisions count up per project+workspace.
type Release struct {
	Project      string    `json:"project" yaml:"project"`
	Workspace    string    `json:"workspace" yaml:"workspace"`
	Revision     uint64    `json:"revision" yaml:"revision"`
	Stack        string    `json:"stack" yaml:"stack"`
	Spec         *Spec     `json:"spec" yaml:"spec"`
	State        *State    `json:"state" yaml:"state"`
	Phase        Phase     `json:"phase" yaml:"phase"`
	CreateTime   time.Time `json:"createTime" yaml:"createTime"`
	ModifiedTime time.Time `json:"modifiedTime" yaml:"modifiedTime"`

	// Origin says who and what started the release. Kusion's reader ignores
	// fields it does not know, so this travels in the same document.
	Origin *Origin `json:"origin,omitempty" yaml:"origin,omitempty"`
	// Message explains a failed phase (the first errors, or why it was superseded).
	Message string `json:"message,omitempty" yaml:"message,omitempty"`
}

// Origin identifies the run that holds or held a release.
type Origin struct {
	User    string `json:"user,omitempty" yaml:"user,omitempty"`
	Host    string `json:"host,omitempty" yaml:"host,omitempty"`
	Command string `json:"command,omitempty" yaml:"command,omitempty"`
	// Reason says why the run was started when its command alone does not
	// (an apply that reverts drift, and who asked for it).
	Reason    string    `json:"reason,omitempty" yaml:"reason,omitempty"`
	Heartbeat time.Time `json:"heartbeat,omitempty" yaml:"heartbeat,omitempty"`
	// PullRequest, SHA and Actor are set when the run came from GitHub.
	PullRequest int    `json:"pullRequest,omitempty" yaml:"pullRequest,omitempty"`
	SHA         string `json:"sha,omitempty" yaml:"sha,omitempty"`
	Actor       string `json:"actor,omitempty" yaml:"actor,omitempty"`
	// MergedAt is when the commit applied was merged, for a merge's apply:
	// merges are applied in this order, never an older over a newer one.
	MergedAt time.Time `json:"mergedAt,omitzero" yaml:"mergedAt,omitempty"`
	// MergeQueue is set on the apply of a merge queue's group, made on the
	// group's commit before it landed: the queue then fast-forwards its
	// branch to that commit, so the merge is this release's SHA.
	MergeQueue bool `json:"mergeQueue,omitempty" yaml:"mergeQueue,omitempty"`
	// PolicyOverrides are the policy rules whose denial an authorised
	// person let this run pass (/kusion apply --override-policy).
	PolicyOverrides []string `json:"policyOverrides,omitempty" yaml:"policyOverrides,omitempty"`
	// Repository is the GitHub repository the project and workspace belong
	// to as of this release: the one the run came from, or, for a run from
	// outside GitHub (the operator), the one the releases before it named.
	// Runs from any other repository are refused (see backend.CheckOwner).
	Repository *Repository `json:"repository,omitempty" yaml:"repository,omitempty"`
	// RollbackTo is the revision whose recorded spec this release applied
	// (a rollback), and Reason says so with who asked.
	RollbackTo uint64 `json:"rollbackTo,omitempty" yaml:"rollbackTo,omitempty"`
	// Adopted is set on the release by which Repository took over releases
	// that named no repository (written by the Kusion CLI, or by a run
	// outside GitHub before any repository ran on them).
	Adopted bool `json:"adopted,omitempty" yaml:"adopted,omitempty"`
}

// Who is who asked for the run: its GitHub user, else the machine's user
// that ran it; "" for no origin.
func (o *Origin) Who() string {
	if o == nil {
		return ""
	}
	return cmp.Or(o.Actor, o.User)
}

// ShortSHA is the commit abbreviated to 12 characters, as listings and
// replies show it.
func (o *Origin) ShortSHA() string {
	if o == nil {
		return ""
	}
	return o.SHA[:min(len(o.SHA), 12)]
}

// Repository identifies a GitHub repository. The id stays when the
// repository is renamed or moved; the name is for people.
type Repository struct {
	ID       int64  `json:"id,omitempty" yaml:"id,omitempty"`
	FullName string `json:"fullName,omitempty" yaml:"fullName,omitempty"`
}

// Same reports whether r and o are one repository: by id when both have
// one, else by name (GitHub's names ignore case).
func (r *Repository) Same(o *Repository) bool {
	if r == nil || o == nil {
		return false
	}
	if r.ID != 0 && o.ID != 0 {
		return r.ID == o.ID
	}
	return r.FullName != "" && strings.EqualFold(r.FullName, o.FullName)
}

// String names r for messages: "owner/name (id 123)".
func (r *Repository) String() string {
	if r == nil {
		return "no repository"
	}
	// Quoted: the name comes from a release file, which is data.
	name := strconv.Quote(r.FullName)
	if r.FullName == "" {
		name = "a repository"
	}
	if r.ID == 0 {
		return name
	}
	return fmt.Sprintf("%s (id %d)", name, r.ID)
}

// Cancel is a request that a running release stop: its holder applies
// nothing more, lets what is in flight finish and ends the release failed,
// saying who cancelled. It is kept beside the release, never in it, so the
// holder's own writes cannot erase it.
type Cancel struct {
	Revision uint64    `json:"revision"`
	By       string    `json:"by"`
	At       time.Time `json:"at"`
	Reason   string    `json:"reason,omitempty"`
}

// String says who cancelled, when and why, as the release's message does.
func (c *Cancel) String() string {
	s := fmt.Sprintf("cancelled by %s at %s", c.By, c.At.UTC().Format(time.RFC3339))
	if c.Reason != "" {
		s += ": " + c.Reason
	}
	return s
}

// State is what the runtimes reported after the release's operation.
type State struct {
	Resources Resources `json:"resources" yaml:"resources"`
}
