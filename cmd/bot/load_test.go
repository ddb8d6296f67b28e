package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// What a stranger who knows the bot's URL, and no secret, can make it do;
// and what one who captured a signed delivery can.

// post sends body to url as a stranger would: headers of its choosing, no
// retry. A transport error is returned as such: a bot that closes the
// connection on an oversized request has refused it too.
func post(url string, headers map[string]string, body []byte) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, nil
}

func hubHeaders(event, deliveryID string) map[string]string {
	return map[string]string{"Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/5a3e1c9",
		"X-GitHub-Event": event, "X-GitHub-Delivery": deliveryID}
}

func signature(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// peakMemory is the most resident memory process pid has had (VmHWM).
func peakMemory(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("the bot's memory: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// harmlessComment is a signed-able comment on a pull request that is no
// command: a delivery the bot verifies, reads and ignores.
func (w *world) harmlessComment() map[string]any {
	ev := w.payload("issue_comment", "created")
	ev["issue"].(map[string]any)["pull_request"] = map[string]any{"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/2"}
	ev["comment"].(map[string]any)["body"] = "looks good"
	return ev
}

const maxMemory = 300 << 20

func TestUnauthenticatedFloodStaysBounded(t *testing.T) {
	w := newWorld(t)
	bot := w.bots[0]
	before := peakMemory(t, bot.proc.Process.Pid)

	// 40 strangers at once, each with a body at GitHub's cap (the most
	// the bot may read), half unsigned and half with a well-formed
	// signature made with a guessed secret, which makes the bot read
	// the whole body before it can tell.
	body := bytes.Repeat([]byte{' '}, 25<<20)
	copy(body, `{"zen":"`)
	const n = 40
	type result struct {
		status int
		err    error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	first := make(chan struct{})
	var once sync.Once
	for i := range n {
		wg.Go(func() {
			defer once.Do(func() { close(first) })
			h := hubHeaders("issue_comment", fmt.Sprintf("%08x-cc78-11e3-81ab-4c9367dc0958", i))
			if i%2 == 1 {
				h["X-Hub-Signature-256"] = signature("a-guessed-secret", body)
			}
			results[i].status, results[i].err = post(w.url+"/webhook", h, body)
		})
	}
	// GitHub's own delivery, in the middle of the flood and after it.
	<-first
	during := githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.harmlessComment())
	wg.Wait()
	after := githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.harmlessComment())
	peak := peakMemory(t, bot.proc.Process.Pid)

	counts := map[string]int{}
	for i, r := range results {
		switch {
		case r.err != nil:
			counts["connection closed"]++
		case r.status >= 200 && r.status < 300:
			t.Errorf("stranger %d: answered %d, taken", i, r.status)
		default:
			counts[strconv.Itoa(r.status)]++
		}
	}
	t.Logf("peak resident memory %d MiB before the flood, %d MiB after; answers %v", before>>20, peak>>20, counts)
	if peak > maxMemory {
		t.Errorf("the bot's peak resident memory reached %d MiB under the flood, over %d MiB", peak>>20, maxMemory>>20)
	}
	for answer, k := range counts {
		if answer != "401" && answer != "503" && answer != "connection closed" {
			t.Errorf("%d strangers were answered %s, want 401 (no or a wrong signature) or 503 (no room)", k, answer)
		}
	}
	for name, d := range map[string]githubfake.Delivered{"during the flood": during, "after the flood": after} {
		if d.Status != http.StatusOK || !strings.Contains(d.Body, "ignored") {
			t.Errorf("GitHub's delivery %s: answered %d %s, want it read and ignored (200)", name, d.Status, d.Body)
		}
	}
}

func TestDeliveryIDsNotGitHubsRefused(t *testing.T) {
	w := newWorld(t)
	bot := w.bots[0]
	before := peakMemory(t, bot.proc.Process.Pid)
	calls := len(w.gh.Calls())
	ping, err := json.Marshal(githubfake.Event(t, "ping", ""))
	if err != nil {
		t.Fatal(err)
	}
	sig := signature(secret, ping)

	// Signed pings (a captured body will do: the id is not signed) with
	// 900 KB delivery ids, ten at a time; then ids that fit in a header
	// but are no GUID.
	huge := strings.Repeat("72d3162e-cc78-11e3-81ab-4c9367dc0958", 900<<10/36)
	send := func(count int, id func(i int) string) map[string]int {
		var mu sync.Mutex
		counts := map[string]int{}
		var wg sync.WaitGroup
		sem := make(chan struct{}, 10)
		for i := range count {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				h := hubHeaders("ping", id(i))
				h["X-Hub-Signature-256"] = sig
				status, err := post(w.url+"/webhook", h, ping)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					counts["connection closed"]++
				} else {
					counts[strconv.Itoa(status)]++
				}
			})
		}
		wg.Wait()
		return counts
	}
	hugeIDs := send(300, func(i int) string { return fmt.Sprintf("%s%d", huge, i) })
	longIDs := send(300, func(i int) string { return fmt.Sprintf("%d-%s", i, strings.Repeat("a", 30<<10)) })
	shortIDs := send(3, func(i int) string { return []string{"1", "delivery", "72d3162e-cc78-11e3-81ab-4c9367dc095g"}[i] })
	peak := peakMemory(t, bot.proc.Process.Pid)
	t.Logf("peak resident memory %d MiB before, %d MiB after; 900 KB ids: %v; 30 KB ids: %v; short ids: %v", before>>20, peak>>20, hugeIDs, longIDs, shortIDs)

	for name, counts := range map[string]map[string]int{"900 KB ids": hugeIDs, "30 KB ids": longIDs, "short ids": shortIDs} {
		for answer := range counts {
			if s, err := strconv.Atoi(answer); err == nil && s < 400 {
				t.Errorf("%s: %d answered %s, taken", name, counts[answer], answer)
			}
		}
	}
	for answer, k := range hugeIDs {
		if answer != "431" && answer != "400" && answer != "connection closed" {
			t.Errorf("%d deliveries with 900 KB ids were answered %s, want 431 (headers too large)", k, answer)
		}
	}
	if longIDs["400"] != 300 || shortIDs["400"] != 3 {
		t.Errorf("delivery ids that are no GUID: answered %v and %v, want 400 each", longIDs, shortIDs)
	}
	if peak > maxMemory {
		t.Errorf("the bot's peak resident memory reached %d MiB, over %d MiB", peak>>20, maxMemory>>20)
	}
	// Still serving GitHub.
	if d := githubfake.Deliver(t, w.url+"/webhook", secret, "ping", githubfake.Event(t, "ping", "")); d.Status != http.StatusOK {
		t.Errorf("GitHub's ping after the attack: answered %d %s", d.Status, d.Body)
	}
	if got := w.gh.Calls()[calls:]; len(got) != 0 {
		t.Errorf("refused deliveries made %d calls to GitHub", len(got))
	}
}

