package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

const (
	appID          = 4242
	installationID = 7
	secret         = "webhook-secret-for-tests"
)

func botBinary(t *testing.T) string {
	t.Helper()
	return testenv.Binary(t, ".")
}

// world is a GitHub (fake), a repository with one stack, a test cluster and
// a release bucket on MinIO, and bot processes serving webhooks.
type world struct {
	t           *testing.T
	gh          *githubfake.Server
	owner, repo string
	tree        string
	ns          string
	backend     string
	url         string // the first bot's
	env         []string
	bots        []*botProc
	// runInputs are more inputs of the workflow runs' kusion step, as the
	// operator's workflow would set them (lease: 5s).
	runInputs []string
}

// botProc is one bot process.
type botProc struct {
	url  string
	proc *exec.Cmd
	logs *testenv.LogBuffer
}

// worldOption changes the world before the first bot starts.
type worldOption func(*world)

// withEnv adds environment variables of the bots.
func withEnv(kv ...string) worldOption { return func(w *world) { w.env = append(w.env, kv...) } }

// withBackend puts the bots' releases in the store at u in place of the
// world's S3 bucket.
func withBackend(u string) worldOption {
	return func(w *world) {
		w.backend = u
		w.env = append(w.env, "KUSIONPR_BACKEND="+u)
	}
}

// withResources adds resources (YAML list items, %[1]s the namespace) to the stack.
func withResources(yaml string) worldOption {
	return func(w *world) {
		f, err := os.OpenFile(filepath.Join(w.tree, "apps/web/dev/spec.yaml"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			w.t.Fatal(err)
		}
		defer f.Close()
		fmt.Fprintf(f, yaml, w.ns)
	}
}

func newWorld(t *testing.T, opts ...worldOption) *world {
	kc := testenv.Kubeconfig(t)
	w := &world{t: t, gh: githubfake.New(t), owner: "Codertocat", repo: "Hello-World", tree: t.TempDir(),
		ns: fmt.Sprintf("bot-%06x", mrand.IntN(1<<24))}
	w.backend = testenv.S3(t).NewBucket(t) // sets the S3 credentials in the environment
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	w.gh.SetAppKey(appID, &key.PublicKey)
	keyPath := filepath.Join(t.TempDir(), "app.pem")
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
	w.gh.AddInstallationRepo(installationID, w.owner, w.repo)
	w.gh.SetRepositoryID(w.owner, w.repo, int64(w.payload("pull_request", "closed")["repository"].(map[string]any)["id"].(float64)))

	os.MkdirAll(filepath.Join(w.tree, "apps/web/dev"), 0o755)
	os.WriteFile(filepath.Join(w.tree, "apps/web/project.yaml"), []byte("name: web\n"), 0o644)
	os.WriteFile(filepath.Join(w.tree, "apps/web/dev/stack.yaml"), []byte("name: dev\n"), 0o644)
	w.setConfigValue("bot")
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", w.ns, "--ignore-not-found", "--wait=false").Run()
	})
	w.env = append(os.Environ(),
		"KUBECONFIG="+kc, "KUSIONPR_WEBHOOK_SECRET="+secret,
		fmt.Sprintf("KUSIONPR_APP_ID=%d", appID), "KUSIONPR_APP_PRIVATE_KEY_PATH="+keyPath,
		"KUSIONPR_GITHUB_API_URL="+w.gh.URL, "KUSIONPR_BACKEND="+w.backend, "KUSIONPR_SHUTDOWN_TIMEOUT=30s")
	for _, o := range opts {
		o(w)
	}
	w.url = w.start().url
	return w
}

// setConfigValue writes the stack's spec with the ConfigMap's data.from
// set to v (any resources withResources added are dropped).
func (w *world) setConfigValue(v string) {
	w.t.Helper()
	err := os.WriteFile(filepath.Join(w.tree, "apps/web/dev/spec.yaml"), []byte(fmt.Sprintf(`resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}
- id: v1:ConfigMap:%[1]s:settings
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: %[1]s}, data: {from: %[2]q}}
`, w.ns, v)), 0o644)
	if err != nil {
		w.t.Fatal(err)
	}
}

// start starts a bot process and waits until it serves and its recovery
// pass is done.
func (w *world) start() *botProc {
	w.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		w.t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return w.startAt(addr)
}

