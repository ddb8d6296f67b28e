package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/connect"
	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
	"github.com/kusionpr/kusionpr/workflow"
)

// driftRepo is a checkout of three projects with a stack each: shop
// (a Deployment, a ConfigMap and a Secret, applied, then changed by hand),
// cart (applied, then its spec changed on the branch) and blog (never
// applied).
type driftRepo struct {
	t               *testing.T
	root, store, kc string
	suffix, secret  string
}

func newDriftRepo(t *testing.T, kc string) *driftRepo {
	r := &driftRepo{t: t, root: t.TempDir(), kc: kc, suffix: fmt.Sprintf("%06x", rand.IntN(1<<24))}
	r.store = filepath.Join(t.TempDir(), "releases")
	r.secret = "dr1ft-" + r.suffix + "-password"
	os.MkdirAll(filepath.Join(r.root, ".git"), 0o755)
	for _, p := range []string{"shop", "cart", "blog"} {
		write(t, filepath.Join(r.root, "apps", p, "project.yaml"), "name: "+p+"-"+r.suffix+"\n")
		write(t, filepath.Join(r.root, "apps", p, "prod", "stack.yaml"), "name: prod\n")
	}
	ns := r.ns("shop")
	write(t, filepath.Join(r.root, "apps/shop/prod/spec.yaml"), fmt.Sprintf(`resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}
- id: apps/v1:Deployment:%[1]s:web
  type: Kubernetes
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
- id: v1:ConfigMap:%[1]s:settings
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: settings, namespace: %[1]s}
    data: {mode: calm, level: "1"}
- id: v1:Secret:%[1]s:creds
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: Secret
    metadata: {name: creds, namespace: %[1]s}
    stringData: {password: %[2]s}
`, ns, r.secret))
	r.writeConfigMapStack("cart", "v1")
	r.writeConfigMapStack("blog", "v1")
	t.Cleanup(func() {
		for _, p := range []string{"shop", "cart", "blog"} {
			exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", r.ns(p), "--ignore-not-found", "--wait=false").Run()
		}
	})
	return r
}

func (r *driftRepo) ns(project string) string { return "drift-" + project + "-" + r.suffix }

func (r *driftRepo) writeConfigMapStack(project, version string) {
	write(r.t, filepath.Join(r.root, "apps", project, "prod", "spec.yaml"), fmt.Sprintf(`resources:
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
`, r.ns(project), version))
}

