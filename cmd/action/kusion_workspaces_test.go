package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// kusionStores are the stores a Kusion user's workspaces are read from in
// these tests: a folder (Kusion's local backend) and MinIO (its s3
// backend), each with and without a prefix.
func kusionStores(t *testing.T) []struct {
	name string
	url  func(t *testing.T) string
} {
	return []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"file", func(t *testing.T) string { return backend.FolderURL(t.TempDir()) }},
		{"s3", func(t *testing.T) string { return testenv.S3(t).NewBucket(t) }},
		{"s3+prefix", func(t *testing.T) string { return testenv.S3(t).NewBucket(t) + "&prefix=kusion/prod" }},
	}
}

// storeDevWorkspace is the dev workspace an operator made with `kusion
// workspace create dev -f dev.yaml`: two replicas and a label for every
// service.
var storeDevWorkspace = &testenv.KusionWorkspace{
	Modules: map[string]*testenv.KusionModuleConfig{
		"service": {
			Path: "oci://ghcr.io/kusionstack/service", Version: "0.2.0",
			Configs: testenv.KusionConfigs{Default: map[string]any{"replicas": 2, "labels": map[string]any{"owner": "platform-store"}}},
		},
	},
}

const webApp = `web:
  workload:
    _type: service.Service
    containers:
      web:
        image: ghcr.io/acme/web:1.0.0
`

