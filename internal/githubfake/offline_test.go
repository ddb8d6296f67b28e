package githubfake

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite offline/ from the installed GitHub description and webhook examples")

// TestOfflineCut: the cut the fake serves from without GitHub's
// description is exactly what the installed description and webhook
// examples give, so a plain go test answers as make test does. It needs
// them, so it skips under a plain go test and fails under make test when
// they are missing; -update rewrites the cut.
func TestOfflineCut(t *testing.T) {
	dir := testenv.OctokitDir(t)
	d, err := loadDescription(dir)
	if err != nil {
		t.Fatal(err)
	}
	events, err := loadEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range offlineOperations {
		if d.ops[id] == nil {
			t.Errorf("offlineOperations names %s, which GitHub's description lacks", id)
		}
	}
	notice, err := os.ReadFile(filepath.Join(dir, "openapi", "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	version := packageVersion(t, filepath.Join(dir, "openapi", "package.json"))
	want := map[string][]byte{
		"offline/description.json": cutDescription(t, d, version),
		"offline/events.json":      cutEvents(t, events),
		"offline/LICENSE":          notice,
	}
	for name, b := range want {
		if *update {
			if err := os.WriteFile(name, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := offlineFiles.ReadFile(name)
		if name == "offline/LICENSE" {
			got, err = os.ReadFile(name)
		}
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s is not what the installed @octokit packages give (%v): run `go test ./internal/githubfake -run TestOfflineCut -update` with the test environment", name, err)
		}
	}
}

func packageVersion(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Name, Version string }
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	return p.Name + "@" + p.Version
}

// cutDescription keeps of d what the fake serves from: every operation's
// method, path, id, multi-segment path parameters and request body kind,
// the documented success answers of the operations the handlers answer and
// of offlineOperations, and the success status of those answering without
// a body.
func cutDescription(t *testing.T, d *description, source string) []byte {
	t.Helper()
	paths := map[string]any{}
	for _, op := range d.ops {
		cut := map[string]any{"operationId": op.id}
		var params []any
		for _, p := range op.params {
			if multi, _ := p["x-multi-segment"].(bool); multi && str(p["in"]) == "path" {
				params = append(params, map[string]any{"name": p["name"], "in": "path", "x-multi-segment": true})
			}
		}
		if params != nil {
			cut["parameters"] = params
		}
		if op.bodyReq || op.bodyJSON {
			body := map[string]any{"required": op.bodyReq, "content": map[string]any{}}
			if op.bodyJSON {
				body["content"] = map[string]any{"application/json": map[string]any{}}
			}
			cut["requestBody"] = body
		}
		if kept(op.id) {
			// Every success answer: a handler may answer another than the
			// lowest (a reaction's 201, where 200 says it existed).
			answers := map[string]any{}
			for status := range op.responses {
				if !strings.HasPrefix(status, "2") {
					continue
				}
				answer := map[string]any{"description": "Response"}
				if schema, ex, _ := d.example(op, status); schema != nil || ex != nil {
					json := map[string]any{}
					if ex != nil {
						json["example"] = inlineExamples(d, ex)
					}
					answer["content"] = map[string]any{"application/json": json}
				}
				answers[status] = answer
			}
			cut["responses"] = answers
		} else if status := op.successStatus(); status != "" {
			if schema, _, _ := d.example(op, status); schema == nil {
				// Answered without a body: the status is all there is to keep.
				cut["responses"] = map[string]any{status: map[string]any{"description": "Response"}}
			}
		}
		item, _ := paths[op.template].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[op.template] = item
		}
		item[strings.ToLower(op.method)] = cut
	}
	info, _ := d.root["info"].(map[string]any)
	root := map[string]any{
		"openapi": d.root["openapi"],
		"info": map[string]any{
			"title":   info["title"],
			"version": info["version"],
			"description": "A cut of GitHub's REST description from " + source + " (MIT, see LICENSE beside this file), " +
				"made by internal/githubfake's TestOfflineCut: every operation's route, and the documented success answers the fake serves.",
		},
		"paths": paths,
		"components": map[string]any{"examples": map[string]any{
			// newState names the App's bot after GitHub's example App.
			"integration": map[string]any{"value": map[string]any{"slug": str(exampleValue(d, "integration")["slug"])}},
		}},
	}
	return marshalCut(t, root)
}

func exampleValue(d *description, name string) map[string]any {
	e := d.resolve(map[string]any{"$ref": "#/components/examples/" + name})
	v, _ := e["value"].(map[string]any)
	return v
}

// inlineExamples replaces references to GitHub's shared examples (an
// operation's example may be one) with their value, which the cut does
// not otherwise keep.
func inlineExamples(d *description, v any) any {
	switch t := v.(type) {
	case map[string]any:
		if ref, ok := t["$ref"].(string); ok && len(t) == 1 && strings.HasPrefix(ref, "#/components/examples/") {
			return inlineExamples(d, deepCopy(d.resolve(t)["value"]))
		}
		for k, c := range t {
			t[k] = inlineExamples(d, c)
		}
	case []any:
		for i, c := range t {
			t[i] = inlineExamples(d, c)
		}
	}
	return v
}

// cutEvents keeps the first published payload of each of offlineEvents.
func cutEvents(t *testing.T, list []webhookEvent) []byte {
	t.Helper()
	byName := map[string]*webhookEvent{}
	var names []string
	for _, want := range offlineEvents {
		var found map[string]any
		for _, e := range list {
			for _, ex := range e.Examples {
				if a, _ := ex["action"].(string); e.Name == want[0] && a == want[1] && found == nil {
					found = ex
				}
			}
		}
		if found == nil {
			t.Errorf("offlineEvents names %s %q, which GitHub does not publish", want[0], want[1])
			continue
		}
		if byName[want[0]] == nil {
			byName[want[0]] = &webhookEvent{Name: want[0]}
			names = append(names, want[0])
		}
		byName[want[0]].Examples = append(byName[want[0]].Examples, found)
	}
	sort.Strings(names)
	out := make([]webhookEvent, 0, len(names))
	for _, n := range names {
		out = append(out, *byName[n])
	}
	return marshalCut(t, out)
}

// kept: the cut keeps the documented answers of id.
func kept(id string) bool {
	return handler(id) != nil || issueHandler(id) != nil || slices.Contains(offlineOperations, id)
}

// marshalCut writes one JSON value a line per key, for diffs a reviewer
// can read when the packages are upgraded.
func marshalCut(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// offlineServer is a fake serving from the cut, whether or not GitHub's
// description is installed, for the tests of what the cut serves.
func offlineServer(t *testing.T) *Server {
	t.Helper()
	d, _, err := loadOffline()
	if err != nil {
		t.Fatal(err)
	}
	return serveDescription(t, d, false, false, nil)
}

// TestOfflineServes: without the description the fake still routes,
// answers and refuses as GitHub does where that needs no schema, and an
// operation whose answer the cut lacks is a violation naming the fix, not
// an empty answer GitHub never sends.
func TestOfflineServes(t *testing.T) {
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		inAnswer                 string // a substring of the answer
		violation                string // a substring; "" for none
	}{
		{"stateful answer", "POST", "/repos/o/r/issues/1/comments", `{"body":"hi"}`, 201, `"body":"hi"`, ""},
		{"documented example", "GET", "/repos/o/r", "", 200, `"full_name":"octocat/Hello-World"`, ""},
		{"answer without a body", "PUT", "/user/starred/o/r", "", 204, "", ""},
		{"not JSON", "POST", "/repos/o/r/issues/1/comments", `{"body":`, 400, "Problems parsing JSON", "body: unexpected EOF"},
		{"unknown path", "GET", "/repos/o/r/no-such-thing", "", 404, "Not Found", "no such operation"},
		{"answer the cut lacks", "GET", "/repos/o/r/topics", "", 501, "offlineOperations", "repos/get-all-topics"},
		{"GitHub's limit beyond the schema", "POST", "/repos/o/r/issues/1/comments", `{"body":"` + strings.Repeat("x", maxCommentLength+1) + `"}`, 422, "body is too long", "body is too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := offlineServer(t)
			status, body := raw(t, s, tc.method, tc.path, tc.body, true)
			if status != tc.status || !strings.Contains(body, tc.inAnswer) {
				t.Errorf("answered %d %.300s, want %d with %q", status, body, tc.status, tc.inAnswer)
			}
			v := s.Violations()
			switch {
			case tc.violation == "" && len(v) != 0:
				t.Errorf("violations %q, want none", v)
			case tc.violation != "" && (len(v) != 1 || !strings.Contains(v[0], tc.violation)):
				t.Errorf("violations %q, want one with %q", v, tc.violation)
			}
		})
	}
}

