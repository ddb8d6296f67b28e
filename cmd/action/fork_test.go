package main

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// countingCluster is the test cluster behind a proxy that counts the
// requests reaching it and takes a token of its own, so that a test can
// tell whether anything was read live and look for that token everywhere.
type countingCluster struct {
	token      string
	kubeconfig string // the kubeconfig's content, as a workflow passes it
	requests   atomic.Int64
}

func newCountingCluster(t *testing.T) *countingCluster {
	t.Helper()
	real, err := clientcmd.BuildConfigFromFlags("", testenv.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(real.Host)
	if err != nil {
		t.Fatal(err)
	}
	c := &countingCluster{token: fmt.Sprintf("kube-secret-%016x", rand.Uint64())}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // the test cluster's own certificate
	proxy.FlushInterval = -1
	// TLS: client-go sends a kubeconfig's credentials to https servers only.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.requests.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+c.token {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		r.Header.Set("Authorization", "Bearer "+real.BearerToken)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.kubeconfig = fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, certificate-authority-data: %s}
users:
- name: ci
  user:
    token: %s
contexts:
- name: test
  context: {cluster: test, user: ci}
current-context: test
`, srv.URL, base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})), c.token)
	return c
}

// forkEvent is a pull_request(_target) payload whose head is in a fork, or
// in no repository at all once the fork is deleted (head.repo null).
func forkEvent(t *testing.T, number int, sha string, deleted bool) map[string]any {
	ev := prEvent(t, number, sha)
	head := ev["pull_request"].(map[string]any)["head"].(map[string]any)
	if deleted {
		head["repo"] = nil
		return ev
	}
	// The fork: another repository, with an id of its own.
	headRepo := head["repo"].(map[string]any)
	headRepo["fork"] = true
	headRepo["full_name"] = "someone/Hello-World"
	headRepo["id"] = headRepo["id"].(float64) + 1
	return ev
}

// withoutMaskCommands is a job's log as the runner shows it, less the
// ::add-mask:: commands through which the action registers its secrets
// (the runner consumes them; they never show).
func withoutMaskCommands(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if !strings.HasPrefix(l, "::add-mask::") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestForkCredentialsNeedOptIn: a pull_request_target workflow hands the
// kubeconfig to the action; a fork's pull request is previewed offline
// against the prior release (nothing read live) unless the workflow sets
// allow-fork-credentials. The fork's spec reads the file where the action
// once wrote the kubeconfig (a Terraform function) to print its token in
// the preview; the action now keeps the input in memory, and the token
// appears in no comment, check run, summary, output or log, either way.
func TestForkCredentialsNeedOptIn(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	binaries := testenv.TerraformBinaries(t)
	cluster := newCountingCluster(t)
	gh := githubfake.New(t)
	repo := newPRRepo(t)
	tmp := t.TempDir() // the action's os.TempDir(), where it once wrote the kubeconfig
	stack := "apps/web/dev"
	ns := repo.ns(stack)
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", ns, "--ignore-not-found", "--wait=false").Run()
	})
	// The fork's attack: a Terraform attribute that reads the kubeconfig
	// the action wrote, shown in the preview's plan.
	f, err := os.OpenFile(filepath.Join(repo.root, stack, "spec.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, `- id: hashicorp:terraform:terraform_data:steal
  type: Terraform
  attributes:
    input: '${file("%s")}'
  extensions:
    provider: terraform.io/builtin/terraform
    resourceType: terraform_data
`, filepath.Join(tmp, "kusionpr-kubeconfig"))
	f.Close()

	base := map[string]string{
		"INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"), "INPUT_KUBECONFIG": cluster.kubeconfig,
		"KUBECONFIG": "", "TMPDIR": tmp, "PATH": filepath.Dir(binaries[0]) + string(os.PathListSeparator) + os.Getenv("PATH"),
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	var runs []actionRun
	for i, tc := range []struct {
		name    string
		deleted bool
		env     map[string]string
		live    bool
	}{
		{"a fork, credentials given, no opt-in", false, base, false},
		{"a deleted fork (head.repo null), credentials given, no opt-in", true, base, false},
		{"a fork, allow-fork-credentials: false said out loud", false, with("INPUT_ALLOW-FORK-CREDENTIALS", "false"), false},
		{"a fork, allow-fork-credentials: true", false, with("INPUT_ALLOW-FORK-CREDENTIALS", "true"), true},
	} {
		number := 70 + i
		ev := forkEvent(t, number, fmt.Sprintf("%040x", 0x7000+i), tc.deleted)
		o, r := owner(ev)
		gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: stack + "/spec.yaml", Status: "modified"}})
		before := cluster.requests.Load()
		run := runAction(t, gh, repo.root, "pull_request_target", ev, tc.env)
		runs = append(runs, run)
		read := cluster.requests.Load() - before
		comments := gh.Comments(o, r, number)
		if len(comments) != 1 {
			t.Fatalf("%s: exit %d, %d comments, want 1\n%s%s", tc.name, run.code, len(comments), run.stdout, run.stderr)
		}
		offline := strings.Contains(comments[0].Body, "Compared with the prior release only")
		switch {
		case tc.live && (read == 0 || offline):
			t.Errorf("%s: %d requests reached the cluster, offline note %v; want a live preview\n%s", tc.name, read, offline, comments[0].Body)
		case tc.live && strings.Contains(comments[0].Body, "CAUTION"):
			t.Errorf("%s: the live preview failed:\n%s", tc.name, comments[0].Body)
		case !tc.live && (read != 0 || !offline):
			t.Errorf("%s: %d requests reached the cluster, offline note %v; want none, against the prior release only\n%s", tc.name, read, offline, comments[0].Body)
		}
		if _, err := os.Stat(filepath.Join(tmp, "kusionpr-kubeconfig")); err == nil {
			t.Errorf("%s: the kubeconfig was written to a file", tc.name)
		}
		if strings.Contains(comments[0].Body, "***") {
			t.Logf("%s: the spec read the kubeconfig into the preview; its secret was redacted", tc.name)
		}

		// A fork is never applied, opted in or not.
		env := map[string]string{"INPUT_COMMAND": "apply"}
		for k, v := range tc.env {
			env[k] = v
		}
		before = cluster.requests.Load()
		applied := runAction(t, gh, repo.root, "pull_request_target", ev, env)
		runs = append(runs, applied)
		if applied.code == 0 || !strings.Contains(applied.stdout+applied.stderr, "comes from a fork") || cluster.requests.Load() != before {
			t.Errorf("%s: apply exited %d, %d requests to the cluster\n%s%s", tc.name, applied.code, cluster.requests.Load()-before, applied.stdout, applied.stderr)
		}
	}
	if out, err := exec.Command("kubectl", "--kubeconfig", kc, "get", "namespace", ns).CombinedOutput(); err == nil {
		t.Errorf("a fork's stack reached the cluster: %s", out)
	}

	// The token is nowhere: comments, check runs, every request to
	// GitHub, outputs, job summaries, logs.
	var seen strings.Builder
	for _, c := range gh.Calls() {
		seen.Write(c.Body)
	}
	o, r := owner(prEvent(t, 1, "x"))
	for _, ck := range gh.CheckRuns(o, r) {
		seen.WriteString(ck.Title + ck.Summary + ck.Text)
	}
	for _, r := range runs {
		seen.WriteString(withoutMaskCommands(r.stdout + r.stderr))
		seen.WriteString(r.summary)
		for _, v := range r.outputs {
			seen.WriteString(v)
		}
	}
	if strings.Contains(seen.String(), cluster.token) {
		t.Errorf("the kubeconfig's token appears in a comment, check run, summary, output or log")
	}
	mask := false
	for _, r := range runs {
		mask = mask || strings.Contains(r.stdout, "::add-mask::"+cluster.token)
	}
	if !mask {
		t.Error("the action never asked the runner to mask the kubeconfig's token")
	}
}
