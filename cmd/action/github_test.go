package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// actionBinary builds the real action binary once per test run.
func actionBinary(t *testing.T) string {
	t.Helper()
	return testenv.Binary(t, ".")
}

// prRepo is a repository checkout with three stacks of Kubernetes objects,
// each with a Secret whose value must never be shown.
type prRepo struct {
	t      *testing.T
	root   string
	suffix string
	secret string
}

var prStacks = []string{"apps/api/dev", "apps/web/dev", "apps/web/prod"}

func newPRRepo(t *testing.T) *prRepo {
	r := &prRepo{t: t, root: t.TempDir(), suffix: fmt.Sprintf("%06x", rand.IntN(1<<24))}
	r.secret = "s3cr3t-" + r.suffix + "-value"
	write(t, filepath.Join(r.root, "apps/web/project.yaml"), "name: web\n")
	write(t, filepath.Join(r.root, "apps/api/project.yaml"), "name: api\n")
	write(t, filepath.Join(r.root, "README.md"), "# infra\n")
	for _, s := range prStacks {
		write(t, filepath.Join(r.root, s, "stack.yaml"), "name: "+filepath.Base(s)+"\n")
		r.writeSpec(s, "v1")
	}
	return r
}

func (r *prRepo) ns(stack string) string {
	return "pr-" + strings.ReplaceAll(strings.TrimPrefix(stack, "apps/"), "/", "-") + "-" + r.suffix
}

func (r *prRepo) writeSpec(stack, version string) {
	ns := r.ns(stack)
	write(r.t, filepath.Join(r.root, stack, "spec.yaml"), fmt.Sprintf(`resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}
- id: v1:ConfigMap:%[1]s:settings
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: settings, namespace: %[1]s}
    data: {version: %[2]s}
- id: v1:Secret:%[1]s:creds
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: Secret
    metadata: {name: creds, namespace: %[1]s}
    stringData: {password: %[3]s}
`, ns, version, r.secret))
}

// actionRun is one run of the action binary inside a simulated job.
type actionRun struct {
	code           int
	stdout, stderr string
	outputs        map[string]string
	summary        string
}

func runAction(t *testing.T, gh *githubfake.Server, repoRoot, eventName string, event map[string]any, env map[string]string) actionRun {
	t.Helper()
	dir := t.TempDir()
	eventPath := githubfake.WriteEvent(t, dir, event)
	outputs, summary := filepath.Join(dir, "output"), filepath.Join(dir, "summary")
	for _, f := range []string{outputs, summary} {
		os.WriteFile(f, nil, 0o644)
	}
	repo, _ := event["repository"].(map[string]any)
	cmd := exec.Command(actionBinary(t))
	cmd.Env = append(os.Environ(),
		"GITHUB_ACTIONS=true", "GITHUB_EVENT_NAME="+eventName, "GITHUB_EVENT_PATH="+eventPath,
		"GITHUB_OUTPUT="+outputs, "GITHUB_STEP_SUMMARY="+summary, "GITHUB_WORKSPACE="+repoRoot,
		"GITHUB_REPOSITORY="+fmt.Sprint(repo["full_name"]), "GITHUB_REPOSITORY_ID="+fmt.Sprintf("%.0f", repo["id"]), "GITHUB_API_URL="+strings.TrimSuffix(gh.URL, "/"),
		"GITHUB_ACTOR=octocat", "INPUT_GITHUB-TOKEN=ghs_testtoken1234567890", "INPUT_WORKSPACE=default",
	)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	o, _ := os.ReadFile(outputs)
	s, _ := os.ReadFile(summary)
	return actionRun{code: code, stdout: out.String(), stderr: errb.String(), outputs: parseOutputs(string(o)), summary: string(s)}
}

// parseOutputs reads GITHUB_OUTPUT's name<<DELIMITER ... DELIMITER records.
func parseOutputs(s string) map[string]string {
	out := map[string]string{}
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); i++ {
		name, delim, ok := strings.Cut(lines[i], "<<")
		if !ok {
			if k, v, ok := strings.Cut(lines[i], "="); ok {
				out[k] = v
			}
			continue
		}
		var val []string
		for i++; i < len(lines) && lines[i] != delim; i++ {
			val = append(val, lines[i])
		}
		out[name] = strings.Join(val, "\n")
	}
	return out
}

