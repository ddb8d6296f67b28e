package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/report"
)

// A pull request touching many stacks, each with a comment and a check run
// of its own, meets GitHub's limits on content creation (80 requests a
// minute, 500 an hour) early. Reported together, its stacks cost one
// comment (a few parts when long) and one check run per push, whatever
// their number.

// combinedKey names the one comment of a run reporting its stacks
// together.
func (c *Change) combinedKey() string {
	return fmt.Sprintf("%s pull-request workspace=%s", c.kind(), mdsafe.CommentValue(c.workspace()))
}

// overviewCheck is the name of the check run summing up every stack of the
// run: one name whatever the stacks, for a branch's required checks.
// A merge queue's apply answers under OverviewCheck the check its branch
// requires of pull requests and groups alike (PreviewCheck).
func (c *Change) overviewCheck() string {
	if c.OverviewCheck != "" {
		return c.OverviewCheck
	}
	return "kusion/" + c.kind()
}

// stackCheck names the check run of a stack's report.
func (c *Change) stackCheck(dir string) string { return "kusion/" + c.kind() + ": " + dir }

// PreviewCheck is a preview's overview check run: the one a branch's
// protection can require, whatever the stacks.
const PreviewCheck = "kusion/preview"

// PreviewCheckStack is the stack folder whose preview check run is named
// name, "" for the overview; ok is false for any other check run.
func PreviewCheckStack(name string) (stack string, ok bool) {
	if name == PreviewCheck {
		return "", true
	}
	return strings.CutPrefix(name, PreviewCheck+": ")
}

// lines are the stacks of out for an overview; with sections, the stacks
// worth reading (changes, drift, failures) carry their report.
func (c *Change) lines(out *Outcome, sections bool) []report.StackLine {
	lines := make([]report.StackLine, 0, len(out.Stacks))
	for _, so := range out.Stacks {
		l := report.StackLine{Dir: so.Dir, Summary: so.Summary, Failed: so.failed(), Skipped: so.Skipped != ""}
		if c.Command != Preview && so.Result != nil {
			l.Release, l.Unchanged = so.Result.Release, so.Result.Unchanged
		}
		s := so.Summary
		if sections && so.Markdown != "" && (l.Failed || s.Create+s.Update+s.Delete+s.Drift > 0) {
			l.Body = report.WithoutMarker(so.Markdown)
		}
		lines = append(lines, l)
	}
	return lines
}

// overview renders the overview of out.
func (c *Change) overview(out *Outcome, marker, note string, sections bool) (string, error) {
	return c.Renderer.Overview(c.lines(out, sections), report.OverviewOptions{
		Marker: marker, Apply: c.Command != Preview, Commit: shortSHA(c.SHA), Note: note,
	})
}

// overviewCheckRun is the check run summing up out, with summary as its
// text.
func (c *Change) overviewCheckRun(out *Outcome, summary string) githubapi.Check {
	count := report.Tally(c.lines(out, false))
	n := len(out.Stacks)
	ck := githubapi.Check{Name: c.overviewCheck(), Conclusion: "success", Summary: summary,
		Title: fmt.Sprintf("%d stack%s: %d with changes, %d failed", n, plural(n), count.Changed, count.Failed)}
	if n == 0 {
		ck.Title = "no stack is touched"
	}
	if count.Failed > 0 || out.Err != nil {
		ck.Conclusion = "failure"
	}
	if count.Changed > 0 && count.Failed == 0 && out.Err == nil {
		ck.Actions = c.applyAction("/kusion apply of every changed stack")
	}
	return ck
}

// applyAction is the Apply button of a preview's check run, when the run
// offers it (ApplyAction) and the pull request could be applied: never a
// fork's. Pressing it is /kusion apply from whoever pressed it.
func (c *Change) applyAction(description string) []githubapi.CheckAction {
	if !c.ApplyAction || c.Command != Preview || c.Number == 0 || c.Request.Offline {
		return nil
	}
	return []githubapi.CheckAction{{Label: "Apply", Description: description, Identifier: ApplyActionID}}
}

