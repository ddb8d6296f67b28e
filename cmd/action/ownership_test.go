package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// The other repository of these tests: installed next to GitHub's example
// repository (Codertocat/Hello-World), with a project of the same name.
const (
	otherRepo   = "Other-Infra"
	otherRepoID = 918273645
)

// asRepository makes ev (a pull_request or push payload of GitHub's
// examples) come from owner/name with GitHub's id id.
func asRepository(ev map[string]any, owner, name string, id int64) map[string]any {
	retarget := func(repo map[string]any) {
		repo["id"], repo["name"], repo["full_name"] = float64(id), name, owner+"/"+name
		if o, ok := repo["owner"].(map[string]any); ok {
			o["login"], o["name"] = owner, owner
		}
	}
	retarget(ev["repository"].(map[string]any))
	if pr, ok := ev["pull_request"].(map[string]any); ok {
		for _, side := range []string{"head", "base"} {
			if repo, ok := pr[side].(map[string]any)["repo"].(map[string]any); ok {
				retarget(repo)
			}
		}
	}
	return ev
}

// storeFiles reads every file of a file:// store: path to content.
func storeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		out[strings.TrimPrefix(p, dir)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A pull request in repository B names, in its project.yaml, the project
// repository A applies. Its preview must not show A's release values, and
// its merge must not apply over A's state: both are refused, naming the two
// repositories, and A's releases stay byte for byte as they were.
func TestAnotherRepositorysProjectIsRefused(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	gh := githubfake.New(t)
	storeDir := filepath.Join(t.TempDir(), "releases")
	backendURL := "file://" + storeDir

	a := newPRRepo(t)
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", a.ns("apps/web/dev"), "--ignore-not-found", "--wait=false").Run()
	})
	aValue := "a-only-" + a.suffix
	a.writeSpec("apps/web/dev", aValue)

	// Repository A applies its project "web" on a push.
	push := githubfake.Event(t, "push", "")
	const aSHA, aNumber = "6666666666666666666666666666666666666666", 30
	push["after"] = aSHA
	ao, ar := owner(push)
	gh.SetCommitPulls(ao, ar, aSHA, []int{aNumber})
	gh.SetPullFiles(ao, ar, aNumber, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
	run := runAction(t, gh, a.root, "push", push, map[string]string{
		"KUBECONFIG": kc, "INPUT_BACKEND": backendURL, "INPUT_COMMAND": "apply", "GITHUB_SHA": aSHA,
	})
	if run.code != 0 {
		t.Fatalf("repository A's apply exited %d\n%s", run.code, run.stderr)
	}
	before := storeFiles(t, storeDir)
	var rel string
	for p, c := range before {
		if strings.HasSuffix(p, "/web/default/1.yaml") {
			rel = c
		}
	}
	aID := int64(push["repository"].(map[string]any)["id"].(float64))
	if !strings.Contains(rel, fmt.Sprintf("id: %d", aID)) || !strings.Contains(rel, "fullName: "+ao+"/"+ar) {
		t.Fatalf("repository A's release does not name it:\n%s", rel)
	}

	// Repository B, same installation, same project name.
	b := newPRRepo(t)
	b.suffix = a.suffix // the same namespace: B aims at A's objects
	b.writeSpec("apps/web/dev", "b-wants-this")
	const bNumber = 31
	pr := asRepository(prEvent(t, bNumber, "7777777777777777777777777777777777777777"), ao, otherRepo, otherRepoID)
	gh.SetPullFiles(ao, otherRepo, bNumber, []githubfake.PullFile{{Filename: "apps/web/dev/spec.yaml", Status: "modified"}})
	preview := runAction(t, gh, b.root, "pull_request", pr, map[string]string{"KUBECONFIG": kc, "INPUT_BACKEND": backendURL})

	const bSHA = "8888888888888888888888888888888888888888"
	bPush := asRepository(githubfake.Event(t, "push", ""), ao, otherRepo, otherRepoID)
	bPush["after"] = bSHA
	gh.SetCommitPulls(ao, otherRepo, bSHA, []int{bNumber})
	apply := runAction(t, gh, b.root, "push", bPush, map[string]string{
		"KUBECONFIG": kc, "INPUT_BACKEND": backendURL, "INPUT_COMMAND": "apply", "GITHUB_SHA": bSHA,
	})

	for name, r := range map[string]actionRun{"preview": preview, "apply": apply} {
		if r.code == 0 {
			t.Errorf("repository B's %s succeeded\n%s", name, r.stderr)
		}
	}
	comments := gh.Comments(ao, otherRepo, bNumber)
	if len(comments) != 2 {
		t.Fatalf("%d comments on repository B's pull request, want 2 (the refused preview, the refused apply): %+v", len(comments), comments)
	}
	var seen strings.Builder
	for _, c := range comments {
		seen.WriteString(c.Body)
		for _, want := range []string{ao + "/" + ar, fmt.Sprint(aID), ao + "/" + otherRepo, fmt.Sprint(otherRepoID), "belongs to repository"} {
			if !strings.Contains(c.Body, want) {
				t.Errorf("repository B's comment does not name %s:\n%s", want, c.Body)
			}
		}
	}
	for _, r := range []actionRun{preview, apply} {
		seen.WriteString(r.stdout + r.stderr + r.summary)
		for _, v := range r.outputs {
			seen.WriteString(v)
		}
	}
	for _, secret := range []string{aValue, a.secret} {
		if strings.Contains(seen.String(), secret) {
			t.Errorf("repository A's release value %q reached repository B's comments, logs or outputs", secret)
		}
	}
	if after := storeFiles(t, storeDir); !reflect.DeepEqual(before, after) {
		t.Errorf("repository B's refused runs changed repository A's release store")
	}
	if got := kubectl(t, kc, "get", "configmap", "settings", "-n", a.ns("apps/web/dev"), "-o", "jsonpath={.data.version}"); got != aValue {
		t.Errorf("the cluster holds %q, want repository A's %q", got, aValue)
	}
}