func prEvent(t *testing.T, number int, sha string) map[string]any {
	ev := githubfake.Event(t, "pull_request", "synchronize")
	pr := ev["pull_request"].(map[string]any)
	pr["number"] = float64(number)
	ev["number"] = float64(number)
	pr["head"].(map[string]any)["sha"] = sha
	return ev
}

func owner(ev map[string]any) (string, string) {
	full := fmt.Sprint(ev["repository"].(map[string]any)["full_name"])
	o, r, _ := strings.Cut(full, "/")
	return o, r
}

// stackChecks parts check runs into those of single stacks
// ("kusion/preview: apps/web/dev") and those summing up a run
// ("kusion/preview").
func stackChecks(all []githubfake.CheckRun) (stacks, overview []githubfake.CheckRun) {
	for _, ck := range all {
		if strings.Contains(ck.Name, ": ") {
			stacks = append(stacks, ck)
		} else {
			overview = append(overview, ck)
		}
	}
	return stacks, overview
}

var markerRE = regexp.MustCompile(`<!-- kusionpr:(\S+) stack=(\S+) workspace=\S+(?: part=\d+)? -->`)

func TestPullRequestPreview(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	gh := githubfake.New(t)
	repo := newPRRepo(t)
	t.Cleanup(func() {
		for _, s := range prStacks {
			exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", repo.ns(s), "--ignore-not-found", "--wait=false").Run()
		}
	})
	env := map[string]string{"KUBECONFIG": kc, "INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases")}
	const number = 7
	ev := prEvent(t, number, "1111111111111111111111111111111111111111")
	o, r := owner(ev)
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{
		{Filename: "apps/web/dev/spec.yaml", Status: "modified"},
		{Filename: "apps/api/dev/spec.yaml", Status: "modified"},
		{Filename: "README.md", Status: "modified"},
	})

	// 1. Two of three stacks touched: two comments, two checks, outputs set.
	run := runAction(t, gh, repo.root, "pull_request", ev, env)
	if run.code != 0 {
		t.Fatalf("action exited %d\n%s", run.code, run.stderr)
	}
	comments := gh.Comments(o, r, number)
	if len(comments) != 2 {
		t.Fatalf("%d comments, want 2 (one per touched stack)", len(comments))
	}
	first := map[string]int64{}
	for _, c := range comments {
		m := markerRE.FindStringSubmatch(c.Body)
		if m == nil || m[1] != "preview" {
			t.Fatalf("comment without a preview marker:\n%s", c.Body)
		}
		first[m[2]] = c.ID
		if !strings.Contains(c.Body, "Create") || !strings.Contains(c.Body, "v1:ConfigMap:"+repo.ns(m[2])+":settings") {
			t.Errorf("comment of %s lacks its plan:\n%s", m[2], c.Body)
		}
	}
	if _, ok := first["apps/web/dev"]; !ok {
		t.Errorf("no comment for apps/web/dev: %v", first)
	}
	if _, ok := first["apps/api/dev"]; !ok {
		t.Errorf("no comment for apps/api/dev: %v", first)
	}
	if run.outputs["changed"] != "true" || run.outputs["complete"] != "true" {
		t.Errorf("outputs changed = %q, complete = %q; want both true", run.outputs["changed"], run.outputs["complete"])
	}
	var stacks []string
	if err := json.Unmarshal([]byte(run.outputs["stacks"]), &stacks); err != nil || len(stacks) != 2 {
		t.Errorf("output stacks = %q (%v)", run.outputs["stacks"], err)
	}
	var summary map[string]map[string]int
	if err := json.Unmarshal([]byte(run.outputs["summary"]), &summary); err != nil || summary["apps/web/dev"]["Create"] != 3 {
		t.Errorf("output summary = %q (%v)", run.outputs["summary"], err)
	}
	if !strings.Contains(run.outputs["comment-urls"], "apps/api/dev") {
		t.Errorf("output comment-urls = %q", run.outputs["comment-urls"])
	}
	checks, overview := stackChecks(gh.CheckRuns(o, r))
	if len(checks) != 2 || !strings.HasPrefix(checks[0].Name, "kusion/preview: ") || checks[0].Conclusion != "success" {
		t.Errorf("check runs = %+v, want two successful kusion/preview ones", checks)
	}
	if len(overview) != 1 || overview[0].Conclusion != "success" || overview[0].Title != "2 stacks: 2 with changes, 0 failed" ||
		!strings.Contains(overview[0].Summary, "<code>apps/api/dev</code>") {
		t.Errorf("overview check runs = %+v, want one kusion/preview naming both stacks", overview)
	}
	if !strings.Contains(run.summary, "apps/web/dev") && !strings.Contains(run.summary, "Preview of stack") {
		t.Errorf("job summary lacks the previews:\n%s", run.summary)
	}
	all := []actionRun{run}

	// 2. A new push changes web/dev and breaks web/prod: the same comments
	// are edited, a third one names the broken file, the step fails.
	repo.writeSpec("apps/web/dev", "v2")
	write(t, filepath.Join(repo.root, "apps/web/prod/spec.yaml"), "resources:\n- id: v1:ConfigMap:x\n  type: Kubernetes\n  attributes: {}\n")
	ev = prEvent(t, number, "2222222222222222222222222222222222222222")
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{
		{Filename: "apps/web/dev/spec.yaml", Status: "modified"},
		{Filename: "apps/api/dev/spec.yaml", Status: "modified"},
		{Filename: "apps/web/prod/spec.yaml", Status: "modified"},
	})
	run = runAction(t, gh, repo.root, "pull_request", ev, env)
	all = append(all, run)
	if run.code == 0 {
		t.Errorf("action succeeded with a broken stack")
	}
	if run.outputs["changed"] != "true" || run.outputs["complete"] != "false" {
		t.Errorf("with a stack not previewed at all: outputs changed = %q, complete = %q; want true and false", run.outputs["changed"], run.outputs["complete"])
	}
	comments = gh.Comments(o, r, number)
	if len(comments) != 3 {
		t.Fatalf("%d comments after the second push, want 3", len(comments))
	}
	for _, c := range comments {
		m := markerRE.FindStringSubmatch(c.Body)
		switch m[2] {
		case "apps/web/prod":
			if !strings.Contains(c.Body, "apps/web/prod/spec.yaml") || !strings.Contains(c.Body, "CAUTION") {
				t.Errorf("the broken stack's comment does not name its file:\n%s", c.Body)
			}
		default:
			if c.ID != first[m[2]] {
				t.Errorf("comment of %s is new (id %d), want %d edited", m[2], c.ID, first[m[2]])
			}
			if !strings.Contains(c.Body, "Preview of stack") {
				t.Errorf("comment of %s is not a preview:\n%s", m[2], c.Body)
			}
		}
	}
	var failed int
	checks, overview = stackChecks(gh.CheckRuns(o, r))
	for _, ck := range checks {
		if ck.HeadSHA == "2222222222222222222222222222222222222222" && ck.Conclusion == "failure" {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d failed check runs on the second push, want 1 (the broken stack)", failed)
	}
	if ck := overview[len(overview)-1]; ck.HeadSHA != "2222222222222222222222222222222222222222" || ck.Conclusion != "failure" || ck.Title != "3 stacks: 2 with changes, 1 failed" {
		t.Errorf("overview check run of the second push: %+v, want a failure counting the broken stack", ck)
	}

	// 3. A push that no longer touches api/dev marks its comment outdated.
	ev = prEvent(t, number, "3333333333333333333333333333333333333333")
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
	run = runAction(t, gh, repo.root, "pull_request", ev, env)
	all = append(all, run)
	if run.code != 0 {
		t.Fatalf("third run exited %d\n%s", run.code, run.stderr)
	}
	for _, c := range gh.Comments(o, r, number) {
		m := markerRE.FindStringSubmatch(c.Body)
		outdated := strings.Contains(c.Body, "**Outdated**")
		if (m[2] != "apps/web/dev") != outdated {
			t.Errorf("comment of %s: outdated %v\n%s", m[2], outdated, c.Body)
		}
	}

	// 4. The Secret's value is in no comment, check, output, summary or log.
	var seen strings.Builder
	for _, c := range gh.Comments(o, r, number) {
		seen.WriteString(c.Body)
	}
	for _, ck := range gh.CheckRuns(o, r) {
		seen.WriteString(ck.Title + ck.Summary)
	}
	for _, call := range gh.Calls() {
		seen.Write(call.Body)
	}
	for _, a := range all {
		seen.WriteString(a.stdout + a.stderr + a.summary)
		for _, v := range a.outputs {
			seen.WriteString(v)
		}
	}
	if strings.Contains(seen.String(), repo.secret) {
		t.Errorf("the Secret's value appears in a comment, check, output, summary or log")
	}
}

