package main

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// TestPullRequestPreviewsGeneratedStack: on a pull request the action
// generates the touched stack from its AppConfigurations before previewing
// it; a mistake in main.yaml is reported on the pull request with the file,
// line and field; no secret of the generated spec shows anywhere.
func TestPullRequestPreviewsGeneratedStack(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	gh := githubfake.New(t)
	root := t.TempDir()
	project := fmt.Sprintf("shop-%06x", rand.IntN(1<<24))
	copyTree(t, filepath.Join("..", "..", "examples", "shop"), filepath.Join(root, "apps", "shop"))
	write(t, filepath.Join(root, "apps/shop/project.yaml"), "name: "+project+"\n")
	env := map[string]string{"KUBECONFIG": kc, "INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"), "INPUT_WORKSPACE": ""}

	const number = 12
	ev := prEvent(t, number, "4444444444444444444444444444444444444444")
	o, r := owner(ev)
	gh.SetPullFiles(o, r, number, []githubfake.PullFile{{Filename: "apps/shop/dev/main.yaml", Status: "modified"}})
	run := runAction(t, gh, root, "pull_request", ev, env)
	if run.code != 0 {
		t.Fatalf("action exited %d\n%s", run.code, run.stderr)
	}
	comments := gh.Comments(o, r, number)
	if len(comments) != 1 {
		t.Fatalf("%d comments, want 1 (the dev stack)", len(comments))
	}
	body := comments[0].Body
	for _, want := range []string{"Preview of stack", "apps/v1:Deployment:" + project + ":" + project + "-dev-web", "v1:Service:" + project + ":" + project + "-dev-web-private", "Create"} {
		if !strings.Contains(body, want) {
			t.Errorf("the comment lacks %q:\n%s", want, body)
		}
	}
	all := []actionRun{run}

	// A push breaking main.yaml: the comment says where.
	mainYAML := filepath.Join(root, "apps/shop/dev/main.yaml")
	b, _ := os.ReadFile(mainYAML)
	write(t, mainYAML, strings.Replace(string(b), "    _type: service.Service\n", "    _type: service.Service\n    replicas: two\n", 1))
	ev = prEvent(t, number, "5555555555555555555555555555555555555555")
	run = runAction(t, gh, root, "pull_request", ev, env)
	all = append(all, run)
	if run.code == 0 {
		t.Error("the action succeeded with a broken AppConfiguration")
	}
	comments = gh.Comments(o, r, number)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "apps/shop/dev/main.yaml:6: web.workload.replicas: want an integer, got a string (built-in module service)") {
		t.Errorf("the comment does not name the file, line and field:\n%s", comments[0].Body)
	}

	// Neither the session key written in main.yaml nor the local
	// database's derived password shows in a comment, check or log.
	sum := md5.Sum([]byte(project + "dev" + "web" + project + "-dev-web-mysql"))
	dbPassword := hex.EncodeToString(sum[:])[:16]
	var seen strings.Builder
	for _, c := range gh.Comments(o, r, number) {
		seen.WriteString(c.Body)
	}
	for _, ck := range gh.CheckRuns(o, r) {
		seen.WriteString(ck.Title + ck.Summary)
	}
	for _, a := range all {
		seen.WriteString(a.stdout + a.stderr + a.summary)
	}
	for _, secret := range []string{"dev-only-session-key", dbPassword} {
		if strings.Contains(seen.String(), secret) {
			t.Errorf("secret %q shows in a comment, check, summary or log", secret)
		}
	}
}