// TestOfflineAnswersAsChecked: the cut answers as the whole description
// does, for requests of each kind the project makes (a handler's state
// over a documented example, an example alone, a list). It needs the
// description to compare with.
func TestOfflineAnswersAsChecked(t *testing.T) {
	whole := New(t)
	needsDescription(t, whole)
	cut := offlineServer(t)
	for _, s := range []*Server{whole, cut} {
		s.SetPullRequest("o", "r", 7, "abc123", "main", false)
		s.SetPullFiles("o", "r", 7, []PullFile{{Filename: "a/spec.yaml", Status: "modified"}})
	}
	for _, rq := range []struct{ method, path, body string }{
		{"POST", "/repos/o/r/issues/7/comments", `{"body":"hi"}`},
		{"GET", "/repos/o/r/issues/comments/1001", ""},
		{"GET", "/repos/o/r/pulls/7", ""},
		{"GET", "/repos/o/r/pulls/7/files?per_page=100", ""},
		{"GET", "/repos/o/r", ""},
		{"GET", "/repos/o/r/issues/7/labels", ""},
		{"GET", "/users/octocat", ""},
		{"POST", "/repos/o/r/issues", `{"title":"drift","body":"b"}`},
		{"GET", "/repos/o/r/issues/1", ""},
		{"POST", "/repos/o/r/check-runs", `{"name":"plan","head_sha":"abc123"}`},
	} {
		ws, wb := raw(t, whole, rq.method, rq.path, rq.body, true)
		cs, cb := raw(t, cut, rq.method, rq.path, rq.body, true)
		wb, cb = comparable(wb, whole.URL), comparable(cb, cut.URL)
		if ws != cs || wb != cb {
			t.Errorf("%s %s: the description answers %d %s\nthe cut answers %d %s", rq.method, rq.path, ws, wb, cs, cb)
		}
	}
	if v := cut.Violations(); len(v) != 0 {
		t.Errorf("the cut: %q", v)
	}
}

// comparable masks what two fakes answer differently by nature: their
// address, and the times they stamp now.
func comparable(body, base string) string {
	body = strings.ReplaceAll(body, strings.TrimSuffix(base, "/"), "http://fake")
	return nowStamp.ReplaceAllStringFunc(body, func(s string) string {
		at, err := time.Parse(time.RFC3339, strings.Trim(s, `"`))
		if err == nil && time.Since(at).Abs() < time.Hour {
			return `"now"`
		}
		return s
	})
}

var nowStamp = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"`)
