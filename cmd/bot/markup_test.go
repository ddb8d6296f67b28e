package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/mdcheck"
)

// hostile is markup a comment or a repository can hold: it closes a
// <details>, opens an HTML comment, mentions a team and loads a beacon
// image.
const hostile = "</details><!-- @org/team ![x](http://127.0.0.1/b)"

// replies are the bot's comments on number that are not a stack's report.
func (w *world) replies(number int) []githubfake.Comment {
	var out []githubfake.Comment
	for _, c := range w.gh.Comments(w.owner, w.repo, number) {
		if c.User == w.gh.AppLogin() && !strings.HasPrefix(c.Body, "<!-- kusionpr:") {
			out = append(out, c)
		}
	}
	return out
}

// TestRepliesShowArgumentsAsData: the bot's answers to commands whose
// arguments hold markup (a path out of the repository, HTML, mentions,
// images, a glob) and to a refusal naming a hostile check run render, as
// GitHub renders them, with nothing of the comment's or repository's as
// markup: the words are shown as code or left out, and no one but the
// commenter is mentioned. A glob names the folder of that name: it
// selects no stack.
func TestRepliesShowArgumentsAsData(t *testing.T) {
	w := newWorld(t)
	const number, head = 51, "5151515151515151515151515151515151515151"
	w.pullRequest(number, head)
	w.gh.SetPullRequestDetails(w.owner, w.repo, number, "author-dev", true)
	w.gh.SetMergeableState(w.owner, w.repo, number, "clean")
	w.gh.SetPermission(w.owner, w.repo, "writer", "write")
	w.gh.SetPermission(w.owner, w.repo, "reviewer", "write")
	w.gh.SetReviews(w.owner, w.repo, number, []githubfake.Review{{User: "reviewer", State: "APPROVED", CommitID: head}})
	w.gh.SetCheckRun(w.owner, w.repo, head, "ci: "+hostile, "failure")

	commands := []struct {
		body string
		// data is what of the argument the reply shows, as code.
		data []string
		// gone is what of the argument the reply must not hold at all.
		gone []string
	}{
		{body: "/kusion apply ../x", data: []string{"../x"}},
		{body: "/kusion frobnicate <img src=x>", gone: []string{"frobnicate", "img"}},
		{body: "/kusion frobnicate @org/team ![x](http://127.0.0.1/b)", data: []string{"frobnicate"}, gone: []string{"org/team", "127.0.0.1"}},
		{body: "/kusion preview apps/*", data: []string{"apps/*"}},
		{body: "/kusion preview apps/web/* @org/team", data: []string{"apps/web/*", "@org/team"}},
		{body: "/kusion unlock @org/team![x](http://127.0.0.1/b)", data: []string{"@org/team![x](http:/127.0.0.1/b)"}}, // cleaned as a path
		{body: "/kusion apply", data: []string{"ci: " + hostile}},
	}
	for i, c := range commands {
		githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "writer", c.body))
		w.waitFor(fmt.Sprintf("the reply to %q", c.body), func() bool { return len(w.replies(number)) == i+1 })
		reply := w.replies(number)[i].Body
		for _, p := range mdcheck.Check(reply, mdcheck.Want{Data: c.data, Mentions: []string{"writer"}}) {
			t.Errorf("reply to %q: %s\n%s", c.body, p, reply)
		}
		if testing.Verbose() {
			t.Logf("reply to %q:\n%s", c.body, reply)
		}
		for _, g := range c.gone {
			if strings.Contains(reply, g) {
				t.Errorf("reply to %q holds %q:\n%s", c.body, g, reply)
			}
		}
	}
	if all := w.replies(number); !strings.Contains(all[3].Body, "No stack is touched") || !strings.Contains(all[4].Body, "No stack is touched") {
		t.Errorf("a glob selected stacks: %q, %q", all[3].Body, all[4].Body)
	}
	for _, c := range w.gh.Comments(w.owner, w.repo, number) {
		if strings.HasPrefix(c.Body, "<!-- kusionpr:") {
			t.Errorf("a stack was previewed or applied: %.200s", c.Body)
		}
	}
}