// ApplyActionID identifies the Apply button in the check_run
// requested_action event its press sends.
const ApplyActionID = "apply"

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// reportOverview sets the check run summing up a run whose stacks have
// comments and check runs of their own. A preview sets it even when no
// stack is touched, so that a branch can require it.
func (c *Change) reportOverview(ctx context.Context, out *Outcome) {
	if c.SHA == "" || (len(out.Stacks) == 0 && c.Command != Preview && c.OverviewCheck == "") {
		return
	}
	summary, err := c.overview(out, "", "", false)
	if err != nil {
		out.Err = errors.Join(out.Err, err)
		return
	}
	if len(out.Stacks) == 0 {
		summary = "No stack is touched by this change.\n"
	}
	if err := c.GitHub.SetCheck(ctx, c.SHA, c.overviewCheckRun(out, summary)); err != nil {
		c.log().Error("setting the overview check failed", "error", err)
		out.Err = errors.Join(out.Err, fmt.Errorf("setting the check run %q: %w", c.overviewCheck(), err))
	}
}

// reportCombined publishes one comment for every stack of out, a section
// each, and one check run. As with a stack's own reports, each of the two
// says when the other could not be made.
func (c *Change) reportCombined(ctx context.Context, out *Outcome) {
	key := c.combinedKey()
	note := ""
	if c.Comment != "combined" {
		note = fmt.Sprintf("This change touches %d stacks, more than %s (%d): they are reported together, in this comment and the check run %s, to stay within GitHub's limits on content creation.",
			len(out.Stacks), mdsafe.Code(c.CombineSetting), c.CombineAbove, mdsafe.Code(c.overviewCheck()))
	}
	body, err := c.overview(out, githubapi.Marker(key, 1), note, true)
	if err != nil {
		out.Err = errors.Join(out.Err, err)
		return
	}
	summary, err := c.overview(out, "", note, false)
	if err != nil {
		out.Err = errors.Join(out.Err, err)
		return
	}
	r := c.publish(ctx, c.log(), reportPair{
		key: key, body: body, split: func(body string) []string { return c.splitCombined(key, body) },
		comment: c.commentsCombined(out), check: c.overviewCheckRun(out, summary),
		of: "the pull request", this: "this pull request", shown: "these stacks",
	})
	out.Err = errors.Join(out.Err, r.err)
	for _, so := range out.Stacks {
		so.Comments = r.urls
		if r.unreported && so.Skipped == "" {
			so.Unreported = true
			out.Unreported = append(out.Unreported, so.Dir)
		}
	}
}

// commentsCombined says whether the combined comment is published:
// on-change keeps quiet when no stack has changes, drift or an error.
func (c *Change) commentsCombined(out *Outcome) bool {
	switch c.Comment {
	case "never":
		return false
	case "on-change":
		for _, so := range out.Stacks {
			if c.comments(so) {
				return true
			}
		}
		return false
	}
	return true
}

// splitCombined cuts the combined comment into parts, on Markdown
// boundaries: between tables and stacks' sections, or inside a long
// section, which is closed and opened again.
func (c *Change) splitCombined(key, body string) []string {
	what := "Previews"
	if c.Command != Preview {
		what = "Applies"
	}
	return report.Split(body, report.SplitOptions{
		Limit:    githubapi.MaxCommentLength,
		MaxParts: c.maxParts(),
		Header: func(i, n int) string {
			return githubapi.Marker(key, i) + fmt.Sprintf("\n*%s of this change, continued (%d of %d)*\n\n", what, i, n)
		},
		Footer:    func(i, n int) string { return fmt.Sprintf("\n\n*Continued in the next comment (%d of %d).*", i+1, n) },
		Truncated: "\n\n> [!NOTE]\n> These reports are too long for comments: the rest is in the workflow run's job summary.",
	})
}
