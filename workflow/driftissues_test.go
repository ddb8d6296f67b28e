package workflow

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/engine"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/mdsafe"
	"github.com/kusionpr/kusionpr/model"
)

// driftOf is a scanned stack whose resources drifted in the fields given.
func driftOf(dir string, status DriftStatus, fields map[string][]engine.FieldChange) *StackDrift {
	p := &engine.Preview{Project: "shop", Workspace: "prod", Stack: "prod", PriorRevision: 3, ChangeSteps: map[string]*engine.Step{}}
	for id, fs := range fields {
		p.StepKeys = append(p.StepKeys, id)
		action := engine.UnChanged
		if len(fs) > 0 {
			action = engine.Update
		}
		p.ChangeSteps[id] = &engine.Step{ID: id, Action: action, Drift: fs}
	}
	return &StackDrift{Dir: dir, Project: "shop", Workspace: "prod", Stack: "prod", Status: status, Preview: p,
		Release: &model.Release{Revision: 3, Phase: model.PhaseSucceeded, ModifiedTime: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}}
}

// hiddenLines are the HTML comments a body starts with.
var hiddenLines = regexp.MustCompile(`(?m)^<!-- kusionpr:[^\n]* -->$`)

func replicas(from, to int) []engine.FieldChange {
	return []engine.FieldChange{{Path: "spec.replicas", Op: "replace", From: from, To: to}}
}

