package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// stall opens n connections to the bot's webhook, each a request with
// GitHub's headers and a well-formed signature made with a guessed
// secret, announcing a body of 1 MiB and sending its first sent bytes, then
// nothing: held open until the bot cuts it off, or the test calls hangUp.
func stall(t *testing.T, url string, n, sent int) (hangUp func()) {
	t.Helper()
	body := bytes.Repeat([]byte{' '}, 1<<20)
	copy(body, `{"zen":"`)
	sig := signature("a-guessed-secret", body)
	host := strings.TrimPrefix(url, "http://")
	var conns []net.Conn
	hangUp = func() {
		for _, c := range conns {
			c.Close()
		}
	}
	t.Cleanup(hangUp)
	for i := range n {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
		head := fmt.Sprintf("POST /webhook HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nUser-Agent: GitHub-Hookshot/5a3e1c9\r\n"+
			"X-GitHub-Event: issue_comment\r\nX-GitHub-Delivery: %08x-cc78-11e3-81ab-4c9367dc0958\r\nX-Hub-Signature-256: %s\r\nContent-Length: %d\r\n\r\n",
			host, i, sig, len(body))
		// The bot reads as its budget allows: the writes may wait.
		go conn.Write(append([]byte(head), body[:sent]...))
	}
	return hangUp
}

// metric is the value of a series without labels in the bot's /metrics.
func metric(t *testing.T, b *botProc, name string) float64 {
	t.Helper()
	resp, err := http.Get(b.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s %q: %v", name, v, err)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return 0
}

func unverifiedBytes(t *testing.T, b *botProc) int64 {
	return int64(metric(t, b, "kusionpr_webhook_unverified_bytes"))
}

// redeliveriesAsked counts, by delivery id, the redeliveries the bots
// asked the fake for since call number since.
func (w *world) redeliveriesAsked(since int) map[string]int {
	guids := map[int64]string{}
	for _, d := range w.gh.HookDeliveries() {
		guids[d.ID] = d.GUID
	}
	asked := map[string]int{}
	for _, c := range w.gh.Calls()[since:] {
		if c.Operation != "apps/redeliver-webhook-delivery" {
			continue
		}
		id, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(c.Path, "/app/hook/deliveries/"), "/attempts"), 10, 64)
		asked[guids[id]]++
	}
	return asked
}

// failedFirstAttempts are the delivery ids whose first attempt GitHub
// logged as failed.
func (w *world) failedFirstAttempts() map[string]bool {
	failed := map[string]bool{}
	for _, d := range w.gh.HookDeliveries() {
		if !d.Redelivery && (d.StatusCode < 200 || d.StatusCode > 299) {
			failed[d.GUID] = true
		}
	}
	return failed
}

