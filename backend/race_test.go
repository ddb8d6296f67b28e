package backend

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// TestConcurrentAppliersAcrossProcesses runs 20 appliers on one stack, on
// S3, PostgreSQL and the HTTP store, ten in each of two processes: each
// waits its turn, holds the stack, saves its state and ends. Revisions must
// be contiguous, no two holders may overlap in time, and every release must
// keep what its own holder wrote.
func TestConcurrentAppliersAcrossProcesses(t *testing.T) {
	if u := os.Getenv("KUSIONPR_RACE_HELPER_URL"); u != "" {
		raceHelper(u, os.Getenv("KUSIONPR_RACE_HELPER_NAME"))
		return
	}
	for _, store := range testenv.ReleaseStores(t) {
		t.Run(store.Name, func(t *testing.T) { raceAcrossProcesses(t, store.NewBucket(t)) })
	}
}

func raceAcrossProcesses(t *testing.T, u string) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		lines []string
	)
	for p := 0; p < 2; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentAppliersAcrossProcesses$")
			cmd.Env = append(os.Environ(), "KUSIONPR_RACE_HELPER_URL="+u, fmt.Sprintf("KUSIONPR_RACE_HELPER_NAME=proc%d", p))
			out, err := cmd.CombinedOutput()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("process %d: %v\n%s", p, err, out)
			}
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "HELD ") || strings.HasPrefix(sc.Text(), "FAIL ") {
					lines = append(lines, sc.Text())
				}
			}
		}(p)
	}
	wg.Wait()

	type hold struct {
		user       string
		rev        uint64
		start, end int64
	}
	var holds []hold
	for _, l := range lines {
		if strings.HasPrefix(l, "FAIL ") {
			t.Errorf("applier: %s", l)
			continue
		}
		f := strings.Fields(l) // HELD user rev start end
		rev, _ := strconv.ParseUint(f[2], 10, 64)
		start, _ := strconv.ParseInt(f[3], 10, 64)
		end, _ := strconv.ParseInt(f[4], 10, 64)
		holds = append(holds, hold{f[1], rev, start, end})
	}
	if len(holds) != 20 {
		t.Fatalf("%d appliers held the stack, want 20", len(holds))
	}
	sort.Slice(holds, func(i, j int) bool { return holds[i].rev < holds[j].rev })
	s := openURL(t, u)
	ctx := context.Background()
	for i, h := range holds {
		if h.rev != uint64(i+1) {
			t.Fatalf("revisions are not contiguous: %d at position %d", h.rev, i+1)
		}
		if i > 0 && holds[i-1].end > h.start {
			t.Errorf("revision %d (%s) started %v before revision %d (%s) ended", h.rev, h.user,
				time.Duration(holds[i-1].end-h.start), holds[i-1].rev, holds[i-1].user)
		}
		r, err := s.Get(ctx, "p", "w", h.rev)
		if err != nil {
			t.Fatal(err)
		}
		if r.Origin.User != h.user || r.Phase != model.PhaseSucceeded || len(r.State.Resources) != 1 || r.State.Resources[0].ID != "hashicorp:race:marker:"+h.user {
			t.Errorf("release %d holds %s's %s release with state %v; want %s's, succeeded, with its marker", h.rev, r.Origin.User, r.Phase, r.State.Resources, h.user)
		}
	}
	if revs, _ := s.Revisions(ctx, "p", "w"); len(revs) != 20 {
		t.Errorf("%d releases stored, want 20", len(revs))
	}
}

// raceHelper is one process of the race: ten appliers, each trying until it
// has held the stack once. It prints HELD user revision start end (unix ns).
func raceHelper(u, name string) {
	ctx := context.Background()
	s, err := Open(ctx, u)
	if err != nil {
		fmt.Println("FAIL open:", err)
		return
	}
	var wg sync.WaitGroup
	var out sync.Mutex
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func(user string) {
			defer wg.Done()
			deadline := time.Now().Add(2 * time.Minute)
			for time.Now().Before(deadline) {
				r := release("p", "w", model.PhaseApplying, user)
				_, err := s.Begin(ctx, r)
				if errors.Is(err, ErrHeld) {
					time.Sleep(time.Duration(5+len(user)) * time.Millisecond)
					continue
				}
				if err != nil {
					out.Lock()
					fmt.Println("FAIL", user, err)
					out.Unlock()
					return
				}
				start := time.Now().UnixNano()
				r.State.Resources = model.Resources{{ID: "hashicorp:race:marker:" + user, Type: model.Terraform}}
				err = s.Update(ctx, r)
				time.Sleep(10 * time.Millisecond)
				end := time.Now().UnixNano()
				r.Phase = model.PhaseSucceeded
				if err == nil {
					err = s.Update(ctx, r)
				}
				out.Lock()
				if err != nil {
					fmt.Println("FAIL", user, err)
				} else {
					fmt.Println("HELD", user, r.Revision, start, end)
				}
				out.Unlock()
				return
			}
			out.Lock()
			fmt.Println("FAIL", user, "never got the stack")
			out.Unlock()
		}(fmt.Sprintf("%s-a%d", name, i))
	}
	wg.Wait()
}
