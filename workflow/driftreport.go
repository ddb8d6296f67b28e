package workflow

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
)

// AnyDrift says whether some stack drifted.
func AnyDrift(stacks []*StackDrift) bool {
	for _, st := range stacks {
		if st.Status == Drifted {
			return true
		}
	}
	return false
}

// driftStackJSON is a stack of a scan as -o json writes it: the preview's
// JSON (engine.Drift's: stepKeys, changeSteps with their drift) and what
// the scan says of it.
type driftStackJSON struct {
	*engine.Preview
	Dir        string      `json:"dir"`
	Project    string      `json:"project"`
	Workspace  string      `json:"workspace"`
	Stack      string      `json:"stack"`
	Status     DriftStatus `json:"status"`
	Revision   uint64      `json:"revision,omitempty"`
	ReleasedAt *time.Time  `json:"releasedAt,omitempty"`
	Drift      driftJSON   `json:"driftSummary"`
	// PendingSpecChanges: how the checkout's spec differs from the
	// release's (an apply that has not happened).
	PendingSpecChanges []engine.SpecChange `json:"pendingSpecChanges,omitempty"`
	SpecError          string              `json:"specError,omitempty"`
	Error              string              `json:"error,omitempty"`
	Issue              *IssueOutcome       `json:"issue,omitempty"`
}

type driftJSON struct {
	DriftCounts
	Since *time.Time `json:"since,omitempty"`
}

// WriteDrift writes a scan's stacks in format f (report.JSON, Markdown or
// Text), with the issues Publish left, if any. Sensitive values show only
// as masked.
func WriteDrift(w io.Writer, f report.Format, stacks []*StackDrift, issues []IssueOutcome) error {
	byDir := map[string]*IssueOutcome{}
	for i := range issues {
		byDir[issues[i].Dir] = &issues[i]
	}
	var b strings.Builder
	switch f {
	case report.JSON:
		if err := driftJSONReport(&b, stacks, byDir); err != nil {
			return err
		}
	case report.Text:
		driftText(&b, stacks, byDir)
	case report.Markdown:
		driftMarkdown(&b, stacks)
	default:
		return fmt.Errorf("unknown output format %q", f)
	}
	_, err := io.WriteString(w, model.MaskFingerprints(b.String()))
	return err
}

func driftJSONReport(b *strings.Builder, stacks []*StackDrift, byDir map[string]*IssueOutcome) error {
	out := struct {
		Drifted bool             `json:"drifted"`
		Stacks  []driftStackJSON `json:"stacks"`
	}{Drifted: AnyDrift(stacks), Stacks: []driftStackJSON{}}
	for _, st := range stacks {
		j := driftStackJSON{Preview: st.Preview, Dir: st.Dir, Project: st.Project, Workspace: st.Workspace, Stack: st.Stack,
			Status: st.Status, Drift: driftJSON{DriftCounts: st.Counts()}, PendingSpecChanges: st.SpecChanges, Issue: byDir[st.Dir]}
		if st.Release != nil {
			j.Revision = st.Release.Revision
			if !st.Release.ModifiedTime.IsZero() {
				j.ReleasedAt = &st.Release.ModifiedTime
			}
		}
		if !st.Since.IsZero() {
			j.Drift.Since = &st.Since
		}
		if st.SpecErr != nil {
			j.SpecError = st.SpecErr.Error()
		}
		if st.Err != nil {
			j.Error = st.Err.Error()
		}
		out.Stacks = append(out.Stacks, j)
	}
	enc := json.NewEncoder(b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("render drift json: %w", err)
	}
	return nil
}

