package workflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
)

// DriftLabel labels every drift issue.
const DriftLabel = "kusion-drift"

// IssueTracker is what the drift issues need of GitHub; githubapi.Client
// has it.
type IssueTracker interface {
	MarkedIssues(ctx context.Context, label string) ([]githubapi.Issue, error)
	CreateIssue(ctx context.Context, title, body string, labels []string) (githubapi.Issue, error)
	EditIssue(ctx context.Context, number int, e githubapi.IssueEdit) (githubapi.Issue, error)
	Reply(ctx context.Context, issue int, body string) error
}

// DriftIssues keeps one GitHub issue per drifted stack (its project,
// workspace and folder), labelled DriftLabel and found again by its
// marker: opened when drift is first found, edited in place on every
// scan, closed with a comment once the drift is gone, and reopened when it
// comes back (the same issue, so that a stack's drift has one history and
// one place to act from). A scan that finds no drift opens nothing.
type DriftIssues struct {
	GitHub IssueTracker
	// Now is the scan's clock (default time.Now).
	Now func() time.Time
	// RunURL, a plain http(s) address, is linked as the scan that wrote
	// the issue.
	RunURL string
	Log    *slog.Logger
}

// IssueAction is what Publish did to a stack's issue.
type IssueAction string

const (
	IssueOpened   IssueAction = "opened"
	IssueEdited   IssueAction = "edited"
	IssueReopened IssueAction = "reopened"
	IssueClosed   IssueAction = "closed"
	// IssueKept: the issue already said what the scan found.
	IssueKept IssueAction = "unchanged"
)

// IssueOutcome is a stack's issue after Publish.
type IssueOutcome struct {
	Dir    string      `json:"stack"`
	Number int         `json:"number"`
	URL    string      `json:"url"`
	Action IssueAction `json:"action"`
}

// Publish brings the drift issues in line with a scan's stacks, setting
// each drifted stack's Since from its issue. A stack whose status is not
// Drifted, InSync or SpecNotApplied (never applied, a release running or failed, a scan
// error) leaves its issue as it is: nothing is known of its drift. The
// stacks' errors with GitHub are joined; the others are still published.
func (d *DriftIssues) Publish(ctx context.Context, stacks []*StackDrift) ([]IssueOutcome, error) {
	compared := false
	for _, st := range stacks {
		compared = compared || st.Status == Drifted || st.Status == InSync || st.Status == SpecNotApplied
	}
	if !compared {
		// No issue could change: GitHub is not asked.
		return nil, nil
	}
	issues, err := d.GitHub.MarkedIssues(ctx, DriftLabel)
	if err != nil {
		return nil, fmt.Errorf("drift issues: %w", err)
	}
	byKey := map[string]githubapi.Issue{}
	for _, is := range issues {
		// The lowest number is the first opened: a copy made by a racing
		// scan is left alone.
		if old, dup := byKey[is.Key]; !dup || is.Number < old.Number {
			byKey[is.Key] = is
		}
	}
	now := time.Now().UTC()
	if d.Now != nil {
		now = d.Now().UTC()
	}
	var out []IssueOutcome
	var errs []error
	for _, st := range stacks {
		key := driftKey(st)
		is, found := byKey[githubapiKey(key)]
		var o IssueOutcome
		var err error
		switch {
		case st.Status == Drifted:
			o, err = d.drifted(ctx, st, key, is, found, now)
		case (st.Status == InSync || st.Status == SpecNotApplied) && found && is.State == "open":
			o, err = d.gone(ctx, st, is, now)
		default:
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("drift issue of %s: %w", st.Dir, err))
			continue
		}
		o.Dir = st.Dir
		out = append(out, o)
		if d.Log != nil {
			d.Log.Info("drift issue", "stack", st.Dir, "issue", o.Number, "action", o.Action)
		}
	}
	return out, errors.Join(errs...)
}

