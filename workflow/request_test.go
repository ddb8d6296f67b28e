package workflow

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/model"
)

const commit = "0123456789abcdef0123456789abcdef01234567"

// TestRequestRunsAway: a request handed over as JSON runs on a worker
// that has only the store: the checkout the asker left there, the run
// recorded as the asker's (its origin, its merge), the result left for
// the asker, who reports it as if it had run the stack itself; the same
// request run again is skipped by the merge order and its first result
// stands.
func TestRequestRunsAway(t *testing.T) {
	ctx := context.Background()
	storeURL := "file://" + t.TempDir()
	store, err := backend.Open(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	root := t.TempDir()
	for p, body := range map[string]string{"apps/project.yaml": "name: apps\n", "apps/dev/stack.yaml": "name: dev\n", "apps/dev/spec.yaml": "resources: []\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	merged := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
	asker := Request{Workspace: "default", Root: root, RecordUnchanged: true, Trigger: "merge",
		Merge:  &MergeOrder{SHA: commit, MergedAt: merged},
		Origin: &model.Origin{SHA: commit, PullRequest: 7, Actor: "octocat", Command: "merge", MergedAt: merged, Repository: &model.Repository{ID: 42, FullName: "acme/infra"}}}
	req, err := asker.For(Apply, filepath.Join(root, "apps/dev"))
	if err != nil {
		t.Fatal(err)
	}
	if req.Stack != "apps/dev" || req.Commit != commit {
		t.Fatalf("request %+v", req)
	}
	if err := PutCheckout(ctx, store, req, root); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	wire, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var got Request
	if err := json.Unmarshal(wire, &got); err != nil {
		t.Fatal(err)
	}
	if got.ID() != req.ID() {
		t.Fatalf("the request's id changed on the wire: %s, was %s", got.ID(), req.ID())
	}

	worker := &Runner{Runtimes: noRuntimes{}, Store: StoreConfig{Backend: storeURL}}
	run, err := worker.Execute(ctx, got, store, githubapi.ArchiveLimits{})
	if err != nil || run.Err != nil {
		t.Fatalf("execute: %v, run: %v", err, run.Err)
	}
	rel, err := store.Latest(ctx, "apps", "default")
	if err != nil || rel == nil {
		t.Fatalf("latest release: %v, %v", rel, err)
	}
	if o := rel.Origin; o == nil || o.SHA != commit || o.PullRequest != 7 || o.Actor != "octocat" || o.Repository == nil || o.Repository.ID != 42 || !o.MergedAt.Equal(merged) {
		t.Errorf("the release does not record the asker's origin: %+v", rel.Origin)
	}

	report := func() *StackResult {
		t.Helper()
		data, err := store.Work(ctx, req.ID(), ResultFile, 0)
		if err != nil {
			t.Fatal(err)
		}
		res, err := DecodeRequestResult(req, data)
		if err != nil {
			t.Fatal(err)
		}
		var release *model.Release
		if res.Revision > 0 {
			if release, err = store.Get(ctx, res.Project, res.Workspace, res.Revision); err != nil {
				t.Fatal(err)
			}
		}
		return res.StackResult(release)
	}
	sr := report()
	if sr.Err != nil || sr.Stack == nil || sr.Stack.Project.Name != "apps" || sr.Stack.Name != "dev" || sr.Workspace != "default" ||
		sr.Release == nil || sr.Release.Revision != rel.Revision || sr.Preview == nil {
		t.Fatalf("the asker's view of the run: %+v", sr)
	}

	again, err := worker.Execute(ctx, got, store, githubapi.ArchiveLimits{})
	if err != nil || !strings.Contains(again.Skipped, "applied this merge already") {
		t.Fatalf("the same request again: %v, skipped %q", err, again.Skipped)
	}
	if sr := report(); sr.Skipped != "" || sr.Release == nil {
		t.Errorf("the second run replaced the first's result: %+v", sr)
	}
	another := req
	another.Trigger = "comment 1"
	if _, err := DecodeRequestResult(another, mustWork(t, store, req.ID())); err == nil {
		t.Error("a result was taken for another request")
	}
}

// TestResultAnswersTheRequest: a result is taken only for the request it
// answers: one naming the request's id but another stack, commit or
// command, or none of them, is refused, and the refusal says what it
// named.
func TestResultAnswersTheRequest(t *testing.T) {
	req := Request{Command: Apply, Stack: "apps/dev", Commit: commit, Trigger: "merge", Origin: &model.Origin{Repository: &model.Repository{ID: 42}}}
	good := NewRequestResult(req, "/work", &StackResult{Workspace: "dev"})
	if good.Request != req.ID() || good.Stack != "apps/dev" || good.Commit != commit || good.Command != Apply {
		t.Fatalf("the result does not carry its request: %+v", good)
	}
	for _, tc := range []struct {
		name string
		edit func(r *RequestResult)
		want string // "" for taken
	}{
		{"the request's", func(*RequestResult) {}, ""},
		{"another stack", func(r *RequestResult) { r.Stack = "apps/prod" }, `stack "apps/prod", not "apps/dev"`},
		{"another commit", func(r *RequestResult) { r.Commit = strings.Repeat("b", 40) }, `commit "bbbb`},
		{"another command", func(r *RequestResult) { r.Command = Preview }, `command "preview", not "apply"`},
		{"nothing but the id", func(r *RequestResult) { r.Stack, r.Commit, r.Command = "", "", "" }, "names no stack, commit or command"},
		{"another request", func(r *RequestResult) { r.Request = "apply-000000000000000000000000" }, `names request "apply-000000000000000000000000"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := good
			tc.edit(&res)
			data, err := res.Encode()
			if err != nil {
				t.Fatal(err)
			}
			_, err = DecodeRequestResult(req, data)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}

func mustWork(t *testing.T, s *backend.Store, id string) []byte {
	t.Helper()
	data, err := s.Work(context.Background(), id, ResultFile, 0)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestRequestIdentity: the id is the work's: the same request in every
// process, another for another stack, commit, command, workspace or
// trigger; a request naming a path out of the repository or no commit is
// refused.
func TestRequestIdentity(t *testing.T) {
	base := Request{Command: Apply, Stack: "apps/dev", Commit: commit, Trigger: "merge", Origin: &model.Origin{Repository: &model.Repository{ID: 42}}}
	seen := map[string]string{base.ID(): "base"}
	for name, r := range map[string]Request{
		"stack":      func() Request { r := base; r.Stack = "apps/prod"; return r }(),
		"commit":     func() Request { r := base; r.Commit = strings.Repeat("a", 40); return r }(),
		"command":    func() Request { r := base; r.Command = Preview; return r }(),
		"workspace":  func() Request { r := base; r.Workspace = "prod"; return r }(),
		"trigger":    func() Request { r := base; r.Trigger = "comment 99"; return r }(),
		"repository": func() Request { r := base; r.Origin.Repository = &model.Repository{ID: 43}; return r }(),
	} {
		if other, ok := seen[r.ID()]; ok {
			t.Errorf("another %s gives the id of %s", name, other)
		}
		seen[r.ID()] = name
	}
	same := base
	same.Origin.Actor = "someone else"
	if same.ID() != base.ID() {
		t.Error("who asked changed the work's id")
	}
	for _, bad := range []Request{
		func() Request { r := base; r.Stack = "../outside"; return r }(),
		func() Request { r := base; r.Stack = "/etc"; return r }(),
		func() Request { r := base; r.Stack = "apps/../../x"; return r }(),
		func() Request { r := base; r.Commit = "main"; return r }(),
		func() Request { r := base; r.Commit = "../../x"; return r }(),
		func() Request { r := base; r.Command = "rm"; return r }(),
	} {
		if err := bad.Check(); err == nil {
			t.Errorf("request %+v was taken", bad)
		}
	}
}
