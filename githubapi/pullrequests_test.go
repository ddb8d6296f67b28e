package githubapi_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// TestPullRequestFiles: every file of a pull request, page after page of
// 100, with renames' old paths, up to the 3,000 GitHub lists at most.
func TestPullRequestFiles(t *testing.T) {
	for _, tc := range []struct {
		name       string
		files      int
		wantListed int
		wantPages  int
	}{
		{"none", 0, 0, 1},
		{"one page", 100, 100, 1},
		{"a page and one", 101, 101, 2},
		{"past GitHub's 3,000", 3005, 3000, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := githubfake.New(t)
			c := newClient(t, gh)
			gh.SetPullRequest(owner, repo, 9, head, "main", false)
			var files []githubfake.PullFile
			for i := range tc.files {
				f := githubfake.PullFile{Filename: fmt.Sprintf("apps/s%04d/spec.yaml", i), Status: "modified"}
				if i == 1 {
					f.Status, f.PreviousFilename = "renamed", "apps/old/spec.yaml"
				}
				files = append(files, f)
			}
			gh.SetPullFiles(owner, repo, 9, files)
			got, err := c.PullRequestFiles(context.Background(), 9)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.wantListed {
				t.Fatalf("%d files, want %d", len(got), tc.wantListed)
			}
			for i, f := range got {
				if f.Path != files[i].Filename || f.Status != files[i].Status || f.PreviousPath != files[i].PreviousFilename {
					t.Fatalf("file %d read as %+v, want %+v", i, f, files[i])
				}
			}
			if pages := countOps(gh, "pulls/list-files"); pages != tc.wantPages {
				t.Errorf("%d pages read, want %d", pages, tc.wantPages)
			}
		})
	}
	gh := githubfake.New(t)
	if _, err := newClient(t, gh).PullRequestFiles(context.Background(), 404); err == nil || !strings.Contains(err.Error(), "#404") {
		t.Errorf("a pull request that does not exist: %v, want an error naming it", err)
	}
}

func countOps(gh *githubfake.Server, op string) int {
	n := 0
	for _, c := range gh.Calls() {
		if c.Operation == op {
			n++
		}
	}
	return n
}

// TestPullRequestsOfCommit: the pull requests a commit belongs to, in
// GitHub's order; none for a commit of no pull request.
func TestPullRequestsOfCommit(t *testing.T) {
	gh := githubfake.New(t)
	c := newClient(t, gh)
	for _, n := range []int{4, 7} {
		gh.SetPullRequest(owner, repo, n, head, "main", false)
	}
	gh.SetCommitPulls(owner, repo, head, []int{7, 4})
	for _, tc := range []struct {
		sha  string
		want []int
	}{
		{head, []int{7, 4}},
		{older, []int{}},
	} {
		got, err := c.PullRequestsOfCommit(context.Background(), tc.sha)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("pull requests of %s: %v, %v, want %v", tc.sha[:7], got, err, tc.want)
		}
	}
}

// TestRecentlyMerged: the pull requests merged since a time, newest first,
// with who merged them into which branch; those closed unmerged, merged
// before the time, or merged into another branch are left out, and the
// listing stops at the first pull request not updated since.
func TestRecentlyMerged(t *testing.T) {
	gh := githubfake.New(t)
	c := newClient(t, gh)
	now := time.Now().Truncate(time.Second)
	since := now.Add(-time.Hour)
	for _, pr := range []struct {
		number   int
		base     string
		mergedAt time.Time // zero: not merged
	}{
		{1, "main", now.Add(-2 * time.Hour)},
		{2, "main", now.Add(-30 * time.Minute)},
		{3, "main", time.Time{}},
		{4, "release", now.Add(-20 * time.Minute)},
		{5, "main", now.Add(-10 * time.Minute)},
	} {
		gh.SetPullRequest(owner, repo, pr.number, fmt.Sprintf("%040d", pr.number), pr.base, false)
		if !pr.mergedAt.IsZero() {
			gh.MergePullRequestAt(owner, repo, pr.number, fmt.Sprintf("%040x", 0xabc0+pr.number), pr.mergedAt)
		}
	}
	for _, tc := range []struct {
		base string
		want []int
	}{
		{"main", []int{5, 2}},
		{"", []int{5, 4, 2}},
		{"release", []int{4}},
		{"gone", nil},
	} {
		got, err := c.RecentlyMerged(context.Background(), tc.base, since)
		if err != nil {
			t.Fatal(err)
		}
		var numbers []int
		for _, m := range got {
			numbers = append(numbers, m.Number)
			if m.SHA != fmt.Sprintf("%040x", 0xabc0+m.Number) || m.MergedAt.Before(since) || m.Base == "" {
				t.Errorf("merged #%d read as %+v", m.Number, m)
			}
		}
		if !slices.Equal(numbers, tc.want) {
			t.Errorf("merged into %q since an hour: %v, want %v", tc.base, numbers, tc.want)
		}
	}
}

// TestCheckout: the repository at a ref arrives in the folder through
// GitHub's redirect to a pre-signed archive (the fake refuses a download
// that lost the redirect's token); a ref GitHub does not have, or an
// archive past the limits, leaves the folder empty.
func TestCheckout(t *testing.T) {
	src := t.TempDir()
	for name, text := range map[string]string{"README.md": "hi", "apps/web/spec.yaml": "kind: spec"} {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		ref     string
		lim     githubapi.ArchiveLimits
		wantErr string // a substring; "" for none
	}{
		{"a branch", "main", githubapi.ArchiveLimits{}, ""},
		{"a commit", head, githubapi.ArchiveLimits{}, ""},
		{"a ref GitHub lacks", "no-such-branch", githubapi.ArchiveLimits{}, "404"},
		{"too many files", "main", githubapi.ArchiveLimits{MaxFiles: 2}, "more than 2 files"},
		{"too many bytes", "main", githubapi.ArchiveLimits{MaxBytes: 5}, "more than 5 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := githubfake.New(t)
			c := newClient(t, gh)
			gh.SetTree(owner, repo, "main", src)
			gh.SetTree(owner, repo, head, src)
			dir := t.TempDir()
			err := c.Checkout(context.Background(), tc.ref, dir, tc.lim)
			got := filesUnder(t, dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want one with %q", err, tc.wantErr)
				}
				if len(got) != 0 {
					t.Errorf("left in the folder: %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "apps/web/spec.yaml")); err != nil || string(b) != "kind: spec" {
				t.Errorf("checked out %v; spec %q, %v", got, b, err)
			}
		})
	}
}

// filesUnder lists the files and folders under dir.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err == nil && p != dir {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
