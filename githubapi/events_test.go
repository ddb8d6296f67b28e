package githubapi_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// TestParseEvent: each event the action runs on is read into what the run
// needs: the pull request (of any event carrying one), a push's before
// and its commits' files in their order, a merge group's commits, and the
// repository's default branch.
func TestParseEvent(t *testing.T) {
	for _, tc := range []struct {
		name, event, payload string
		want                 githubapi.Event
	}{
		{name: "push", event: "push",
			payload: `{"before": "aaa", "after": "bbb", "repository": {"default_branch": "main"},
				"commits": [{"added": ["a/spec.yaml"], "modified": ["b/main.k"]}, {"removed": ["c/stack.yaml"], "modified": ["a/spec.yaml"]}]}`,
			want: githubapi.Event{Name: "push", DefaultBranch: "main", Push: &githubapi.Push{Before: "aaa", After: "bbb", Files: []githubapi.PushedFile{
				{Path: "a/spec.yaml", Status: "added"}, {Path: "b/main.k", Status: "modified"},
				{Path: "a/spec.yaml", Status: "modified"}, {Path: "c/stack.yaml", Status: "removed"},
			}}}},
		{name: "push without commits", event: "push", payload: `{"before": "0000000000000000000000000000000000000000", "after": "bbb"}`,
			want: githubapi.Event{Name: "push", Push: &githubapi.Push{Before: "0000000000000000000000000000000000000000", After: "bbb", Files: []githubapi.PushedFile{}}}},
		{name: "merge group", event: "merge_group",
			payload: `{"merge_group": {"head_sha": "hhh", "base_sha": "bbb", "base_ref": "refs/heads/main"}, "repository": {"default_branch": "main"}}`,
			want:    githubapi.Event{Name: "merge_group", DefaultBranch: "main", MergeGroup: &githubapi.MergeGroup{HeadSHA: "hhh", BaseSHA: "bbb", BaseRef: "refs/heads/main"}}},
		{name: "pull request", event: "pull_request",
			payload: `{"pull_request": {"number": 7, "head": {"sha": "hhh", "ref": "feature", "repo": {"id": 2, "full_name": "o/r"}}, "base": {"ref": "main", "repo": {"id": 2, "full_name": "o/r"}}}, "repository": {"default_branch": "main"}}`,
			want: githubapi.Event{Name: "pull_request", DefaultBranch: "main", PullRequest: &githubapi.PullRequest{
				Number: 7, HeadSHA: "hhh", HeadRef: "feature", BaseRef: "main", HeadRepoID: 2, BaseRepoID: 2, HeadRepo: "o/r", BaseRepo: "o/r"}}},
		{name: "a review carries its pull request", event: "pull_request_review",
			payload: `{"pull_request": {"number": 8}, "repository": {"default_branch": "trunk"}}`,
			want:    githubapi.Event{Name: "pull_request_review", DefaultBranch: "trunk", PullRequest: &githubapi.PullRequest{Number: 8}}},
		{name: "another event", event: "workflow_dispatch", payload: `{"inputs": {}, "repository": {"default_branch": "main"}}`,
			want: githubapi.Event{Name: "workflow_dispatch", DefaultBranch: "main"}},
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
	if _, err := githubapi.ParseEvent("push", []byte(`{"commits": "none"}`)); err == nil {
		t.Error("a malformed push was read")
	}
}

// TestParseEventOfGitHubsExamples: GitHub's published example payloads of
// the events the action runs on read as the run needs them.
func TestParseEventOfGitHubsExamples(t *testing.T) {
	for name, action := range map[string]string{"push": "", "merge_group": "checks_requested", "pull_request": "opened"} {
		raw, err := json.Marshal(githubfake.Event(t, name, action))
		if err != nil {
			t.Fatal(err)
		}
		ev, err := githubapi.ParseEvent(name, raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ok := ev.DefaultBranch != ""
		switch name {
		case "push":
			ok = ok && ev.Push != nil && ev.Push.After != ""
		case "merge_group":
			ok = ok && ev.MergeGroup != nil && ev.MergeGroup.HeadSHA != "" && ev.MergeGroup.BaseSHA != ""
		case "pull_request":
			ok = ok && ev.PullRequest != nil && ev.PullRequest.Number != 0 && ev.PullRequest.HeadSHA != ""
		}
		if !ok {
			t.Errorf("GitHub's %s example read as %+v", name, ev)
		}
	}
}