func TestReplayedCommandRunsOnce(t *testing.T) {
	w := newWorld(t)
	const number, head = 51, "5151515151515151515151515151515151515151"
	w.pullRequest(number, head)
	w.gh.SetPullRequestDetails(w.owner, w.repo, number, "author-dev", true)
	w.gh.SetMergeableState(w.owner, w.repo, number, "clean")
	w.gh.SetPermission(w.owner, w.repo, "writer", "write")
	w.gh.SetPermission(w.owner, w.repo, "reviewer", "write")
	w.gh.SetReviews(w.owner, w.repo, number, []githubfake.Review{{User: "reviewer", State: "APPROVED", CommitID: head}})
	ev := w.prComment(number, "writer", "/kusion apply")

	if d := githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", ev); d.Status != http.StatusAccepted {
		t.Fatalf("the command's delivery answered %d %s", d.Status, d.Body)
	}
	w.waitFor("the apply's report", func() bool { return w.commentsContaining(number, "Applied stack") == 1 })
	s := w.store()

	// The same signed body under a new delivery id, to the same bot: the
	// comment is known.
	if d := githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", ev); d.Status != http.StatusOK || !strings.Contains(d.Body, "duplicate") {
		t.Errorf("the replay to the same bot answered %d %s, want 200 duplicate", d.Status, d.Body)
	}
	// After a restart, and to a second replica at once: nothing in
	// memory, the comment's reaction says it was taken.
	w.bots[0].proc.Process.Kill()
	w.bots[0].proc.Wait()
	restarted, replica := w.start(), w.start()
	for _, b := range []*botProc{restarted, replica} {
		githubfake.Deliver(t, b.url+"/webhook", secret, "issue_comment", ev)
	}
	for i, b := range []*botProc{restarted, replica} {
		w.waitFor(fmt.Sprintf("bot %d to decide on the replay", i+1), func() bool {
			logs := b.logs.String()
			return strings.Contains(logs, "the command was taken before") || strings.Contains(logs, `"msg":"running"`)
		})
		if logs := b.logs.String(); !strings.Contains(logs, "the command was taken before") {
			t.Errorf("bot %d ran the replayed command again:\n%s", i+1, logs)
		}
	}

	if revs, err := s.Revisions(context.Background(), "web", "default"); err != nil || len(revs) != 1 {
		t.Errorf("releases %v (%v), want one", revs, err)
	}
	if n := w.commentsContaining(number, "Applied stack"); n != 1 {
		t.Errorf("%d apply reports, want 1", n)
	}
	if got := strings.Join(w.gh.Reactions(w.owner, w.repo, commentID(ev)), ","); got != "eyes,rocket" {
		t.Errorf("reactions %s, want eyes,rocket", got)
	}
}

