package backend

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// TestCancelRequests: on every backend, a cancel of a stack nothing holds
// says what its latest release is; of requests made at once for a running
// release one stands and every asker is told whose; the holder finds it by
// revision, and its own writes of the release leave it standing; a request
// for another revision is none of this one's.
func TestCancelRequests(t *testing.T) {
	ctx := context.Background()
	for _, b := range allBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := openURL(t, b.url(t))
			var nothing *NothingRunningError
			if _, _, err := s.RequestCancel(ctx, "shop", "dev", "octocat", "stop"); !errors.As(err, &nothing) || !strings.Contains(err.Error(), "it has no release") {
				t.Fatalf("no release: %v", err)
			}
			done := release("shop", "dev", "succeeded", "ci")
			done.Revision = 1
			if err := s.Create(ctx, done); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.RequestCancel(ctx, "shop", "dev", "octocat", "stop"); !errors.As(err, &nothing) || !strings.Contains(err.Error(), "the latest release, 1, is succeeded") {
				t.Fatalf("an ended release: %v", err)
			}
			running := release("shop", "dev", "applying", "ci")
			if _, err := s.Begin(ctx, running); err != nil {
				t.Fatal(err)
			}
			if c, err := s.CancelRequest(ctx, "shop", "dev", running.Revision); c != nil || err != nil {
				t.Fatalf("before any request: %+v, %v", c, err)
			}
			if _, _, err := s.RequestCancel(ctx, "shop", "dev", " ", "stop"); err == nil {
				t.Fatal("a request naming nobody was taken")
			}
			var wg sync.WaitGroup
			got := make([]string, 6)
			for i := range got {
				wg.Go(func() {
					rel, c, err := s.RequestCancel(ctx, "shop", "dev", string(rune('a'+i)), "too slow")
					if err != nil || rel.Revision != running.Revision || c.Revision != running.Revision {
						t.Errorf("asker %d: %+v %+v %v", i, rel, c, err)
						return
					}
					got[i] = c.By
				})
			}
			wg.Wait()
			for _, by := range got[1:] {
				if by != got[0] {
					t.Fatalf("askers were told of different requests: %q", got)
				}
			}
			// The holder saves its state and heartbeat: the request stands.
			running.Message = "still applying"
			if err := s.Update(ctx, running); err != nil {
				t.Fatal(err)
			}
			c, err := s.CancelRequest(ctx, "shop", "dev", running.Revision)
			if err != nil || c == nil || c.By != got[0] || c.Reason != "too slow" || !strings.HasPrefix(c.String(), "cancelled by "+got[0]+" at ") {
				t.Fatalf("the holder finds %+v, %v", c, err)
			}
			if c, err := s.CancelRequest(ctx, "shop", "dev", running.Revision+1); c != nil || err != nil {
				t.Fatalf("the next revision has a request: %+v, %v", c, err)
			}
		})
	}
}
