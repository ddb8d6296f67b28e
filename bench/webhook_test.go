package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// The webhook scenario: GitHub delivering a busy repository's events to the
// bot at a fixed rate while the merges among them apply on the cluster.
const (
	ackRate     = 200 // deliveries per second
	ackDuration = 10 * time.Second
	// ackMergeEvery is how many deliveries apart the merges are: one a
	// second, so that applies run throughout the load.
	ackMergeEvery = ackRate
	// ackTimeout is how long GitHub waits for a receiver's answer before
	// it counts the delivery as failed.
	ackTimeout = 10 * time.Second

	botAppID        = 4242
	botInstallation = 7
	botSecret       = "webhook-secret-for-bench"
	// botDeployments of botReplicas each make an apply wait for real pods
	// to roll out, as kwok makes them ready.
	botDeployments = 3
	botReplicas    = 2
)

// BenchmarkWebhookAck sends the bot 200 signed deliveries a second for
// 10 s, open loop (each on its schedule, whether or not earlier ones were
// answered), while a merge every second starts an apply of a stack whose
// Deployments must roll out. The time of a delivery is from sending it to
// reading its whole answer, client side. Target: p99 under 20 ms, none
// lost.
//
// Metric units: "p50-ms", "p99-ms", "max-ms" (answer times), "sent-req"
// (deliveries per load), "lost-req" (of those, a transport error or a
// non-2xx answer; a redelivery answered "duplicate" is 2xx), "applies"
// (applies the bot finished during the load, from its /metrics
// kusionpr_runs_total).
func BenchmarkWebhookAck(b *testing.B) {
	w := startBotWorld(b, "")
	client := &http.Client{
		// The client must never be what queues: every delivery due gets
		// a connection of its own if none is idle.
		Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		},
		Timeout: ackTimeout,
	}
	defer client.CloseIdleConnections()

	var latencies []time.Duration
	sent, lost, applies := 0, 0, 0.0
	for n := 0; b.Loop(); n++ {
		plan := w.planLoad(b, n)
		warmConnections(client, w.url)
		before := w.applyRuns(b, client)["success"]

		results, lag := sendOpenLoop(client, w.url+"/webhook", plan)

		applies += w.applyRuns(b, client)["success"] - before
		reasons := map[string]int{}
		for _, r := range results {
			sent++
			if r.lost != "" {
				lost++
				reasons[r.lost]++
			}
			if r.answered {
				latencies = append(latencies, r.took)
			}
		}
		if len(reasons) > 0 {
			b.Logf("lost deliveries by reason: %v", reasons)
		}
		if lag > 5*time.Millisecond {
			// Sending late would hide the server's slowness; say so.
			b.Logf("the generator sent up to %s behind its schedule", lag)
		}
		w.waitIdle(b, client)
	}
	runs := w.applyRuns(b, client)
	took, count := w.metricValue(b, client, `kusionpr_run_duration_seconds_sum{command="apply"}`), w.metricValue(b, client, `kusionpr_run_duration_seconds_count{command="apply"}`)
	if count > 0 {
		b.Logf("apply runs by result over the whole benchmark: %v; %.1f s each on average, waits for the stack included", runs, took/count)
	}
	if runs["failure"] > 0 {
		b.Errorf("%v applies failed; bot log:\n%s", runs["failure"], tail(w.logs.String(), 4000))
	}

	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	iterations := float64(b.N)
	b.ReportMetric(ms(percentile(latencies, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(latencies, 0.99)), "p99-ms")
	b.ReportMetric(ms(percentile(latencies, 1)), "max-ms")
	b.ReportMetric(float64(sent)/iterations, "sent-req")
	b.ReportMetric(float64(lost)/iterations, "lost-req")
	b.ReportMetric(applies/iterations, "applies")
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(float64(len(sorted))*p)) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// botWorld is the bot's surroundings as cmd/bot's tests build them: a fake
// GitHub with one repository holding one stack, the test cluster, a release
// bucket on MinIO, and the bot process.
type botWorld struct {
	gh          *githubfake.Server
	owner, repo string
	tree        string // the repository's files, rewritten for each merge
	ns          string
	url         string // the first bot's
	logs        *testenv.LogBuffer
	// env is every bot's environment; bots are the processes started.
	env  []string
	bots []*exec.Cmd
}