// startAt starts a bot process listening at addr, as start does.
func (w *world) startAt(addr string) *botProc {
	w.t.Helper()
	b := &botProc{url: "http://" + addr, logs: &testenv.LogBuffer{}}
	b.proc = exec.Command(botBinary(w.t))
	b.proc.Env = append(append([]string(nil), w.env...), "KUSIONPR_LISTEN="+addr)
	b.proc.Stderr = b.logs
	if err := b.proc.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.bots = append(w.bots, b)
	w.t.Cleanup(func() { b.proc.Process.Kill(); b.proc.Wait() })
	w.waitFor("the bot to come up and finish its recovery pass", func() bool {
		resp, err := http.Get(b.url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200 && strings.Contains(b.logs.String(), "recovery queued")
	})
	return b
}

// logs is every bot's log.
func (w *world) logs() string {
	var out strings.Builder
	for i, b := range w.bots {
		fmt.Fprintf(&out, "--- bot %d ---\n%s", i, b.logs.String())
	}
	return out.String()
}

// pullRequest sets up PR number touching the stack, at head.
func (w *world) pullRequest(number int, head string) {
	w.gh.SetTree(w.owner, w.repo, head, w.tree)
	w.gh.SetPullRequest(w.owner, w.repo, number, head, "master", false)
	w.gh.SetPullFiles(w.owner, w.repo, number, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
}

func (w *world) payload(event, action string) map[string]any {
	p := githubfake.Event(w.t, event, action)
	p["installation"] = map[string]any{"id": float64(installationID)}
	return p
}

// waitFor polls until cond holds.
func (w *world) waitFor(what string, cond func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out waiting for %s\nbot logs:\n%s", what, w.logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mergeApplied merges pull request number as the commit merge (the
// world's tree), delivers the merge and waits for its apply's comment,
// which must report release 1 succeeded.
func (w *world) mergeApplied(number int, merge string) {
	w.t.Helper()
	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)
	if d := githubfake.Deliver(w.t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge)); d.Status != http.StatusAccepted {
		w.t.Fatalf("merge delivery answered %d: %s", d.Status, d.Body)
	}
	w.waitFor("the apply's comment", func() bool { return w.commentsContaining(number, "Applied stack") == 1 })
	if w.commentsContaining(number, "release 1 succeeded") != 1 {
		w.t.Fatalf("the apply did not succeed: %+v\nlogs:\n%s", w.gh.Comments(w.owner, w.repo, number), w.logs())
	}
}

func (w *world) commentsContaining(number int, s string) int {
	n := 0
	for _, c := range w.gh.Comments(w.owner, w.repo, number) {
		if strings.Contains(c.Body, s) {
			n++
		}
	}
	return n
}

func TestMergeApplies(t *testing.T) {
	w := newWorld(t)
	const number, head, merge = 21, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	w.pullRequest(number, head)
	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)

	delivered := githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge))
	if delivered.Status != http.StatusAccepted {
		t.Fatalf("merge delivery answered %d: %s", delivered.Status, delivered.Body)
	}
	w.waitFor("the apply's comment", func() bool { return w.commentsContaining(number, "Applied stack") == 1 })
	if w.commentsContaining(number, "release 1 succeeded") != 1 {
		t.Errorf("comment: %+v", w.gh.Comments(w.owner, w.repo, number))
	}
	s, err := backend.Open(context.Background(), w.backend)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rel, err := s.Latest(context.Background(), "web", "default")
	if err != nil || rel == nil {
		t.Fatalf("no release in the bucket: %v", err)
	}
	if rel.Origin == nil || rel.Origin.PullRequest != number || rel.Origin.SHA != merge || rel.Origin.Actor == "" {
		t.Errorf("release origin %+v, want PR %d at %s with the user who merged", rel.Origin, number, merge)
	}
	// The apply is a deployment of the merge, linking its comment.
	deps := w.gh.Deployments(w.owner, w.repo)
	if len(deps) != 1 || deps[0].Environment != "kusion/web/default" || deps[0].Ref != merge {
		t.Fatalf("deployments %+v, want one of the merge to kusion/web/default", deps)
	}
	var states []string
	for _, s := range deps[0].Statuses {
		states = append(states, s.State)
	}
	if last := deps[0].Statuses[len(deps[0].Statuses)-1]; strings.Join(states, " ") != "in_progress success" ||
		!strings.Contains(last.Description, "release 1: 2 created") || !strings.Contains(last.LogURL, "issuecomment") {
		t.Errorf("the deployment's statuses: %+v", deps[0].Statuses)
	}

	// The run's token reached the one repository only.
	scoped := 0
	for _, c := range w.gh.Calls() {
		if c.Operation == "apps/create-installation-access-token" && strings.Contains(string(c.Body), `"repositories":["Hello-World"]`) {
			scoped++
		}
	}
	if scoped != 1 {
		t.Errorf("%d tokens for Hello-World alone were made, want 1 (shared by the run's requests)", scoped)
	}

	b := w.metrics()
	for _, want := range []string{
		`kusionpr_webhooks_total{event="pull_request",outcome="accepted"} 1`,
		`kusionpr_runs_total{command="apply",result="success",stack="apps/web/dev"} 1`,
		`kusionpr_run_duration_seconds_count{command="apply"} 1`,
		`kusionpr_github_api_calls_total{code="201"}`,
		`kusionpr_github_rate_limit_remaining 4999`,
		`kusionpr_queue_depth 0`,
		`kusionpr_executor_dispatched_total{executor="in-process"} 1`,
		`kusionpr_executor_results_total{executor="in-process",result="succeeded"} 1`,
		`kusionpr_executor_running{executor="in-process"} 0`,
		`kusionpr_executor_start_seconds_count{executor="in-process"} 1`,
		`kusionpr_executor_run_seconds_count{executor="in-process"} 1`,
	} {
		if !strings.Contains(b, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// S3 answers no query: no series of the running releases.
	if strings.Contains(string(b), "kusionpr_releases_running") {
		t.Error("a bot on S3 reports running releases, which S3 could tell only by listing every project")
	}
}

func TestWebhookRefusals(t *testing.T) {
	w := newWorld(t)
	ev := w.payload("issue_comment", "created")
	before := len(w.gh.Calls())
	for _, tc := range []struct {
		name string
		opts []githubfake.DeliverOption
		want int
	}{
		{"unsigned", []githubfake.DeliverOption{githubfake.WithoutSignature()}, 401},
		{"wrongly signed", []githubfake.DeliverOption{githubfake.WithSecret("not-the-secret")}, 401},
		{"oversized", []githubfake.DeliverOption{githubfake.WithRawBody(append([]byte(`{"a":"`), make([]byte, 25<<20)...))}, 413},
		{"malformed", []githubfake.DeliverOption{githubfake.WithRawBody([]byte(`{"action": "created",`))}, 400},
	} {
		resp := githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", ev, tc.opts...)
		if resp.Status != tc.want {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, resp.Status, tc.want, resp.Body)
		}
	}

	// Signed, well-formed, and nothing to do: acknowledged, ignored.
	intoDevelop := w.mergeEvent(23, "ffffffffffffffffffffffffffffffffffffffff")
	intoDevelop["pull_request"].(map[string]any)["base"].(map[string]any)["ref"] = "develop"
	byBot := w.payload("issue_comment", "created")
	byBot["issue"].(map[string]any)["pull_request"] = map[string]any{"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/2"}
	byBot["comment"].(map[string]any)["body"] = "/kusion apply"
	byBot["comment"].(map[string]any)["user"] = map[string]any{"login": "kusionpr[bot]", "type": "Bot"}
	notACommand := w.payload("issue_comment", "created")
	notACommand["issue"].(map[string]any)["pull_request"] = map[string]any{"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/2"}
	notACommand["comment"].(map[string]any)["body"] = "looks good, but see /kusion docs"
	for _, tc := range []struct {
		name, event string
		payload     map[string]any
	}{
		{"a merge into another branch than the default", "pull_request", intoDevelop},
		{"a command by a bot", "issue_comment", byBot},
		{"a comment that is no command", "issue_comment", notACommand},
		{"an event the bot does not handle", "star", githubfake.Event(t, "star", "created")},
	} {
		resp := githubfake.Deliver(t, w.url+"/webhook", secret, tc.event, tc.payload)
		if resp.Status != http.StatusOK || !strings.Contains(resp.Body, "ignored") {
			t.Errorf("%s: answered %d %s, want 200 ignored", tc.name, resp.Status, resp.Body)
		}
	}
	time.Sleep(500 * time.Millisecond)
	if calls := w.gh.Calls()[before:]; len(calls) != 0 {
		t.Errorf("refused and ignored deliveries made %d GitHub calls: %+v", len(calls), calls)
	}
}

