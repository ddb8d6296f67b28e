package githubapi

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestPackRoundTrip: a packed checkout unpacks to the same files, without the links Checkout never makes, and within the limits a
// checkout has.
func TestPackRoundTrip(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{"project.yaml": "name: p\n", "apps/web/dev/stack.yaml": "name: dev\n", "apps/web/dev/main.k": "x = 1\n"}
	for name, body := range files {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "apps/link")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Pack(src, &buf); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := Unpack(bytes.NewReader(buf.Bytes()), dst, ArchiveLimits{}); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		got, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(name)))
		if err != nil || string(got) != body {
			t.Errorf("%s = %q, %v; want %q", name, got, err, body)
		}
	}
	if _, err := os.Lstat(filepath.Join(dst, "apps/link")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link was packed: %v", err)
	}
	if err := Unpack(bytes.NewReader(buf.Bytes()), t.TempDir(), ArchiveLimits{MaxFiles: 2}); err == nil {
		t.Error("unpacking past the file limit was taken")
	}
}
