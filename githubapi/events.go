package githubapi

import (
	"encoding/json"
	"fmt"

	"github.com/google/go-github/v60/github"
)

// Event is an event GitHub sent: the action's (the file GITHUB_EVENT_PATH
// names) or a webhook delivery the bot received, parsed once, on
// go-github's types, into what either binary acts on.
type Event struct {
	// Name is the event's name: pull_request, push, merge_group...
	Name string
	// Action is what happened: opened, closed, created,
	// checks_requested...; empty for an event without one (push).
	Action string
	// Repository is the repository the event happened in, as the event
	// says it (its default branch included).
	Repository Repository
	// Installation is the id of the App installation a webhook was sent
	// for; 0 when the payload names none (the action's event file).
	Installation int64
	// Sender is who caused the event.
	Sender User
	// PullRequest is set for pull_request, pull_request_target and
	// every other event that carries one.
	PullRequest *PullRequest
	// Push is set for push.
	Push *Push
	// MergeGroup is set for merge_group.
	MergeGroup *MergeGroup
	// Issue is set for issues and issue_comment; Comment for
	// issue_comment.
	Issue   *EventIssue
	Comment *IssueComment
	// CheckRun is set for check_run.
	CheckRun *EventCheckRun
	// WorkflowRun is set for workflow_run.
	WorkflowRun *WorkflowRun
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
	// Reason is why GitHub destroyed the group (action destroyed):
	// merged, dequeued or invalidated.
	Reason string
}

// EventIssue is the issue an issues or issue_comment event is about,
// which may be a pull request's conversation.
type EventIssue struct {
	Number int
	// PullRequest says the issue is a pull request's.
	PullRequest bool
	// Labels are the names of its labels.
	Labels []string
}

// IssueComment is the comment of an issue_comment event.
type IssueComment struct {
	ID     int64
	Body   string
	Author User
	// AuthorType is GitHub's type of the author's account: User, Bot or
	// Organization.
	AuthorType string
}

// EventCheckRun is the check run of a check_run event.
type EventCheckRun struct {
	Name, HeadSHA string
	// PullRequests are the numbers of the open pull requests whose head
	// the check run is on (none for a fork's).
	PullRequests []int
	// RequestedAction is the identifier of the check run's button that
	// was pressed (action requested_action): GitHub sends the press to
	// the App that made the check run.
	RequestedAction string
}

// ParseEvent reads the event named name from its payload. An event of
// another kind gives an Event with what every event carries (action,
// repository, installation, sender) and the pull request if it carries
// one, which the caller refuses or ignores. A payload that is not the
// event's shape is an error naming the event.
func ParseEvent(name string, payload []byte) (*Event, error) {
	var ev *Event
	var err error
	switch name {
	case "push":
		ev, err = parsePush(payload)
	case "merge_group":
		ev, err = parseMergeGroup(payload)
	case "issues":
		ev, err = parseIssues(payload)
	case "issue_comment":
		ev, err = parseIssueComment(payload)
	case "check_run":
		ev, err = parseCheckRun(payload)
	case "workflow_run":
		ev, err = parseWorkflowRun(payload)
	default:
		// pull_request and pull_request_target, and every other event
		// that carries a pull request (pull_request_review...), read
		// alike.
		ev, err = parseCarrier(payload)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the %s event: %w", name, err)
	}
	ev.Name = name
	return ev, nil
}

// carried is what every event carries besides its subject.
func carried(action string, repo *github.Repository, inst *github.Installation, sender *github.User) *Event {
	return &Event{Action: action, Installation: inst.GetID(), Sender: userOf(sender), Repository: Repository{
		ID: repo.GetID(), Owner: repo.GetOwner().GetLogin(), Name: repo.GetName(), FullName: repo.GetFullName(), DefaultBranch: repo.GetDefaultBranch(),
	}}
}

func parsePush(payload []byte) (*Event, error) {
	var e github.PushEvent
	if err := json.Unmarshal(payload, &e); err != nil {
		return nil, err
	}
	// A push's repository is of its own type (its times are numbers).
	var repo *github.Repository
	if r := e.GetRepo(); r != nil {
		repo = &github.Repository{ID: r.ID, Owner: r.Owner, Name: r.Name, FullName: r.FullName, DefaultBranch: r.DefaultBranch}
	}
	ev := carried("", repo, e.GetInstallation(), e.GetSender())
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
	return ev, nil
}