// TestKusionWorkspacesInAction: a Kusion user's workspaces, written to
// the release store as Kusion v0.15 writes them, are what the built
// action generates, previews and applies with, on a folder and on MinIO;
// every report says which workspace and from where; the release is filed
// under it. A pull request adding a repository file of the same name with
// other settings (an attack on the operator's workspace) changes nothing:
// its file is reported not used, and edited. A stack whose workspace is
// default and exists nowhere gets an empty one; a named one that exists
// nowhere fails, naming where it looked and never the store's query.
func TestKusionWorkspacesInAction(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	for _, st := range kusionStores(t) {
		t.Run(st.name, func(t *testing.T) {
			storeURL := st.url(t)
			files := testenv.KusionWorkspaceFiles(t, []string{"dev"}, map[string]*testenv.KusionWorkspace{"dev": storeDevWorkspace})
			testenv.WriteKusionFiles(t, storeURL, files)
			where := backend.Location(storeURL)

			gh := githubfake.New(t)
			root := t.TempDir()
			project := fmt.Sprintf("kws-%06x", rand.IntN(1<<24))
			t.Cleanup(func() {
				exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", project, "--ignore-not-found", "--wait=false").Run()
			})
			write(t, filepath.Join(root, "apps/shop/project.yaml"), "name: "+project+"\n")
			write(t, filepath.Join(root, "apps/shop/dev/stack.yaml"), "name: dev\nworkspace: dev\n")
			write(t, filepath.Join(root, "apps/shop/dev/main.yaml"), webApp)
			env := map[string]string{"KUBECONFIG": kc, "INPUT_BACKEND": storeURL, "INPUT_WORKSPACE": ""}
			deployment := "apps/v1:Deployment:" + project + ":" + project + "-dev-web"

			// generate, as the built binary prints it.
			gen := exec.Command(actionBinary(t), "generate", "--stack", filepath.Join(root, "apps/shop/dev"), "--backend", storeURL)
			gen.Env = append(os.Environ(), "KUBECONFIG="+kc)
			var out, errb bytes.Buffer
			gen.Stdout, gen.Stderr = &out, &errb
			if err := gen.Run(); err != nil {
				t.Fatalf("generate: %v\n%s", err, errb.String())
			}
			if !strings.Contains(out.String(), "replicas: 2\n") || !strings.Contains(out.String(), "owner: platform-store\n") {
				t.Errorf("generate did not use the store's workspace dev:\n%s", out.String())
			}

			// A pull request previews with the store's workspace.
			const number = 40
			ev := prEvent(t, number, "1111111111111111111111111111111111111111")
			o, r := owner(ev)
			gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: "apps/shop/dev/main.yaml", Status: "added"}})
			run := runAction(t, gh, root, "pull_request", ev, env)
			if run.code != 0 {
				t.Fatalf("preview exited %d\n%s", run.code, run.stderr)
			}
			storeLine := "Workspace `dev`: the release store's, `" + where + "/" + prefixOf(storeURL) + "workspaces/dev.yaml`."
			body := onlyComment(t, gh, o, r, number)
			for _, want := range []string{storeLine, deployment, "replicas: 2\n", "owner: platform-store\n"} {
				if !strings.Contains(body, want) {
					t.Errorf("the preview's comment lacks %q:\n%s", want, body)
				}
			}
			if !strings.Contains(stackCheck(t, gh, o, r, "apps/shop/dev").Summary, storeLine) {
				t.Errorf("the stack's check run does not name the workspace used")
			}

			// The attack: the pull request adds workspaces/dev.yaml with other
			// replicas and its own context. The store's copy is used; the
			// file is reported, not used and edited.
			write(t, filepath.Join(root, "apps/shop/workspaces/dev.yaml"),
				"modules:\n  service:\n    configs:\n      default:\n        replicas: 7\n        labels: {owner: pull-request}\ncontext:\n  KUBECONFIG_PATH: /tmp/pull-request-kubeconfig\n")
			gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: "apps/shop/dev/main.yaml", Status: "added"}, {Filename: "apps/shop/workspaces/dev.yaml", Status: "added"}})
			ev = prEvent(t, number, "2222222222222222222222222222222222222222")
			if run = runAction(t, gh, root, "pull_request", ev, env); run.code != 0 {
				t.Fatalf("preview with the pull request's workspace file exited %d\n%s", run.code, run.stderr)
			}
			body = onlyComment(t, gh, o, r, number)
			for _, want := range []string{storeLine, "replicas: 2\n", "> `apps/shop/workspaces/dev.yaml` is not used: the release store holds workspace `dev`",
				"> This change edits `apps/shop/workspaces/dev.yaml`, of workspace `dev`."} {
				if !strings.Contains(body, want) {
					t.Errorf("the comment on the pull request adding workspaces/dev.yaml lacks %q:\n%s", want, body)
				}
			}
			for _, bad := range []string{"replicas: 7", "pull-request-kubeconfig", "owner: pull-request"} {
				if strings.Contains(body, bad) {
					t.Errorf("the pull request's workspace file was used: the comment shows %q", bad)
				}
			}

			// Merged, and applied on the push: the store's settings are live,
			// and the release is filed under dev.
			const sha = "3333333333333333333333333333333333333333"
			push := githubfake.Event(t, "push", "")
			push["after"] = sha
			gh.SetCommitPulls(o, r, sha, []int{number})
			applied := runAction(t, gh, root, "push", push, map[string]string{
				"KUBECONFIG": kc, "INPUT_BACKEND": storeURL, "INPUT_WORKSPACE": "", "INPUT_COMMAND": "apply", "GITHUB_SHA": sha,
			})
			if applied.code != 0 {
				t.Fatalf("apply exited %d\n%s", applied.code, applied.stderr)
			}
			if got := kubectl(t, kc, "-n", project, "get", "deployment", project+"-dev-web", "-o", "jsonpath={.spec.replicas}/{.metadata.labels.owner}"); got != "2/platform-store" {
				t.Errorf("replicas/owner = %q, want the store's workspace's 2/platform-store", got)
			}
			s, err := backend.Open(context.Background(), storeURL)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			rel, err := s.Latest(context.Background(), project, "dev")
			if err != nil || rel == nil || rel.Workspace != "dev" || rel.Revision != 1 {
				t.Fatalf("latest release under workspace dev: %+v, %v; want revision 1 filed under dev", rel, err)
			}
			// Kusion's files are as it wrote them: nothing wrote workspaces.
			for key, data := range files {
				name := strings.TrimSuffix(strings.TrimPrefix(key, "workspaces/"), ".yaml")
				if key == "workspaces/.metadata.yml" {
					continue
				}
				if got, err := s.ReadWorkspace(context.Background(), name); err != nil || !bytes.Equal(got, data) {
					t.Errorf("%s changed: %q, %v", key, got, err)
				}
			}
		})
	}
}