func (d *DriftIssues) drifted(ctx context.Context, st *StackDrift, key string, is githubapi.Issue, found bool, now time.Time) (IssueOutcome, error) {
	st.Since = now
	if found && is.State == "open" {
		if since, ok := issueSince(is.Body); ok && since.Before(now) {
			st.Since = since
		}
	}
	title, body := driftTitle(st), DriftIssueBody(st, key, now, d.runURL())
	switch {
	case !found:
		is, err := d.GitHub.CreateIssue(ctx, title, body, []string{DriftLabel})
		return IssueOutcome{Number: is.Number, URL: is.URL, Action: IssueOpened}, err
	case is.State != "open":
		if _, err := d.GitHub.EditIssue(ctx, is.Number, githubapi.IssueEdit{Title: title, Body: body, State: "open", StateReason: "reopened"}); err != nil {
			return IssueOutcome{}, err
		}
		err := d.GitHub.Reply(ctx, is.Number, fmt.Sprintf("Drift is back: the scan at %s found %s changed outside of a release again. The issue above says what.", stamp(now), countText(st.Counts())))
		return IssueOutcome{Number: is.Number, URL: is.URL, Action: IssueReopened}, err
	case sameButTimes(is.Body, body) && is.Title == title:
		return IssueOutcome{Number: is.Number, URL: is.URL, Action: IssueKept}, nil
	}
	_, err := d.GitHub.EditIssue(ctx, is.Number, githubapi.IssueEdit{Title: title, Body: body})
	if errors.Is(err, githubapi.ErrIssueGone) {
		// Deleted or transferred since it was listed: the stack gets a new one.
		is, err := d.GitHub.CreateIssue(ctx, title, body, []string{DriftLabel})
		return IssueOutcome{Number: is.Number, URL: is.URL, Action: IssueOpened}, err
	}
	return IssueOutcome{Number: is.Number, URL: is.URL, Action: IssueEdited}, err
}

// gone closes the issue of a stack whose drift is gone.
func (d *DriftIssues) gone(ctx context.Context, st *StackDrift, is githubapi.Issue, now time.Time) (IssueOutcome, error) {
	rev := uint64(0)
	if st.Release != nil {
		rev = st.Release.Revision
	}
	note := fmt.Sprintf("The drift is gone: the scan at %s found every live object of stack %s as release %d left it. Closing; a scan that finds drift again reopens this issue.",
		stamp(now), mdsafe.Code(st.Dir), rev)
	if err := d.GitHub.Reply(ctx, is.Number, note); err != nil {
		return IssueOutcome{}, err
	}
	_, err := d.GitHub.EditIssue(ctx, is.Number, githubapi.IssueEdit{State: "closed", StateReason: "completed"})
	return IssueOutcome{Number: is.Number, URL: is.URL, Action: IssueClosed}, err
}

func (d *DriftIssues) runURL() string {
	if plainRunURL.MatchString(d.RunURL) {
		return d.RunURL
	}
	return ""
}

var plainRunURL = regexp.MustCompile(`^https?://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._~%/-]*)?$`)

// driftKey names a stack's drift issue in its marker: the project,
// workspace and folder, each escaped for the HTML comment.
func driftKey(st *StackDrift) string {
	return fmt.Sprintf("drift project=%s workspace=%s stack=%s",
		mdsafe.CommentValue(st.Project), mdsafe.CommentValue(st.Workspace), mdsafe.CommentValue(st.Dir))
}

// releaseLine names, in the issue, the release the drift was measured
// against: the one a revert from the issue applies again.
var releaseLine = regexp.MustCompile(`(?m)^<!-- kusionpr:drift-release ([0-9]{1,19}) -->$`)

// DriftIssueStack is the stack folder of a drift issue of ours (its
// marker's) and the release its drift was measured against, for a revert
// from the issue.
func DriftIssueStack(is githubapi.Issue) (dir string, revision uint64, err error) {
	fields := strings.Fields(is.Key)
	if len(fields) != 4 || fields[0] != "drift" || !strings.HasPrefix(fields[3], "stack=") {
		return "", 0, fmt.Errorf("issue #%d is not a drift issue of this bot", is.Number)
	}
	if dir, err = url.PathUnescape(strings.TrimPrefix(fields[3], "stack=")); err != nil || dir == "" {
		return "", 0, fmt.Errorf("issue #%d: its stack cannot be read", is.Number)
	}
	m := releaseLine.FindStringSubmatch(is.Body)
	if m == nil {
		return "", 0, fmt.Errorf("issue #%d does not say which release its drift was measured against", is.Number)
	}
	if revision, err = strconv.ParseUint(m[1], 10, 64); err != nil {
		return "", 0, fmt.Errorf("issue #%d: release %s: %w", is.Number, m[1], err)
	}
	return dir, revision, nil
}

// githubapiKey is key as githubapi reads it back from a marker.
func githubapiKey(key string) string { return mdsafe.CommentText(key) }

// sinceLine keeps, in the issue, when the drift was first seen: the scan
// itself keeps nothing between runs.
var sinceLine = regexp.MustCompile(`(?m)^<!-- kusionpr:drift-since (\S+) -->$`)

func issueSince(body string) (time.Time, bool) {
	m := sinceLine.FindStringSubmatch(body)
	if m == nil {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, m[1])
	return t, err == nil
}

// lastSeen is the body's one line that changes on every scan.
var lastSeen = regexp.MustCompile(`(?m)^Last seen by the scan at [^\n]*$`)