// action runs the action binary's command line in the checkout.
func (r *driftRepo) action(args ...string) (code int, stdout, stderr string) {
	r.t.Helper()
	cmd := exec.Command(actionBinary(r.t), args...)
	cmd.Dir = r.root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+r.kc)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	} else if err != nil {
		r.t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

// storeDigest is every release file of the store and its content, hashed.
func (r *driftRepo) storeDigest() string {
	r.t.Helper()
	var lines []string
	filepath.WalkDir(r.store, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		sum := sha256.Sum256(b)
		rel, _ := filepath.Rel(r.store, p)
		lines = append(lines, rel+" "+hex.EncodeToString(sum[:8]))
		return nil
	})
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// scanJSON is what the test reads of action drift -o json.
type scanJSON struct {
	Drifted bool `json:"drifted"`
	Stacks  []struct {
		Dir          string `json:"dir"`
		Status       string `json:"status"`
		Revision     uint64 `json:"revision"`
		DriftSummary struct {
			Resources, Fields int
		} `json:"driftSummary"`
		ChangeSteps map[string]struct {
			Action string `json:"action"`
			Drift  []struct {
				Path     string `json:"path"`
				From, To any
			} `json:"drift"`
		} `json:"changeSteps"`
		PendingSpecChanges []struct {
			ID     string `json:"id"`
			Action string `json:"action"`
		} `json:"pendingSpecChanges"`
	} `json:"stacks"`
}

// driftedFields lists a scan's drifted fields, "stack id path", sorted.
func driftedFields(s scanJSON) []string {
	var out []string
	for _, st := range s.Stacks {
		for id, step := range st.ChangeSteps {
			for _, d := range step.Drift {
				out = append(out, st.Dir+" "+id+" "+d.Path)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestDriftScanOnTheCluster: a stack applied then changed by hand (a
// Deployment's replicas and label, a ConfigMap key, a Secret's data)
// scans as drifted in exactly those fields, the Secret's without its
// value, exit code 2; its issue lists them and is edited, not doubled, by
// the next scan; once the release's spec is applied again the next scan
// closes it and exits 0. A stack never applied, and one whose spec changed
// on the branch, are reported as such, not as drift. No scan writes a
// release.
func TestDriftScanOnTheCluster(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	gh := githubfake.New(t)
	r := newDriftRepo(t, kc)
	backendURL := "file://" + r.store
	for _, p := range []string{"shop", "cart"} {
		if code, _, stderr := r.action("apply", "--stack", "apps/"+p+"/prod", "--backend", backendURL, "--yes", "--no-watch"); code != 0 {
			t.Fatalf("apply %s exited %d\n%s", p, code, stderr)
		}
	}
	r.writeConfigMapStack("cart", "v2") // merged, never applied
	stored := r.storeDigest()

	scan := func(wantCode int) scanJSON {
		t.Helper()
		code, stdout, stderr := r.action("drift", "--root", ".", "--backend", backendURL, "-o", "json")
		if code != wantCode {
			t.Fatalf("drift exited %d, want %d\n%s\n%s", code, wantCode, stdout, stderr)
		}
		if strings.Contains(stdout+stderr, r.secret) || strings.Contains(stdout, "sha256") {
			t.Errorf("the scan shows the Secret's value or its fingerprint:\n%s", stdout)
		}
		var s scanJSON
		if err := json.Unmarshal([]byte(stdout), &s); err != nil {
			t.Fatalf("drift -o json: %v\n%s", err, stdout)
		}
		return s
	}
	statuses := func(s scanJSON) string {
		var out []string
		for _, st := range s.Stacks {
			out = append(out, st.Dir+"="+st.Status)
		}
		return strings.Join(out, " ")
	}

	before := scan(0)
	if got, want := statuses(before), "apps/blog/prod=never-applied apps/cart/prod=spec-not-applied apps/shop/prod=in-sync"; got != want {
		t.Errorf("statuses before any change by hand: %s, want %s", got, want)
	}
	if c := before.Stacks[1].PendingSpecChanges; len(c) != 1 || c[0].ID != "v1:ConfigMap:"+r.ns("cart")+":settings" || c[0].Action != "Update" {
		t.Errorf("cart's spec changes not applied: %+v", c)
	}

	if code, stdout, stderr := r.action("drift", "--stack", "apps/blog/prod", "--backend", backendURL); code != 0 || !strings.HasPrefix(stdout, "stack apps/blog/prod (blog-"+r.suffix+"/default): never applied") {
		t.Errorf("drift --stack of a stack never applied: exit %d\n%s%s", code, stdout, stderr)
	}

	ns := r.ns("shop")
	kubectl(t, kc, "scale", "deployment", "web", "-n", ns, "--replicas=3")
	kubectl(t, kc, "label", "deployment", "web", "-n", ns, "tier=api", "--overwrite")
	kubectl(t, kc, "patch", "configmap", "settings", "-n", ns, "--type=merge", "-p", `{"data":{"mode":"storm"}}`)
	kubectl(t, kc, "patch", "secret", "creds", "-n", ns, "--type=merge", "-p", `{"stringData":{"password":"changed-by-hand-`+r.suffix+`"}}`)

	drifted := scan(exitDrift)
	if got, want := statuses(drifted), "apps/blog/prod=never-applied apps/cart/prod=spec-not-applied apps/shop/prod=drifted"; got != want {
		t.Errorf("statuses after changes by hand: %s, want %s", got, want)
	}
	wantFields := []string{
		"apps/shop/prod apps/v1:Deployment:" + ns + ":web metadata.labels.tier",
		"apps/shop/prod apps/v1:Deployment:" + ns + ":web spec.replicas",
		"apps/shop/prod v1:ConfigMap:" + ns + ":settings data.mode",
		"apps/shop/prod v1:Secret:" + ns + ":creds data.password",
	}
	if got := driftedFields(drifted); !slices.Equal(got, wantFields) {
		t.Errorf("drifted fields:\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(wantFields, "\n  "))
	}
	if s := drifted.Stacks[2].DriftSummary; s.Resources != 3 || s.Fields != 4 {
		t.Errorf("shop's drift summary %+v, want 3 resources, 4 fields", s)
	}

	// The action's GitHub mode on a schedule, with issues.
	ev := githubfake.Event(t, "workflow_dispatch", "")
	o, repo := owner(ev)
	env := map[string]string{"KUBECONFIG": kc, "INPUT_BACKEND": backendURL, "INPUT_COMMAND": "drift", "INPUT_ISSUES": "true", "INPUT_WORKSPACE": ""}
	issueOf := func() githubfake.Issue {
		t.Helper()
		all := gh.Issues(o, repo)
		if len(all) != 1 {
			t.Fatalf("%d issues, want 1: %+v", len(all), all)
		}
		return all[0]
	}
	for i := range 2 {
		run := runAction(t, gh, r.root, "workflow_dispatch", ev, env)
		if run.code != exitDrift {
			t.Fatalf("scan %d in GitHub mode exited %d, want 2\n%s\n%s", i+1, run.code, run.stdout, run.stderr)
		}
		if run.outputs["drifted"] != "true" {
			t.Errorf("output drifted = %q", run.outputs["drifted"])
		}
		is := issueOf()
		if is.State != "open" || !slices.Equal(is.Labels, []string{workflow.DriftLabel}) || !strings.Contains(is.Title, "apps/shop/prod") {
			t.Errorf("scan %d: issue %+v", i+1, is)
		}
		for _, f := range []string{"! spec.replicas: 2 => 3", `! metadata.labels.tier: "web" => "api"`, `! data.mode: "calm" => "storm"`, `! data.password: "(sensitive)" => "(sensitive)"`} {
			if !strings.Contains(is.Body, f) {
				t.Errorf("scan %d: the issue does not list %q:\n%s", i+1, f, is.Body)
			}
		}
		if strings.Contains(is.Body+run.stdout+run.stderr+run.summary+run.outputs["drift"], r.secret) ||
			strings.Contains(is.Body+run.outputs["drift"], "changed-by-hand") || strings.Contains(is.Body, "sha256") {
			t.Errorf("scan %d: a Secret's value (or its fingerprint) is shown", i+1)
		}
		if strings.Contains(is.Body, "apps/blog") || strings.Contains(is.Body, "apps/cart") {
			t.Errorf("scan %d: the issue of shop speaks of other stacks", i+1)
		}
	}
	if r.storeDigest() != stored {
		t.Fatalf("the scans changed the release store")
	}

	// The way back: the release's spec applied again.
	runner := &workflow.Runner{Runtimes: connect.Factory{ForceConflicts: true}, Store: workflow.StoreConfig{Backend: backendURL}, NoWatch: true}
	t.Setenv("KUBECONFIG", kc)
	req := workflow.Request{Root: r.root, Stack: "apps/shop/prod", Origin: &model.Origin{Actor: "octocat"}}
	res := runner.RevertDrift(context.Background(), req, 1, "/kusion apply on drift issue #1 by octocat")
	if res.Err != nil || res.Release == nil || res.Release.Revision != 2 || res.Release.Phase != model.PhaseSucceeded {
		t.Fatalf("revert: %+v", res)
	}
	if o := res.Release.Origin; o == nil || o.Command != "revert drift" || o.Reason != "/kusion apply on drift issue #1 by octocat" || o.Actor != "octocat" {
		t.Errorf("the revert's release says %+v of why", res.Release.Origin)
	}
	if got := kubectl(t, kc, "get", "deployment", "web", "-n", ns, "-o", "jsonpath={.spec.replicas} {.metadata.labels.tier}"); got != "2 web" {
		t.Errorf("Deployment after the revert: %q, want 2 web", got)
	}
	if got := kubectl(t, kc, "get", "configmap", "settings", "-n", ns, "-o", "jsonpath={.data.mode}"); got != "calm" {
		t.Errorf("ConfigMap after the revert: %q", got)
	}
	if got := kubectl(t, kc, "get", "secret", "creds", "-n", ns, "-o", "jsonpath={.data.password}"); got != base64.StdEncoding.EncodeToString([]byte(r.secret)) {
		t.Error("the Secret's password is not the spec's after the revert")
	}
	stored = r.storeDigest()

	run := runAction(t, gh, r.root, "workflow_dispatch", ev, env)
	if run.code != 0 {
		t.Fatalf("scan after the revert exited %d, want 0\n%s\n%s", run.code, run.stdout, run.stderr)
	}
	is := issueOf()
	if is.State != "closed" {
		t.Errorf("the issue is %s after the drift is gone", is.State)
	}
	cms := gh.Comments(o, repo, is.Number)
	if len(cms) != 1 || !strings.Contains(cms[0].Body, "The drift is gone") {
		t.Errorf("the issue's comments: %+v", cms)
	}
	after := scan(0)
	if got, want := statuses(after), "apps/blog/prod=never-applied apps/cart/prod=spec-not-applied apps/shop/prod=in-sync"; got != want {
		t.Errorf("statuses after the revert: %s, want %s", got, want)
	}
	if r.storeDigest() != stored {
		t.Errorf("the scans after the revert changed the release store")
	}
}

// TestDriftOfTerraformResources: Terraform resources are scanned as the
// Kubernetes ones are, by a refresh of what the release recorded: a file
// edited by hand (which the local provider reports gone) and a sensitive
// one are drifted, no value of the sensitive one shows, and the scan
// writes no release.
func TestDriftOfTerraformResources(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	binaries := testenv.TerraformBinaries(t)
	t.Setenv("KUBECONFIG", kc)
	for _, bin := range binaries {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			f := newMixedFixture(t)
			store := filepath.Join(t.TempDir(), "releases")
			c := &cli{t: t, kubeconfig: kc, backend: "file://" + store,
				extra: []string{"--terraform-binary", bin, "--terraform-cache", filepath.Join(t.TempDir(), "terraform-cache")}}
			t.Cleanup(func() {
				exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", f.ns, "--ignore-not-found", "--wait=false").Run()
			})
			if _, errOut, code := c.run("apply", "--stack", f.stackDir, "--yes"); code != 0 {
				t.Fatalf("apply exited %d: %s", code, errOut)
			}
			r := &driftRepo{t: t, store: store}
			stored := r.storeDigest()
			scan := func(wantCode int) scanJSON {
				t.Helper()
				out, errOut, code := c.run("drift", "--stack", f.stackDir, "-o", "json")
				if code != wantCode {
					t.Fatalf("drift exited %d, want %d\n%s\n%s", code, wantCode, out, errOut)
				}
				if strings.Contains(out+errOut, f.secret) || strings.Contains(out+errOut, "edited-secret") {
					t.Errorf("a sensitive value is shown:\n%s\n%s", out, errOut)
				}
				var s scanJSON
				if err := json.Unmarshal([]byte(out), &s); err != nil {
					t.Fatalf("drift -o json: %v\n%s", err, out)
				}
				return s
			}
			if s := scan(0); len(s.Stacks) != 1 || s.Stacks[0].Status != "in-sync" {
				t.Fatalf("scan after the apply: %+v", s)
			}
			write(t, filepath.Join(f.files, "note.txt"), "edited by hand\n")
			write(t, filepath.Join(f.files, "secret.txt"), "edited-secret-"+f.secret)
			s := scan(exitDrift)
			var drifted []string
			for id, step := range s.Stacks[0].ChangeSteps {
				if len(step.Drift) > 0 {
					drifted = append(drifted, id)
				}
			}
			slices.Sort(drifted)
			if want := []string{noteID, secretID}; !slices.Equal(drifted, want) {
				t.Errorf("drifted %v, want %v", drifted, want)
			}
			if r.storeDigest() != stored {
				t.Errorf("the scans changed the release store")
			}
		})
	}
}

// TestUnreachableApplyRecordsNothing: an apply whose cluster is out of
// reach changes nothing and writes no release (it says so, naming the
// store it read), so a drift scan afterwards still compares the stack
// with its last release instead of skipping it as partly applied.
func TestUnreachableApplyRecordsNothing(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	r := newDriftRepo(t, kc)
	backendURL := "file://" + r.store
	if code, _, stderr := r.action("apply", "--stack", "apps/shop/prod", "--backend", backendURL, "--yes", "--no-watch"); code != 0 {
		t.Fatalf("apply exited %d\n%s", code, stderr)
	}
	r.writeConfigMapStack("shop", "v2")
	stored := r.storeDigest()

	// A kubeconfig whose server nothing listens on.
	unreachable := filepath.Join(t.TempDir(), "kubeconfig")
	write(t, unreachable, "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n")
	cmd := exec.Command(actionBinary(t), "apply", "--stack", "apps/shop/prod", "--backend", backendURL, "--yes")
	cmd.Dir, cmd.Env = r.root, append(os.Environ(), "KUBECONFIG="+unreachable)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the apply against no cluster passed:\n%s", out)
	}
	for _, want := range []string{"preview failed, nothing changed", "Nothing was changed; no release written.", "Release store: " + backendURL} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the apply does not say %q:\n%s", want, out)
		}
	}
	if got := r.storeDigest(); got != stored {
		t.Errorf("the failed apply changed the store:\n%s\nwas\n%s", got, stored)
	}

	code, stdout, stderr := r.action("drift", "--stack", "apps/shop/prod", "--backend", backendURL, "-o", "json")
	var s scanJSON
	if err := json.Unmarshal([]byte(stdout), &s); err != nil || len(s.Stacks) != 1 {
		t.Fatalf("drift exited %d: %v\n%s\n%s", code, err, stdout, stderr)
	}
	if st := s.Stacks[0].Status; st != "spec-not-applied" {
		t.Errorf("the stack scans as %s after the failed apply, want spec-not-applied (compared, with the change pending)\n%s", st, stdout)
	}
	if !strings.Contains(stderr, "Release store: "+backendURL) {
		t.Errorf("drift does not name its store:\n%s", stderr)
	}
}
