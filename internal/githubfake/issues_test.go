package githubfake

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"
)

// TestIssues: issues are opened, read, listed by label and state and
// edited as GitHub documents, each answer checked against the
// description; a body past 65,536 characters is GitHub's 422.
func TestIssues(t *testing.T) {
	for _, id := range []string{"issues/create", "issues/get", "issues/update", "issues/list-for-repo"} {
		if issueHandler(id) == nil {
			t.Errorf("%s has no handler", id)
		}
	}
	s := New(t)
	gh := client(t, s)
	ctx := context.Background()
	s.SetPullRequest("o", "r", 7, "abc", "main", false)
	labels := []string{"kusion-drift"}
	a, _, err := gh.Issues.Create(ctx, "o", "r", &github.IssueRequest{Title: github.String("a"), Body: github.String("body a"), Labels: &labels})
	if err != nil {
		t.Fatal(err)
	}
	if a.GetNumber() != 8 || a.GetState() != "open" || len(a.Labels) != 1 || a.Labels[0].GetName() != "kusion-drift" || a.GetUser().GetLogin() != defaultActorLogin {
		t.Errorf("created %+v: want #8 (after pull request #7), open, labelled, by the token's user", a)
	}
	if _, _, err := gh.Issues.Create(ctx, "o", "r", &github.IssueRequest{Title: github.String("b"), Body: github.String("body b")}); err != nil {
		t.Fatal(err)
	}
	closed := "closed"
	if _, _, err := gh.Issues.Edit(ctx, "o", "r", 8, &github.IssueRequest{State: &closed, StateReason: github.String("completed")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		state, label string
		want         []int
	}{
		{"", "", []int{9}},
		{"all", "", []int{9, 8}},
		{"closed", "kusion-drift", []int{8}},
		{"open", "kusion-drift", nil},
	} {
		opts := &github.IssueListByRepoOptions{State: tc.state}
		if tc.label != "" {
			opts.Labels = []string{tc.label}
		}
		is, _, err := gh.Issues.ListByRepo(ctx, "o", "r", opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, i := range is {
			got = append(got, i.GetNumber())
		}
		if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Errorf("state %q label %q: %v, want %v", tc.state, tc.label, got, tc.want)
		}
	}
	got, _, err := gh.Issues.Get(ctx, "o", "r", 8)
	if err != nil || got.GetState() != "closed" || got.GetStateReason() != "completed" || got.ClosedAt == nil {
		t.Errorf("get #8: %+v, %v: want closed, completed", got, err)
	}
	if _, resp, err := gh.Issues.Get(ctx, "o", "r", 99); err == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("get of a missing issue: %v", err)
	}
}

func TestIssueBodyLength(t *testing.T) {
	s := newServer(t, false, nil)
	gh := client(t, s)
	ctx := context.Background()
	if _, _, err := gh.Issues.Create(ctx, "o", "r", &github.IssueRequest{Title: github.String("t"), Body: github.String(strings.Repeat("é", 65536))}); err != nil {
		t.Fatalf("a body at the limit: %v", err)
	}
	long := strings.Repeat("x", 65537)
	for _, create := range []bool{true, false} {
		var err error
		if create {
			_, _, err = gh.Issues.Create(ctx, "o", "r", &github.IssueRequest{Title: github.String("t"), Body: &long})
		} else {
			_, _, err = gh.Issues.Edit(ctx, "o", "r", 1, &github.IssueRequest{Body: &long})
		}
		var er *github.ErrorResponse
		if !errors.As(err, &er) || er.Response.StatusCode != http.StatusUnprocessableEntity || len(er.Errors) != 1 ||
			er.Errors[0].Message != "body is too long (maximum is 65536 characters)" {
			t.Errorf("create=%v: %v, want GitHub's 422 for a long body", create, err)
		}
	}
	if is := s.Issues("o", "r"); len(is) != 1 || len([]rune(is[0].Body)) != 65536 {
		t.Error("a refused body was kept")
	}
}