func TestApplyOnPush(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	gh := githubfake.New(t)
	repo := newPRRepo(t)
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", repo.ns("apps/web/dev"), "--ignore-not-found", "--wait=false").Run()
	})
	env := map[string]string{"KUBECONFIG": kc, "INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"), "INPUT_COMMAND": "apply"}
	ev := githubfake.Event(t, "push", "")
	const sha, number = "4444444444444444444444444444444444444444", 12
	ev["after"] = sha
	o, r := owner(ev)
	gh.SetCommitPulls(o, r, sha, []int{number})
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})

	run := runAction(t, gh, repo.root, "push", ev, map[string]string{
		"KUBECONFIG": env["KUBECONFIG"], "INPUT_BACKEND": env["INPUT_BACKEND"], "INPUT_COMMAND": "apply", "GITHUB_SHA": sha,
	})
	if run.code != 0 {
		t.Fatalf("apply exited %d\n%s", run.code, run.stderr)
	}
	if got := kubectl(t, kc, "get", "configmap", "settings", "-n", repo.ns("apps/web/dev"), "-o", "jsonpath={.data.version}"); got != "v1" {
		t.Errorf("ConfigMap version = %q after apply", got)
	}
	comments := gh.Comments(o, r, number)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "Applied stack") || !strings.Contains(comments[0].Body, "release 1 succeeded") {
		t.Fatalf("comments on the merged pull request: %+v", comments)
	}
	if strings.Contains(comments[0].Body+run.stdout+run.stderr+run.summary, repo.secret) {
		t.Errorf("the Secret's value appears in the apply's report")
	}
	if deps := gh.Deployments(o, r); len(deps) != 1 || deps[0].Environment != "kusion/web/default" || deps[0].Ref != sha ||
		len(deps[0].Statuses) != 2 || deps[0].Statuses[1].State != "success" {
		t.Errorf("the apply's deployment: %+v", deps)
	}

	// The same push applied again (a re-run of the job): nothing to
	// change, no release written, and the outputs and the check say so;
	// record-unchanged writes one.
	for _, again := range []struct {
		record        string
		wantReleases  int
		wantTitlePart string
	}{
		{"", 1, "nothing to apply, no release written: 0 to create"},
		{"true", 2, "release 2 succeeded: 0 to create"},
	} {
		run := runAction(t, gh, repo.root, "push", ev, map[string]string{
			"KUBECONFIG": env["KUBECONFIG"], "INPUT_BACKEND": env["INPUT_BACKEND"], "INPUT_COMMAND": "apply", "GITHUB_SHA": sha,
			"INPUT_RECORD-UNCHANGED": again.record,
		})
		if run.code != 0 {
			t.Fatalf("apply again (record-unchanged %q) exited %d\n%s", again.record, run.code, run.stderr)
		}
		if n := len(releases(t, env["INPUT_BACKEND"], "web")); n != again.wantReleases {
			t.Errorf("record-unchanged %q: %d releases, want %d", again.record, n, again.wantReleases)
		}
		if run.outputs["changed"] != "false" || run.outputs["complete"] != "true" {
			t.Errorf("record-unchanged %q: outputs changed = %q, complete = %q; want false and true", again.record, run.outputs["changed"], run.outputs["complete"])
		}
		titles := ""
		for _, ck := range gh.CheckRuns(o, r) {
			titles += ck.Title + "\n"
		}
		if !strings.Contains(titles, again.wantTitlePart) {
			t.Errorf("record-unchanged %q: no check titled %q:\n%s", again.record, again.wantTitlePart, titles)
		}
	}

	// A merge deleting the stack's folder destroys it; the release lists
	// what it destroyed as its spec, as Kusion's destroy releases do.
	const gone, goneNumber = "5555555555555555555555555555555555555555", 13
	if err := os.RemoveAll(filepath.Join(repo.root, "apps/web/dev")); err != nil {
		t.Fatal(err)
	}
	ev["after"] = gone
	gh.SetCommitPulls(o, r, gone, []int{goneNumber})
	gh.SetPullFiles(o, r, goneNumber, []githubfake.PullFile{
		{Filename: "apps/web/dev/spec.yaml", Status: "removed"}, {Filename: "apps/web/dev/stack.yaml", Status: "removed"},
	})
	run = runAction(t, gh, repo.root, "push", ev, map[string]string{
		"KUBECONFIG": env["KUBECONFIG"], "INPUT_BACKEND": env["INPUT_BACKEND"], "INPUT_COMMAND": "apply", "GITHUB_SHA": gone,
	})
	if run.code != 0 {
		t.Fatalf("destroy exited %d\n%s\n%s", run.code, run.stdout, run.stderr)
	}
	if c := gh.Comments(o, r, goneNumber); len(c) != 1 || !strings.Contains(c[0].Body, "Destroyed stack") {
		t.Errorf("comments on the pull request deleting the stack: %+v, want one saying it was destroyed", c)
	}
	rels := releases(t, env["INPUT_BACKEND"], "web")
	last := rels[len(rels)-1]
	if last.Revision != 3 || last.Phase != model.PhaseSucceeded || len(last.State.Resources) != 0 || last.Spec == nil || len(last.Spec.Resources) != 3 {
		t.Errorf("the destroy's release: revision %d %s, %d in its state, spec %+v; want 3 succeeded, none left, the 3 destroyed listed", last.Revision, last.Phase, len(last.State.Resources), last.Spec)
	}
}

