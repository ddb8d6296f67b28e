package ghactions

import (
	"archive/zip"
	"bytes"
	"hash/crc32"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/githubapi"
)

// TestWhichRunsAreTheBots: a run named with the request's id is read
// only if GitHub says the bot's user started it, and this attempt too, by
// workflow_dispatch, on the branch and of the workflow the bot dispatches:
// anyone who can run a workflow can name a run so.
func TestWhichRunsAreTheBots(t *testing.T) {
	self := githubapi.User{Login: "kusionpr[bot]", ID: 41}
	mallory := githubapi.User{Login: "mallory", ID: 666}
	dispatched := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	ours := githubapi.WorkflowRun{ID: 1, Name: "kusion apply apps/web [req-1]", Event: "workflow_dispatch", HeadBranch: "main",
		Path: ".github/workflows/kusion-run.yml", Actor: self, TriggeringActor: self, CreatedAt: dispatched}
	with := func(f func(*githubapi.WorkflowRun)) githubapi.WorkflowRun { r := ours; f(&r); return r }
	for _, tc := range []struct {
		name    string
		run     githubapi.WorkflowRun
		unnamed bool   // GitHub answered the dispatch without its run
		why     string // a substring of why it is not ours; "" ours
		mine    bool
	}{
		{name: "the bot's", run: ours, mine: true},
		{name: "named in its display title", run: with(func(r *githubapi.WorkflowRun) { r.Name, r.DisplayTitle = "kusion-run", "apply [req-1]" }), mine: true},
		{name: "GitHub's path with the ref", run: with(func(r *githubapi.WorkflowRun) { r.Path += "@main" }), mine: true},
		{name: "GitHub's path with the full ref", run: with(func(r *githubapi.WorkflowRun) { r.Path += "@refs/heads/main" }), mine: true},
		{name: "another request's", run: with(func(r *githubapi.WorkflowRun) { r.Name = "kusion apply [req-2]" })},
		{name: "started by someone else", run: with(func(r *githubapi.WorkflowRun) { r.Actor = mallory }), why: "started by mallory (id 666)"},
		{name: "a login taken over: the id differs", run: with(func(r *githubapi.WorkflowRun) { r.Actor.ID = 7 }), why: "not the bot's user"},
		{name: "run again by someone else", run: with(func(r *githubapi.WorkflowRun) { r.TriggeringActor = mallory }), why: "run again by mallory"},
		{name: "started by a push", run: with(func(r *githubapi.WorkflowRun) { r.Event = "push" }), why: `the event "push"`},
		{name: "on another branch", run: with(func(r *githubapi.WorkflowRun) { r.HeadBranch = "evil" }), why: `on the branch "evil"`},
		{name: "of another workflow", run: with(func(r *githubapi.WorkflowRun) { r.Path = ".github/workflows/other.yml" }), why: "of the workflow"},
		{name: "of the workflow at another ref", run: with(func(r *githubapi.WorkflowRun) { r.Path += "@evil" }), why: "of the workflow"},
		{name: "unnamed dispatch: created since", run: with(func(r *githubapi.WorkflowRun) { r.CreatedAt = dispatched.Add(-30 * time.Second) }), unnamed: true, mine: true},
		{name: "unnamed dispatch: created long before", run: with(func(r *githubapi.WorkflowRun) { r.CreatedAt = dispatched.Add(-2 * time.Hour) }), unnamed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &follow{id: "req-1", self: self, ref: "main", unnamed: tc.unnamed, dispatched: dispatched,
				ignored: map[int64]bool{}, log: slog.New(slog.DiscardHandler)}
			if why := f.notOurs(tc.run, "kusion-run.yml"); (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
				t.Errorf("not ours because %q, want %q", why, tc.why)
			}
			if got := f.mine("kusion-run.yml")(tc.run); got != tc.mine {
				t.Errorf("mine = %v, want %v", got, tc.mine)
			}
			if tc.why != "" && !f.ignored[tc.run.ID] {
				t.Error("a run named as ours by someone else was not noted (to be logged once)")
			}
		})
	}
}

// zipOf is a zip of files, each stored with the size its header claims
// (claims[name], else its own).
func zipOf(t *testing.T, files map[string]string, claims map[string]uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		size, ok := claims[name]
		if !ok {
			size = uint64(len(body))
		}
		w, err := zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Store, CRC32: crc32.ChecksumIEEE([]byte(body)),
			CompressedSize64: uint64(len(body)), UncompressedSize64: size})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestResultArtifact: a run's result is the one file of its artifact, read
// within the limit whatever the zip's header claims; anything else is an
// error saying what is wrong with it.
func TestResultArtifact(t *testing.T) {
	const limit = 64
	for _, tc := range []struct {
		name    string
		raw     func(t *testing.T) []byte
		want    string
		wantErr string
	}{
		{name: "one file", raw: func(t *testing.T) []byte { return zipOf(t, map[string]string{"result.json": `{"ok":true}`}, nil) }, want: `{"ok":true}`},
		{name: "a folder beside it", raw: func(t *testing.T) []byte {
			return zipOf(t, map[string]string{"dir/": "", "dir/result.json": "r"}, nil)
		}, want: "r"},
		{name: "two files", raw: func(t *testing.T) []byte { return zipOf(t, map[string]string{"a": "1", "b": "2"}, nil) }, wantErr: "holds 2 files"},
		{name: "no file", raw: func(t *testing.T) []byte { return zipOf(t, nil, nil) }, wantErr: "holds 0 files"},
		{name: "not a zip", raw: func(*testing.T) []byte { return []byte("{}") }, wantErr: "not a zip"},
		{name: "larger than the limit", raw: func(t *testing.T) []byte {
			return zipOf(t, map[string]string{"r": strings.Repeat("x", limit+1)}, nil)
		}, wantErr: "more than 64 bytes"},
		// The reader stops where the header said the file ends.
		{name: "larger than its header claims", raw: func(t *testing.T) []byte {
			return zipOf(t, map[string]string{"r": strings.Repeat("x", limit+1)}, map[string]uint64{"r": 10})
		}, wantErr: "not a valid zip file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := unzipOne(tc.raw(t), limit)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("read %q, %v; want an error saying %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("read %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestConclusionWords: how a run that left no result is said to have
// ended, in the error the pull request shows.
func TestConclusionWords(t *testing.T) {
	for c, want := range map[string]string{
		"": "without a conclusion", "failure": "in failure", "cancelled": "cancelled", "timed_out": "timed out",
		"startup_failure": "startup failure", "success": "success",
	} {
		if got := conclusion(c); got != want {
			t.Errorf("conclusion(%q) = %q, want %q", c, got, want)
		}
	}
}