// TestWorkspaceNowhereOrBroken: generating a stack whose workspace is
// default, which exists neither in the repository nor in the store, works
// with an empty workspace, and the report says so; a named workspace that
// exists nowhere fails, naming the repository paths and the store's
// location without its query; a malformed one in the store fails naming
// the store and key.
func TestWorkspaceNowhereOrBroken(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	for _, st := range kusionStores(t) {
		t.Run(st.name, func(t *testing.T) {
			storeURL := st.url(t)
			testenv.WriteKusionFiles(t, storeURL, map[string][]byte{
				"workspaces/.metadata.yml": []byte("current: broken\navailableWorkspaces:\n    - broken\n"),
				"workspaces/broken.yaml":   []byte("modules:\n    mysql:\n        version: 1.0.0\n"),
			})
			root := t.TempDir()
			project := fmt.Sprintf("kwn-%06x", rand.IntN(1<<24))
			write(t, filepath.Join(root, "project.yaml"), "name: "+project+"\n")
			write(t, filepath.Join(root, "qa/stack.yaml"), "name: qa\n")
			write(t, filepath.Join(root, "qa/main.yaml"), webApp)
			write(t, filepath.Join(root, "staging/stack.yaml"), "name: staging\nworkspace: staging\n")
			write(t, filepath.Join(root, "staging/main.yaml"), webApp)
			write(t, filepath.Join(root, "broken/stack.yaml"), "name: broken\nworkspace: broken\n")
			write(t, filepath.Join(root, "broken/main.yaml"), webApp)
			for _, tc := range []struct {
				stack string
				code  int
				want  []string
			}{
				{"qa", 0, []string{"Stack qa (project " + project + ", workspace default)\n",
					"Workspace default: empty, as Kusion creates it: no workspace of that name is in the repository or the release store\n",
					"+ Create    apps/v1:Deployment:" + project + ":" + project + "-qa-web"}},
				{"staging", 1, []string{"generating needs a workspace: workspace staging: no file for it (looked for " + filepath.Join(root, "workspaces", "staging.yaml"),
					"and the release store at " + backend.Location(storeURL) + " does not list it in " + prefixOf(storeURL) + "workspaces/.metadata.yml"}},
				{"broken", 1, []string{"workspace broken of the release store: " + backend.Location(storeURL) + "/" + prefixOf(storeURL) + "workspaces/broken.yaml: modules.mysql.path: required with modules.mysql.version"}},
			} {
				cmd := exec.Command(actionBinary(t), "preview", "--stack", filepath.Join(root, tc.stack), "--backend", storeURL, "-o", "text")
				cmd.Env = append(os.Environ(), "KUBECONFIG="+kc)
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				err := cmd.Run()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				all := out.String() + errb.String()
				if code != tc.code {
					t.Errorf("preview of %s exited %d, want %d\n%s", tc.stack, code, tc.code, all)
				}
				for _, w := range tc.want {
					if !strings.Contains(all, w) {
						t.Errorf("preview of %s: the output lacks %q:\n%s", tc.stack, w, all)
					}
				}
				if strings.Contains(all, "endpoint=") {
					t.Errorf("preview of %s names the store's query or endpoint:\n%s", tc.stack, all)
				}
			}
		})
	}
}

// prefixOf is the key prefix a store URL's prefix= gives, "" or "a/b/".
func prefixOf(storeURL string) string {
	_, q, ok := strings.Cut(storeURL, "prefix=")
	if !ok {
		return ""
	}
	q, _, _ = strings.Cut(q, "&")
	return strings.Trim(q, "/") + "/"
}

// onlyComment is the one comment on the pull request.
func onlyComment(t *testing.T, gh *githubfake.Server, o, r string, number int) string {
	t.Helper()
	comments := gh.Comments(o, r, number)
	if len(comments) != 1 {
		t.Fatalf("%d comments on #%d, want 1", len(comments), number)
	}
	return comments[0].Body
}

// stackCheck is the latest check run of the stack in dir.
func stackCheck(t *testing.T, gh *githubfake.Server, o, r, dir string) githubfake.CheckRun {
	t.Helper()
	var found *githubfake.CheckRun
	for _, ck := range gh.CheckRuns(o, r) {
		if strings.HasSuffix(ck.Name, ": "+dir) {
			found = &ck
		}
	}
	if found == nil {
		t.Fatalf("no check run of %s", dir)
	}
	return *found
}
