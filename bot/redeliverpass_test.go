package bot

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/workflow"
)

// TestRedeliverPass: a command delivered while no bot listened is lost
// unless the bot asks GitHub for it again: the pass reads the App's
// delivery log, asks for the failed delivery of an event it acts on (not
// for one of an event it ignores), and the delivery GitHub then sends is
// taken and run. A second pass asks for nothing: the delivery succeeded.
func TestRedeliverPass(t *testing.T) {
	gh := githubfake.New(t)
	work := &fakeWork{out: &workflow.Outcome{}}
	b, _ := appBot(t, gh, work, func(c *Config) { c.RecoverWindow, c.RedeliverInterval = time.Hour, time.Minute })
	pullRequestWorld{mergeableState: "clean"}.set(t, gh)

	// No bot listens where the webhook points.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + "/webhook"
	ln.Close()
	gh.SetWebhook(down, testSecret)
	c := gh.PostComment(owner, name, 7, "dev", "/kusion preview")
	p := payload(t, "issue_comment", "created")
	p["issue"].(map[string]any)["number"] = 7
	p["issue"].(map[string]any)["pull_request"] = map[string]any{"url": gh.URL + "repos/octo/infra/pulls/7"}
	cm := p["comment"].(map[string]any)
	cm["id"], cm["body"], cm["user"] = c.ID, "/kusion preview", map[string]any{"login": "dev", "type": "User"}
	if d := gh.Deliver(t, "issue_comment", p); d.Status != 0 {
		t.Fatalf("a delivery to no one answered %d", d.Status)
	}
	gh.Deliver(t, "star", payload(t, "star", "created"))

	listen(t, gh, b)
	asked, more, err := b.Redeliver(t.Context())
	if err != nil || asked != 1 || more {
		t.Fatalf("the pass asked for %d (more %v), %v; want the comment's delivery", asked, more, err)
	}
	// GitHub delivers again on its own time.
	deadline := time.Now().Add(10 * time.Second)
	for len(gh.HookDeliveries()) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("no redelivery came: %+v", gh.HookDeliveries())
		}
		time.Sleep(20 * time.Millisecond)
	}
	log := gh.HookDeliveries()
	if again := log[2]; !again.Redelivery || again.GUID != log[0].GUID || again.StatusCode != 202 {
		t.Errorf("the redelivery: %+v, want the comment's delivery again, taken", again)
	}
	if asked, _, err := b.Redeliver(t.Context()); err != nil || asked != 0 {
		t.Errorf("a second pass asked for %d, %v", asked, err)
	}
	drain(t, b)
	if got := changes(work); !slices.Equal(got, []string{"preview@" + prHead + " by dev"}) {
		t.Errorf("work %q, want the redelivered command's preview", got)
	}

	// A bot without redelivery passes asks for nothing.
	b.cfg.RedeliverInterval = 0
	if asked, _, err := b.Redeliver(t.Context()); err != nil || asked != 0 {
		t.Errorf("redelivery off: asked for %d, %v", asked, err)
	}
}