func TestCommandAuthorisationAndRedelivery(t *testing.T) {
	w := newWorld(t)
	const number, head = 22, "cccccccccccccccccccccccccccccccccccccccc"
	w.pullRequest(number, head)
	w.gh.SetPullRequestDetails(w.owner, w.repo, number, "author-dev", true)
	comment := func(user, body string) map[string]any { return w.prComment(number, user, body) }

	// A reader may not apply.
	w.gh.SetPermission(w.owner, w.repo, "reader", "read")
	byReader := comment("reader", "/kusion apply")
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", byReader)
	w.waitFor("the refusal to a reader", func() bool { return w.commentsContaining(number, "needs write or admin permission") == 1 })
	w.waitFor("the reactions to the reader's comment", func() bool {
		return strings.Join(w.gh.Reactions(w.owner, w.repo, commentID(byReader)), ",") == "eyes,-1"
	})

	// A writer may not apply what nobody approved.
	w.gh.SetPermission(w.owner, w.repo, "writer", "write")
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", comment("writer", "/kusion apply"))
	w.waitFor("the refusal of an unapproved apply", func() bool { return w.commentsContaining(number, "needs an approval") == 1 })

	// Approved by someone else with write access: applied, once, even when delivered twice.
	w.gh.SetPermission(w.owner, w.repo, "reviewer", "write")
	w.gh.SetReviews(w.owner, w.repo, number, []githubfake.Review{{User: "reviewer", State: "APPROVED", CommitID: head}})
	ev := comment("writer", "/kusion apply")
	id := githubfake.WithDeliveryID("11111111-2222-3333-4444-555555555555")
	first := githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", ev, id)
	second := githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", ev, id)
	if first.Status != http.StatusAccepted || second.Status != http.StatusOK || !strings.Contains(second.Body, "duplicate") {
		t.Errorf("deliveries answered %d then %d (%s)", first.Status, second.Status, second.Body)
	}
	w.waitFor("the apply's report", func() bool { return w.commentsContaining(number, "Applied stack") == 1 })
	w.waitFor("the reactions to the applied comment", func() bool {
		return strings.Join(w.gh.Reactions(w.owner, w.repo, commentID(ev)), ",") == "eyes,rocket"
	})
	time.Sleep(time.Second)
	if n := w.commentsContaining(number, "Applied stack"); n != 1 {
		t.Errorf("%d apply reports, want 1", n)
	}
	if got := kubectlGet(t, w.ns); got != "bot" {
		t.Errorf("ConfigMap data.from = %q after the approved apply", got)
	}
}