// startBotWorld starts a bot on the test environment; its releases go to
// store, or to a fresh bucket on MinIO when store is "".
func startBotWorld(b *testing.B, store string) *botWorld {
	b.Helper()
	kc := testenv.Kubeconfig(b)
	bin := binary(b, "../cmd/bot")
	w := &botWorld{gh: githubfake.New(b), owner: "Codertocat", repo: "Hello-World", tree: b.TempDir(),
		ns: "wh-" + suffix(), logs: &testenv.LogBuffer{}}
	bucket := store
	if bucket == "" {
		bucket = testenv.S3(b).NewBucket(b) // sets the S3 credentials in the environment
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatalf("generating the App key: %v", err)
	}
	w.gh.SetAppKey(botAppID, &key.PublicKey)
	keyPath := filepath.Join(b.TempDir(), "app.pem")
	writeFile(b, keyPath, string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	w.gh.AddInstallationRepo(botInstallation, w.owner, w.repo)
	writeFile(b, filepath.Join(w.tree, "apps/web/project.yaml"), "name: web\n")
	writeFile(b, filepath.Join(w.tree, "apps/web/dev/stack.yaml"), "name: dev\n")
	w.writeSpec(b, "v0")
	// Registered before the bot's own cleanup, so it runs after the bot
	// is stopped: nothing re-creates what is being deleted.
	b.Cleanup(func() {
		out, err := exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", w.ns, "--ignore-not-found", "--timeout=3m").CombinedOutput()
		if err != nil {
			b.Logf("deleting namespace %s: %v\n%s", w.ns, err, out)
		}
	})

	w.env = append(os.Environ(),
		"KUBECONFIG="+kc, "KUSIONPR_WEBHOOK_SECRET="+botSecret,
		fmt.Sprintf("KUSIONPR_APP_ID=%d", botAppID), "KUSIONPR_APP_PRIVATE_KEY_PATH="+keyPath,
		"KUSIONPR_GITHUB_API_URL="+w.gh.URL, "KUSIONPR_BACKEND="+bucket, "KUSIONPR_SHUTDOWN_TIMEOUT=30s")
	w.url = w.startBot(b, bin, w.logs)
	return w
}

// startBot starts one more bot process on the world's store and GitHub,
// logging to logs, and returns its address once it serves.
func (w *botWorld) startBot(b *testing.B, bin string, logs *testenv.LogBuffer) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatalf("finding a free port for the bot: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	url := "http://" + addr
	proc := exec.Command(bin)
	proc.Env = append(append([]string(nil), w.env...), "KUSIONPR_LISTEN="+addr)
	proc.Stderr = logs
	if err := proc.Start(); err != nil {
		b.Fatalf("starting the bot: %v", err)
	}
	w.bots = append(w.bots, proc)
	b.Cleanup(func() { proc.Process.Kill(); proc.Wait() })
	w.waitFor(b, "the bot to come up and finish its recovery pass", 90*time.Second, func() bool {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK && strings.Contains(logs.String(), "recovery queued")
	})
	return url
}

// writeSpec writes the stack: a namespace and Deployments whose pods carry
// version, so each new version rolls all of them out.
func (w *botWorld) writeSpec(b *testing.B, version string) {
	b.Helper()
	var spec strings.Builder
	fmt.Fprintf(&spec, `resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}
`, w.ns)
	for i := range botDeployments {
		fmt.Fprintf(&spec, `- id: apps/v1:Deployment:%[1]s:web-%[2]d
  type: Kubernetes
  dependsOn: [v1:Namespace:%[1]s]
  attributes:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web-%[2]d, namespace: %[1]s}
    spec:
      replicas: %[3]d
      selector: {matchLabels: {app: web-%[2]d}}
      template:
        metadata: {labels: {app: web-%[2]d}}
        spec:
          tolerations: [{operator: Exists}]
          containers: [{name: web, image: nginx, env: [{name: VERSION, value: %[4]q}]}]
`, w.ns, i, botReplicas, version)
	}
	writeFile(b, filepath.Join(w.tree, "apps/web/dev/spec.yaml"), spec.String())
}

// merge makes pull request number, changing the stack to version, merged
// as sha at the time given.
func (w *botWorld) merge(b *testing.B, number int, sha, version string, at time.Time) {
	b.Helper()
	w.writeSpec(b, version)
	w.gh.SetTree(w.owner, w.repo, sha, w.tree)
	w.gh.SetPullRequest(w.owner, w.repo, number, fmt.Sprintf("%040x", 0xbead0000+number), "master", false)
	w.gh.SetPullFiles(w.owner, w.repo, number, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
	w.gh.MergePullRequestAt(w.owner, w.repo, number, sha, at)
}

// payload is GitHub's published example of event and action, sent to the
// App's installation.
func (w *botWorld) payload(b *testing.B, event, action string) map[string]any {
	p := githubfake.Event(b, event, action)
	p["installation"] = map[string]any{"id": float64(botInstallation)}
	return p
}

// delivery is one request of the load, built before the clock starts.
type delivery struct {
	event, id string
	body      []byte
	signature string
}

func (w *botWorld) newDelivery(b *testing.B, event string, payload map[string]any) delivery {
	b.Helper()
	body, err := json.Marshal(payload)
	if err != nil {
		b.Fatalf("encoding a %s payload: %v", event, err)
	}
	mac := hmac.New(sha256.New, []byte(botSecret))
	mac.Write(body)
	return delivery{event: event, id: deliveryID(), body: body, signature: "sha256=" + hex.EncodeToString(mac.Sum(nil))}
}

// planLoad builds load n's deliveries, one per slot of the schedule: a
// merge each second, and around them what else a busy repository sends,
// which the bot acknowledges without work: comments that are no command,
// pull requests opened and pushed to, and redeliveries of earlier events
// under their first id.
func (w *botWorld) planLoad(b *testing.B, n int) []delivery {
	b.Helper()
	total := int(ackRate * ackDuration / time.Second)
	rng := mrand.New(mrand.NewPCG(uint64(n), 42))
	comment, opened, synchronize, closed := w.payload(b, "issue_comment", "created"), w.payload(b, "pull_request", "opened"),
		w.payload(b, "pull_request", "synchronize"), w.payload(b, "pull_request", "closed")
	remarks := []string{"Looks good to me.", "Could you rebase on master?", "LGTM, but see the kusion docs on workspaces.", "Why is the replica count 2 here?"}
	// Merges are stamped a second apart from now on, in the order they
	// are delivered, so each is newer than the one before it.
	mergedFrom := time.Now().Truncate(time.Second).Add(time.Second)
	plan := make([]delivery, 0, total)
	for i := range total {
		number := 1000 + 1000*n + i
		switch r := rng.IntN(100); {
		case i%ackMergeEvery == ackMergeEvery/2:
			k := i / ackMergeEvery
			sha := fmt.Sprintf("%040x", 0xfeed0000+number)
			at := mergedFrom.Add(time.Duration(k) * time.Second)
			w.merge(b, number, sha, fmt.Sprintf("load-%d-merge-%d", n, k), at)
			ev := deepCopy(b, closed)
			pr := ev["pull_request"].(map[string]any)
			pr["number"], pr["merged"], pr["merge_commit_sha"] = float64(number), true, sha
			pr["merged_at"] = at.UTC().Format(time.RFC3339)
			ev["number"] = float64(number)
			plan = append(plan, w.newDelivery(b, "pull_request", ev))
		case r < 20 && i >= ackRate:
			// GitHub redelivers under the first id, with the same body.
			plan = append(plan, plan[rng.IntN(i-ackRate+1)])
		case r < 60:
			ev := deepCopy(b, comment)
			issue := ev["issue"].(map[string]any)
			issue["number"] = float64(number % 97)
			issue["pull_request"] = map[string]any{"url": fmt.Sprintf("https://api.github.com/repos/%s/%s/pulls/%d", w.owner, w.repo, number%97)}
			c := ev["comment"].(map[string]any)
			c["id"], c["body"] = float64(number), remarks[rng.IntN(len(remarks))]
			plan = append(plan, w.newDelivery(b, "issue_comment", ev))
		case r < 85:
			ev := deepCopy(b, synchronize)
			ev["number"] = float64(number % 97)
			ev["after"] = fmt.Sprintf("%040x", number)
			plan = append(plan, w.newDelivery(b, "pull_request", ev))
		default:
			ev := deepCopy(b, opened)
			ev["number"] = float64(number)
			plan = append(plan, w.newDelivery(b, "pull_request", ev))
		}
	}
	return plan
}

// deepCopy copies a payload through JSON, so changing the copy leaves the
// example alone.
func deepCopy(b *testing.B, v map[string]any) map[string]any {
	b.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		b.Fatalf("copying a payload: %v", err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		b.Fatalf("copying a payload: %v", err)
	}
	return out
}

// deliveryID makes an id shaped like GitHub's X-GitHub-Delivery GUIDs.
func deliveryID() string {
	p := make([]byte, 16)
	_, _ = rand.Read(p)
	p[6] = p[6]&0x0f | 0x10
	p[8] = p[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", p[0:4], p[4:6], p[6:8], p[8:10], p[10:])
}

// warmConnections opens connections to the bot before the clock starts, so
// that the first second does not also time TCP handshakes that a sender
// keeping connections alive would not make.
func warmConnections(client *http.Client, url string) {
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			resp, err := client.Get(url + "/healthz")
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
}

// result is what became of one delivery.
type result struct {
	took     time.Duration
	answered bool   // the whole answer was read
	lost     string // why it counts as lost; "" if it does not
}

// sendOpenLoop sends plan[i] at i/ackRate seconds from now, each on its own
// goroutine, never waiting for answers; it returns every delivery's result
// and how far behind its schedule the generator fell at worst.
func sendOpenLoop(client *http.Client, url string, plan []delivery) ([]result, time.Duration) {
	results := make([]result, len(plan))
	interval := time.Second / ackRate
	start := time.Now().Add(20 * time.Millisecond)
	var lag time.Duration
	var wg sync.WaitGroup
	for i, d := range plan {
		due := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(due))
		lag = max(lag, time.Since(due))
		wg.Go(func() { results[i] = send(client, url, d) })
	}
	wg.Wait()
	return results, lag
}

func send(client *http.Client, url string, d delivery) result {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(d.body))
	if err != nil {
		return result{lost: "building the request: " + err.Error()}
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitHub-Hookshot/5a3e1c9")
	h.Set("X-GitHub-Event", d.event)
	h.Set("X-GitHub-Delivery", d.id)
	h.Set("X-GitHub-Hook-ID", "292430182")
	h.Set("X-Hub-Signature-256", d.signature)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return result{lost: "transport error"}
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	switch {
	case err != nil:
		return result{took: took, lost: "answer cut short"}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return result{took: took, answered: true, lost: "status " + strconv.Itoa(resp.StatusCode)}
	}
	return result{took: took, answered: true}
}

// applyRuns reads the bot's finished apply runs by result (success,
// skipped, failure) from its /metrics.
func (w *botWorld) applyRuns(b *testing.B, client *http.Client) map[string]float64 {
	b.Helper()
	runs := map[string]float64{}
	for _, line := range w.metrics(b, client) {
		name, value, ok := strings.Cut(line, " ")
		if !strings.HasPrefix(name, "kusionpr_runs_total{") || !strings.Contains(name, `command="apply"`) || !ok {
			continue
		}
		_, result, _ := strings.Cut(name, `result="`)
		result, _, _ = strings.Cut(result, `"`)
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			b.Fatalf("reading %q from the bot's /metrics: %v", line, err)
		}
		runs[result] += v
	}
	return runs
}

// metricValue is the value of the series named (with its labels) on the
// bot's /metrics, 0 if absent.
func (w *botWorld) metricValue(b *testing.B, client *http.Client, series string) float64 {
	b.Helper()
	for _, line := range w.metrics(b, client) {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				b.Fatalf("reading %q from the bot's /metrics: %v", line, err)
			}
			return f
		}
	}
	return 0
}

func (w *botWorld) metrics(b *testing.B, client *http.Client) []string {
	b.Helper()
	resp, err := client.Get(w.url + "/metrics")
	if err != nil {
		b.Fatalf("reading the bot's /metrics: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("reading the bot's /metrics: status %d, %v", resp.StatusCode, err)
	}
	return strings.Split(string(raw), "\n")
}

// waitIdle waits until the bot has no job queued or running, so that no
// apply is cut off by the next load or by the cleanup.
func (w *botWorld) waitIdle(b *testing.B, client *http.Client) {
	b.Helper()
	w.waitFor(b, "the applies to finish", 5*time.Minute, func() bool {
		return w.metricValue(b, client, "kusionpr_queue_depth") == 0
	})
}

func (w *botWorld) waitFor(b *testing.B, what string, limit time.Duration, cond func() bool) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			b.Fatalf("timed out after %s waiting for %s\nbot log:\n%s", limit, what, tail(w.logs.String(), 4000))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