// A store the Kusion CLI wrote names no repository: the first repository
// to apply adopts it, which its release records; a second is refused from
// then on. Before that, a preview from either reads Kusion's releases.
func TestKusionStoreIsAdoptedByTheFirstRepository(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	gh := githubfake.New(t)
	project := fmt.Sprintf("kadopt-%06x", os.Getpid()&0xffffff)
	storeDir := copyKusionStore(t, project)
	backendURL := "file://" + storeDir
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", project, "--ignore-not-found", "--wait=false").Run()
	})
	tree := func(version string) string {
		root := t.TempDir()
		write(t, filepath.Join(root, project, "project.yaml"), "name: "+project+"\n")
		write(t, filepath.Join(root, project, "dev/stack.yaml"), "name: dev\n")
		write(t, filepath.Join(root, project, "dev/spec.yaml"), fmt.Sprintf(`resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}
- id: v1:ConfigMap:%[1]s:settings
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: %[1]s}, data: {version: %[2]s}}
`, project, version))
		return root
	}
	files := []githubfake.PullFile{{Filename: project + "/dev/spec.yaml", Status: "modified"}}
	env := func(kv ...string) map[string]string {
		m := map[string]string{"KUBECONFIG": kc, "INPUT_BACKEND": backendURL, "INPUT_WORKSPACE": "dev"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	bPreview := func(number int) actionRun {
		ev := asRepository(prEvent(t, number, "9999999999999999999999999999999999999999"), "Codertocat", otherRepo, otherRepoID)
		gh.SetPullFiles("Codertocat", otherRepo, number, files)
		return runAction(t, gh, tree("b"), "pull_request", ev, env())
	}

	// Nobody owns it yet: repository B's preview compares with Kusion's release.
	if run := bPreview(40); run.code != 0 {
		t.Fatalf("repository B's preview of the Kusion CLI's project exited %d\n%s", run.code, run.stderr)
	}
	if c := gh.Comments("Codertocat", otherRepo, 40); len(c) != 1 || !strings.Contains(c[0].Body, "Preview of stack") {
		t.Fatalf("repository B's preview before adoption: %+v", c)
	}

	// Repository A applies: it adopts the project.
	push := githubfake.Event(t, "push", "")
	const sha, number = "abababababababababababababababababababab", 41
	push["after"] = sha
	o, r := owner(push)
	gh.SetCommitPulls(o, r, sha, []int{number})
	gh.SetPullFiles(o, r, number, files)
	aValue := "a-adopted-" + project
	if run := runAction(t, gh, tree(aValue), "push", push, env("INPUT_COMMAND", "apply", "GITHUB_SHA", sha)); run.code != 0 {
		t.Fatalf("repository A's apply exited %d\n%s", run.code, run.stderr)
	}
	adopted, err := os.ReadFile(filepath.Join(storeDir, "releases", project, "dev", "4.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(adopted), "adopted: true") || !strings.Contains(string(adopted), "fullName: "+o+"/"+r) {
		t.Fatalf("the adopting release does not record it:\n%s", adopted)
	}
	before := storeFiles(t, storeDir)

	// From now on repository B is refused.
	run := bPreview(42)
	c := gh.Comments("Codertocat", otherRepo, 42)
	if run.code == 0 || len(c) != 1 || !strings.Contains(c[0].Body, o+"/"+r) || !strings.Contains(c[0].Body, "Codertocat/"+otherRepo) {
		t.Errorf("repository B's preview after adoption: exit %d, comments %+v", run.code, c)
	}
	if strings.Contains(c[0].Body+run.stdout+run.stderr+run.summary, aValue) {
		t.Errorf("repository B's refused preview shows repository A's release values:\n%s", c[0].Body)
	}
	if after := storeFiles(t, storeDir); !reflect.DeepEqual(before, after) {
		t.Errorf("repository B's refused preview changed the store")
	}
}

// copyKusionStore copies backend/testdata/kusion (releases the Kusion CLI
// wrote for project demo) with the project, and the namespace its state
// names, renamed to project, so the test cluster is not shared by name.
func copyKusionStore(t *testing.T, project string) string {
	t.Helper()
	src := filepath.Join("..", "..", "backend", "testdata", "kusion")
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, strings.Replace(rel, "demo", project, 1))
		write(t, out, strings.ReplaceAll(string(data), "demo", project))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