// TestDriftIssueLifecycle: one issue per drifted stack, opened once,
// edited in place with since when kept, closed with a comment when the
// drift is gone, reopened when it comes back; stacks without drift, or
// whose drift is not known, open nothing; an issue a stranger opened with
// the marker is left alone.
func TestDriftIssueLifecycle(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	c, err := githubapi.New("ghs_token", gh.URL, "octo", "infra", nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
	issues := &DriftIssues{GitHub: c, Now: func() time.Time { return clock }}
	const dep = "apps/v1:Deployment:shop:web"
	// A stranger's issue carrying the marker the stack's would.
	stranger := driftOf("apps/shop/prod", Drifted, map[string][]engine.FieldChange{dep: replicas(2, 5)})
	gh.OpenIssue("octo", "infra", "mallory", "Drift", githubapi.Marker(driftKey(stranger), 1)+"\nfake", []string{DriftLabel})

	type scan struct {
		name   string
		stacks []*StackDrift
		want   map[string]IssueAction // by stack folder
		open   bool                   // the stack's issue is open after
	}
	scans := []scan{
		{name: "nothing drifted", stacks: []*StackDrift{driftOf("apps/shop/prod", InSync, map[string][]engine.FieldChange{dep: nil}), {Dir: "apps/new", Status: NeverApplied}},
			want: map[string]IssueAction{}},
		{name: "drift found", stacks: []*StackDrift{driftOf("apps/shop/prod", Drifted, map[string][]engine.FieldChange{dep: replicas(2, 5)}), {Dir: "apps/new", Status: NeverApplied}},
			want: map[string]IssueAction{"apps/shop/prod": IssueOpened}, open: true},
		{name: "the same drift", stacks: []*StackDrift{driftOf("apps/shop/prod", Drifted, map[string][]engine.FieldChange{dep: replicas(2, 5)})},
			want: map[string]IssueAction{"apps/shop/prod": IssueKept}, open: true},
		{name: "more drift", stacks: []*StackDrift{driftOf("apps/shop/prod", Drifted, map[string][]engine.FieldChange{dep: replicas(2, 7), "v1:ConfigMap:shop:cfg": {{Path: "data.mode", Op: "replace", From: "a", To: "b"}}})},
			want: map[string]IssueAction{"apps/shop/prod": IssueEdited}, open: true},
		{name: "scan failed: left alone", stacks: []*StackDrift{{Dir: "apps/shop/prod", Project: "shop", Workspace: "prod", Status: ScanFailed}},
			want: map[string]IssueAction{}, open: true},
		{name: "drift gone", stacks: []*StackDrift{driftOf("apps/shop/prod", InSync, map[string][]engine.FieldChange{dep: nil})},
			want: map[string]IssueAction{"apps/shop/prod": IssueClosed}},
		{name: "still gone", stacks: []*StackDrift{driftOf("apps/shop/prod", InSync, map[string][]engine.FieldChange{dep: nil})},
			want: map[string]IssueAction{}},
		{name: "drift back", stacks: []*StackDrift{driftOf("apps/shop/prod", Drifted, map[string][]engine.FieldChange{dep: replicas(2, 1)})},
			want: map[string]IssueAction{"apps/shop/prod": IssueReopened}, open: true},
	}
	firstSeen := time.Time{}
	for i, sc := range scans {
		clock = clock.Add(time.Hour)
		calls := len(gh.Calls())
		out, err := issues.Publish(ctx, sc.stacks)
		if err != nil {
			t.Fatalf("%s: %v", sc.name, err)
		}
		// GitHub is asked only what it must be: nothing when no stack was
		// compared, the list alone when no issue changes.
		var ops []string
		for _, c := range gh.Calls()[calls:] {
			ops = append(ops, c.Operation)
		}
		wantOps := map[string]string{
			"scan failed: left alone": "[]", "the same drift": "[issues/list-for-repo]", "still gone": "[issues/list-for-repo]",
			"drift found": "[issues/list-for-repo issues/create]", "more drift": "[issues/list-for-repo issues/update]",
			"drift gone": "[issues/list-for-repo issues/create-comment issues/update]",
			"drift back": "[issues/list-for-repo issues/update issues/create-comment]",
		}[sc.name]
		if wantOps != "" && fmt.Sprint(ops) != wantOps {
			t.Errorf("%s: requests %v, want %s", sc.name, ops, wantOps)
		}
		got := map[string]IssueAction{}
		for _, o := range out {
			got[o.Dir] = o.Action
		}
		if fmt.Sprint(got) != fmt.Sprint(sc.want) {
			t.Errorf("%s: issues %v, want %v", sc.name, got, sc.want)
		}
		var ours []githubfake.Issue
		for _, is := range gh.Issues("octo", "infra") {
			if is.User == "mallory" {
				if is.Body != githubapi.Marker(driftKey(stranger), 1)+"\nfake" || is.State != "open" {
					t.Errorf("%s: the stranger's issue was changed: %+v", sc.name, is)
				}
				continue
			}
			ours = append(ours, is)
		}
		if i == 0 {
			if len(ours) != 0 {
				t.Fatalf("%s: %d issues opened, want none", sc.name, len(ours))
			}
			continue
		}
		if len(ours) != 1 {
			t.Fatalf("%s: %d issues of ours, want 1", sc.name, len(ours))
		}
		is := ours[0]
		if (is.State == "open") != sc.open {
			t.Errorf("%s: issue state %s, want open=%v", sc.name, is.State, sc.open)
		}
		if len(is.Labels) != 1 || is.Labels[0] != DriftLabel {
			t.Errorf("%s: labels %v", sc.name, is.Labels)
		}
		since, ok := issueSince(is.Body)
		switch sc.name {
		case "drift found":
			firstSeen = since
		case "the same drift", "more drift":
			if !ok || !since.Equal(firstSeen) {
				t.Errorf("%s: since %v, want the first scan's %v kept", sc.name, since, firstSeen)
			}
		case "drift back":
			if !since.Equal(clock) {
				t.Errorf("%s: since %v, want this scan's %v (the drift came back)", sc.name, since, clock)
			}
		}
		if sc.name == "more drift" && (!strings.Contains(is.Body, "! spec.replicas: 2 => 7") || !strings.Contains(is.Body, `! data.mode: "a" => "b"`)) {
			t.Errorf("%s: the body does not list the fields:\n%s", sc.name, is.Body)
		}
	}
	var notes []string
	for _, cm := range gh.Comments("octo", "infra", gh.Issues("octo", "infra")[1].Number) {
		notes = append(notes, cm.Body)
	}
	if len(notes) != 2 || !strings.Contains(notes[0], "The drift is gone") || !strings.Contains(notes[1], "Drift is back") {
		t.Errorf("the issue's comments %q, want a closing note then a reopening one", notes)
	}
}

// TestDriftIssueIsSafe: a repository's names land escaped in the title,
// body and marker; a sensitive value shows only as changed, masked; a
// drift too long for GitHub has its field list cut with a note, and the
// issue is still opened (the fake refuses a body past 65,536 characters).
func TestDriftIssueIsSafe(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	c, err := githubapi.New("ghs_token", gh.URL, "octo", "infra", nil)
	if err != nil {
		t.Fatal(err)
	}
	hostile := driftOf("apps/x --> <img src=x> @octo/team\n# title", Drifted, map[string][]engine.FieldChange{
		"v1:Secret:shop:creds": {{Path: "data.password", Op: "replace", From: model.Fingerprint("hunter2-old"), To: model.Fingerprint("hunter2-new")}},
	})
	hostile.Project = "p`<!--"
	long := map[string][]engine.FieldChange{}
	for r := range 40 {
		var fs []engine.FieldChange
		for f := range 100 {
			fs = append(fs, engine.FieldChange{Path: fmt.Sprintf("data.key%03d", f), Op: "replace", From: strings.Repeat("a", 250), To: strings.Repeat("b", 250)})
		}
		long[fmt.Sprintf("v1:ConfigMap:shop:cm%02d", r)] = fs
	}
	big := driftOf("apps/big", Drifted, long)
	out, err := (&DriftIssues{GitHub: c}).Publish(ctx, []*StackDrift{hostile, big})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 {
		t.Fatalf("issues %+v, want 2", out)
	}
	all := gh.Issues("octo", "infra")
	h, b := all[0], all[1]
	for _, s := range []string{h.Title, h.Body} {
		// The names may show only as code, where GitHub renders nothing.
		// The hidden lines are checked apart, below.
		bare := hiddenLines.ReplaceAllString(s, "")
		bare = strings.ReplaceAll(strings.ReplaceAll(bare, mdsafe.Code(hostile.Dir), ""), mdsafe.Code(hostile.Project), "")
		for _, bad := range []string{"\n# title", "<img", "@octo", "sha256", "hunter2"} {
			if strings.Contains(bare, bad) {
				t.Errorf("%q is in the issue outside code:\n%s", bad, s)
			}
		}
	}
	if hidden := hiddenLines.FindAllString(h.Body, -1); len(hidden) != 3 || strings.Count(hidden[0], "-->") != 1 || strings.Contains(hidden[0], "<img") {
		t.Errorf("the marker is broken by the names: %q", hidden)
	}
	if !strings.Contains(h.Body, `! data.password: "(sensitive)" => "(sensitive)"`) {
		t.Errorf("the Secret's drift does not show as changed, masked:\n%s", h.Body)
	}
	if !strings.Contains(h.Title, "`apps/x --> <img src=x> @octo/team # title`") {
		t.Errorf("title %q: the folder is not shown as code", h.Title)
	}
	if n := len([]rune(b.Body)); n > githubapi.MaxIssueBodyLength || !strings.Contains(b.Body, "of the 4000 drifted fields are not listed") {
		t.Errorf("the long drift's body has %d characters, and no note of the cut", n)
	}
	if !strings.Contains(b.Body, "### The way back") {
		t.Error("the cut took the way back out of the body")
	}
	// Found again by its marker, though its names are hostile.
	out, err = (&DriftIssues{GitHub: c}).Publish(ctx, []*StackDrift{hostile, big})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.Action != IssueKept {
			t.Errorf("second scan: %s %s, want unchanged", o.Dir, o.Action)
		}
	}
	if n := len(gh.Issues("octo", "infra")); n != 2 {
		t.Errorf("%d issues after the second scan, want 2", n)
	}
}