func driftText(b *strings.Builder, stacks []*StackDrift, byDir map[string]*IssueOutcome) {
	for _, st := range stacks {
		b.WriteString(driftHeadline(st, false) + "\n")
		if st.Preview != nil {
			for _, step := range st.Preview.Steps() {
				for _, d := range step.Drift {
					b.WriteString("  " + step.ID + " " + report.DriftLine(d) + "\n")
				}
			}
		}
		for _, c := range st.SpecChanges {
			fmt.Fprintf(b, "  spec: %s %s (%d field%s) not applied\n", c.ID, c.Action, len(c.Changes), plural(len(c.Changes)))
		}
		if st.Err != nil {
			b.WriteString("  error: " + oneLine(st.Err.Error()) + "\n")
		}
		if st.SpecErr != nil {
			b.WriteString("  spec error: " + oneLine(st.SpecErr.Error()) + "\n")
		}
		if is := byDir[st.Dir]; is != nil {
			fmt.Fprintf(b, "  issue #%d %s: %s\n", is.Number, is.Action, is.URL)
		}
	}
}

// driftMarkdown is a list, not a table: a table cell ends at a pipe even
// inside a code span, and a folder may hold one.
func driftMarkdown(b *strings.Builder, stacks []*StackDrift) {
	b.WriteString("## Drift\n\n")
	for _, st := range stacks {
		fmt.Fprintf(b, "- %s (%s): %s\n", mdsafe.Code(st.Dir), mdsafe.Code(st.Project+"/"+st.Workspace), mdsafe.Code(driftHeadline(st, true)))
	}
	for _, st := range stacks {
		if st.Status != Drifted && st.Err == nil && st.SpecErr == nil {
			continue
		}
		fmt.Fprintf(b, "\n### %s\n\n%s\n", mdsafe.Code(st.Dir), mdsafe.Code(driftHeadline(st, true)))
		if st.Preview != nil {
			for _, step := range st.Preview.Steps() {
				if len(step.Drift) == 0 {
					continue
				}
				var lines strings.Builder
				for _, d := range step.Drift {
					lines.WriteString(report.DriftLine(d) + "\n")
				}
				fmt.Fprintf(b, "\n%s\n\n%s\n", mdsafe.Code(step.ID), mdsafe.Fence("diff", lines.String()))
			}
		}
		for _, e := range []error{st.Err, st.SpecErr} {
			if e != nil {
				b.WriteString("\n" + mdsafe.Fence("text", e.Error()) + "\n")
			}
		}
	}
}

// driftHeadline is a stack's one line: what the scan found.
func driftHeadline(st *StackDrift, short bool) string {
	name := fmt.Sprintf("stack %s (%s/%s): ", st.Dir, st.Project, st.Workspace)
	if short {
		name = ""
	}
	rev := uint64(0)
	if st.Release != nil {
		rev = st.Release.Revision
	}
	switch st.Status {
	case Drifted:
		s := fmt.Sprintf("%sdrifted: %s changed outside of a release since release %d", name, countText(st.Counts()), rev)
		if !st.Since.IsZero() {
			s += ", first seen " + stamp(st.Since)
		}
		if len(st.SpecChanges) > 0 {
			s += fmt.Sprintf("; the checkout's spec also differs from it in %d resource%s (not applied)", len(st.SpecChanges), plural(len(st.SpecChanges)))
		}
		return s
	case InSync:
		return fmt.Sprintf("%sin sync with release %d", name, rev)
	case SpecNotApplied:
		return fmt.Sprintf("%sno drift from release %d, but the checkout's spec differs from it in %d resource%s: an apply that has not happened", name, rev, len(st.SpecChanges), plural(len(st.SpecChanges)))
	case NeverApplied:
		return name + "never applied (no release): nothing to compare"
	case Destroyed:
		return fmt.Sprintf("%sdestroyed by release %d", name, rev)
	case ReleaseRunning:
		return fmt.Sprintf("%srelease %d is still %s: not compared until it ends", name, rev, st.Release.Phase)
	case ReleaseFailed:
		return fmt.Sprintf("%srelease %d failed: not compared (what it left is partly applied)", name, rev)
	}
	return name + "scan failed"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
