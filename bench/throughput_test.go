package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/backend"
	"github.com/kusionpr/kusionpr/internal/githubfake"
	"github.com/kusionpr/kusionpr/internal/testenv"
)

// The throughput scenario: a repository of 50 stacks, each its own project
// with a ConfigMap, and 100 merges over them (two per stack), delivered
// over a minute to two bot replicas taking turns, sharing one release
// store: a bucket on MinIO, or a PostgreSQL database.
const (
	tputStacks = 50
	tputMerges = 100
	tputWindow = time.Minute
)

// BenchmarkMergeThroughput delivers 100 merges over 50 stacks within a
// minute, alternately to two bots on one store, each merge as GitHub
// sends it (pull_request closed) at its place in the minute, a stack's two
// merges one after the other. Metrics:
// "p50-ms" and "p99-ms", from a merge's delivery to the end of its release;
// "applied", the merges with exactly one release; "skipped", those with
// none (an older merge whose stack a newer one had applied first: right,
// but counted); "late", the stacks whose older merge applied after the
// newer (merge order broken); "cpu-s", the two bots' CPU per iteration;
// "rss-MB", the larger bot's peak resident memory.
func BenchmarkMergeThroughput(b *testing.B) { mergeThroughput(b, "") }

// BenchmarkMergeThroughputPostgres is the same with the releases in
// PostgreSQL: its figures stand beside MinIO's of the same run.
func BenchmarkMergeThroughputPostgres(b *testing.B) {
	mergeThroughput(b, testenv.Postgres(b).NewBucket(b))
}

