package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/settings"
	"github.com/kusionpr/kusionpr/workflow"
)

// rollback previews the spec release --to recorded against the live
// objects, asks (unless --yes) and applies it as a new release.
func rollback(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	s, code, ok := parseCommand("rollback", args, stdout, stderr)
	if !ok {
		return code
	}
	if s.RollbackTo == 0 {
		fmt.Fprintln(stderr, "error: --to is required: the revision to go back to (action releases lists them)")
		return 2
	}
	return runStack(ctx, workflow.Apply, s, stdin, stdout, stderr)
}

// cancelRun asks the stack's running release to stop.
func cancelRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	s, code, ok := parseCommand("cancel", args, stdout, stderr)
	if !ok {
		return code
	}
	runner := s.runner(nil)
	req, err := s.request("")
	var (
		rel *model.Release
		c   *model.Cancel
	)
	if err == nil {
		rel, c, err = runner.Cancel(ctx, req, whoLocally(), s.Reason)
	}
	var nothing *backend.NothingRunningError
	if errors.As(err, &nothing) {
		fmt.Fprintf(stderr, "error: %v: nothing to cancel\n", err)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Release %d of %s/%s (%s since %s): %s.\n", rel.Revision, rel.Project, rel.Workspace, rel.Phase,
		rel.CreateTime.UTC().Format(time.RFC3339), c)
	fmt.Fprintln(stdout, "Its runner stops at its next heartbeat: what is in flight finishes, nothing more is applied, and the release ends failed.")
	return 0
}

// whoLocally is the user and machine a command from one's own machine
// records.
func whoLocally() string {
	o := localOrigin("")
	if o.Host != "" {
		return o.User + "@" + o.Host
	}
	return o.User
}

// releasesCommand lists a stack's releases, newest first, or with
// --all-projects those of every project in the store.
func releasesCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	s, code, ok := parseCommand("releases", args, stdout, stderr)
	if !ok {
		return code
	}
	what := "releases"
	if s.ReleasesRunning {
		what = "running releases"
	}
	if s.ReleasesAllProjects {
		return releasesAcross(ctx, s, what, stdout, stderr)
	}
	runner := s.runner(nil)
	req, err := s.request("")
	var h *workflow.History
	if err == nil {
		h, err = runner.Releases(ctx, req, backend.ReleaseQuery{Limit: s.ReleasesLimit, Running: s.ReleasesRunning})
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	return listing{project: h.Project, workspace: h.Workspace, store: h.Store, rels: h.Releases, more: h.More,
		none: fmt.Sprintf("%s/%s has no %s.", h.Project, h.Workspace, what)}.write(stdout, stderr, s.ReleasesOutput)
}

// releasesAcross lists the releases of every project in the store, of
// --workspace's alone if it is given.
func releasesAcross(ctx context.Context, s cliSettings, what string, stdout, stderr io.Writer) int {
	rels, more, where, err := s.runner(nil).Across(ctx, backend.ReleaseQuery{Workspace: s.Workspace, Running: s.ReleasesRunning, Limit: s.ReleasesLimit})
	if errors.Is(err, backend.ErrNoQueries) {
		fmt.Fprintf(stderr, "error: %s: %v; without %s, releases lists one stack's\n", where, err, settings.Must("releases-all-projects").FlagName())
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	in := "the store"
	if s.Workspace != "" {
		in = "workspace " + s.Workspace
	}
	return listing{workspace: s.Workspace, across: true, store: where, rels: rels, more: more,
		none: fmt.Sprintf("No project in %s has a %s.", in, strings.TrimSuffix(what, "s"))}.write(stdout, stderr, s.ReleasesOutput)
}

// listing is what releases prints: the releases, newest first, how many
// more the limit left out, and where they came from.
type listing struct {
	// project and workspace are the stack's; across projects, project is
	// "" and workspace the one asked for, if any, and each release names
	// its own.
	project, workspace string
	across             bool
	store              string
	rels               []*model.Release
	more               int
	// none is the line said when there is no release.
	none string
}

// write writes the listing as a table or, with format json, as JSON.
func (l listing) write(stdout, stderr io.Writer, format string) int {
	if format == "json" {
		return l.writeJSON(stdout, stderr)
	}
	fmt.Fprintf(stderr, "Release store: %s\n", l.store)
	if len(l.rels) == 0 {
		fmt.Fprintln(stdout, l.none)
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if l.across {
		fmt.Fprint(tw, "PROJECT\tWORKSPACE\t")
	}
	fmt.Fprintln(tw, "REVISION\tPHASE\tWHEN\tWHO\tFROM")
	for _, r := range l.rels {
		e := entryOf(r)
		if l.across {
			fmt.Fprintf(tw, "%s\t%s\t", r.Project, r.Workspace)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", e.Revision, e.Phase, e.Created.Format("2006-01-02 15:04:05Z"), cmp.Or(e.Who, "-"), cmp.Or(e.From, "-"))
	}
	tw.Flush()
	if l.more > 0 {
		fmt.Fprintf(stdout, "... and %d older (--limit 0 lists all)\n", l.more)
	}
	return 0
}

// historyEntry is one release as releases lists it (and -o json writes it).
type historyEntry struct {
	// Project and Workspace are given when the list spans projects.
	Project     string      `json:"project,omitempty"`
	Workspace   string      `json:"workspace,omitempty"`
	Revision    uint64      `json:"revision"`
	Phase       model.Phase `json:"phase"`
	Stack       string      `json:"stack"`
	Created     time.Time   `json:"createTime"`
	Modified    time.Time   `json:"modifiedTime"`
	Who         string      `json:"who,omitempty"`
	From        string      `json:"from,omitempty"`
	Command     string      `json:"command,omitempty"`
	PullRequest int         `json:"pullRequest,omitempty"`
	SHA         string      `json:"sha,omitempty"`
	RollbackTo  uint64      `json:"rollbackTo,omitempty"`
	Message     string      `json:"message,omitempty"`
}

func entryOf(r *model.Release) historyEntry {
	e := historyEntry{Revision: r.Revision, Phase: r.Phase, Stack: r.Stack, Created: r.CreateTime.UTC(), Modified: r.ModifiedTime.UTC(),
		Message: model.MaskFingerprints(r.Message)}
	o := r.Origin
	if o == nil {
		// Written by the Kusion CLI: no one and nothing recorded.
		return e
	}
	e.Who, e.Command, e.PullRequest, e.SHA, e.RollbackTo = o.Who(), o.Command, o.PullRequest, o.SHA, o.RollbackTo
	var from []string
	if o.Command != "" {
		from = append(from, o.Command)
	}
	if o.PullRequest != 0 {
		from = append(from, fmt.Sprintf("#%d", o.PullRequest))
	}
	if o.SHA != "" {
		from = append(from, "at "+o.ShortSHA())
	}
	if o.Reason != "" {
		from = append(from, "("+o.Reason+")")
	}
	e.From = strings.Join(from, " ")
	return e
}

// writeJSON writes the listing as JSON: the project and workspace once,
// or, across projects, in each entry.
func (l listing) writeJSON(stdout, stderr io.Writer) int {
	out := struct {
		Project   string         `json:"project,omitempty"`
		Workspace string         `json:"workspace,omitempty"`
		Releases  []historyEntry `json:"releases"`
		More      int            `json:"more,omitempty"`
	}{Project: l.project, Workspace: l.workspace, Releases: []historyEntry{}, More: l.more}
	for _, r := range l.rels {
		e := entryOf(r)
		if l.across {
			e.Project, e.Workspace = r.Project, r.Workspace
		}
		out.Releases = append(out.Releases, e)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	return 0
}
