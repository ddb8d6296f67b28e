package deps

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// extract writes the tar stream r (gzip-compressed or not) into dir,
// which exists and is empty, within lim. Entries whose names or link
// targets leave dir, hard links, devices and the like are refused: the
// archive comes from the network.
func extract(r io.Reader, dir string, lim Limits) error {
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("reading the gzip stream: %w", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	tr := tar.NewReader(r)
	var total int64
	files := 0
	type link struct{ name, target string }
	// Links are made after every file, so no file is ever written
	// through one.
	var links []link
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the tar stream: %w", err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			// git archive's header holding the commit id.
			continue
		}
		name, err := localName(h.Name)
		if err != nil {
			return err
		}
		if name == "." {
			continue
		}
		files++
		if files > lim.MaxFiles {
			return &LimitError{Limit: LimitFiles, Max: fmt.Sprint(lim.MaxFiles)}
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return fmt.Errorf("extracting %s: %w", name, err)
			}
		case tar.TypeReg:
			if h.Size > lim.MaxFileBytes {
				return &LimitError{Limit: LimitFileBytes, Max: fmt.Sprint(lim.MaxFileBytes)}
			}
			if total+h.Size > lim.MaxBytes {
				return &LimitError{Limit: LimitBytes, Max: fmt.Sprint(lim.MaxBytes)}
			}
			total += h.Size
			if err := writeFile(target, tr, h); err != nil {
				return fmt.Errorf("extracting %s: %w", name, err)
			}
		case tar.TypeSymlink:
			if filepath.IsAbs(h.Linkname) || strings.HasPrefix(h.Linkname, "/") {
				return fmt.Errorf("extracting %s: the link points at the absolute path %q", name, h.Linkname)
			}
			resolved := path.Join(path.Dir(name), h.Linkname)
			if _, err := localName(resolved); err != nil {
				return fmt.Errorf("extracting %s: the link points at %q, outside the package", name, h.Linkname)
			}
			links = append(links, link{name: target, target: h.Linkname})
		default:
			return fmt.Errorf("extracting %s: entries of tar type %q (hard links, devices, ...) are not accepted", name, string(h.Typeflag))
		}
	}
	for _, l := range links {
		if err := os.MkdirAll(filepath.Dir(l.name), 0o755); err != nil {
			return fmt.Errorf("extracting the link %s: %w", l.name, err)
		}
		if err := os.Symlink(l.target, l.name); err != nil {
			return fmt.Errorf("extracting the link %s: %w", l.name, err)
		}
	}
	return nil
}

// localName cleans a tar entry's name and refuses one that is absolute or
// leaves the folder.
func localName(n string) (string, error) {
	if strings.HasPrefix(n, "/") || strings.Contains(n, "\\") || strings.ContainsRune(n, 0) {
		return "", fmt.Errorf("the archive entry %q is not a relative path inside the package", n)
	}
	c := path.Clean(n)
	if c == ".." || strings.HasPrefix(c, "../") || !filepath.IsLocal(filepath.FromSlash(c)) && c != "." {
		return "", fmt.Errorf("the archive entry %q is not a relative path inside the package", n)
	}
	return c, nil
}

func writeFile(target string, r io.Reader, h *tar.Header) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if h.Mode&0o111 != 0 {
		mode = 0o755
	}
	// O_EXCL: an archive naming a file twice does not overwrite it, and
	// never writes through something already there.
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, r, h.Size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
