package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/workflow"
)

// driftResources are a Deployment, a label on it, and a Secret, beside the
// world's ConfigMap.
const driftResources = `- id: apps/v1:Deployment:%[1]s:web
  type: Kubernetes
  dependsOn: [v1:Namespace:%[1]s]
  attributes:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: %[1]s, labels: {tier: web}}
    spec:
      replicas: 2
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: "nginx:1.27"}]}
- id: v1:Secret:%[1]s:creds
  type: Kubernetes
  dependsOn: [v1:Namespace:%[1]s]
  attributes:
    apiVersion: v1
    kind: Secret
    metadata: {name: creds, namespace: %[1]s}
    stringData: {password: bot-drift-secret-value}
`

// scanSpan is one drift scan, as a bot logged it.
type scanSpan struct {
	bot            int
	started, ended time.Time
	lease          uint64 // the generation of the repository's lease it held
}

// scans reads the drift scans of every bot from their logs.
func (w *world) scans() []scanSpan {
	var out []scanSpan
	for i, b := range w.bots {
		for _, line := range strings.Split(b.logs.String(), "\n") {
			if !strings.Contains(line, `"msg":"drift scan finished"`) {
				continue
			}
			var l struct {
				Started, Ended time.Time
				Lease          uint64
			}
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				w.t.Fatalf("a scan's log line: %v\n%s", err, line)
			}
			out = append(out, scanSpan{bot: i, started: l.Started, ended: l.Ended, lease: l.Lease})
		}
	}
	slices.SortFunc(out, func(a, b scanSpan) int { return a.started.Compare(b.started) })
	return out
}

