package githubapi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/githubapi"
	"github.com/kusionpr/kusionpr/internal/githubfake"
)

// TestFileAt: a file is read as the repository holds it at the ref asked
// (a branch's, not another's); a missing one is nil; one over the limit is
// refused, naming it.
func TestFileAt(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	c, err := githubapi.New("ghs_token", gh.URL, "octo", "infra", nil)
	if err != nil {
		t.Fatal(err)
	}
	tree := func(body string) string {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, ".github"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".github/kusionpr.yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	gh.SetTree("octo", "infra", "main", tree("executors: []\n"))
	gh.SetTree("octo", "infra", "feature", tree("executors: [{executor: in-process}]\n"))
	got, err := c.FileAt(ctx, ".github/kusionpr.yaml", "main", 1024)
	if err != nil || string(got) != "executors: []\n" {
		t.Fatalf("the main branch's file: %q, %v", got, err)
	}
	if got, err := c.FileAt(ctx, ".github/none.yaml", "main", 1024); got != nil || err != nil {
		t.Errorf("a missing file: %q, %v; want nil, nil", got, err)
	}
	if _, err := c.FileAt(ctx, ".github/kusionpr.yaml", "feature", 8); err == nil || !strings.Contains(err.Error(), ".github/kusionpr.yaml") {
		t.Errorf("a file over the limit: %v; want it refused, named", err)
	}
}

// TestFolderAt: every file under a folder at the ref asked, nested ones
// included, keyed below the folder; a missing folder is nil; a folder past
// the limits is refused, naming the limit.
func TestFolderAt(t *testing.T) {
	ctx := context.Background()
	gh := githubfake.New(t)
	c, err := githubapi.New("ghs_token", gh.URL, "octo", "infra", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for p, body := range map[string]string{"policy/main.rego": "package main\n", "policy/lib/limits.rego": "package lib\n", "policyx/other.rego": "x", "apps/web/spec.yaml": "y"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644)
	}
	const base = "b000000000000000000000000000000000000000"
	gh.SetTree("octo", "infra", base, dir)
	files, err := c.FolderAt(ctx, "policy", base, githubapi.ArchiveLimits{MaxFiles: 10, MaxBytes: 1 << 20})
	if err != nil || len(files) != 2 || string(files["main.rego"]) != "package main\n" || string(files["lib/limits.rego"]) != "package lib\n" {
		t.Fatalf("the folder: %q, %v", files, err)
	}
	if files, err := c.FolderAt(ctx, "nothing", base, githubapi.ArchiveLimits{}); files != nil || err != nil {
		t.Errorf("a missing folder: %q, %v", files, err)
	}
	if _, err := c.FolderAt(ctx, "policy", base, githubapi.ArchiveLimits{MaxFiles: 1}); err == nil || !strings.Contains(err.Error(), "more than 1 files") {
		t.Errorf("past the files' limit: %v", err)
	}
	if _, err := c.FolderAt(ctx, "policy", base, githubapi.ArchiveLimits{MaxBytes: 5}); err == nil || !strings.Contains(err.Error(), "in all") {
		t.Errorf("past the bytes' limit: %v", err)
	}
}
