package deps

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// cache is the folder packages are kept in, shared by every process that
// names it:
//
//	pkg/sha256-<hex>/   a package's files, named by their content digest
//	index/<hex>.json    what an immutable source and reference resolved to
//	tmp/                fetches in progress
//
// Everything is written under tmp/ and renamed into place, so a reader
// never sees half a package and two processes fetching the same one both
// end with the same folder (the second rename finds it there and its copy
// is dropped).
type cache struct {
	dir string
}

type indexEntry struct {
	// Source and Ref are what was asked, for a person reading the index.
	Source string `json:"source"`
	Ref    string `json:"ref"`
	// Resolved is the commit or manifest digest the reference led to.
	Resolved string `json:"resolved"`
	// Content is the folder's name under pkg/.
	Content string `json:"content"`
}

func (c cache) indexPath(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(c.dir, "index", hex.EncodeToString(sum[:])+".json")
}

// lookup returns the entry recorded for key whose folder is still there.
func (c cache) lookup(key string) (indexEntry, bool) {
	var e indexEntry
	data, err := os.ReadFile(c.indexPath(key))
	if err != nil {
		return e, false
	}
	if json.Unmarshal(data, &e) != nil || !validContentName(e.Content) {
		return e, false
	}
	if fi, err := os.Stat(c.pkgDir(e.Content)); err != nil || !fi.IsDir() {
		return e, false
	}
	return e, true
}

func (c cache) record(key string, e indexEntry) error {
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding the cache index entry: %w", err)
	}
	p := c.indexPath(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("writing the cache index: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("writing the cache index: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the cache index: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the cache index: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("writing the cache index: %w", err)
	}
	return nil
}

func (c cache) pkgDir(content string) string { return filepath.Join(c.dir, "pkg", content) }

func validContentName(s string) bool {
	if len(s) != len("sha256-")+64 || s[:7] != "sha256-" {
		return false
	}
	_, err := hex.DecodeString(s[7:])
	return err == nil
}

// staging returns a new empty folder under tmp/ for a fetch.
func (c cache) staging() (string, error) {
	t := filepath.Join(c.dir, "tmp")
	if err := os.MkdirAll(t, 0o755); err != nil {
		return "", fmt.Errorf("making the cache's staging folder: %w", err)
	}
	d, err := os.MkdirTemp(t, "fetch-*")
	if err != nil {
		return "", fmt.Errorf("making the cache's staging folder: %w", err)
	}
	return d, nil
}

// commit moves the finished folder staged into pkg/ under its content
// digest and returns that name.
func (c cache) commit(staged string) (string, error) {
	name, err := contentDigest(staged)
	if err != nil {
		return "", err
	}
	dst := c.pkgDir(name)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("adding the package to the cache: %w", err)
	}
	if err := os.Rename(staged, dst); err != nil {
		if fi, serr := os.Stat(dst); serr == nil && fi.IsDir() {
			// Another fetch put the same content there first.
			os.RemoveAll(staged)
			return name, nil
		}
		return "", fmt.Errorf("adding the package to the cache: %w", err)
	}
	return name, nil
}

// exists reports whether p exists.
func exists(p string) bool {
	_, err := os.Lstat(p)
	return !errors.Is(err, fs.ErrNotExist)
}
