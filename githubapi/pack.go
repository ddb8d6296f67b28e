package githubapi

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Pack writes the checkout in dir as GitHub's tarball of it is laid out
// (one top folder; folders and regular files only, links left out as
// Checkout leaves them out), so that Unpack, with the limits of a checkout,
// gives the same tree on another machine: the one a remote executor runs.
func Pack(dir string, w io.Writer) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("pack %s: %w", dir, err)
	}
	defer root.Close()
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return tw.WriteHeader(&tar.Header{Name: "checkout/", Typeflag: tar.TypeDir, Mode: 0o755})
		}
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Name: "checkout/" + p + "/", Typeflag: tar.TypeDir, Mode: 0o755})
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			if err := tw.WriteHeader(&tar.Header{Name: "checkout/" + p, Typeflag: tar.TypeReg, Mode: int64(info.Mode().Perm()), Size: info.Size()}); err != nil {
				return err
			}
			f, err := root.Open(filepath.FromSlash(p))
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.CopyN(tw, f, info.Size())
			return err
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = gz.Close()
	}
	if err != nil {
		return fmt.Errorf("pack %s: %w", dir, err)
	}
	return nil
}

// Unpack unpacks a tarball laid out as GitHub's (Pack's) into dir, an
// empty folder, within lim; on any error dir is left empty.
func Unpack(r io.Reader, dir string, lim ArchiveLimits) error { return untar(r, dir, lim) }
