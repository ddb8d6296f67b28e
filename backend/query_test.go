package backend

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// postgresURL is a fresh database on the test environment's PostgreSQL.
func postgresURL(t *testing.T) string { return testenv.Postgres(t).NewBucket(t) }

// TestQueryAcrossProjects: the database answers every release of a
// workspace and what runs now, across projects, newest first, from the
// rows written with the releases' objects.
func TestQueryAcrossProjects(t *testing.T) {
	ctx := context.Background()
	u := postgresURL(t)
	s := openURL(t, u)
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { now = now.Add(time.Second); return now }

	// web and api in prod, web in dev: three releases each, the last of
	// api's in prod still applying.
	for _, pw := range [][2]string{{"web", "prod"}, {"api", "prod"}, {"web", "dev"}} {
		for i := range 3 {
			r := release(pw[0], pw[1], model.PhaseApplying, fmt.Sprintf("user%d", i))
			r.Origin.PullRequest = 10 + i
			if _, err := s.Begin(ctx, r); err != nil {
				t.Fatal(err)
			}
			if pw[0] == "api" && i == 2 {
				continue
			}
			r.Phase = model.PhaseSucceeded
			if err := s.Update(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Another store in the same database, under a prefix: not its releases.
	other := openURL(t, u+"&prefix=elsewhere") // the URL has sslmode=
	if _, err := other.Begin(ctx, release("web", "prod", model.PhaseApplying, "mallory")); err != nil {
		t.Fatal(err)
	}

	type row struct {
		project string
		rev     uint64
		phase   model.Phase
		user    string
	}
	rows := func(rels []*model.Release) []row {
		var out []row
		for _, r := range rels {
			if r.Spec != nil || r.State != nil {
				t.Errorf("release %s/%d came with its spec or state", r.Project, r.Revision)
			}
			out = append(out, row{r.Project, r.Revision, r.Phase, r.Origin.User})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		q    ReleaseQuery
		want []row
		more int
	}{
		{"workspace", ReleaseQuery{Workspace: "prod"}, []row{
			{"api", 3, model.PhaseApplying, "user2"}, {"api", 2, model.PhaseSucceeded, "user1"}, {"api", 1, model.PhaseSucceeded, "user0"},
			{"web", 3, model.PhaseSucceeded, "user2"}, {"web", 2, model.PhaseSucceeded, "user1"}, {"web", 1, model.PhaseSucceeded, "user0"},
		}, 0},
		{"limit", ReleaseQuery{Workspace: "prod", Limit: 2}, []row{
			{"api", 3, model.PhaseApplying, "user2"}, {"api", 2, model.PhaseSucceeded, "user1"},
		}, 4},
		{"project", ReleaseQuery{Project: "web", Limit: 4}, []row{
			{"web", 3, model.PhaseSucceeded, "user2"}, {"web", 2, model.PhaseSucceeded, "user1"}, {"web", 1, model.PhaseSucceeded, "user0"},
			{"web", 3, model.PhaseSucceeded, "user2"},
		}, 2},
		{"running", ReleaseQuery{Running: true}, []row{{"api", 3, model.PhaseApplying, "user2"}}, 0},
		{"none", ReleaseQuery{Workspace: "staging"}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rels, more, err := s.Query(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := rows(rels); fmt.Sprint(got) != fmt.Sprint(tc.want) || more != tc.more {
				t.Errorf("Query(%+v) = %v, %d more\nwant %v, %d more", tc.q, got, more, tc.want, tc.more)
			}
		})
	}
	if rels, _, _ := s.Query(ctx, ReleaseQuery{Running: true}); len(rels) == 1 && rels[0].Origin.PullRequest != 12 {
		t.Errorf("the running release's origin: %+v", rels[0].Origin)
	}
	if _, _, err := s.Query(ctx, ReleaseQuery{Workspace: "../prod"}); err == nil {
		t.Error("a workspace name with a path in it was queried")
	}
}

// TestQueryRowFollowsTheObject: a create-only write that loses its slot
// changes neither the object nor the row, and the row follows every
// update, a takeover's included.
func TestQueryRowFollowsTheObject(t *testing.T) {
	ctx := context.Background()
	s := openURL(t, postgresURL(t))
	s.Lease = time.Minute
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return now }
	first := release("p", "w", model.PhaseApplying, "alice")
	if _, err := s.Begin(ctx, first); err != nil {
		t.Fatal(err)
	}
	thief := release("p", "w", model.PhaseSucceeded, "mallory")
	thief.Revision = 1
	if err := s.Create(ctx, thief); !errors.Is(err, ErrRevisionTaken) {
		t.Fatalf("Create on a taken slot: %v", err)
	}
	rels, _, err := s.Query(ctx, ReleaseQuery{})
	if err != nil || len(rels) != 1 || rels[0].Origin.User != "alice" || rels[0].Phase != model.PhaseApplying {
		t.Fatalf("after a lost create the rows are %v (%v), want alice's applying release alone", rels, err)
	}
	// alice dies; bob takes over past the lease.
	now = now.Add(2 * time.Minute)
	if _, err := s.Begin(ctx, release("p", "w", model.PhaseApplying, "bob")); err != nil {
		t.Fatal(err)
	}
	rels, _, err = s.Query(ctx, ReleaseQuery{Running: true})
	if err != nil || len(rels) != 1 || rels[0].Revision != 2 || rels[0].Origin.User != "bob" {
		t.Fatalf("running after the takeover: %v (%v), want bob's release 2 alone", rels, err)
	}
	got, _ := s.Get(ctx, "p", "w", 1)
	if all, _, _ := s.Query(ctx, ReleaseQuery{}); len(all) != 2 || all[1].Phase != model.PhaseFailed || all[1].Message != got.Message {
		t.Errorf("release 1's row %+v, its object says %s %q", all, got.Phase, got.Message)
	}
}

// TestQueryNeedsADatabase: the object stores say what answers the
// question rather than listing every release.
func TestQueryNeedsADatabase(t *testing.T) {
	for _, u := range []string{"mem://", fileURL(t.TempDir())} {
		s := openURL(t, u)
		if s.Queries() {
			t.Errorf("%s claims to answer queries", u)
		}
		if _, _, err := s.Query(context.Background(), ReleaseQuery{Workspace: "prod"}); !errors.Is(err, ErrNoQueries) {
			t.Errorf("%s: Query = %v, want ErrNoQueries", u, err)
		}
	}
}