// TestDriftSchedule: two bots scan the repository every few seconds, one
// at a time; changes made by hand to an applied stack (a Deployment's
// replicas and label, a ConfigMap key, a Secret's data) make one issue
// listing exactly those fields, the Secret's without its value, edited by
// later scans and never doubled; the scans write no release; /kusion apply
// on the issue by a reader is refused, by a writer puts the cluster back
// and closes the issue.
func TestDriftSchedule(t *testing.T) {
	w := newWorld(t, withResources(driftResources),
		withEnv("KUSIONPR_DRIFT_EVERY=3s", "KUSIONPR_DRIFT_JITTER=1s", "KUSIONPR_LEASE=10s"))
	w.start()
	kc := testenv.Kubeconfig(t)
	kubectl := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("kubectl", append([]string{"--kubeconfig", kc, "-n", w.ns}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	// The default branch is the merged tree, applied by the merge.
	const number, merge = 71, "7100000000000000000000000000000000000000"
	w.pullRequest(number, "7000000000000000000000000000000000000000")
	for _, ref := range []string{merge, "master", "main"} {
		w.gh.SetTree(w.owner, w.repo, ref, w.tree)
	}
	w.gh.MergePullRequest(w.owner, w.repo, number, merge)
	w.deliverAll("pull_request", []map[string]any{w.mergeEvent(number, merge)})
	w.waitFor("the merge's apply", func() bool { return w.commentsContaining(number, "Applied stack") == 1 })
	w.waitFor("a scan that finds the stack in sync", func() bool { return len(w.scans()) > 0 })
	if is := w.gh.Issues(w.owner, w.repo); len(is) != 0 {
		t.Fatalf("a stack in sync got issues: %+v", is)
	}
	s := w.store()
	revs, _ := s.Revisions(context.Background(), "web", "default")

	kubectl("scale", "deployment", "web", "--replicas=3")
	kubectl("label", "deployment", "web", "tier=api", "--overwrite")
	kubectl("patch", "configmap", "settings", "--type=merge", "-p", `{"data":{"from":"by-hand"}}`)
	kubectl("patch", "secret", "creds", "--type=merge", "-p", `{"stringData":{"password":"changed-by-hand-value"}}`)
	w.waitFor("the drift issue", func() bool { return len(w.gh.Issues(w.owner, w.repo)) > 0 })
	n := len(w.scans())
	w.waitFor("two scans more", func() bool { return len(w.scans()) >= n+2 })

	issues := w.gh.Issues(w.owner, w.repo)
	if len(issues) != 1 {
		t.Fatalf("%d issues, want one for the stack: %+v", len(issues), issues)
	}
	is := issues[0]
	if is.State != "open" || !slices.Equal(is.Labels, []string{workflow.DriftLabel}) || is.User != w.gh.AppLogin() {
		t.Errorf("the issue: %+v", is)
	}
	for _, f := range []string{"! spec.replicas: 2 => 3", `! metadata.labels.tier: "web" => "api"`, `! data.from: "bot" => "by-hand"`, `! data.password: "(sensitive)" => "(sensitive)"`} {
		if !strings.Contains(is.Body, f) {
			t.Errorf("the issue does not list %q:\n%s", f, is.Body)
		}
	}
	if c := strings.Count(is.Body, "\n! "); c != 4 {
		t.Errorf("the issue lists %d fields, want exactly the 4 changed by hand:\n%s", c, is.Body)
	}
	if strings.Contains(is.Body+w.logs(), "bot-drift-secret-value") || strings.Contains(is.Body+w.logs(), "changed-by-hand-value") {
		t.Error("a Secret's value is shown")
	}
	if now, _ := s.Revisions(context.Background(), "web", "default"); !slices.Equal(now, revs) {
		t.Errorf("the scans wrote releases: %v, then %v", revs, now)
	}

	// The way back, from the issue.
	comment := func(user, body string) map[string]any {
		ev := w.payload("issue_comment", "created")
		issue := ev["issue"].(map[string]any)
		issue["number"] = float64(is.Number)
		delete(issue, "pull_request")
		issue["labels"] = []any{map[string]any{"name": workflow.DriftLabel}}
		posted := w.gh.PostComment(w.owner, w.repo, is.Number, user, body)
		c := ev["comment"].(map[string]any)
		c["body"], c["id"] = body, float64(posted.ID)
		c["user"] = map[string]any{"login": user, "type": "User"}
		return ev
	}
	w.gh.SetPermission(w.owner, w.repo, "reader", "read")
	w.gh.SetPermission(w.owner, w.repo, "writer", "write")
	w.deliverAll("issue_comment", []map[string]any{comment("reader", "/kusion apply")})
	w.waitFor("the reader's refusal", func() bool { return w.commentsContaining(is.Number, "needs write or admin permission") == 1 })
	if got := kubectl("get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"); got != "3" {
		t.Errorf("a reader's /kusion apply changed the cluster: replicas %s", got)
	}
	// A stranger's copy of the issue, marker and label included, is not
	// the bot's: a writer's command on it is refused.
	forged := w.gh.OpenIssue(w.owner, w.repo, "mallory", is.Title, is.Body, []string{workflow.DriftLabel})
	real := is
	is = forged
	w.deliverAll("issue_comment", []map[string]any{comment("writer", "/kusion apply")})
	w.waitFor("the refusal on the stranger's issue", func() bool { return w.commentsContaining(forged.Number, "not a drift issue the bot opened") == 1 })
	if got := kubectl("get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"); got != "3" {
		t.Errorf("a command on a stranger's issue changed the cluster: replicas %s", got)
	}
	is = real
	w.deliverAll("issue_comment", []map[string]any{comment("writer", "/kusion apply")})
	w.waitFor("the revert's answer", func() bool { return w.commentsContaining(is.Number, "reverted the drift") == 1 })
	if got := kubectl("get", "deployment", "web", "-o", "jsonpath={.spec.replicas} {.metadata.labels.tier}"); got != "2 web" {
		t.Errorf("the Deployment after the revert: %q, want 2 web", got)
	}
	if got := kubectlGet(t, w.ns); got != "bot" {
		t.Errorf("the ConfigMap after the revert: %q", got)
	}
	if got := kubectl("get", "secret", "creds", "-o", "jsonpath={.data.password}"); got != "Ym90LWRyaWZ0LXNlY3JldC12YWx1ZQ==" {
		t.Errorf("the Secret after the revert: %q", got)
	}
	w.waitFor("the issue closed", func() bool { return w.gh.Issues(w.owner, w.repo)[0].State == "closed" })
	if n := len(w.gh.Issues(w.owner, w.repo)); n != 2 {
		t.Errorf("%d issues after the revert, want the bot's and the stranger's", n)
	}

	// Scans, by either bot, never overlap: each held a later generation
	// of the repository's one lease.
	spans := w.scans()
	by := map[int]int{}
	for i, sp := range spans {
		by[sp.bot]++
		if i > 0 && sp.started.Before(spans[i-1].ended) {
			t.Errorf("bot %d's scan started at %s, before bot %d's ended at %s", sp.bot, sp.started, spans[i-1].bot, spans[i-1].ended)
		}
		// A scan that failed (one before the default branch existed)
		// took a generation too, so the scans' may skip one, never repeat.
		if i > 0 && sp.lease <= spans[i-1].lease {
			t.Errorf("scan %d (bot %d) held generation %d of the lease, after generation %d: the scans did not take turns at one lease", i+1, sp.bot, sp.lease, spans[i-1].lease)
		}
	}
	t.Logf("%d scans: %v by bot", len(spans), by)
	metrics := w.metrics()
	want := []string{`kusionpr_runs_total{command="revert drift",result="success",stack="apps/web/dev"} 1`}
	if by[0] > 0 {
		want = append(want, `kusionpr_drift_resources{repository="Codertocat/Hello-World",stack="apps/web/dev"}`, `kusionpr_drift_scans_total{result="success"}`)
	}
	for _, m := range want {
		if !strings.Contains(metrics, m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
}
