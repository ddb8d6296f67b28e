package githubapi_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// The repository, installation and sender most payloads below carry, and
// what they read as.
const (
	sentBy = `"repository": {"id": 42, "name": "infra", "full_name": "octo/infra", "owner": {"login": "octo"}, "default_branch": "main"},
		"installation": {"id": 5}, "sender": {"login": "dev", "id": 9}`
	headSHA = "6666666666666666666666666666666666666666"
)

var infra = githubapi.Repository{ID: 42, Owner: "octo", Name: "infra", FullName: "octo/infra", DefaultBranch: "main"}

// TestParseEvent: each event either binary acts on is read into what it
// needs: what every event carries (action, repository, installation,
// sender), the pull request (of any event carrying one), a push's before
// and its commits' files in their order, a merge group's commits and why
// it was destroyed, an issue and its comment, a check run and the button
// pressed on it, a workflow run's names. A field the payload lacks reads
// as its zero value, an object it lacks as nil.
func TestParseEvent(t *testing.T) {
	dev := githubapi.User{Login: "dev", ID: 9}
	for _, tc := range []struct {
		name, event, payload string
		want                 githubapi.Event
	}{
		{name: "push", event: "push",
			payload: `{"before": "aaa", "after": "bbb", "repository": {"default_branch": "main"},
				"commits": [{"added": ["a/spec.yaml"], "modified": ["b/main.k"]}, {"removed": ["c/stack.yaml"], "modified": ["a/spec.yaml"]}]}`,
			want: githubapi.Event{Name: "push", Repository: githubapi.Repository{DefaultBranch: "main"}, Push: &githubapi.Push{Before: "aaa", After: "bbb", Files: []githubapi.PushedFile{
				{Path: "a/spec.yaml", Status: "added"}, {Path: "b/main.k", Status: "modified"},
				{Path: "a/spec.yaml", Status: "modified"}, {Path: "c/stack.yaml", Status: "removed"},
			}}}},
		{name: "push without commits", event: "push", payload: `{"before": "0000000000000000000000000000000000000000", "after": "bbb"}`,
			want: githubapi.Event{Name: "push", Push: &githubapi.Push{Before: "0000000000000000000000000000000000000000", After: "bbb", Files: []githubapi.PushedFile{}}}},
		{name: "a push's repository, whose times are numbers", event: "push",
			payload: `{"after": "bbb", "repository": {"id": 42, "name": "infra", "full_name": "octo/infra", "owner": {"name": "octo", "login": "octo"}, "default_branch": "main", "created_at": 1700000000},
				"installation": {"id": 5}, "sender": {"login": "dev", "id": 9}}`,
			want: githubapi.Event{Name: "push", Repository: infra, Installation: 5, Sender: dev, Push: &githubapi.Push{After: "bbb", Files: []githubapi.PushedFile{}}}},
		{name: "merge group", event: "merge_group",
			payload: `{"action": "checks_requested", "merge_group": {"head_sha": "hhh", "base_sha": "bbb", "base_ref": "refs/heads/main"}, ` + sentBy + `}`,
			want: githubapi.Event{Name: "merge_group", Action: "checks_requested", Repository: infra, Installation: 5, Sender: dev,
				MergeGroup: &githubapi.MergeGroup{HeadSHA: "hhh", BaseSHA: "bbb", BaseRef: "refs/heads/main"}}},
		{name: "a destroyed merge group says why", event: "merge_group",
			payload: `{"action": "destroyed", "reason": "dequeued", "merge_group": {"head_sha": "hhh"}, ` + sentBy + `}`,
			want: githubapi.Event{Name: "merge_group", Action: "destroyed", Repository: infra, Installation: 5, Sender: dev,
				MergeGroup: &githubapi.MergeGroup{HeadSHA: "hhh", Reason: "dequeued"}}},
		{name: "a merge group event without its group", event: "merge_group", payload: `{"action": "checks_requested", "reason": "merged"}`,
			want: githubapi.Event{Name: "merge_group", Action: "checks_requested"}},
		{name: "pull request", event: "pull_request",
			payload: `{"action": "opened", "pull_request": {"number": 7, "head": {"sha": "hhh", "ref": "feature", "repo": {"id": 2, "full_name": "o/r"}}, "base": {"ref": "main", "repo": {"id": 2, "full_name": "o/r"}}}, ` + sentBy + `}`,
			want: githubapi.Event{Name: "pull_request", Action: "opened", Repository: infra, Installation: 5, Sender: dev, PullRequest: &githubapi.PullRequest{
				Number: 7, HeadSHA: "hhh", HeadRef: "feature", BaseRef: "main", HeadRepoID: 2, BaseRepoID: 2, HeadRepo: "o/r", BaseRepo: "o/r"}}},
		{name: "a merged pull request", event: "pull_request",
			payload: `{"action": "closed", "pull_request": {"number": 7, "merged": true, "merge_commit_sha": "mmm", "merged_by": {"login": "maintainer"}, "base": {"ref": "main"}}, ` + sentBy + `}`,
			want: githubapi.Event{Name: "pull_request", Action: "closed", Repository: infra, Installation: 5, Sender: dev, PullRequest: &githubapi.PullRequest{
				Number: 7, BaseRef: "main", Merged: true, MergeCommitSHA: "mmm", MergedBy: "maintainer"}}},
		{name: "a review carries its pull request", event: "pull_request_review",
			payload: `{"action": "submitted", "review": {"state": "approved"}, "pull_request": {"number": 8}, "repository": {"default_branch": "trunk"}}`,
			want:    githubapi.Event{Name: "pull_request_review", Action: "submitted", Repository: githubapi.Repository{DefaultBranch: "trunk"}, PullRequest: &githubapi.PullRequest{Number: 8}}},
		{name: "a comment on a pull request", event: "issue_comment",
			payload: `{"action": "created", "issue": {"number": 7, "pull_request": {}}, "comment": {"id": 100, "body": "/kusion preview", "user": {"login": "dev", "id": 9, "type": "User"}}, ` + sentBy + `}`,
			want: githubapi.Event{Name: "issue_comment", Action: "created", Repository: infra, Installation: 5, Sender: dev,
				Issue:   &githubapi.EventIssue{Number: 7, PullRequest: true},
				Comment: &githubapi.IssueComment{ID: 100, Body: "/kusion preview", Author: dev, AuthorType: "User"}}},
		{name: "a bot's comment on a labelled issue", event: "issue_comment",
			payload: `{"action": "created", "issue": {"number": 12, "labels": [{"name": "kusion-drift"}, {"name": "ops"}]}, "comment": {"id": 101, "body": "/kusion apply", "user": {"login": "other[bot]", "type": "Bot"}}, ` + sentBy + `}`,
			want: githubapi.Event{Name: "issue_comment", Action: "created", Repository: infra, Installation: 5, Sender: dev,
				Issue:   &githubapi.EventIssue{Number: 12, Labels: []string{"kusion-drift", "ops"}},
				Comment: &githubapi.IssueComment{ID: 101, Body: "/kusion apply", Author: githubapi.User{Login: "other[bot]"}, AuthorType: "Bot"}}},
		{name: "a comment event without its issue or comment", event: "issue_comment", payload: `{"action": "created", ` + sentBy + `}`,
			want: githubapi.Event{Name: "issue_comment", Action: "created", Repository: infra, Installation: 5, Sender: dev}},
		{name: "an issue", event: "issues",
			payload: `{"action": "labeled", "issue": {"number": 12, "labels": [{"name": "kusion-drift"}]}, "label": {"name": "kusion-drift"}, ` + sentBy + `}`,
			want: githubapi.Event{Name: "issues", Action: "labeled", Repository: infra, Installation: 5, Sender: dev,
				Issue: &githubapi.EventIssue{Number: 12, Labels: []string{"kusion-drift"}}}},
		{name: "a press of a check run's button", event: "check_run",
			payload: `{"action": "requested_action", "check_run": {"name": "kusion/preview: apps/web/dev", "head_sha": "` + headSHA + `", "pull_requests": [{"number": 7}, {"number": 9}]},
				"requested_action": {"identifier": "apply"}, ` + sentBy + `}`,
			want: githubapi.Event{Name: "check_run", Action: "requested_action", Repository: infra, Installation: 5, Sender: dev,
				CheckRun: &githubapi.EventCheckRun{Name: "kusion/preview: apps/web/dev", HeadSHA: headSHA, PullRequests: []int{7, 9}, RequestedAction: "apply"}}},
		{name: "a check run of a fork's pull request, no button pressed", event: "check_run",
			payload: `{"action": "completed", "check_run": {"name": "ci/build", "head_sha": "` + headSHA + `", "pull_requests": []}, ` + sentBy + `}`,
			want: githubapi.Event{Name: "check_run", Action: "completed", Repository: infra, Installation: 5, Sender: dev,
				CheckRun: &githubapi.EventCheckRun{Name: "ci/build", HeadSHA: headSHA}}},
		{name: "a button pressed on no check run", event: "check_run", payload: `{"action": "requested_action", "requested_action": {"identifier": "apply"}}`,
			want: githubapi.Event{Name: "check_run", Action: "requested_action"}},
		{name: "a workflow run", event: "workflow_run",
			payload: `{"action": "completed", "workflow_run": {"id": 30433642, "name": "kusion apply apps/web [apply-0123456789abcdef01234567]", "display_title": "apply", "status": "completed", "path": ".github/workflows/kusion.yml"}, ` + sentBy + `}`,
			want: githubapi.Event{Name: "workflow_run", Action: "completed", Repository: infra, Installation: 5, Sender: dev,
				WorkflowRun: &githubapi.WorkflowRun{ID: 30433642, Name: "kusion apply apps/web [apply-0123456789abcdef01234567]", DisplayTitle: "apply", Status: "completed", Path: ".github/workflows/kusion.yml"}}},
		{name: "a workflow run event without its run", event: "workflow_run", payload: `{"action": "completed", ` + sentBy + `}`,
			want: githubapi.Event{Name: "workflow_run", Action: "completed", Repository: infra, Installation: 5, Sender: dev}},
		{name: "another event", event: "workflow_dispatch", payload: `{"inputs": {}, "repository": {"default_branch": "main"}}`,
			want: githubapi.Event{Name: "workflow_dispatch", Repository: githubapi.Repository{DefaultBranch: "main"}}},
		{name: "an empty payload", event: "issue_comment", payload: `{}`, want: githubapi.Event{Name: "issue_comment"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := githubapi.ParseEvent(tc.event, []byte(tc.payload))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("ParseEvent = %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

// TestParseEventForks: a pull request whose head is in another repository
// than its base is a fork's, and so is one whose head repository is
// missing (deleted, or left out of the payload): the event reads as the
// REST API's answer does.
func TestParseEventForks(t *testing.T) {
	for _, tc := range []struct {
		name, head string
		fork       bool
	}{
		{name: "the same repository", head: `"repo": {"id": 2, "full_name": "o/r"}`},
		{name: "the same repository, its name cased otherwise", head: `"repo": {"id": 2, "full_name": "O/R"}`},
		{name: "another repository", head: `"repo": {"id": 3, "full_name": "stranger/r"}`, fork: true},
		{name: "the same name, another id", head: `"repo": {"id": 3, "full_name": "o/r"}`, fork: true},
		{name: "a deleted head repository", head: `"repo": null`, fork: true},
		{name: "no head repository", head: `"ref": "feature"`, fork: true},
		{name: "a head repository without its id", head: `"repo": {"full_name": "o/r"}`, fork: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := `{"action": "opened", "pull_request": {"number": 7, "head": {` + tc.head + `}, "base": {"ref": "main", "repo": {"id": 2, "full_name": "o/r"}}}, ` + sentBy + `}`
			for _, event := range []string{"pull_request", "pull_request_target"} {
				ev, err := githubapi.ParseEvent(event, []byte(payload))
				if err != nil {
					t.Fatal(err)
				}
				if ev.PullRequest == nil || ev.PullRequest.Fork() != tc.fork {
					t.Errorf("%s: pull request %+v, want fork %v", event, ev.PullRequest, tc.fork)
				}
			}
		})
	}
}

// TestParseEventMalformed: a payload that is not JSON, or whose fields are
// not of their type (a time included), is refused with an error naming
// the event.
func TestParseEventMalformed(t *testing.T) {
	oldTimes, err := json.Marshal(githubfake.Event(t, "check_run", "rerequested"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ event, payload string }{
		{"push", `{"commits": "none"}`},
		{"push", `{"repository": {"id": "42"}}`},
		{"merge_group", `{"merge_group": {"head_sha": 6}}`},
		{"merge_group", `{"reason": ["merged"]}`},
		{"pull_request", `{"action": "closed", "pull_request": 7}`},
		{"pull_request", `{"installation": {"id": "five"}}`},
		{"pull_request_review", `{"pull_request": {"number": "8"}}`},
		{"issue_comment", `{"issue": {"number": 7}, "comment": {"id": "100"}}`},
		{"issue_comment", `{"issue": {"labels": "kusion-drift"}}`},
		{"issues", `{"issue": []}`},
		{"check_run", `{"check_run": {"pull_requests": {"number": 7}}}`},
		{"check_run", `{"requested_action": "apply"}`},
		{"workflow_run", `{"workflow_run": {"name": 1}}`},
		{"workflow_run", `{"sender": "dev"}`},
		{"workflow_dispatch", `{"repository": []}`},
		{"issue_comment", `not json`},
		{"check_run", ``},
		{"check_run", `{"check_run": {"app": {"created_at": "2018-04-25 20:42:10"}}}`},
		{"check_run", string(oldTimes)},
	} {
		_, err := githubapi.ParseEvent(tc.event, []byte(tc.payload))
		if err == nil || !strings.Contains(err.Error(), "the "+tc.event+" event") {
			t.Errorf("%s %s: %v, want an error naming the event", tc.event, tc.payload, err)
		}
	}
}

// TestParseEventOfGitHubsExamples: GitHub's published example payloads of
// the events either binary acts on, each action's, read as they need
// them.
func TestParseEventOfGitHubsExamples(t *testing.T) {
	for _, tc := range []struct {
		name    string
		actions []string
		ok      func(*githubapi.Event) bool
	}{
		{"push", []string{""}, func(ev *githubapi.Event) bool { return ev.Push != nil && ev.Push.After != "" }},
		{"merge_group", []string{"checks_requested"}, func(ev *githubapi.Event) bool {
			return ev.MergeGroup != nil && ev.MergeGroup.HeadSHA != "" && ev.MergeGroup.BaseSHA != ""
		}},
		{"pull_request", []string{"opened", "closed", "synchronize", "reopened", "labeled"}, func(ev *githubapi.Event) bool {
			return ev.PullRequest != nil && ev.PullRequest.Number != 0 && ev.PullRequest.HeadSHA != ""
		}},
		{"issue_comment", []string{"created", "edited", "deleted"}, func(ev *githubapi.Event) bool {
			return ev.Issue != nil && ev.Issue.Number != 0 && ev.Comment != nil && ev.Comment.ID != 0 && ev.Comment.Author.Login != ""
		}},
		{"issues", []string{"opened", "labeled", "edited"}, func(ev *githubapi.Event) bool { return ev.Issue != nil && ev.Issue.Number != 0 }},
		// GitHub's rerequested example is of 2018, its app's times
		// written without the "T" GitHub writes now: go-github, and so
		// ParseEvent, refuse it (TestParseEventMalformed).
		{"check_run", []string{"created", "completed", "requested_action"}, func(ev *githubapi.Event) bool {
			return ev.CheckRun != nil && ev.CheckRun.Name != "" && ev.CheckRun.HeadSHA != "" &&
				(ev.Action != "requested_action" || ev.CheckRun.RequestedAction != "")
		}},
		{"workflow_run", []string{"requested", "completed"}, func(ev *githubapi.Event) bool {
			// A run's name is empty until GitHub has evaluated its run-name.
			return ev.WorkflowRun != nil && ev.WorkflowRun.ID != 0 && (ev.WorkflowRun.Name != "" || ev.WorkflowRun.DisplayTitle != "")
		}},
	} {
		for _, action := range tc.actions {
			raw, err := json.Marshal(githubfake.Event(t, tc.name, action))
			if err != nil {
				t.Fatal(err)
			}
			ev, err := githubapi.ParseEvent(tc.name, raw)
			if err != nil {
				t.Errorf("%s %s: %v", tc.name, action, err)
				continue
			}
			r := ev.Repository
			if ev.Action != action || r.ID == 0 || r.FullName != r.Owner+"/"+r.Name || r.DefaultBranch == "" || ev.Sender.Login == "" || !tc.ok(ev) {
				t.Errorf("GitHub's %s %s example read as %+v", tc.name, action, ev)
			}
		}
	}
}