func commentID(ev map[string]any) int64 {
	return int64(ev["comment"].(map[string]any)["id"].(float64))
}

func kubectlGet(t *testing.T, ns string) string {
	out, _ := exec.Command("kubectl", "--kubeconfig", os.Getenv("KUSIONPR_TEST_KUBECONFIG"), "get", "configmap", "settings", "-n", ns, "-o", "jsonpath={.data.from}").CombinedOutput()
	return strings.TrimSpace(string(out))
}

// mergeEvent is GitHub's pull_request closed payload for a merge of number
// at sha, at the time given (now if none).
func (w *world) mergeEvent(number int, sha string, at ...time.Time) map[string]any {
	ev := w.payload("pull_request", "closed")
	pr := ev["pull_request"].(map[string]any)
	pr["number"], pr["merged"], pr["merge_commit_sha"] = float64(number), true, sha
	when := time.Now()
	if len(at) > 0 {
		when = at[0]
	}
	pr["merged_at"] = when.UTC().Format(time.RFC3339)
	ev["number"] = float64(number)
	return ev
}

func (w *world) store() *backend.Store {
	w.t.Helper()
	s, err := backend.Open(context.Background(), w.backend)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { s.Close() })
	return s
}

// metrics scrapes the first bot's /metrics.
func (w *world) metrics() string {
	w.t.Helper()
	resp, err := http.Get(w.url + "/metrics")
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

// gauge is the value of series (its name and labels as /metrics writes
// them) in text, and whether text has it.
func gauge(text, series string) (float64, bool) {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// pendingDeployment is a Deployment that can be placed only on a node
// carrying a label no node has, so an apply waits for it to be ready until
// the test labels the node (release).
func pendingDeployment(t *testing.T) (resources string, release func()) {
	label := "kusionpr-bot-test-" + fmt.Sprint(mrand.IntN(1<<24))
	kc := testenv.Kubeconfig(t)
	t.Cleanup(func() { exec.Command("kubectl", "--kubeconfig", kc, "label", "node", "kwok-node-0", label+"-").Run() })
	return fmt.Sprintf(`- id: apps/v1:Deployment:%%[1]s:web
  type: Kubernetes
  dependsOn: [v1:Namespace:%%[1]s]
  attributes:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: %%[1]s}
    spec:
      replicas: 1
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec:
          nodeSelector: {%s: "yes"}
          tolerations: [{operator: Exists}]
          containers: [{name: web, image: nginx}]
`, label), func() {
			if out, err := exec.Command("kubectl", "--kubeconfig", kc, "label", "node", "kwok-node-0", label+"=yes").CombinedOutput(); err != nil {
				t.Fatalf("label node: %v\n%s", err, out)
			}
		}
}

// waitApplying waits until the stack's apply runs and waits for the Deployment.
func (w *world) waitApplying(s *backend.Store) {
	w.t.Helper()
	kc := testenv.Kubeconfig(w.t)
	w.waitFor("the apply to wait for the Deployment", func() bool {
		rel, err := s.Latest(context.Background(), "web", "default")
		return err == nil && rel != nil && rel.Phase == "applying" &&
			exec.Command("kubectl", "--kubeconfig", kc, "get", "deployment", "web", "-n", w.ns).Run() == nil
	})
}

func TestGracefulStopFinishesTheApply(t *testing.T) {
	deployment, release := pendingDeployment(t)
	w := newWorld(t, withResources(deployment), withEnv("KUSIONPR_SHUTDOWN_DELAY=2s"))
	const number, head, merge = 32, "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	w.pullRequest(number, head)
	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)
	githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge))
	s := w.store()
	w.waitApplying(s)

	bot := w.bots[0]
	bot.proc.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- bot.proc.Wait() }()
	// First not ready, still serving (KUSIONPR_SHUTDOWN_DELAY), then
	// closed, the apply still running.
	w.waitFor("/readyz to say the bot is going", func() bool {
		resp, err := http.Get(bot.url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	w.waitFor("the bot to stop taking requests", func() bool {
		resp, err := http.Get(bot.url + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err != nil
	})
	select {
	case err := <-exited:
		t.Fatalf("the bot exited (%v) while an apply ran\n%s", err, w.logs())
	case <-time.After(time.Second):
	}
	release()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the bot exited with %v after finishing its apply\n%s", err, w.logs())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the bot did not exit after its apply\n%s", w.logs())
	}
	rel, err := s.Latest(context.Background(), "web", "default")
	if err != nil || rel.Revision != 1 || rel.Phase != "succeeded" {
		t.Errorf("latest release %+v (%v), want release 1 succeeded", rel, err)
	}
	if w.commentsContaining(number, "Applied stack") != 1 {
		t.Errorf("the apply was not reported before the bot stopped: %+v", w.gh.Comments(w.owner, w.repo, number))
	}
}

// TestCrashDuringApplyRecovers: a bot killed (SIGKILL) mid-apply leaves
// its release applying; a bot started after the lease supersedes it and
// redoes the merge, on S3, PostgreSQL and the HTTP store.
func TestCrashDuringApplyRecovers(t *testing.T) {
	for _, store := range testenv.ReleaseStores(t) {
		t.Run(store.Name, func(t *testing.T) { crashDuringApply(t, store) })
	}
}

// storeOption is the world option putting the releases in store; the
// world's own is a bucket on S3.
func storeOption(t *testing.T, store testenv.ObjectStore) worldOption {
	if store.Name == "s3" {
		return func(*world) {}
	}
	return withBackend(store.NewBucket(t))
}

func crashDuringApply(t *testing.T, store testenv.ObjectStore) {
	deployment, release := pendingDeployment(t)
	w := newWorld(t, withEnv("KUSIONPR_LEASE=3s"), withResources(deployment), storeOption(t, store))
	const number, head, merge = 31, "dddddddddddddddddddddddddddddddddddddddd", "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
	w.pullRequest(number, head)
	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)
	if resp := githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge)); resp.Status != http.StatusAccepted {
		t.Fatalf("merge delivery answered %d: %s", resp.Status, resp.Body)
	}
	s := w.store()
	w.waitApplying(s)
	w.bots[0].proc.Process.Kill() // SIGKILL: no drain, no release update
	w.bots[0].proc.Wait()

	release()
	w.start()
	w.waitFor("the recovered apply to succeed", func() bool {
		rel, err := s.Latest(context.Background(), "web", "default")
		return err == nil && rel != nil && rel.Revision == 2 && rel.Phase == "succeeded"
	})
	first, err := s.Get(context.Background(), "web", "default", 1)
	if err != nil {
		t.Fatal(err)
	}
	if first.Phase != "failed" || !strings.Contains(first.Message, "abandoned") {
		t.Errorf("the killed apply's release: phase %s, message %q; want failed as abandoned", first.Phase, first.Message)
	}
	second, _ := s.Get(context.Background(), "web", "default", 2)
	if o := second.Origin; o == nil || o.PullRequest != number || o.SHA != merge {
		t.Errorf("the redone release's origin %+v, want PR %d at %s", o, number, merge)
	}
	w.waitFor("the report of the recovered apply", func() bool { return w.commentsContaining(number, "Applied stack") == 1 })

	// A second restart finds the merge applied and leaves it alone.
	w.bots[1].proc.Process.Kill()
	w.bots[1].proc.Wait()
	w.start()
	time.Sleep(2 * time.Second)
	if revs, _ := s.Revisions(context.Background(), "web", "default"); len(revs) != 2 {
		t.Errorf("revisions after a second restart: %v, want [1 2]", revs)
	}
}