// sameButTimes says whether two bodies differ only in when they were last
// seen: such an edit would only notify the issue's subscribers of nothing.
func sameButTimes(a, b string) bool {
	return lastSeen.ReplaceAllString(a, "") == lastSeen.ReplaceAllString(b, "")
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func countText(c DriftCounts) string {
	return fmt.Sprintf("%d resource%s (%d field%s)", c.Resources, plural(c.Resources), c.Fields, plural(c.Fields))
}

// driftTitle names the stack within GitHub's 256 characters of a title:
// each name is cut before it is made code, so no cut breaks a code span.
func driftTitle(st *StackDrift) string {
	cut := func(s string, n int) string {
		if utf8.RuneCountInString(s) > n {
			return string([]rune(s)[:n]) + "…"
		}
		return s
	}
	return fmt.Sprintf("Drift in stack %s (%s)", mdsafe.Code(cut(st.Dir, 120)), mdsafe.Code(cut(st.Project+"/"+st.Workspace, 60)))
}

// issueBudget is what an issue body may take, below GitHub's limit with
// room for the note that says the list was cut.
const issueBudget = githubapi.MaxIssueBodyLength - 2000

// DriftIssueBody is the body of a stack's drift issue: its marker, since
// when the drift has been seen, what drifted field by field (sensitive
// values masked), what the checkout's spec would change, and the ways
// back. Past GitHub's 65,536 characters the field list is cut with a
// note; the body itself never is.
func DriftIssueBody(st *StackDrift, key string, now time.Time, runURL string) string {
	var b strings.Builder
	b.WriteString(githubapi.Marker(key, 1) + "\n")
	since := st.Since
	if since.IsZero() {
		since = now
	}
	fmt.Fprintf(&b, "<!-- kusionpr:drift-since %s -->\n", stamp(since))
	fmt.Fprintf(&b, "<!-- kusionpr:drift-release %d -->\n", st.Release.Revision)
	fmt.Fprintf(&b, "## Drift in stack %s\n\n", mdsafe.Code(st.Dir))
	c := st.Counts()
	rel := st.Release
	fmt.Fprintf(&b, "Project %s, workspace %s: %s changed outside of a release since release %d",
		mdsafe.Code(st.Project), mdsafe.Code(st.Workspace), countText(c), rel.Revision)
	if !rel.ModifiedTime.IsZero() {
		fmt.Fprintf(&b, " (%s)", stamp(rel.ModifiedTime))
	}
	fmt.Fprintf(&b, ".\n\nFirst seen by the scan at %s.\n", stamp(since))
	b.WriteString("Last seen by the scan at " + stamp(now))
	if runURL != "" {
		b.WriteString(" ([run](" + runURL + "))")
	}
	b.WriteString(".\n")

	var tail strings.Builder
	if len(st.SpecChanges) > 0 {
		fmt.Fprintf(&tail, "\n> [!NOTE]\n> The checkout's spec also differs from release %d in %d resource%s: an apply that has not happened (a merge not applied yet, or one that failed). Applying it changes more than the drift.\n",
			rel.Revision, len(st.SpecChanges), plural(len(st.SpecChanges)))
	}
	fmt.Fprintf(&tail, "\n### The way back\n\n- To put the live objects back as release %d left them, comment `/kusion apply` on this issue: release %d's spec is applied again, by someone who may write to the repository.\n- To keep a drifted value instead, change the stack's spec in a pull request, so that the next release records it.\n\nThis issue is edited by every scan, and closed by the first that finds no drift.\n",
		rel.Revision, rel.Revision)

	b.WriteString("\n### What drifted\n")
	budget := issueBudget - utf8.RuneCountInString(b.String()) - utf8.RuneCountInString(tail.String())
	shownFields := 0
	cut := false
	for _, step := range st.Preview.Steps() {
		if len(step.Drift) == 0 || cut {
			continue
		}
		head := "\n#### " + mdsafe.Code(step.ID) + "\n\n"
		var lines strings.Builder
		n := 0
		for _, f := range step.Drift {
			line := model.MaskFingerprints(report.DriftLine(f)) + "\n"
			// The fence may take a few more backticks than three.
			need := utf8.RuneCountInString(head) + utf8.RuneCountInString(lines.String()) + utf8.RuneCountInString(line) + 40
			if need > budget {
				cut = true
				break
			}
			lines.WriteString(line)
			n++
		}
		if n == 0 {
			break
		}
		block := head + mdsafe.Fence("diff", lines.String()) + "\n"
		b.WriteString(block)
		budget -= utf8.RuneCountInString(block)
		shownFields += n
	}
	if shownFields < c.Fields {
		fmt.Fprintf(&b, "\n*%d of the %d drifted fields are not listed: GitHub takes at most %d characters in an issue. `action drift -o json` lists them all.*\n",
			c.Fields-shownFields, c.Fields, githubapi.MaxIssueBodyLength)
	}
	b.WriteString(tail.String())
	return b.String()
}
