package bot

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/chatops"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/workflow"
)

const testSecret = "s3cr3t-for-tests"

type delivery struct {
	id, event, body string
	badSignature    bool
}

// deliver posts d to the bot's /webhook as GitHub does, signed with the
// webhook secret unless told otherwise, and returns the status.
func deliver(t *testing.T, h http.Handler, d delivery) int {
	t.Helper()
	mac := hmac.New(sha256.New, []byte(testSecret))
	mac.Write([]byte(d.body))
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	if d.badSignature {
		sig = "sha256=" + strings.Repeat("0", 64)
	}
	r := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewBufferString(d.body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-GitHub-Event", d.event)
	r.Header.Set("X-GitHub-Delivery", d.id)
	r.Header.Set("X-Hub-Signature-256", sig)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

func guid(n int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n) }

const repository = `"repository": {"id": 42, "name": "infra", "full_name": "octo/infra", "owner": {"login": "octo"}, "default_branch": "main"}, "installation": {"id": 5}`

func merged(base string) string {
	return `{"action": "closed", "number": 7, "pull_request": {"number": 7, "merged": true, "merge_commit_sha": "3333333333333333333333333333333333333333",
		"merged_by": {"login": "maintainer"}, "merged_at": "2026-11-25T10:00:00Z", "base": {"ref": "` + base + `"}}, "sender": {"login": "someone"}, ` + repository + `}`
}

// pressed is GitHub's check_run requested_action payload of a press of the
// button identifier on the check run name of pull request #7.
func pressed(name, identifier string) string {
	return `{"action": "requested_action", "check_run": {"name": "` + name + `", "head_sha": "` + headSHA + `",
		"pull_requests": [{"number": 7}]}, "requested_action": {"identifier": "` + identifier + `"}, "sender": {"login": "presser"}, ` + repository + `}`
}

// queued is GitHub's merge_group checks_requested payload of a group at head.
func queued(head string) string {
	return `{"action": "checks_requested", "merge_group": {"head_sha": "` + head + `", "base_sha": "7777777777777777777777777777777777777777",
		"head_ref": "refs/heads/gh-readonly-queue/main/pr-7-7777777777777777777777777777777777777777", "base_ref": "refs/heads/main"},
		"sender": {"login": "github-merge-queue[bot]"}, ` + repository + `}`
}

func commented(user, userType, body string, id int) string {
	return fmt.Sprintf(`{"action": "created", "issue": {"number": 7, "pull_request": {}}, "comment": {"id": %d, "body": %q, "user": {"login": %q, "type": %q}}, `+repository+`}`,
		id, body, user, userType)
}

// TestWebhookDispatch: which deliveries become work, and which are
// refused, ignored or taken for repeats, from GitHub's payload shapes, on
// a fake GitHub and no cluster.
func TestWebhookDispatch(t *testing.T) {
	for _, tc := range []struct {
		name       string
		deliveries []delivery
		allow      []string
		branches   []string // KUSIONPR_APPLY_BRANCHES
		approved   bool     // the pull request is approved: an apply before merge may run
		wantStatus []int
		wantWork   []string // "command@sha by actor"
	}{
		{name: "a merge into the default branch is applied, as whoever merged",
			deliveries: []delivery{{id: guid(1), event: "pull_request", body: merged("main")}},
			wantStatus: []int{http.StatusAccepted}, wantWork: []string{"apply@3333333333333333333333333333333333333333 by maintainer"}},
		{name: "the Apply button of a stack's check run is /kusion apply of that stack, from whoever pressed it",
			deliveries: []delivery{{id: guid(42), event: "check_run", body: pressed("kusion/preview: apps/web/dev", "apply")}},
			approved:   true, wantStatus: []int{http.StatusAccepted}, wantWork: []string{"apply@" + headSHA + " by presser"}},
		{name: "the Apply button of the overview is /kusion apply of every stack",
			deliveries: []delivery{{id: guid(43), event: "check_run", body: pressed("kusion/preview", "apply")}},
			approved:   true, wantStatus: []int{http.StatusAccepted}, wantWork: []string{"apply@" + headSHA + " by presser"}},
		{name: "another button, or another check run, is no command",
			deliveries: []delivery{{id: guid(44), event: "check_run", body: pressed("kusion/preview: apps/web/dev", "destroy")},
				{id: guid(45), event: "check_run", body: pressed("ci/build", "apply")}},
			wantStatus: []int{http.StatusOK, http.StatusOK}},
		{name: "a merge queue's group is previewed at its own commit",
			deliveries: []delivery{{id: guid(40), event: "merge_group", body: queued("6666666666666666666666666666666666666666")}},
			wantStatus: []int{http.StatusAccepted}, wantWork: []string{"preview@6666666666666666666666666666666666666666 by github-merge-queue[bot]"}},
		{name: "a merge group naming no commit is refused",
			deliveries: []delivery{{id: guid(41), event: "merge_group", body: queued("main")}},
			wantStatus: []int{http.StatusBadRequest}},
		{name: "a merge into another branch is no release",
			deliveries: []delivery{{id: guid(2), event: "pull_request", body: merged("release-1")}},
			wantStatus: []int{http.StatusOK}},
		{name: "a merge into a branch the operator names applies", branches: []string{"@default", "release-*"},
			deliveries: []delivery{{id: guid(13), event: "pull_request", body: merged("release-1")}},
			wantStatus: []int{http.StatusAccepted}, wantWork: []string{"apply@3333333333333333333333333333333333333333 by maintainer"}},
		{name: "then the default branch's, named @default, applies too", branches: []string{"@default", "release-*"},
			deliveries: []delivery{{id: guid(14), event: "pull_request", body: merged("main")}},
			wantStatus: []int{http.StatusAccepted}, wantWork: []string{"apply@3333333333333333333333333333333333333333 by maintainer"}},
		{name: "and the default branch's no more once the operator names others", branches: []string{"release-*"},
			deliveries: []delivery{{id: guid(15), event: "pull_request", body: merged("main")}},
			wantStatus: []int{http.StatusOK}},
		{name: "a command in a comment is run at the head",
			deliveries: []delivery{{id: guid(3), event: "issue_comment", body: commented("dev", "User", "/kusion preview", 100)}},
			wantStatus: []int{http.StatusAccepted}, wantWork: []string{"preview@" + headSHA + " by dev"}},
		{name: "a comment without a command, or a bot's, does nothing",
			deliveries: []delivery{
				{id: guid(4), event: "issue_comment", body: commented("dev", "User", "looks good", 101)},
				{id: guid(5), event: "issue_comment", body: commented("other[bot]", "Bot", "/kusion apply", 102)},
			},
			wantStatus: []int{http.StatusOK, http.StatusOK}},
		{name: "a delivery or a comment delivered twice runs once",
			deliveries: []delivery{
				{id: guid(6), event: "issue_comment", body: commented("dev", "User", "/kusion preview", 103)},
				{id: guid(6), event: "issue_comment", body: commented("dev", "User", "/kusion preview", 103)},
				{id: guid(7), event: "issue_comment", body: commented("dev", "User", "/kusion preview", 103)},
			},
			wantStatus: []int{http.StatusAccepted, http.StatusOK, http.StatusOK}, wantWork: []string{"preview@" + headSHA + " by dev"}},
		{name: "a forged delivery is refused",
			deliveries: []delivery{{id: guid(8), event: "pull_request", body: merged("main"), badSignature: true}},
			wantStatus: []int{http.StatusUnauthorized}},
		{name: "a malformed payload is refused",
			deliveries: []delivery{{id: guid(9), event: "pull_request", body: `{"action": "closed", "pull_request": 7}`}},
			wantStatus: []int{http.StatusBadRequest}},
		{name: "a malformed comment, press or group is refused",
			deliveries: []delivery{
				{id: guid(16), event: "issue_comment", body: `{"action": "created", "issue": {"number": 7, "pull_request": {}}, "comment": {"id": "103"}, ` + repository + `}`},
				{id: guid(17), event: "check_run", body: `{"action": "requested_action", "check_run": {"pull_requests": 7}, ` + repository + `}`},
				{id: guid(18), event: "merge_group", body: `{"action": "destroyed", "reason": 1, ` + repository + `}`},
			},
			wantStatus: []int{http.StatusBadRequest, http.StatusBadRequest, http.StatusBadRequest}},
		{name: "a payload without installation is refused",
			deliveries: []delivery{{id: guid(19), event: "issue_comment", body: `{"action": "created", "repository": {"full_name": "octo/infra"}}`}},
			wantStatus: []int{http.StatusBadRequest}},
		{name: "a comment on an issue that is no drift issue does nothing",
			deliveries: []delivery{{id: guid(20), event: "issue_comment", body: `{"action": "created", "issue": {"number": 7, "labels": [{"name": "bug"}]},
				"comment": {"id": 104, "body": "/kusion apply", "user": {"login": "dev", "type": "User"}}, ` + repository + `}`}},
			wantStatus: []int{http.StatusOK}},
		{name: "a merge group destroyed while none waits is ignored",
			deliveries: []delivery{{id: guid(21), event: "merge_group", body: `{"action": "destroyed", "reason": "dequeued", "merge_group": {"head_sha": "6666666666666666666666666666666666666666"}, ` + repository + `}`}},
			wantStatus: []int{http.StatusOK}},
		{name: "a repository not allowed is ignored", allow: []string{"octo/other"},
			deliveries: []delivery{{id: guid(10), event: "pull_request", body: merged("main")}},
			wantStatus: []int{http.StatusOK}},
		{name: "news of a workflow run queues no work, with or without a run followed",
			deliveries: []delivery{{id: guid(12), event: "workflow_run", body: `{"action": "completed", "workflow_run": {"id": 30433642, "name": "kusion apply apps/web [apply-0123456789abcdef01234567]"}, ` + repository + `}`}},
			wantStatus: []int{http.StatusOK}},
		{name: "events the bot does not handle are ignored",
			deliveries: []delivery{{id: guid(11), event: "push", body: `{"ref": "refs/heads/main", ` + repository + `}`}},
			wantStatus: []int{http.StatusOK}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := &fakeGitHub{permission: "write", prs: []githubapi.PullRequestDetail{open()}}
			if tc.approved {
				gh.approvals = []githubapi.Approval{{User: "reviewer", CommitID: headSHA}}
			}
			work := &fakeWork{out: &workflow.Outcome{}}
			b := testBot(t, gh, work)
			b.cfg.AllowRepos, b.cfg.ApplyBranches = tc.allow, tc.branches
			h := b.Handler()
			for i, d := range tc.deliveries {
				if got := deliver(t, h, d); got != tc.wantStatus[i] {
					t.Errorf("delivery %d answered %d, want %d", i+1, got, tc.wantStatus[i])
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := b.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			var did []string
			for _, c := range work.changes {
				did = append(did, fmt.Sprintf("%s@%s by %s", c.Command, c.SHA, c.Request.Origin.Actor))
			}
			if strings.Join(did, "; ") != strings.Join(tc.wantWork, "; ") {
				t.Errorf("work done: %q, want %q", did, tc.wantWork)
			}
		})
	}
}

// TestCommandNames: the origin a release records names the command as
// it was asked.
func TestCommandNames(t *testing.T) {
	for _, tc := range []struct {
		j    job
		want string
	}{
		{job{afterMerge: true, command: chatops.Command{Verb: chatops.Apply}}, "merge"},
		{job{command: chatops.Command{Verb: chatops.Apply, Stacks: []string{"apps/web"}}}, "/kusion apply"},
	} {
		if got := commandName(tc.j); !strings.Contains(got, tc.want) {
			t.Errorf("commandName(%+v) = %q, want it to name %q", tc.j, got, tc.want)
		}
	}
}