// prComment is writer's comment body on pull request number, as the
// issue_comment event GitHub sends for it.
func (w *world) prComment(number int, user, body string) map[string]any {
	ev := w.payload("issue_comment", "created")
	issue := ev["issue"].(map[string]any)
	issue["number"] = float64(number)
	issue["pull_request"] = map[string]any{"url": fmt.Sprintf("https://api.github.com/repos/%s/%s/pulls/%d", w.owner, w.repo, number)}
	posted := w.gh.PostComment(w.owner, w.repo, number, user, body)
	c := ev["comment"].(map[string]any)
	c["body"], c["id"] = body, float64(posted.ID)
	c["user"] = map[string]any{"login": user, "type": "User"}
	return ev
}

// deliverAll sends the events at once, alternately to the world's bots.
func (w *world) deliverAll(event string, events []map[string]any) {
	var wg sync.WaitGroup
	for i, ev := range events {
		b := w.bots[i%len(w.bots)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp := githubfake.Deliver(w.t, b.url+"/webhook", secret, event, ev); resp.Status != http.StatusAccepted {
				w.t.Errorf("delivery %d answered %d: %s", i, resp.Status, resp.Body)
			}
		}()
	}
	wg.Wait()
}

// releases reads every release of the stack, checking that the revisions
// run 1..n without a gap.
func (w *world) releases(s *backend.Store) []*model.Release {
	w.t.Helper()
	ctx := context.Background()
	revs, err := s.Revisions(ctx, "web", "default")
	if err != nil {
		w.t.Fatal(err)
	}
	var out []*model.Release
	for i, rev := range revs {
		if rev != uint64(i+1) {
			w.t.Fatalf("revisions %v are not 1..%d", revs, len(revs))
		}
		rel, err := s.Get(ctx, "web", "default", rev)
		if err != nil {
			w.t.Fatal(err)
		}
		out = append(out, rel)
	}
	return out
}