// goneTracker lists an issue that is deleted by the time it is edited.
type goneTracker struct {
	listed  githubapi.Issue
	created []string
}

func (g *goneTracker) MarkedIssues(context.Context, string) ([]githubapi.Issue, error) {
	return []githubapi.Issue{g.listed}, nil
}

func (g *goneTracker) CreateIssue(_ context.Context, title, _ string, _ []string) (githubapi.Issue, error) {
	g.created = append(g.created, title)
	return githubapi.Issue{Number: 9, State: "open"}, nil
}

func (g *goneTracker) EditIssue(_ context.Context, n int, _ githubapi.IssueEdit) (githubapi.Issue, error) {
	return githubapi.Issue{}, fmt.Errorf("edit issue #%d: %w", n, githubapi.ErrIssueGone)
}

func (g *goneTracker) Reply(context.Context, int, string) error { return nil }

// TestDriftIssueDeletedMeanwhile: an issue deleted between the list and
// the edit is opened again, not an error of the scan.
func TestDriftIssueDeletedMeanwhile(t *testing.T) {
	st := driftOf("apps/shop/prod", Drifted, map[string][]engine.FieldChange{"v1:ConfigMap:shop:cfg": replicas(1, 2)})
	g := &goneTracker{listed: githubapi.Issue{Number: 5, State: "open", Body: "old", Key: githubapiKey(driftKey(st))}}
	out, err := (&DriftIssues{GitHub: g}).Publish(context.Background(), []*StackDrift{st})
	if err != nil || len(out) != 1 || out[0].Action != IssueOpened || out[0].Number != 9 || len(g.created) != 1 {
		t.Errorf("outcome %+v, %v; created %v: want a new issue", out, err, g.created)
	}
}

// TestDriftIssueStack: the issue names the stack and the release its
// drift was measured against, whatever the folder's name; an issue that
// is not a drift issue, or does not say its release, names none.
func TestDriftIssueStack(t *testing.T) {
	for _, dir := range []string{"apps/shop/prod", "apps/we b/--> <x>", "a+b/%41"} {
		st := driftOf(dir, Drifted, map[string][]engine.FieldChange{"v1:ConfigMap:shop:cfg": replicas(1, 2)})
		key := driftKey(st)
		is := githubapi.Issue{Number: 7, Key: githubapiKey(key), Body: DriftIssueBody(st, key, time.Now(), "")}
		got, rev, err := DriftIssueStack(is)
		if err != nil || got != dir || rev != 3 {
			t.Errorf("%q: %q, release %d, %v; want the folder and release 3", dir, got, rev, err)
		}
	}
	for name, is := range map[string]githubapi.Issue{
		"another marker":    {Number: 8, Key: "preview stack=apps/x workspace=default", Body: "<!-- kusionpr:drift-release 3 -->"},
		"no release line":   {Number: 9, Key: "drift project=shop workspace=prod stack=apps/x", Body: "x"},
		"a stack of spaces": {Number: 10, Key: "drift project=shop workspace=prod stack=", Body: "<!-- kusionpr:drift-release 3 -->"},
	} {
		if dir, _, err := DriftIssueStack(is); err == nil {
			t.Errorf("%s: named stack %q", name, dir)
		}
	}
}