// TestStrangersMarkerCommentsAreNotEdited: a stranger, and another bot,
// comment with the bot's hidden marker for the stack; /kusion preview twice
// makes and then edits the bot's own comment, found as the App's
// "<slug>[bot]" user, and never writes to theirs.
func TestStrangersMarkerCommentsAreNotEdited(t *testing.T) {
	w := newWorld(t)
	const number, head = 52, "5252525252525252525252525252525252525252"
	w.pullRequest(number, head)
	marker := "<!-- kusionpr:preview stack=apps/web/dev workspace=default -->\n"
	var strangers []int64
	for _, who := range []string{"mallory", "github-actions[bot]"} {
		strangers = append(strangers,
			w.gh.PostComment(w.owner, w.repo, number, who, marker+"planted").ID,
			w.gh.PostComment(w.owner, w.repo, number, who, "<!-- kusionpr:preview stack=apps/web/dev workspace=default part=2 -->\nplanted").ID,
			w.gh.PostComment(w.owner, w.repo, number, who, "<!-- kusionpr:preview stack=apps/gone workspace=default -->\nplanted").ID)
	}
	own := func() []githubfake.Comment {
		var out []githubfake.Comment
		for _, c := range w.gh.Comments(w.owner, w.repo, number) {
			if c.User == w.gh.AppLogin() && strings.HasPrefix(c.Body, marker) {
				out = append(out, c)
			}
		}
		return out
	}
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "someone", "/kusion preview"))
	w.waitFor("the bot's preview comment", func() bool { return len(own()) == 1 })
	first := own()[0]
	w.setConfigValue("changed")
	w.gh.SetTree(w.owner, w.repo, head, w.tree)
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "someone", "/kusion preview"))
	w.waitFor("the bot's comment edited", func() bool {
		o := own()
		return len(o) == 1 && o[0].ID == first.ID && strings.Contains(o[0].Body, "changed")
	})
	time.Sleep(500 * time.Millisecond) // the run's last calls (reactions)
	for _, call := range w.gh.Calls() {
		if call.Method != "PATCH" && call.Method != "DELETE" {
			continue
		}
		for _, id := range strangers {
			if strings.HasSuffix(call.Path, fmt.Sprintf("/issues/comments/%d", id)) {
				t.Errorf("%s %s: a stranger's comment was written to", call.Method, call.Path)
			}
		}
	}
	for _, c := range w.gh.Comments(w.owner, w.repo, number) {
		if c.User != w.gh.AppLogin() && !strings.HasSuffix(c.Body, "\nplanted") && !strings.HasPrefix(c.Body, "/kusion") {
			t.Errorf("%s's comment changed: %q", c.User, c.Body)
		}
	}
}

// TestHiddenCommandsAreIgnored: a command in code, a quote, a list, an
// HTML comment or a <details> is not a command: the delivery is answered
// "ignored" and nothing is asked of GitHub.
func TestHiddenCommandsAreIgnored(t *testing.T) {
	w := newWorld(t)
	const number, head = 53, "5353535353535353535353535353535353535353"
	w.pullRequest(number, head)
	w.gh.SetPermission(w.owner, w.repo, "writer", "write")
	before := len(w.gh.Calls())
	for _, body := range []string{
		"<!-- /kusion apply -->",
		"<!--\n/kusion apply\n-->",
		"LGTM <!--\n/kusion apply\n-->",
		"<details>\n\n/kusion apply\n\n</details>",
		"```\n/kusion apply\n```",
		"    /kusion apply",
		"> /kusion apply",
		"- /kusion apply",
		"/kusion apply\n---",
	} {
		ev := w.prComment(number, "writer", body) // posted in the fake's state, not through its API
		resp := githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", ev)
		if resp.Status != 200 || !strings.Contains(resp.Body, "ignored") {
			t.Errorf("%q: answered %d %s, want 200 ignored", body, resp.Status, resp.Body)
		}
	}
	time.Sleep(500 * time.Millisecond)
	if calls := w.gh.Calls(); len(calls) > before {
		t.Errorf("hidden commands made %d GitHub calls: %+v", len(calls)-before, calls[before:])
	}
}