// TestForkPullRequest: a fork gets no secrets, so its preview compares the
// spec with the prior release only and says so; it is never applied.
func TestForkPullRequest(t *testing.T) {
	gh := githubfake.New(t)
	repo := newPRRepo(t)
	const number = 9
	ev := prEvent(t, number, "5555555555555555555555555555555555555555")
	head := ev["pull_request"].(map[string]any)["head"].(map[string]any)
	headRepo := head["repo"].(map[string]any)
	headRepo["fork"] = true
	headRepo["full_name"] = "someone/Hello-World"
	o, r := owner(ev)
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
	env := map[string]string{"INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"), "KUBECONFIG": ""}

	run := runAction(t, gh, repo.root, "pull_request", ev, env)
	if run.code != 0 {
		t.Fatalf("fork preview exited %d\n%s", run.code, run.stderr)
	}
	comments := gh.Comments(o, r, number)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "Compared with the prior release only") || !strings.Contains(comments[0].Body, "Create") {
		t.Fatalf("fork comments: %+v", comments)
	}
	if strings.Contains(comments[0].Body, repo.secret) {
		t.Error("the fork's comment shows the Secret's value")
	}

	env["INPUT_COMMAND"] = "apply"
	run = runAction(t, gh, repo.root, "pull_request", ev, env)
	if run.code == 0 || !strings.Contains(run.stdout+run.stderr, "comes from a fork") {
		t.Errorf("apply of a fork's pull request: exit %d\n%s%s", run.code, run.stdout, run.stderr)
	}
}

