package report

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/model"
)

// StackLine is one stack in an overview of a pull request's stacks.
type StackLine struct {
	// Dir is the stack's folder in the repository.
	Dir     string
	Summary engine.Summary
	Failed  bool
	// Skipped: the run left the stack alone.
	Skipped bool
	// Release is what an apply recorded; Unchanged that it found nothing
	// to apply and wrote none.
	Release   *model.Release
	Unchanged bool
	// Body, when set, is the stack's comment (Comment) without its marker
	// line: the overview shows it in a collapsed section of its own.
	Body string
}

// OverviewOptions shape an overview.
type OverviewOptions struct {
	// Marker is the comment's hidden first line; none for a check run.
	Marker string
	// Apply: the stacks were applied, not previewed.
	Apply bool
	// Commit is the commit the stacks were run at.
	Commit string
	// Note is shown under the counts, as written: the caller's own text.
	Note string
}

// overviewRows is the most rows in one table: the splitter of long
// comments cuts between tables, never inside one.
const overviewRows = 50

type overviewLine struct {
	StackLine
	Result string
}

type overviewView struct {
	OverviewOptions
	Stacks          []overviewLine
	Tables          [][]overviewLine
	Failed, Changed bool
	Count           Count
}

// Count sorts the stacks of a run by outcome, each counted once: failed,
// else skipped, else with changes, else drifted, else unchanged.
type Count struct{ Changed, Drifted, Failed, Unchanged, Skipped int }

// Tally counts stacks as an overview shows them, so that a check run's
// title and the comment's counts agree.
func Tally(stacks []StackLine) Count {
	var c Count
	for _, s := range stacks {
		switch {
		case s.Failed:
			c.Failed++
		case s.Skipped:
			c.Skipped++
		case s.Summary.Create+s.Summary.Update+s.Summary.Delete > 0:
			c.Changed++
		case s.Summary.Drift > 0:
			c.Drifted++
		default:
			c.Unchanged++
		}
	}
	return c
}

// Overview renders the stacks of one run as a table with a line each, then
// a section for each stack with a Body.
func (r *Renderer) Overview(stacks []StackLine, opts OverviewOptions) (string, error) {
	v := overviewView{OverviewOptions: opts, Count: Tally(stacks)}
	for _, s := range stacks {
		v.Stacks = append(v.Stacks, overviewLine{StackLine: s, Result: result(s, opts.Apply)})
	}
	v.Failed, v.Changed = v.Count.Failed > 0, v.Count.Changed > 0
	for i := 0; i < len(v.Stacks); i += overviewRows {
		v.Tables = append(v.Tables, v.Stacks[i:min(i+overviewRows, len(v.Stacks))])
	}
	var buf bytes.Buffer
	if err := r.overview.Execute(&buf, v); err != nil {
		return "", fmt.Errorf("render the overview: %w", err)
	}
	return model.MaskFingerprints(buf.String()), nil
}

// result is a stack's outcome in a word or three, for HTML: a table cell
// and a <summary>.
func result(s StackLine, apply bool) string {
	switch {
	case s.Failed:
		return "❌ failed"
	case s.Skipped:
		return "⏭️ skipped"
	case apply && s.Unchanged:
		return "✅ nothing to apply"
	case apply && s.Release != nil:
		phase := string(s.Release.Phase)
		if mdsafe.Plain(phase) != phase {
			phase = "<code>" + mdsafe.HTML(phase) + "</code>"
		}
		return fmt.Sprintf("🚀 release %d %s", s.Release.Revision, phase)
	case s.Summary.Create+s.Summary.Update+s.Summary.Delete > 0:
		return "📝 changes"
	case s.Summary.Drift > 0:
		return "⚠️ drift"
	}
	return "✅ no changes"
}

// WithoutMarker is a comment without its hidden first line, for a section
// of an overview.
func WithoutMarker(comment string) string {
	if strings.HasPrefix(comment, "<!--") {
		_, rest, _ := strings.Cut(comment, "\n")
		return strings.TrimLeft(rest, "\n")
	}
	return comment
}
