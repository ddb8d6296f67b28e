package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// TestReleasesAcrossProjects: on a PostgreSQL store, releases
// --all-projects lists a workspace's releases of every project, newest
// first, and --running what holds a stack now; an object store says that
// PostgreSQL answers it and lists nothing.
func TestReleasesAcrossProjects(t *testing.T) {
	store := testenv.Postgres(t).NewBucket(t)
	kc := testenv.Kubeconfig(t)
	t.Setenv("KUBECONFIG", kc)
	ns := fmt.Sprintf("releases-%06x", rand.IntN(1<<24))
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", ns, "--ignore-not-found", "--wait=false").Run()
	})
	root := t.TempDir()
	c := &cli{t: t, kubeconfig: kc, backend: store}
	// web's dev and prod stacks, api's prod stack; web's prod applied twice.
	apply := func(project, stack, value string) {
		t.Helper()
		dir := filepath.Join(root, project, stack)
		write(t, filepath.Join(root, project, "project.yaml"), "name: "+project+"\n")
		write(t, filepath.Join(dir, "stack.yaml"), "name: "+stack+"\n")
		write(t, filepath.Join(dir, "spec.yaml"), fmt.Sprintf(`resources:
- id: v1:Namespace:%[1]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: Namespace, metadata: {name: %[1]s}}
- id: v1:ConfigMap:%[1]s:%[2]s-%[3]s
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: %[2]s-%[3]s, namespace: %[1]s}, data: {v: %[4]q}}
`, ns, project, stack, value))
		if _, errOut, code := c.run("apply", "--stack", dir, "--workspace", stack, "--yes"); code != 0 {
			t.Fatalf("apply of %s/%s exited %d: %s", project, stack, code, errOut)
		}
	}
	apply("web", "prod", "1")
	apply("web", "dev", "1")
	apply("api", "prod", "1")
	apply("web", "prod", "2")
	// A runner holds api's prod stack now.
	s, err := backend.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	held := &model.Release{Project: "api", Workspace: "prod", Stack: "prod", Phase: model.PhaseApplying,
		Origin: &model.Origin{User: "runner", Actor: "alice", Command: "apply", PullRequest: 7}}
	if _, err := s.Begin(context.Background(), held); err != nil {
		t.Fatal(err)
	}

	rows := func(out string) []string {
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			f := strings.Fields(l)
			got = append(got, strings.Join(f[:4], " "))
		}
		return got
	}
	out, errOut, code := c.run("releases", "--all-projects", "--workspace", "prod")
	want := []string{"api prod 2 applying", "web prod 2 succeeded", "api prod 1 succeeded", "web prod 1 succeeded"}
	if code != 0 || !strings.HasPrefix(out, "PROJECT ") || fmt.Sprint(rows(out)) != fmt.Sprint(want) {
		t.Errorf("releases --all-projects --workspace prod: exit %d, rows %q, want %q\n%s%s", code, rows(out), want, out, errOut)
	}
	if !strings.Contains(out, "alice") || !strings.Contains(out, "apply #7") {
		t.Errorf("the running release's row does not say who and from what:\n%s", out)
	}
	out, _, code = c.run("releases", "--all-projects", "--running")
	if want := []string{"api prod 2 applying"}; code != 0 || fmt.Sprint(rows(out)) != fmt.Sprint(want) {
		t.Errorf("releases --all-projects --running: exit %d, rows %q, want %q", code, rows(out), want)
	}
	out, _, code = c.run("releases", "--all-projects", "-o", "json", "--limit", "2")
	var h struct {
		Releases []struct {
			Project   string      `json:"project"`
			Workspace string      `json:"workspace"`
			Revision  uint64      `json:"revision"`
			Phase     model.Phase `json:"phase"`
		} `json:"releases"`
		More int `json:"more"`
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil || code != 0 || len(h.Releases) != 2 || h.More != 3 ||
		h.Releases[0].Project != "api" || h.Releases[1].Project != "web" || h.Releases[1].Workspace != "prod" || h.Releases[1].Revision != 2 {
		t.Errorf("releases --all-projects -o json --limit 2: exit %d, %+v (%v)\n%s", code, h, err, out)
	}
	// One stack's, from the database.
	out, _, code = c.run("releases", "--stack", filepath.Join(root, "web", "prod"), "--workspace", "prod")
	if want := []string{"2 succeeded", "1 succeeded"}; code != 0 || len(rows(out)) != 2 || !strings.HasPrefix(rows(out)[0], want[0]) || !strings.HasPrefix(rows(out)[1], want[1]) {
		t.Errorf("releases --stack web/prod: exit %d\n%s", code, out)
	}
	out, _, code = c.run("releases", "--stack", filepath.Join(root, "web", "prod"), "--workspace", "prod", "--running")
	if code != 0 || strings.TrimSpace(out) != "web/prod has no running releases." {
		t.Errorf("releases --running of a stack nothing holds: exit %d, %q", code, out)
	}

	// An object store keeps releases only as objects.
	folder := &cli{t: t, backend: "file://" + filepath.Join(t.TempDir(), "releases")}
	out, errOut, code = folder.run("releases", "--all-projects")
	if code != 1 || out != "" || !strings.Contains(errOut, "keeps releases only as objects") || !strings.Contains(errOut, "a PostgreSQL store does") {
		t.Errorf("releases --all-projects on a folder: exit %d, %q, %q", code, out, errOut)
	}
}
