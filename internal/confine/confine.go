// Package confine answers whether a path a repository names stays inside
// the repository's checkout once symbolic links are followed: a checkout is
// untrusted input, and a link in it may point anywhere on the runner.
package confine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutside is returned, wrapped, for a path that leaves the root.
var ErrOutside = errors.New("outside the checkout")

// Resolve makes path absolute (a relative one against base), follows every
// symbolic link in it, and returns the real path if it lies in root (itself
// resolved). A path that leaves root fails with ErrOutside; one that does
// not exist fails with an error wrapping fs.ErrNotExist. The error never
// holds the path: it is the repository's value, the caller names the field.
func Resolve(root, base, path string) (string, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(base, path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", err
	}
	if !Within(root, real) {
		return "", ErrOutside
	}
	return real, nil
}

// Within says whether the real (already resolved, absolute) path lies in
// root, which is resolved here. A root that cannot be resolved contains
// nothing.
func Within(root, real string) bool {
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false
	}
	return WithinLexically(r, real)
}

// WithinLexically says whether path, as written (absolute, or relative to
// the working folder; no link followed), lies in root, as written too: for
// a path that need not exist, or whose links are someone else's to set.
func WithinLexically(root, path string) bool {
	r, err := filepath.Abs(root)
	if err != nil {
		return false
	}
	p, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(r, p)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel))
}