// TestTwoBotsSerialiseApplies: 20 applies asked at once of two bots
// sharing a release store, on S3, PostgreSQL and the HTTP store, make
// releases 1..20, each applying once.
func TestTwoBotsSerialiseApplies(t *testing.T) {
	for _, store := range testenv.ReleaseStores(t) {
		t.Run(store.Name, func(t *testing.T) { twoBotsSerialise(t, store) })
	}
}

func twoBotsSerialise(t *testing.T, store testenv.ObjectStore) {
	w := newWorld(t, storeOption(t, store))
	w.start()
	w.gh.SetPermission(w.owner, w.repo, "writer", "write")
	w.gh.SetPermission(w.owner, w.repo, "reviewer", "write")
	const n = 20
	var events []map[string]any
	for i := range n {
		number, head := 100+i, fmt.Sprintf("%040x", 0xa000+i)
		w.setConfigValue(fmt.Sprintf("pr-%d", number))
		w.pullRequest(number, head)
		w.gh.SetPullRequestDetails(w.owner, w.repo, number, "author-dev", true)
		w.gh.SetReviews(w.owner, w.repo, number, []githubfake.Review{{User: "reviewer", State: "APPROVED"}})
		events = append(events, w.prComment(number, "writer", "/kusion apply"))
	}
	w.deliverAll("issue_comment", events)
	s := w.store()
	w.waitFor("20 releases", func() bool {
		rel, err := s.Latest(context.Background(), "web", "default")
		return err == nil && rel != nil && rel.Revision == n && rel.Phase.Ended()
	})
	seen := map[int]bool{}
	for _, rel := range w.releases(s) {
		if rel.Phase != model.PhaseSucceeded {
			t.Errorf("release %d %s: %s", rel.Revision, rel.Phase, rel.Message)
		}
		if rel.Origin == nil || seen[rel.Origin.PullRequest] {
			t.Errorf("release %d origin %+v: each apply should run once", rel.Revision, rel.Origin)
			continue
		}
		seen[rel.Origin.PullRequest] = true
	}
	for i := range n {
		w.waitFor(fmt.Sprintf("#%d's report", 100+i), func() bool { return w.commentsContaining(100+i, "Applied stack") == 1 })
	}
	waited := 0
	for _, b := range w.bots {
		waited += strings.Count(b.logs.String(), "stack held by another run; waiting")
	}
	if waited == 0 {
		t.Error("no apply ever waited for another: the applies did not meet at the backend's slot")
	}
}

func TestMergesApplyInOrder(t *testing.T) {
	w := newWorld(t)
	w.start()
	const n = 20
	base := time.Now().Add(-time.Minute).Truncate(time.Second)
	var events []map[string]any
	for i := range n {
		number, head, merge := 200+i, fmt.Sprintf("%040x", 0xc000+i), fmt.Sprintf("%040x", 0xd000+i)
		w.setConfigValue(fmt.Sprintf("pr-%d", number))
		w.pullRequest(number, head)
		w.gh.SetTree(w.owner, w.repo, merge, w.tree)
		at := base.Add(time.Duration(i) * time.Second)
		w.gh.MergePullRequestAt(w.owner, w.repo, number, merge, at)
		events = append(events, w.mergeEvent(number, merge, at))
	}
	// Deliveries race each other, as GitHub's do.
	mrand.Shuffle(n, func(i, j int) { events[i], events[j] = events[j], events[i] })
	w.deliverAll("pull_request", events)
	for i := range n {
		w.waitFor(fmt.Sprintf("#%d's report", 200+i), func() bool {
			return w.commentsContaining(200+i, "Applied stack")+w.commentsContaining(200+i, "Not applied") == 1
		})
	}
	s := w.store()
	rels := w.releases(s)
	for i, rel := range rels {
		if rel.Phase != model.PhaseSucceeded || rel.Origin == nil {
			t.Fatalf("release %d %s (%s), origin %+v", rel.Revision, rel.Phase, rel.Message, rel.Origin)
		}
		if i > 0 && !rel.Origin.MergedAt.After(rels[i-1].Origin.MergedAt) {
			t.Errorf("release %d applied #%d (merged %s) over #%d (merged %s): an older merge over a newer one",
				rel.Revision, rel.Origin.PullRequest, rel.Origin.MergedAt, rels[i-1].Origin.PullRequest, rels[i-1].Origin.MergedAt)
		}
	}
	if last := rels[len(rels)-1]; last.Origin.PullRequest != 200+n-1 {
		t.Errorf("the last release applied #%d, want the newest merge #%d", last.Origin.PullRequest, 200+n-1)
	}
	if got := kubectlGet(t, w.ns); got != fmt.Sprintf("pr-%d", 200+n-1) {
		t.Errorf("the cluster holds %q, want the newest merge's pr-%d", got, 200+n-1)
	}
	t.Logf("%d merges, %d applied, %d left as older than an applied one", n, len(rels), n-len(rels))
}

