package report_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/internal/mdcheck"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/report"
)

// tableBreaker is what ends a cell of a Markdown table whatever code span
// is around it: a pipe, and a backslash before one.
const tableBreaker = `a\|b|c`

// TestOverviewGolden: the combined comment of a pull request and the
// overview check run are exactly as reviewed; every folder, a hostile
// one included, renders as text in its own cell and section.
func TestOverviewGolden(t *testing.T) {
	r, err := report.New()
	if err != nil {
		t.Fatal(err)
	}
	sample, err := r.Comment(samplePreview(), nil, report.CommentOptions{Marker: "<!-- kusionpr:preview stack=apps/web/dev workspace=default -->", Location: "apps/web/dev"})
	if err != nil {
		t.Fatal(err)
	}
	hostileBody, err := r.Comment(hostilePreview(), nil, report.CommentOptions{Location: hostileFolder})
	if err != nil {
		t.Fatal(err)
	}
	lines := []report.StackLine{
		{Dir: "apps/web/dev", Summary: engine.Summary{Create: 1, Update: 2, Delete: 1, UnChanged: 1, Drift: 1}, Body: report.WithoutMarker(sample)},
		{Dir: "apps/web/prod", Summary: engine.Summary{UnChanged: 4}},
		{Dir: "apps/api/dev", Summary: engine.Summary{UnChanged: 2, Drift: 1}},
		{Dir: "apps/api/prod", Skipped: true},
		{Dir: hostileFolder, Summary: engine.Summary{Create: 1, Update: 2, Delete: 1, Errors: 1}, Failed: true, Body: report.WithoutMarker(hostileBody)},
		{Dir: tableBreaker, Summary: engine.Summary{UnChanged: 1}},
	}
	cases := []struct {
		name  string
		lines []report.StackLine
		opts  report.OverviewOptions
		check mdcheck.Want
	}{
		{"combined", lines, report.OverviewOptions{Marker: "<!-- kusionpr:preview pull-request workspace=default -->", Commit: "1a2b3c4",
			Note: "This change touches 6 stacks, more than `combine-above` (5): they are reported together."},
			mdcheck.Want{Details: 2 + 5 + 5, Data: []string{hostileFolder, tableBreaker, "apps/web/dev"}}},
		{"overview-check", stripBodies(lines), report.OverviewOptions{Commit: "1a2b3c4"},
			mdcheck.Want{Data: []string{hostileFolder, tableBreaker}}},
		{"applied", []report.StackLine{
			{Dir: "apps/web/dev", Summary: engine.Summary{Create: 1}, Release: &model.Release{Revision: 4, Phase: model.PhaseSucceeded}},
			{Dir: "apps/web/prod", Summary: engine.Summary{UnChanged: 3}, Unchanged: true},
			{Dir: "apps/api/dev", Summary: engine.Summary{Update: 1}, Release: &model.Release{Revision: 2, Phase: model.Phase(hostile)}},
		}, report.OverviewOptions{Apply: true, Commit: "1a2b3c4"}, mdcheck.Want{Data: []string{hostile}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Overview(tc.lines, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "overview-"+tc.name+".md", got)
			for _, p := range mdcheck.Check(got, tc.check) {
				t.Error(p)
			}
			html, err := mdcheck.Render(got)
			if err != nil {
				t.Fatal(err)
			}
			// Every stack has a row of 8 cells: no name ends a cell early.
			rows := stackRow.FindAllString(html, -1)
			if len(rows) != len(tc.lines) {
				t.Errorf("%d rows for %d stacks", len(rows), len(tc.lines))
			}
			for _, row := range rows {
				if n := strings.Count(row, "<td"); n != 8 {
					t.Errorf("%d cells in %s, want 8", n, row)
				}
			}
		})
	}
}

// stackRow is a row of an overview's table as GitHub renders it.
var stackRow = regexp.MustCompile(`<tr><td><code>.*</tr>`)

// section is the start of a stack's section in an overview.
var section = regexp.MustCompile(`<details><summary><code>apps/s\d+/dev</code>: 📝 changes</summary>`)

func stripBodies(lines []report.StackLine) []report.StackLine {
	out := make([]report.StackLine, len(lines))
	for i, l := range lines {
		l.Body = ""
		out[i] = l
	}
	return out
}

// TestOverviewSplitsBetweenTables: a pull request of 200 stacks splits into
// comments between tables and sections, each part a whole table or
// section, so that every part renders as it reads.
func TestOverviewSplitsBetweenTables(t *testing.T) {
	r, _ := report.New()
	body, err := r.Comment(samplePreview(), nil, report.CommentOptions{Location: "x"})
	if err != nil {
		t.Fatal(err)
	}
	var lines []report.StackLine
	for i := range 200 {
		lines = append(lines, report.StackLine{Dir: fmt.Sprintf("apps/s%03d/dev", i), Summary: engine.Summary{Create: 1}, Body: report.WithoutMarker(body)})
	}
	got, err := r.Overview(lines, report.OverviewOptions{Marker: "<!-- kusionpr:preview pull-request workspace=default -->"})
	if err != nil {
		t.Fatal(err)
	}
	parts := report.Split(got, report.SplitOptions{Limit: 20000, MaxParts: 100})
	if len(parts) < 3 {
		t.Fatalf("%d parts, want several", len(parts))
	}
	rows, sections := 0, 0
	for i, p := range parts {
		if n := len([]rune(p)); n > 20000 {
			t.Errorf("part %d: %d characters", i+1, n)
		}
		if strings.Count(p, "<table>") != strings.Count(p, "</table>") {
			t.Errorf("part %d cuts a table:\n%s", i+1, p)
		}
		html, err := mdcheck.Render(p)
		if err != nil {
			t.Fatal(err)
		}
		rows += strings.Count(html, "<tr><td>")
		sections += len(section.FindAllString(html, -1))
	}
	if rows != 200 || sections != 200 {
		t.Errorf("the parts hold %d rows and %d sections, want 200 of each", rows, sections)
	}
}