// mergeThroughput runs the scenario with the bots' releases in store
// (a bucket on MinIO when "").
func mergeThroughput(b *testing.B, storeURL string) {
	w := startBotWorld(b, storeURL)
	second := &testenv.LogBuffer{}
	urls := []string{w.url, w.startBot(b, binary(b, "../cmd/bot"), second)}
	s := suffix()
	ns := "tput-" + s
	kubectl(b, testenv.Kubeconfig(b), "create", "namespace", ns)
	b.Cleanup(func() { kubectl(b, testenv.Kubeconfig(b), "delete", "namespace", ns, "--wait=false") })
	project := func(i int) string { return fmt.Sprintf("t%02d-%s", i, s) }
	writeStack := func(i, version int) {
		dir := filepath.Join(w.tree, fmt.Sprintf("apps/t%02d", i))
		writeFile(b, filepath.Join(dir, "project.yaml"), "name: "+project(i)+"\n")
		writeFile(b, filepath.Join(dir, "dev", "stack.yaml"), "name: dev\n")
		writeFile(b, filepath.Join(dir, "dev", "spec.yaml"), fmt.Sprintf(`resources:
- id: v1:ConfigMap:%[1]s:t%02[2]d
  type: Kubernetes
  attributes: {apiVersion: v1, kind: ConfigMap, metadata: {name: t%02[2]d, namespace: %[1]s}, data: {version: "%[3]d"}}
`, ns, i, version))
	}
	for i := range tputStacks {
		writeStack(i, -1)
	}
	var bucket string
	for _, kv := range w.env {
		if v, ok := strings.CutPrefix(kv, "KUSIONPR_BACKEND="); ok {
			bucket = v
		}
	}
	store, err := backend.Open(context.Background(), bucket)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()

	var p50, p99, applied, skipped, late float64
	for it := 0; b.Loop(); it++ {
		// Each merge changes one stack; the trees are made before the
		// clock starts.
		type merge struct {
			number int
			sha    string
			stack  int
			body   []byte
			sig    string
		}
		merges := make([]merge, tputMerges)
		closed := w.payload(b, "pull_request", "closed")
		base := time.Now().Truncate(time.Second)
		for m := range tputMerges {
			// A stack's two merges are consecutive, 0.6 s apart, and go
			// to different bots: merge order is tested, not assumed.
			stack, version := m/2, it*2+m%2
			writeStack(stack, version)
			number, sha := 5000+it*1000+m, fmt.Sprintf("%040x", 0x7b0000+it*1000+m)
			w.gh.SetTree(w.owner, w.repo, sha, w.tree)
			w.gh.SetPullRequest(w.owner, w.repo, number, fmt.Sprintf("%040x", 0x7c0000+it*1000+m), "master", false)
			w.gh.SetPullFiles(w.owner, w.repo, number, []githubfake.PullFile{{Filename: fmt.Sprintf("apps/t%02d/dev/spec.yaml", stack), Status: "modified"}})
			at := base.Add(time.Duration(m) * tputWindow / tputMerges)
			w.gh.MergePullRequestAt(w.owner, w.repo, number, sha, at)
			ev := deepCopy(b, closed)
			pr := ev["pull_request"].(map[string]any)
			pr["number"], pr["merged"], pr["merge_commit_sha"], pr["merged_at"] = float64(number), true, sha, at.UTC().Format(time.RFC3339Nano)
			ev["number"] = float64(number)
			d := w.newDelivery(b, "pull_request", ev)
			merges[m] = merge{number: number, sha: sha, stack: stack, body: d.body, sig: d.signature}
		}
		cpu0 := botsCPU(b, w)
		delivered := make([]time.Time, tputMerges)
		start := time.Now()
		var wg sync.WaitGroup
		for m, mg := range merges {
			time.Sleep(time.Until(start.Add(time.Duration(m) * tputWindow / tputMerges)))
			delivered[m] = time.Now()
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodPost, urls[m%2]+"/webhook", bytes.NewReader(mg.body))
				req.Header.Set("X-GitHub-Event", "pull_request")
				req.Header.Set("X-GitHub-Delivery", deliveryID())
				req.Header.Set("X-Hub-Signature-256", mg.sig)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Errorf("delivering merge %d: %v", m, err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					b.Errorf("merge %d answered %d", m, resp.StatusCode)
				}
			})
		}
		wg.Wait()
		// Done when every stack's latest release is its last merge's and
		// ended.
		w.waitFor(b, "every merge applied", 5*time.Minute, func() bool {
			for i := range tputStacks {
				rel, err := store.Latest(context.Background(), project(i), "default")
				if err != nil || rel == nil || rel.Origin == nil || rel.Origin.SHA != merges[2*i+1].sha || !rel.Phase.Ended() {
					return false
				}
			}
			return true
		})
		cpu := botsCPU(b, w) - cpu0
		var lat []time.Duration
		applied, skipped, late = 0, 0, 0
		for i := range tputStacks {
			revs, err := store.Revisions(context.Background(), project(i), "default")
			if err != nil {
				b.Fatal(err)
			}
			count, order := map[string]int{}, map[string]uint64{}
			for _, rev := range revs {
				rel, err := store.Get(context.Background(), project(i), "default", rev)
				if err != nil {
					b.Fatal(err)
				}
				count[rel.Origin.SHA]++
				order[rel.Origin.SHA] = rev
				for m, mg := range merges {
					if mg.sha == rel.Origin.SHA && rel.Phase == "succeeded" {
						lat = append(lat, rel.ModifiedTime.Sub(delivered[m]))
					}
				}
			}
			first, second := merges[2*i].sha, merges[2*i+1].sha
			for _, sha := range []string{first, second} {
				switch count[sha] {
				case 1:
					applied++
				case 0:
					skipped++
				}
			}
			// The older merge applied after the newer: merge order broken.
			if count[first] > 0 && order[first] > order[second] {
				late++
			}
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		p50, p99 = float64(percentile(lat, 0.50).Milliseconds()), float64(percentile(lat, 0.99).Milliseconds())
		b.ReportMetric(cpu.Seconds(), "cpu-s")
	}
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p99, "p99-ms")
	b.ReportMetric(applied, "applied")
	b.ReportMetric(skipped, "skipped")
	b.ReportMetric(late, "late")
	b.ReportMetric(botsPeakMB(b, w), "rss-MB")
}

// botsCPU is the bots' CPU so far, user and system.
func botsCPU(b *testing.B, w *botWorld) time.Duration {
	b.Helper()
	var total time.Duration
	for _, p := range w.bots {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Process.Pid))
		if err != nil {
			b.Fatal(err)
		}
		// The fields after the command's closing parenthesis: utime is
		// the 12th, stime the 13th, in clock ticks (100 a second).
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(ut+st) * 10 * time.Millisecond
	}
	return total
}

// botsPeakMB is the larger bot's peak resident memory (VmHWM).
func botsPeakMB(b *testing.B, w *botWorld) float64 {
	b.Helper()
	var peak float64
	for _, p := range w.bots {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Process.Pid))
		if err != nil {
			b.Fatal(err)
		}
		for line := range strings.SplitSeq(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				peak = max(peak, kb/1024)
			}
		}
	}
	return peak
}