func TestUnlockAndForkPreview(t *testing.T) {
	w := newWorld(t)
	const number, head = 41, "3333333333333333333333333333333333333333"
	w.pullRequest(number, head)
	comment := func(user, body string) map[string]any { return w.prComment(number, user, body) }
	// A run that died holding the stack.
	s := w.store()
	held := &model.Release{Project: "web", Workspace: "default", Stack: "dev", Phase: model.PhaseApplying,
		CreateTime: time.Now(), ModifiedTime: time.Now(), Origin: &model.Origin{Actor: "someone", Heartbeat: time.Now()}}
	if _, err := s.Begin(context.Background(), held); err != nil {
		t.Fatal(err)
	}

	w.gh.SetPermission(w.owner, w.repo, "reader", "read")
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", comment("reader", "/kusion unlock apps/web/dev"))
	w.waitFor("the refusal of a reader's unlock", func() bool { return w.commentsContaining(number, "needs write or admin permission") == 1 })
	w.gh.SetPermission(w.owner, w.repo, "writer", "write")
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", comment("writer", "/kusion unlock apps/web/dev"))
	w.waitFor("the unlock's answer", func() bool { return w.commentsContaining(number, "Release 1 of `apps/web/dev` is now failed") == 1 })
	rel, err := s.Latest(context.Background(), "web", "default")
	if err != nil || rel.Phase != model.PhaseFailed || !strings.Contains(rel.Message, "unlocked by writer") {
		t.Errorf("release after unlock: %+v (%v)", rel, err)
	}

	// A fork's pull request: previewed without touching the cluster, never applied.
	const forked, forkHead = 42, "4444444444444444444444444444444444444444"
	w.gh.SetTree(w.owner, w.repo, forkHead, w.tree)
	w.gh.SetPullRequest(w.owner, w.repo, forked, forkHead, "master", true)
	w.gh.SetPullFiles(w.owner, w.repo, forked, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
	w.gh.SetPullRequestDetails(w.owner, w.repo, forked, "forker", true)
	w.gh.SetReviews(w.owner, w.repo, forked, []githubfake.Review{{User: "reviewer", State: "APPROVED"}})
	onFork := func(user, body string) map[string]any { return w.prComment(forked, user, body) }
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", onFork("forker", "/kusion preview"))
	w.waitFor("the fork's preview", func() bool { return w.commentsContaining(forked, "Compared with the prior release only") == 1 })
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", onFork("writer", "/kusion apply"))
	w.waitFor("the refusal to apply a fork", func() bool { return w.commentsContaining(forked, "pull requests from forks are never applied") == 1 })
	if out, err := exec.Command("kubectl", "--kubeconfig", testenv.Kubeconfig(t), "get", "namespace", w.ns).CombinedOutput(); err == nil {
		t.Errorf("the fork's stack reached the cluster: %s", out)
	}
}

// TestNoChangeMergeIsRecorded: the bot records a merge that changes nothing
// (unlike the action's default), because its merge order rests on the
// releases. #31 sets "x"; #32 sets "y"; #33, merged after #32, sets "x"
// again. Delivered #31, #33, #32: #33 changes nothing but must be
// recorded, or #32, older, arrives to a stack whose latest release is
// #31's and applies "y" over the newest merge.
func TestNoChangeMergeIsRecorded(t *testing.T) {
	w := newWorld(t)
	base := time.Now().Add(-time.Minute).Truncate(time.Second)
	type merge struct {
		number int
		value  string
		at     time.Time
	}
	merges := []merge{{31, "x", base}, {32, "y", base.Add(time.Second)}, {33, "x", base.Add(2 * time.Second)}}
	events := map[int]map[string]any{}
	for _, m := range merges {
		head, sha := fmt.Sprintf("%040x", 0xe000+m.number), fmt.Sprintf("%040x", 0xf000+m.number)
		w.setConfigValue(m.value)
		w.pullRequest(m.number, head)
		w.gh.SetTree(w.owner, w.repo, sha, w.tree)
		w.gh.MergePullRequestAt(w.owner, w.repo, m.number, sha, m.at)
		events[m.number] = w.mergeEvent(m.number, sha, m.at)
	}
	reported := func(number int) func() bool {
		return func() bool {
			return w.commentsContaining(number, "Applied stack")+w.commentsContaining(number, "Preview of stack")+w.commentsContaining(number, "Not applied") == 1
		}
	}
	for _, number := range []int{31, 33, 32} {
		if resp := githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", events[number]); resp.Status != http.StatusAccepted {
			t.Fatalf("#%d's delivery answered %d: %s", number, resp.Status, resp.Body)
		}
		w.waitFor(fmt.Sprintf("#%d's report", number), reported(number))
	}
	if w.commentsContaining(33, "Applied stack") != 1 {
		t.Errorf("#33, which changes nothing, was not reported as applied: %+v", w.gh.Comments(w.owner, w.repo, 33))
	}
	rels := w.releases(w.store())
	if len(rels) != 2 || rels[1].Origin == nil || rels[1].Origin.PullRequest != 33 {
		t.Errorf("%d releases, want #31's and #33's", len(rels))
	}
	if w.commentsContaining(32, "Not applied") != 1 {
		t.Errorf("#32, older than the applied #33, was not refused: %+v", w.gh.Comments(w.owner, w.repo, 32))
	}
	if got := kubectlGet(t, w.ns); got != "x" {
		t.Errorf("the cluster holds %q, want the newest merge's %q", got, "x")
	}
}

