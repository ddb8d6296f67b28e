package bot

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/workflow"
)

const (
	groupHead  = "9999999999999999999999999999999999999999"
	groupBase  = "8888888888888888888888888888888888888888"
	mainCommit = "7777777777777777777777777777777777777777"
)

// group delivers GitHub's merge_group event of the group at groupHead,
// made on groupBase, into main: action checks_requested, or destroyed
// (GitHub publishes no example of it: the same payload with its action and
// reason, as GitHub documents them).
func group(t *testing.T, gh *githubfake.Server, action, reason string) githubfake.Delivered {
	t.Helper()
	p := payload(t, "merge_group", "checks_requested")
	g := p["merge_group"].(map[string]any)
	g["head_sha"], g["base_sha"], g["base_ref"] = groupHead, groupBase, "refs/heads/main"
	g["head_ref"] = "refs/heads/gh-readonly-queue/main/pr-7-" + groupBase
	p["action"] = action
	if reason != "" {
		p["reason"] = reason
	}
	return gh.Deliver(t, "merge_group", p)
}

// TestMergeQueueApply: in a repository that applies in the merge queue, a
// group is applied once the group ahead has landed on the branch or
// passed kusion/preview (the bot's own check, not one of the same name by
// a workflow); one behind a failed group, or one whose group ahead neither
// lands nor passes within the wait, is not applied and fails
// kusion/preview saying why, which takes it out of the queue.
func TestMergeQueueApply(t *testing.T) {
	for _, tc := range []struct {
		name      string
		landed    bool   // groupBase is on main
		ahead     string // the group ahead's kusion/preview conclusion, by the App; "" for none
		byOther   bool   // made by a workflow, not the App
		wait      time.Duration
		wantWork  bool
		wantCheck string // a substring of the failed kusion/preview's summary on groupHead
	}{
		{name: "the commit it was made on landed", landed: true, wait: time.Minute, wantWork: true},
		{name: "the group ahead passed", ahead: "success", wait: time.Minute, wantWork: true},
		{name: "the group ahead failed", ahead: "failure", wait: time.Minute, wantCheck: "did not pass `kusion/preview` (failure"},
		{name: "a workflow's check of the same name", ahead: "success", byOther: true, wait: 1500 * time.Millisecond,
			wantCheck: "neither landed nor passed `kusion/preview` within 1.5s"},
		{name: "neither within the wait", wait: 1500 * time.Millisecond, wantCheck: "KUSIONPR_QUEUE_WAIT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := githubfake.New(t)
			work := &fakeWork{out: &workflow.Outcome{}}
			b, _ := appBot(t, gh, work, func(c *Config) { c.ApplyInQueue, c.QueueWait = []string{owner + "/" + name}, tc.wait })
			listen(t, gh, b)
			gh.SetTree(owner, name, groupHead, tree(t))
			gh.SetParents(owner, name, groupHead, groupBase)
			if tc.landed {
				gh.SetParents(owner, name, mainCommit, groupBase)
			} else {
				gh.SetParents(owner, name, groupBase, mainCommit)
			}
			gh.SetBranch(owner, name, "main", mainCommit)
			if tc.ahead != "" {
				app := gh.App()
				if tc.byOther {
					app = githubfake.GitHubActions()
				}
				gh.SetCheckRunBy(owner, name, groupBase, workflow.PreviewCheck, tc.ahead, app)
			}
			if d := group(t, gh, "checks_requested", ""); d.Status != http.StatusAccepted {
				t.Fatalf("the group's delivery answered %d %s", d.Status, d.Body)
			}
			drain(t, b)
			want := []string(nil)
			if tc.wantWork {
				want = []string{"apply@" + groupHead + " by " + senderOf(t)}
			}
			if got := changes(work); !slices.Equal(got, want) {
				t.Errorf("work %q, want %q", got, want)
			}
			var failed []string
			for _, r := range gh.CheckRuns(owner, name) {
				if r.HeadSHA == groupHead && r.Name == workflow.PreviewCheck && r.Conclusion == "failure" {
					failed = append(failed, r.Summary)
				}
			}
			switch {
			case tc.wantCheck == "" && len(failed) != 0:
				t.Errorf("kusion/preview failed on the group: %q", failed)
			case tc.wantCheck != "" && (len(failed) != 1 || !strings.Contains(failed[0], tc.wantCheck)):
				t.Errorf("failed kusion/preview %q, want one saying %q", failed, tc.wantCheck)
			}
		})
	}
}

// senderOf is who sends GitHub's merge_group example: the queue.
func senderOf(t *testing.T) string {
	t.Helper()
	s, _ := githubfake.Event(t, "merge_group", "checks_requested")["sender"].(map[string]any)
	return s["login"].(string)
}

// TestMergeQueueGroupDestroyed: a group GitHub takes out of the queue
// while it waits for the group ahead stops waiting: nothing applied, and
// no check set on a commit no one will look at again. News of a group not
// waiting is acknowledged and ignored.
func TestMergeQueueGroupDestroyed(t *testing.T) {
	gh := githubfake.New(t)
	work := &fakeWork{out: &workflow.Outcome{}}
	b, _ := appBot(t, gh, work, func(c *Config) { c.ApplyInQueue, c.QueueWait = []string{owner + "/" + name}, time.Hour })
	listen(t, gh, b)
	gh.SetTree(owner, name, groupHead, tree(t))
	gh.SetParents(owner, name, groupBase, mainCommit)
	gh.SetBranch(owner, name, "main", mainCommit)
	if d := group(t, gh, "destroyed", "dequeued"); d.Status != http.StatusOK {
		t.Errorf("a group not waiting: answered %d %s", d.Status, d.Body)
	}
	if d := group(t, gh, "checks_requested", ""); d.Status != http.StatusAccepted {
		t.Fatalf("the group's delivery answered %d %s", d.Status, d.Body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.ContainsFunc(gh.Calls(), func(c githubfake.Call) bool { return c.Operation == "checks/list-for-ref" }) {
		if time.Now().After(deadline) {
			t.Fatal("the group never read the check of the group ahead")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := group(t, gh, "destroyed", "dequeued"); d.Status != http.StatusAccepted {
		t.Errorf("the waiting group destroyed: answered %d %s", d.Status, d.Body)
	}
	drain(t, b)
	if len(work.changes) != 0 {
		t.Errorf("work %q after the group left the queue", changes(work))
	}
	if runs := gh.CheckRuns(owner, name); len(runs) != 0 {
		t.Errorf("check runs %+v on a destroyed group", runs)
	}
}