// TestStalledBodiesLoseNoDelivery: strangers who hold the webhook open
// with bodies that never end delay GitHub's deliveries, and lose none. 80
// bodies announcing 1 MiB and sending nothing (as reported: they held the
// whole budget) leave a /kusion preview room at once; 80 that send all
// but their last byte fill the budget (set to exactly what they hold) and
// GitHub's delivery of a merge is refused, but the bot cuts them off at
// their deadline and asks GitHub for that delivery again: the merge is
// applied within a minute, with no restart, in bounded memory, and what
// was asked for again is that delivery and nothing else.
func TestStalledBodiesLoseNoDelivery(t *testing.T) {
	w := newWorld(t, withEnv(fmt.Sprintf("KUSIONPR_MAX_UNVERIFIED_BYTES=%d", 80<<20)))
	bot := w.bots[0]
	w.gh.SetWebhook(w.url+"/webhook", secret)
	calls := len(w.gh.Calls())
	began := time.Now()

	const previewPR, head1 = 71, "7171717171717171717171717171717171717171"
	w.pullRequest(previewPR, head1)
	hangUp := stall(t, w.url, 80, 0)
	// What a body holds before its first bytes come: one first chunk.
	w.waitFor("the 80 empty bodies to reach the bot", func() bool { return unverifiedBytes(t, bot) == 80*4<<10 })
	if d := w.gh.Deliver(t, "issue_comment", w.prComment(previewPR, "someone", "/kusion preview")); d.Status != http.StatusAccepted {
		t.Errorf("a /kusion preview beside 80 bodies that send nothing: answered %d %s %v, want it taken at once", d.Status, d.Body, d.Err)
	}
	hangUp()
	w.waitFor("the bodies to be given up", func() bool { return unverifiedBytes(t, bot) == 0 })
	w.waitFor("the preview", func() bool { return w.commentsContaining(previewPR, "Preview of stack") == 1 })

	const mergePR, head2, merge = 72, "7272727272727272727272727272727272727272", "7373737373737373737373737373737373737373"
	w.pullRequest(mergePR, head2)
	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, mergePR, merge)
	stall(t, w.url, 80, 1<<20-1)
	w.waitFor("the 80 nearly whole bodies to fill the budget", func() bool { return unverifiedBytes(t, bot) == 80<<20 })
	sent := time.Now()
	first := w.gh.Deliver(t, "pull_request", w.mergeEvent(mergePR, merge))
	t.Logf("GitHub's delivery of the merge while the budget was full: answered %d %s", first.Status, strings.TrimSpace(first.Body))

	for w.commentsContaining(mergePR, "Applied stack") != 1 {
		if time.Since(sent) > time.Minute {
			t.Fatalf("the merge was not applied within a minute of its delivery\nthe delivery log: %+v\nbot logs:\n%s", w.gh.HookDeliveries(), w.logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the merge was applied %s after its delivery", time.Since(sent).Round(time.Second))
	rel, err := w.store().Latest(context.Background(), "web", "default")
	if err != nil || rel == nil || rel.Phase != model.PhaseSucceeded || rel.Origin == nil || rel.Origin.PullRequest != mergePR {
		t.Errorf("the latest release %+v (%v), want the merge's apply, succeeded", rel, err)
	}

	if peak := peakMemory(t, bot.proc.Process.Pid); peak > maxMemory {
		t.Errorf("the bot's peak resident memory reached %d MiB, over %d MiB", peak>>20, maxMemory>>20)
	}
	asked, failed := w.redeliveriesAsked(calls), w.failedFirstAttempts()
	if strings.Join(slices.Sorted(maps.Keys(asked)), ",") != strings.Join(slices.Sorted(maps.Keys(failed)), ",") {
		t.Errorf("redeliveries were asked for %v, want exactly the deliveries that failed: %v", asked, slices.Sorted(maps.Keys(failed)))
	}
	for guid, n := range asked {
		if n != 1 {
			t.Errorf("delivery %s was asked for %d times, want once", guid, n)
		}
	}
	if n := metric(t, bot, "kusionpr_webhook_redeliveries_total"); int(n) != len(asked) {
		t.Errorf("/metrics counts %v redeliveries asked for, want %d", n, len(asked))
	}
	// 160 refusals (the strangers' 408s, GitHub's 503) make passes at
	// most every 30 s.
	lists := 0
	for _, c := range w.gh.Calls()[calls:] {
		if c.Operation == "apps/list-webhook-deliveries" {
			lists++
		}
	}
	if most := 1 + int(time.Since(began)/(30*time.Second)); lists > most {
		t.Errorf("the bot read its delivery log %d times in %s, want at most %d", lists, time.Since(began).Round(time.Second), most)
	}
}

// balancer is a load balancer in front of the bots, as a Kubernetes
// Service is: 502 while no bot is behind it; it holds what comes until
// opened, then sends a delivery id's first coming to the first bot, its
// second to the second, so that a delivery asked for twice reaches two
// replicas.
type balancer struct {
	bots []string
	open chan struct{}
	mu   sync.Mutex
	seen map[string]int
}

func (lb *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(lb.bots) == 0 {
		http.Error(w, "no endpoints available", http.StatusBadGateway)
		return
	}
	select {
	case <-lb.open:
	case <-r.Context().Done():
		return
	}
	lb.mu.Lock()
	id := r.Header.Get("X-GitHub-Delivery")
	to := lb.bots[lb.seen[id]%len(lb.bots)]
	lb.seen[id]++
	lb.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, to+r.URL.Path, bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// TestDeliveriesMissedWhileDownAreRedelivered: deliveries GitHub made
// while no bot was up (a /kusion preview, a merge) are asked for again by
// the replicas that come up, and done once although both replicas asked
// and each got one of GitHub's two redeliveries; an event the bot does not
// act on is not asked for.
func TestDeliveriesMissedWhileDownAreRedelivered(t *testing.T) {
	w := newWorld(t)
	lb := &balancer{open: make(chan struct{}), seen: map[string]int{}}
	front := httptest.NewServer(lb)
	defer front.Close()
	w.gh.SetWebhook(front.URL+"/webhook", secret)
	w.bots[0].proc.Process.Kill()
	w.bots[0].proc.Wait()
	calls := len(w.gh.Calls())

	const previewPR, head1 = 81, "8181818181818181818181818181818181818181"
	const mergePR, head2, merge = 82, "8282828282828282828282828282828282828282", "8383838383838383838383838383838383838383"
	w.pullRequest(previewPR, head1)
	w.pullRequest(mergePR, head2)
	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, mergePR, merge)
	for _, d := range []githubfake.Delivered{
		w.gh.Deliver(t, "issue_comment", w.prComment(previewPR, "someone", "/kusion preview")),
		w.gh.Deliver(t, "pull_request", w.mergeEvent(mergePR, merge)),
		w.gh.Deliver(t, "star", githubfake.Event(t, "star", "created")),
	} {
		if d.Status != http.StatusBadGateway {
			t.Fatalf("a delivery with no bot up: %d %s", d.Status, d.Body)
		}
	}
	var want []string // the missed deliveries the bot acts on
	for _, d := range w.gh.HookDeliveries() {
		if d.Event != "star" {
			want = append(want, d.GUID)
		}
	}
	sort.Strings(want)

	// Both replicas' passes at start ask for the two missed deliveries
	// while GitHub's redeliveries are held at the balancer.
	a, b := testenv.FreeAddr(t), testenv.FreeAddr(t)
	lb.bots = []string{"http://" + a, "http://" + b}
	w.startAt(a)
	w.startAt(b)
	close(lb.open)

	w.waitFor("a replica to find the preview taken by the other", func() bool {
		return strings.Contains(w.logs(), "the command was taken before")
	})
	w.waitFor("the merge's apply", func() bool { return w.commentsContaining(mergePR, "Applied stack") == 1 })
	w.waitFor("GitHub's four redeliveries, and every job they and the recovery passes queued, to end", func() bool {
		redelivered := 0
		for _, d := range w.gh.HookDeliveries() {
			if d.Redelivery {
				redelivered++
			}
		}
		return redelivered == 4 && metric(t, w.bots[1], "kusionpr_queue_depth") == 0 && metric(t, w.bots[2], "kusionpr_queue_depth") == 0
	})
	if revs, err := w.store().Revisions(context.Background(), "web", "default"); err != nil || len(revs) != 1 {
		t.Errorf("releases %v (%v), want the merge's one", revs, err)
	}
	if n := w.commentsContaining(previewPR, "Preview of stack"); n != 1 {
		t.Errorf("%d previews, want 1", n)
	}
	if n := w.commentsContaining(mergePR, "Applied stack"); n != 1 {
		t.Errorf("%d apply reports, want 1", n)
	}

	asked := w.redeliveriesAsked(calls)
	if strings.Join(slices.Sorted(maps.Keys(asked)), ",") != strings.Join(want, ",") {
		t.Errorf("redeliveries were asked for %v, want the preview's and the merge's, %v", asked, want)
	}
	for guid, n := range asked {
		if n != 2 {
			t.Errorf("delivery %s was asked for %d times, want by each replica once", guid, n)
		}
	}
}
