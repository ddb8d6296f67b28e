package confine

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWithinLexically: a path as written, existing or not, in its root or
// out of it; a link is not followed (Within is for resolved paths).
func TestWithinLexically(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want bool
	}{
		{root, true},
		{filepath.Join(root, "a", "b"), true},
		{filepath.Join(root, "link", "kubeconfig"), true}, // as written
		{filepath.Join(root, "..", filepath.Base(root)+"x"), false},
		{filepath.Join(root, "a", "..", ".."), false},
		{"/path/to/kubeconfig", false},
		{outside, false},
	} {
		if got := WithinLexically(root, tc.path); got != tc.want {
			t.Errorf("WithinLexically(root, %s) = %v, want %v", tc.path, got, tc.want)
		}
	}
	if Within(root, filepath.Join(outside, "kubeconfig")) {
		t.Error("Within takes a resolved path outside the root as in it")
	}
}