// TestUnwritableOutputsSayWhy: when the file the runner names in
// GITHUB_OUTPUT cannot be written (an image run as a user other than the
// runner's, a missing mount), the action stops before doing anything, with
// an error naming the variable and what to do, not a panic.
func TestUnwritableOutputsSayWhy(t *testing.T) {
	dir := t.TempDir()
	event := filepath.Join(dir, "event.json")
	if err := os.WriteFile(event, []byte(`{"number": 1, "repository": {"full_name": "o/r", "id": 1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(actionBinary(t))
	cmd.Env = append(os.Environ(), "GITHUB_ACTIONS=true", "GITHUB_EVENT_NAME=pull_request", "GITHUB_EVENT_PATH="+event,
		"GITHUB_OUTPUT="+filepath.Join(dir, "missing", "output"), "GITHUB_STEP_SUMMARY="+filepath.Join(dir, "summary"),
		"GITHUB_REPOSITORY=o/r", "GITHUB_API_URL=http://127.0.0.1:1", "INPUT_GITHUB-TOKEN=ghs_testtoken1234567890")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1; output:\n%s", err, out)
	}
	for _, want := range []string{"::error::cannot write GITHUB_OUTPUT", "no such file or directory", "run as the image's default user, root"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "panic") || strings.Contains(string(out), "goroutine ") {
		t.Errorf("the action panicked:\n%s", out)
	}
}