func parseMergeGroup(payload []byte) (*Event, error) {
	var e struct {
		github.MergeGroupEvent
		// go-github v60 predates the reason of a destroyed group.
		Reason *string `json:"reason,omitempty"`
	}
	if err := json.Unmarshal(payload, &e); err != nil {
		return nil, err
	}
	ev := carried(e.GetAction(), e.GetRepo(), e.GetInstallation(), e.GetSender())
	if g := e.GetMergeGroup(); g != nil {
		ev.MergeGroup = &MergeGroup{HeadSHA: g.GetHeadSHA(), BaseSHA: g.GetBaseSHA(), BaseRef: g.GetBaseRef(), Reason: ptr(e.Reason)}
	}
	return ev, nil
}

func parseIssues(payload []byte) (*Event, error) {
	var e github.IssuesEvent
	if err := json.Unmarshal(payload, &e); err != nil {
		return nil, err
	}
	ev := carried(e.GetAction(), e.GetRepo(), e.GetInstallation(), e.GetSender())
	ev.Issue = eventIssueOf(e.Issue)
	return ev, nil
}

func parseIssueComment(payload []byte) (*Event, error) {
	var e github.IssueCommentEvent
	if err := json.Unmarshal(payload, &e); err != nil {
		return nil, err
	}
	ev := carried(e.GetAction(), e.GetRepo(), e.GetInstallation(), e.GetSender())
	ev.Issue = eventIssueOf(e.Issue)
	if c := e.Comment; c != nil {
		ev.Comment = &IssueComment{ID: c.GetID(), Body: c.GetBody(), Author: userOf(c.User), AuthorType: c.GetUser().GetType()}
	}
	return ev, nil
}

func eventIssueOf(is *github.Issue) *EventIssue {
	if is == nil {
		return nil
	}
	out := &EventIssue{Number: is.GetNumber(), PullRequest: is.IsPullRequest()}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}

func parseCheckRun(payload []byte) (*Event, error) {
	var e github.CheckRunEvent
	if err := json.Unmarshal(payload, &e); err != nil {
		return nil, err
	}
	ev := carried(e.GetAction(), e.GetRepo(), e.GetInstallation(), e.GetSender())
	if cr := e.CheckRun; cr != nil {
		ev.CheckRun = &EventCheckRun{Name: cr.GetName(), HeadSHA: cr.GetHeadSHA()}
		for _, pr := range cr.PullRequests {
			ev.CheckRun.PullRequests = append(ev.CheckRun.PullRequests, pr.GetNumber())
		}
		if a := e.RequestedAction; a != nil {
			ev.CheckRun.RequestedAction = a.Identifier
		}
	}
	return ev, nil
}

func parseWorkflowRun(payload []byte) (*Event, error) {
	var e struct {
		github.WorkflowRunEvent
		// The run as the REST API's answers are read, its path included;
		// this field, not the embedded one, takes workflow_run.
		WorkflowRun *runWire `json:"workflow_run,omitempty"`
	}
	if err := json.Unmarshal(payload, &e); err != nil {
		return nil, err
	}
	ev := carried(e.GetAction(), e.GetRepo(), e.GetInstallation(), e.GetSender())
	if e.WorkflowRun != nil {
		r := workflowRun(e.WorkflowRun)
		ev.WorkflowRun = &r
	}
	return ev, nil
}

// parseCarrier reads an event that may carry a pull request: only what
// every such event has, so that no field of another event's shape fails
// it.
func parseCarrier(payload []byte) (*Event, error) {
	var e struct {
		Action       *string              `json:"action,omitempty"`
		PullRequest  *github.PullRequest  `json:"pull_request,omitempty"`
		Repo         *github.Repository   `json:"repository,omitempty"`
		Installation *github.Installation `json:"installation,omitempty"`
		Sender       *github.User         `json:"sender,omitempty"`
	}
	if err := json.Unmarshal(payload, &e); err != nil {
		return nil, err
	}
	ev := carried(ptr(e.Action), e.Repo, e.Installation, e.Sender)
	if e.PullRequest != nil {
		pr := pullRequestOf(e.PullRequest)
		ev.PullRequest = &pr
	}
	return ev, nil
}
