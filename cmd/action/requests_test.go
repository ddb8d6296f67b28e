package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite docs/many-stacks.md's table of GitHub requests per push from this run's counts")

// pushCount is what one run of the action asked of GitHub.
type pushCount struct{ writes, all int }

func (c pushCount) String() string { return fmt.Sprintf("%d / %d", c.writes, c.all) }

// count sorts the fake's calls since from: content-creating requests
// (POST, PATCH, PUT, DELETE: what GitHub's secondary limits count) and all.
func count(calls []githubfake.Call, from int) pushCount {
	var c pushCount
	for _, call := range calls[from:] {
		c.all++
		if call.Method != http.MethodGet && call.Method != http.MethodHead {
			c.writes++
		}
	}
	return c
}

// TestRequestsPerPush measures the GitHub requests of a pull request's
// first push and of a next one changing every stack again, for 1, 10, 50
// and 200 touched stacks, a comment and a check run per stack or combined.
// Combined, 200 stacks stay under GitHub's 80 content-creating requests a
// minute; docs/many-stacks.md's table is this test's, and the test fails
// when they differ (-update-readme rewrites it).
func TestRequestsPerPush(t *testing.T) {
	kc := testenv.Kubeconfig(t)
	sizes := []int{1, 10, 50, 200}
	modes := []struct{ name, comment, combineAbove string }{
		{"per stack", "always", "0"},
		{"combined", "combined", "0"},
	}
	got := map[string][2]pushCount{}
	for _, n := range sizes {
		root := t.TempDir()
		suffix := fmt.Sprintf("%06x", rand.IntN(1<<24))
		spec := func(version string) {
			for i := range n {
				write(t, filepath.Join(root, fmt.Sprintf("stacks/s%03d/spec.yaml", i)), fmt.Sprintf(`resources:
- id: v1:ConfigMap:default:req-%[1]s-%03[2]d
  type: Kubernetes
  attributes:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: req-%[1]s-%03[2]d, namespace: default}
    data: {version: %[3]s}
`, suffix, i, version))
			}
		}
		write(t, filepath.Join(root, "stacks/project.yaml"), "name: stacks\n")
		for i := range n {
			write(t, filepath.Join(root, fmt.Sprintf("stacks/s%03d/stack.yaml", i)), fmt.Sprintf("name: s%03d\n", i))
		}
		for _, m := range modes {
			start := time.Now()
			gh := githubfake.New(t)
			const number = 30
			env := map[string]string{"KUBECONFIG": kc, "INPUT_BACKEND": "file://" + filepath.Join(t.TempDir(), "releases"),
				"INPUT_COMMENT": m.comment, "INPUT_COMBINE-ABOVE": m.combineAbove}
			var files []githubfake.PullFile
			for i := range n {
				files = append(files, githubfake.PullFile{Filename: fmt.Sprintf("stacks/s%03d/spec.yaml", i), Status: "modified"})
			}
			var counts [2]pushCount
			for push, version := range []string{"v1", "v2"} {
				spec(version)
				ev := prEvent(t, number, strings.Repeat(fmt.Sprint(push+1), 40))
				o, r := owner(ev)
				gh.SetPullFiles(o, r, number, files)
				from := len(gh.Calls())
				run := runAction(t, gh, root, "pull_request", ev, env)
				if run.code != 0 {
					t.Fatalf("%d stacks, %s, push %d: action exited %d\n%s\n%s", n, m.name, push+1, run.code, run.stdout, run.stderr)
				}
				counts[push] = count(gh.Calls(), from)
				// Every stack was previewed in full: the counts are of
				// real previews, not of errors.
				var summary map[string]struct{ Create, Errors int }
				if err := json.Unmarshal([]byte(run.outputs["summary"]), &summary); err != nil {
					t.Fatalf("output summary %q: %v", run.outputs["summary"], err)
				}
				previewed := 0
				for _, s := range summary {
					if s.Create == 1 && s.Errors == 0 {
						previewed++
					}
				}
				if previewed != n {
					t.Fatalf("%d stacks, %s, push %d: %d previewed with their one object to create, want all", n, m.name, push+1, previewed)
				}
			}
			if n == 200 && m.comment == "combined" {
				// Longer than one comment: split in parts the fake (which
				// answers 422 past 65,536 characters, as GitHub does) took.
				o, r := owner(prEvent(t, number, strings.Repeat("2", 40)))
				cs := gh.Comments(o, r, number)
				if len(cs) < 2 || !strings.Contains(cs[1].Body, "*Previews of this change, continued (2 of ") {
					t.Errorf("200 stacks combined: %d comments, want the report split in parts", len(cs))
				}
			}
			got[fmt.Sprintf("%d %s", n, m.name)] = counts
			t.Logf("%d stacks, %s: first push %s, next push %s requests (content-creating / all), in %s", n, m.name, counts[0], counts[1], time.Since(start).Round(time.Second))
		}
	}
	for push, c := range got["200 combined"] {
		if c.writes >= 80 {
			t.Errorf("combined, push %d of 200 stacks made %d content-creating requests, want fewer than GitHub's 80 a minute", push+1, c.writes)
		}
	}

	var table strings.Builder
	table.WriteString("| touched stacks | per stack, first push | per stack, next push | combined, first push | combined, next push |\n|---:|---:|---:|---:|---:|\n")
	for _, n := range sizes {
		p, c := got[fmt.Sprintf("%d per stack", n)], got[fmt.Sprintf("%d combined", n)]
		fmt.Fprintf(&table, "| %d | %s | %s | %s | %s |\n", n, p[0], p[1], c[0], c[1])
	}
	const start, end = "<!-- requests-per-push: TestRequestsPerPush writes this table -->\n", "<!-- requests-per-push end -->"
	readme := filepath.Join("..", "..", "docs", "many-stacks.md")
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(b), start)
	old, after, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("docs/many-stacks.md has no table between %q and %q", start, end)
	}
	if *updateReadme {
		if err := os.WriteFile(readme, []byte(before+start+table.String()+end+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if old != table.String() {
		t.Errorf("docs/many-stacks.md's table of requests per push is not what was measured (go test ./cmd/action -run TestRequestsPerPush -update-readme):\n%s", table.String())
	}
}
