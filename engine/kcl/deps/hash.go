package deps

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// HashDir is kpm's checksum of a package folder, the "sum" kcl.mod.lock
// records (kpm's pkg/utils/utils.go HashDir): SHA-256 over the contents of
// every file, in lexical walk order, skipping paths that contain ".git" or
// ".tar", base64-encoded. The skip is tested on the path relative to dir
// (kpm tests the whole path, which differs only when dir itself contains
// those strings).
func HashDir(dir string) (string, error) {
	h := sha256.New()
	err := filepath.Walk(dir, func(p string, info fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if strings.Contains(rel, ".git") || strings.Contains(rel, ".tar") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(h, f)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("computing the checksum of %s: %w", dir, err)
	}
	return base64.StdEncoding.EncodeToString(h.Sum(nil)), nil
}

// contentDigest names a folder's content: SHA-256 over each entry's
// relative path, kind, executable bit and content or link target, in
// lexical order. Unlike HashDir it sees names and links, so two folders
// with one name are the same content.
func contentDigest(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			fmt.Fprintf(h, "d %q\n", rel)
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "l %q %q\n", rel, t)
		case d.Type().IsRegular():
			fmt.Fprintf(h, "f %q %t %d\n", rel, info.Mode()&0o111 != 0, info.Size())
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := io.Copy(h, f); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s is not a file, folder or link", rel)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("computing the content digest of %s: %w", dir, err)
	}
	return "sha256-" + hex.EncodeToString(h.Sum(nil)), nil
}
