package githubapi

import (
	"encoding/json"
	"fmt"

	"github.com/google/go-github/v60/github"
)

// Event is what the action reads of the event that started its job (the
// file GITHUB_EVENT_PATH names), parsed once, on go-github's types, into
// what the run needs.
type Event struct {
	// Name is the event's name: pull_request, push, merge_group...
	Name string
	// PullRequest is set for pull_request, pull_request_target and
	// every other event that carries one.
	PullRequest *PullRequest
	// Push is set for push.
	Push *Push
	// MergeGroup is set for merge_group.
	MergeGroup *MergeGroup
	// DefaultBranch is the repository's, as the event says it.
	DefaultBranch string
}

// Push is a push's commits: where the branch was and what they changed.
type Push struct {
	// Before is the commit the branch held before the push; GitHub sends
	// zeros for a push that made the branch.
	Before, After string
	// Files are what the pushed commits added, modified and removed, in
	// the commits' order.
	Files []PushedFile
}

// PushedFile is one file a pushed commit changed; Status is added,
// modified or removed.
type PushedFile struct {
	Path, Status string
}

// MergeGroup is a merge queue's group: its commit and the base it was
// made on.
type MergeGroup struct {
	HeadSHA, BaseSHA, BaseRef string
}

// ParseEvent reads the event named name from its payload. An event of
// another kind gives an Event with Name alone, which the caller refuses
// or ignores.
func ParseEvent(name string, payload []byte) (*Event, error) {
	ev := &Event{Name: name}
	switch name {
	case "push":
		var e github.PushEvent
		if err := json.Unmarshal(payload, &e); err != nil {
			return nil, fmt.Errorf("reading the push event: %w", err)
		}
		p := &Push{Before: e.GetBefore(), After: e.GetAfter(), Files: []PushedFile{}}
		for _, c := range e.Commits {
			for _, f := range c.Added {
				p.Files = append(p.Files, PushedFile{Path: f, Status: "added"})
			}
			for _, f := range c.Modified {
				p.Files = append(p.Files, PushedFile{Path: f, Status: "modified"})
			}
			for _, f := range c.Removed {
				p.Files = append(p.Files, PushedFile{Path: f, Status: "removed"})
			}
		}
		ev.Push = p
		ev.DefaultBranch = e.GetRepo().GetDefaultBranch()
	case "merge_group":
		var e github.MergeGroupEvent
		if err := json.Unmarshal(payload, &e); err != nil {
			return nil, fmt.Errorf("reading the merge_group event: %w", err)
		}
		if g := e.GetMergeGroup(); g != nil {
			ev.MergeGroup = &MergeGroup{HeadSHA: g.GetHeadSHA(), BaseSHA: g.GetBaseSHA(), BaseRef: g.GetBaseRef()}
		}
		ev.DefaultBranch = e.GetRepo().GetDefaultBranch()
	default:
		// pull_request and pull_request_target, and every other event
		// that carries a pull request (pull_request_review...), read as
		// the bot reads them.
		var e struct {
			PullRequest *github.PullRequest `json:"pull_request"`
			Repo        *github.Repository  `json:"repository"`
		}
		if err := json.Unmarshal(payload, &e); err != nil {
			return nil, fmt.Errorf("reading the %s event: %w", name, err)
		}
		if e.PullRequest != nil {
			pr := pullRequestOf(e.PullRequest)
			ev.PullRequest = &pr
		}
		ev.DefaultBranch = e.Repo.GetDefaultBranch()
	}
	return ev, nil
}