// stackEntries writes the stack's files into tw under top, as GitHub's
// archive holds them.
func stackEntries(t *testing.T, w *world, tw *tar.Writer, top string) {
	t.Helper()
	for _, f := range []string{"apps/web/project.yaml", "apps/web/dev/stack.yaml", "apps/web/dev/spec.yaml"} {
		b, err := os.ReadFile(w.tree + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		tw.WriteHeader(&tar.Header{Name: top + f, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))})
		tw.Write(b)
	}
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	gz.Write(b)
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zerosBomb is an archive of the stack and a file of 1 GiB of zeros, in
// about a megabyte: gzip members one after another make one stream (as
// gunzip reads them), and after the file's header everything, the tar's
// end included, is zeros, so one compressed megabyte of zeros is repeated.
func zerosBomb(t *testing.T, w *world) []byte {
	var head bytes.Buffer
	tw := tar.NewWriter(&head)
	top := "Codertocat-Hello-World-abcdef0/"
	stackEntries(t, w, tw, top)
	if err := tw.WriteHeader(&tar.Header{Name: top + "apps/web/dev/zeros", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	out := gzipped(t, head.Bytes())
	mib := gzipped(t, make([]byte, 1<<20))
	for range 1 << 10 {
		out = append(out, mib...)
	}
	return append(out, gzipped(t, make([]byte, 1024))...)
}

// manyFiles is an archive of the stack and n empty files.
func manyFiles(t *testing.T, w *world, n int) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	top := "Codertocat-Hello-World-abcdef0/"
	stackEntries(t, w, tw, top)
	for i := range n {
		tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("%sapps/web/dev/many/%05d", top, i), Typeflag: tar.TypeReg, Mode: 0o644})
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return gzipped(t, buf.Bytes())
}

func TestHostileArchivesRefused(t *testing.T) {
	// The bot's temporary folder, to see that nothing stays there; in
	// memory when the machine has it, as the test writes 20,000 files.
	tmp, err := os.MkdirTemp(memDir(), "bot-tmp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	w := newWorld(t, withEnv("TMPDIR="+tmp, "KUSIONPR_MAX_CHECKOUT_FILES=20000"))
	zeros, files := zerosBomb(t, w), manyFiles(t, w, 20002)
	for _, tc := range []struct {
		name    string
		number  int
		tgz     []byte
		setting string
		says    string
	}{
		{"1 GiB of zeros", 61, zeros, "KUSIONPR_MAX_CHECKOUT_BYTES", "unpacks to more than 1 GiB"},
		{"20,002 files", 62, files, "KUSIONPR_MAX_CHECKOUT_FILES", "more than 20000 files and folders"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Logf("the archive is %d KiB of gzip", len(tc.tgz)>>10)
			head := fmt.Sprintf("%040x", 0xfeed00+tc.number)
			w.pullRequest(tc.number, head)
			w.gh.SetTarball(w.owner, w.repo, head, tc.tgz)
			// A preview needs no permission: anyone may comment it.
			githubfake.Deliver(t, w.url+"/webhook", secret, "issue_comment", w.prComment(tc.number, "stranger", "/kusion preview"))
			w.waitFor("the refusal", func() bool { return w.commentsContaining(tc.number, "refused") == 1 })
			for _, want := range []string{tc.setting, tc.says} {
				if w.commentsContaining(tc.number, want) != 1 {
					t.Errorf("the reply does not say %q: %+v", want, w.gh.Comments(w.owner, w.repo, tc.number))
				}
			}
			w.waitFor("the temporary folder to be empty", func() bool {
				left, _ := os.ReadDir(tmp)
				return len(left) == 0
			})
		})
	}
}

// memDir is a memory file system's folder if the machine has one, else
// the default temporary folder.
func memDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return ""
}