// TestLogLinesHaveNoRepeatedKeys: each of the bot's JSON log lines names a
// key once, through a merge's apply, a comment's preview and a refusal
// (a repeated key is legal JSON, but most log stores keep one of the two
// or reject the line).
func TestLogLinesHaveNoRepeatedKeys(t *testing.T) {
	w := newWorld(t)
	const number, head, merge = 71, "7171717171717171717171717171717171717171", "7272727272727272727272727272727272727272"
	w.pullRequest(number, head)
	w.gh.SetPermission(w.owner, w.repo, "writer", "write")
	w.gh.SetPermission(w.owner, w.repo, "reader", "read")
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "writer", "/kusion preview"))
	w.waitFor("the preview", func() bool { return w.commentsContaining(number, "stack=apps/web/dev") >= 1 })
	githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(number, "reader", "/kusion apply"))
	w.waitFor("the refusal", func() bool { return w.commentsContaining(number, "needs write or admin permission") == 1 })
	w.gh.SetTree(w.owner, w.repo, merge, w.tree)
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)
	githubfake.Deliver(t, w.url+"/webhook", secret, "pull_request", w.mergeEvent(number, merge))
	w.waitFor("the apply", func() bool { return w.commentsContaining(number, "Applied stack") == 1 })

	lines, withStack := 0, 0
	for line := range strings.Lines(w.bots[0].logs.String()) {
		keys, err := jsonKeys(line)
		if err != nil {
			t.Errorf("%v: %s", err, line)
			continue
		}
		lines++
		if slices.Contains(keys, "stack") && slices.Contains(keys, "pullRequest") && slices.Contains(keys, "command") {
			withStack++
		}
	}
	// The stack's own lines were read, not only the bot's.
	if lines == 0 || withStack == 0 {
		t.Errorf("%d log lines, %d naming the pull request, command and stack; want some of each:\n%s", lines, withStack, w.logs())
	}
}

// jsonKeys returns the top-level keys of a log line, an error if it is not
// one JSON object or if any object in it (at any depth) names a key twice:
// a decoded map would hide the repeat, so the tokens are walked.
func jsonKeys(line string) ([]string, error) {
	dec := json.NewDecoder(strings.NewReader(line))
	var walk func() ([]string, error)
	walk = func() ([]string, error) {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch tok {
		case json.Delim('{'):
			var own []string
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				if slices.Contains(own, k.(string)) {
					return nil, fmt.Errorf("key %q twice in one object", k)
				}
				own = append(own, k.(string))
				if _, err := walk(); err != nil {
					return nil, err
				}
			}
			_, err = dec.Token()
			return own, err
		case json.Delim('['):
			for dec.More() {
				if _, err := walk(); err != nil {
					return nil, err
				}
			}
			_, err = dec.Token()
			return nil, err
		}
		return nil, nil
	}
	keys, err := walk()
	if err != nil {
		return nil, err
	}
	if keys == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("more after the JSON object")
	}
	return keys, nil
}
