package githubapi

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ArchiveLimits bounds what a repository's archive may unpack to: the
// archive is a pull request's, and a few hundred kilobytes of gzip can
// claim gigabytes and hundreds of thousands of files. A zero field is the
// default's.
type ArchiveLimits struct {
	// MaxBytes bounds the files' bytes together.
	MaxBytes int64
	// MaxFiles bounds the entries: files, folders (also those a file's
	// path implies) and the links that are skipped.
	MaxFiles int64
}

// DefaultArchiveLimits fit a large monorepository (GitHub advises keeping
// one under 1 GB) while bounding what a hostile one costs.
var DefaultArchiveLimits = ArchiveLimits{MaxBytes: 1 << 30, MaxFiles: 100000}

// maxEntryPath bounds an entry's path: Linux's PATH_MAX, beyond which no
// file could be opened anyway.
const maxEntryPath = 4096

// ArchiveLimitError is an archive refused for going past a limit. It
// names the limit, never an entry: names come from the repository.
type ArchiveLimitError struct {
	// Files is true for the file count, false for the bytes.
	Files bool
	Max   int64
}

func (e *ArchiveLimitError) Error() string {
	if e.Files {
		return fmt.Sprintf("the archive holds more than %d files and folders", e.Max)
	}
	return fmt.Sprintf("the archive unpacks to more than %s", FormatBytes(e.Max))
}

// FormatBytes writes n as people read sizes: 1 GiB, 512 MiB, 1536 bytes.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

func (l ArchiveLimits) orDefault() ArchiveLimits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultArchiveLimits.MaxBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultArchiveLimits.MaxFiles
	}
	return l
}

// streamLimit bounds the tar stream (files, headers, padding) and the
// gzip bytes read for it, so that neither headers nor compressed bytes
// that unpack to nothing can keep the reader busy beyond the limits.
func (l ArchiveLimits) streamLimit() int64 {
	return l.MaxBytes + l.MaxFiles*(2<<10) + 1<<20
}

// untar unpacks GitHub's tarball (its one top folder stripped) into dir,
// which should be empty, within lim. On any error, dir is left empty:
// nothing partly unpacked stays on disk. Links are never made (one could
// lead reads, or later entries' writes, outside dir), and an entry whose
// path leaves dir is refused.
func untar(r io.Reader, dir string, lim ArchiveLimits) error {
	lim = lim.orDefault()
	over := &ArchiveLimitError{Max: lim.MaxBytes}
	gz, err := gzip.NewReader(&capped{r: r, left: lim.streamLimit() + lim.streamLimit()/100, err: over})
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return unpackTar(gz, dir, lim)
}

// unpackTar is untar after gzip: r is the tar stream.
func unpackTar(r io.Reader, dir string, lim ArchiveLimits) (err error) {
	lim = lim.orDefault()
	// Every write goes through root, which refuses any path that would
	// resolve outside dir, through ".." or a link, whatever the checks
	// below let pass.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer root.Close()
	u := &unpacker{root: root, lim: lim, made: map[[sha256.Size]byte]bool{}}
	defer func() {
		if err != nil {
			if cerr := emptyDir(dir); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
	}()
	tr := tar.NewReader(&capped{r: r, left: lim.streamLimit(), err: &ArchiveLimitError{Max: lim.MaxBytes}})
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return archiveErr(err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue // git archive's commit id
		}
		// Entries sit under one top folder (owner-repo-sha/).
		_, rel, ok := strings.Cut(h.Name, "/")
		if !ok {
			continue
		}
		if len(rel) > maxEntryPath {
			return fmt.Errorf("archive: an entry's path is longer than %d bytes", maxEntryPath)
		}
		rel = path.Clean(rel)
		if rel == "." {
			continue
		}
		if !filepath.IsLocal(filepath.FromSlash(rel)) {
			// The name is the repository's: not repeated.
			return errors.New("archive: an entry's path leaves the folder")
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := u.mkdirs(rel); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := u.file(rel, h.Size, tr); err != nil {
				return err
			}
		default:
			// Links and the rest are skipped, and still counted: each
			// costs the reading.
			if err := u.count(); err != nil {
				return err
			}
		}
	}
}

type unpacker struct {
	root         *os.Root
	lim          ArchiveLimits
	files, bytes int64
	// made holds the folders made, by the hash of their path: their
	// number is bounded by MaxFiles, their paths' length only by
	// maxEntryPath.
	made map[[sha256.Size]byte]bool
}

func (u *unpacker) count() error {
	u.files++
	if u.files > u.lim.MaxFiles {
		return &ArchiveLimitError{Files: true, Max: u.lim.MaxFiles}
	}
	return nil
}

// mkdirs makes the folder rel and those above it, counting each it makes.
func (u *unpacker) mkdirs(rel string) error {
	if rel == "." {
		return nil
	}
	k := sha256.Sum256([]byte(rel))
	if u.made[k] {
		return nil
	}
	if err := u.mkdirs(path.Dir(rel)); err != nil {
		return err
	}
	if err := u.count(); err != nil {
		return err
	}
	if err := u.root.Mkdir(filepath.FromSlash(rel), 0o755); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return archiveErr(err)
		}
		// Made already, or a file: Lstat tells, without following.
		if fi, serr := u.root.Lstat(filepath.FromSlash(rel)); serr != nil || !fi.IsDir() {
			return errors.New("archive: a path is both a file and a folder")
		}
	}
	u.made[k] = true
	return nil
}

// file writes the file rel of size bytes from r.
func (u *unpacker) file(rel string, size int64, r io.Reader) error {
	if err := u.mkdirs(path.Dir(rel)); err != nil {
		return err
	}
	if err := u.count(); err != nil {
		return err
	}
	// The size is known before a byte is written: a file that would go
	// past the limit is refused before it is.
	if size < 0 || size > u.lim.MaxBytes-u.bytes {
		return &ArchiveLimitError{Max: u.lim.MaxBytes}
	}
	u.bytes += size
	// O_EXCL: git archive writes each path once; a second entry for a
	// path is not rewritten through whatever the first made.
	f, err := u.root.OpenFile(filepath.FromSlash(rel), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return errors.New("archive: a path is there twice")
		}
		return archiveErr(err)
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return archiveErr(err)
	}
	return nil
}

// archiveErr says what went wrong without the path an *fs.PathError
// holds: paths come from the repository. A limit stays as it is.
func archiveErr(err error) error {
	if _, ok := errors.AsType[*ArchiveLimitError](err); ok {
		return err
	}
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return fmt.Errorf("archive: %s: %w", pe.Op, pe.Err)
	}
	return fmt.Errorf("archive: %w", err)
}

// emptyDir removes everything inside dir.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("archive: clearing the partial checkout: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("archive: clearing the partial checkout: %w", errors.Join(errs...))
	}
	return nil
}

// capped reads at most left bytes of r, then fails with err.
type capped struct {
	r    io.Reader
	left int64
	err  error
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One byte more tells a stream that ends exactly at the cap
		// from one that goes on.
		var b [1]byte
		n, err := c.r.Read(b[:])
		if n > 0 {
			return 0, c.err
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
