package githubapi

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entry is one tar entry; a name is under the archive's top folder unless
// it says otherwise (raw).
type entry struct {
	name     string
	typ      byte
	body     string
	size     int64 // claimed size when body is empty and size is set
	linkname string
	pax      map[string]string
	raw      bool
}

func tarball(t testing.TB, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header", PAXRecords: map[string]string{"comment": strings.Repeat("a", 40)}}); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.name
		if !e.raw {
			name = "octo-infra-abc1234/" + name
		}
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: name, Typeflag: typ, Mode: 0o644, Linkname: e.linkname, PAXRecords: e.pax, Format: tar.FormatPAX}
		if typ == tar.TypeReg {
			h.Size = int64(len(e.body))
			if e.size > 0 {
				h.Size = e.size
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if e.size > 0 {
				// Zeros, as much as claimed, written in pieces: a
				// bomb costs the test little memory.
				zeros := make([]byte, 1<<20)
				for left := e.size; left > 0; left -= int64(len(zeros)) {
					if _, err := tw.Write(zeros[:min(left, int64(len(zeros)))]); err != nil {
						t.Fatal(err)
					}
				}
			} else if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tree lists what is under dir: "path" for files, "path/" for folders.
func tree(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	return out
}

func files(n int, prefix string) []entry {
	var out []entry
	for i := range n {
		out = append(out, entry{name: prefix + strings.Repeat("f", 1) + string(rune('a'+i%26)) + strings.Repeat("x", i/26), body: "x"})
	}
	return out
}

func TestUntar(t *testing.T) {
	const secretName = "NAME-FROM-THE-REPOSITORY"
	tests := []struct {
		name    string
		entries []entry
		lim     ArchiveLimits
		want    []string // the tree unpacked; nil with wantErr
		wantErr string   // "" for none; "files" and "bytes" for a limit
	}{
		{name: "a repository", lim: ArchiveLimits{MaxBytes: 100, MaxFiles: 10}, entries: []entry{
			{name: "", typ: tar.TypeDir},
			{name: "apps/", typ: tar.TypeDir},
			{name: "apps/web/project.yaml", body: "name: web\n"},
			{name: "apps/web/dev/stack.yaml", body: "name: dev\n"},
			{name: "apps/web/dev/link.yaml", typ: tar.TypeSymlink, linkname: "../../../../etc/passwd"},
			{name: "apps/web/hard", typ: tar.TypeLink, linkname: "octo-infra-abc1234/apps/web/project.yaml"},
		}, want: []string{"apps/", "apps/web/", "apps/web/dev/", "apps/web/dev/stack.yaml", "apps/web/project.yaml"}},
		{name: "exactly at the limits", lim: ArchiveLimits{MaxBytes: 6, MaxFiles: 4}, entries: []entry{
			{name: "a/b", body: "abc"}, {name: "a/c", body: "def"}, {name: "d/", typ: tar.TypeDir},
		}, want: []string{"a/", "a/b", "a/c", "d/"}},
		{name: "one file claiming more than the limit", lim: ArchiveLimits{MaxBytes: 1 << 20, MaxFiles: 10}, entries: []entry{
			{name: "small", body: "x"}, {name: secretName, size: 1<<20 + 1},
		}, wantErr: "bytes"},
		{name: "files adding up past the limit", lim: ArchiveLimits{MaxBytes: 1000, MaxFiles: 100}, entries: []entry{
			{name: "a", body: strings.Repeat("x", 400)}, {name: "b", body: strings.Repeat("x", 400)}, {name: "c", body: strings.Repeat("x", 201)},
		}, wantErr: "bytes"},
		{name: "too many files", lim: ArchiveLimits{MaxBytes: 1 << 20, MaxFiles: 20}, entries: files(21, ""), wantErr: "files"},
		{name: "folders a path implies count", lim: ArchiveLimits{MaxBytes: 1 << 20, MaxFiles: 5}, entries: []entry{
			{name: "a/b/c/d/e/f", body: "x"},
		}, wantErr: "files"},
		{name: "skipped links count", lim: ArchiveLimits{MaxBytes: 1 << 20, MaxFiles: 3}, entries: []entry{
			{name: "l1", typ: tar.TypeSymlink, linkname: "x"}, {name: "l2", typ: tar.TypeSymlink, linkname: "x"},
			{name: "l3", typ: tar.TypeSymlink, linkname: "x"}, {name: "l4", typ: tar.TypeSymlink, linkname: "x"},
		}, wantErr: "files"},
		{name: "headers that unpack to nothing still count", lim: ArchiveLimits{MaxBytes: 1000, MaxFiles: 1000}, entries: func() []entry {
			var out []entry
			for i := range 8 {
				out = append(out, entry{name: "l" + string(rune('a'+i)), typ: tar.TypeSymlink, linkname: "x", pax: map[string]string{"comment": strings.Repeat("z", 500<<10)}})
			}
			return out
		}(), wantErr: "bytes"},
		{name: "a path leaving the folder", lim: ArchiveLimits{MaxBytes: 100, MaxFiles: 10}, entries: []entry{
			{name: "ok", body: "x"}, {name: "../" + secretName, body: "x"},
		}, wantErr: "leaves the folder"},
		{name: "a path leaving the folder further down", lim: ArchiveLimits{MaxBytes: 100, MaxFiles: 10}, entries: []entry{
			{name: "a/../../../" + secretName, body: "x"},
		}, wantErr: "leaves the folder"},
		{name: "an absolute path", lim: ArchiveLimits{MaxBytes: 100, MaxFiles: 10}, entries: []entry{
			{name: "/tmp/" + secretName, body: "x"},
		}, wantErr: "leaves the folder"},
		{name: "a path too long", lim: ArchiveLimits{MaxBytes: 100, MaxFiles: 10000}, entries: []entry{
			{name: strings.Repeat(secretName+"/", 200) + "f", body: "x"},
		}, wantErr: "longer than 4096 bytes"},
		{name: "a name too long for the file system", lim: ArchiveLimits{MaxBytes: 100, MaxFiles: 10}, entries: []entry{
			{name: strings.Repeat(secretName, 20), body: "x"},
		}, wantErr: "file name too long"},
		{name: "a path twice", lim: ArchiveLimits{MaxBytes: 100, MaxFiles: 10}, entries: []entry{
			{name: secretName, body: "x"}, {name: secretName, body: "y"},
		}, wantErr: "there twice"},
		{name: "a file then a folder of that name", lim: ArchiveLimits{MaxBytes: 100, MaxFiles: 10}, entries: []entry{
			{name: secretName, body: "x"}, {name: secretName + "/f", body: "y"},
		}, wantErr: "both a file and a folder"},
		{name: "an entry outside the top folder is left out", lim: ArchiveLimits{MaxBytes: 100, MaxFiles: 10}, entries: []entry{
			{name: "top-level-file", raw: true, body: "x"}, {name: "a", body: "y"},
		}, want: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "checkout")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			err := untar(bytes.NewReader(tarball(t, tt.entries)), dir, tt.lim)
			got := tree(t, dir)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("untar: %v", err)
				}
				if strings.Join(got, " ") != strings.Join(tt.want, " ") {
					t.Errorf("unpacked %v, want %v", got, tt.want)
				}
			} else {
				le, isLimit := errors.AsType[*ArchiveLimitError](err)
				switch {
				case err == nil:
					t.Fatalf("untar succeeded, unpacking %v; want an error (%s)", got, tt.wantErr)
				case tt.wantErr == "files" || tt.wantErr == "bytes":
					if !isLimit || le.Files != (tt.wantErr == "files") {
						t.Fatalf("untar: %v; want the %s limit", err, tt.wantErr)
					}
				case !strings.Contains(err.Error(), tt.wantErr):
					t.Fatalf("untar: %v; want it to say %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), secretName) {
					t.Errorf("the error repeats a name from the repository: %v", err)
				}
				if len(got) != 0 {
					t.Errorf("a refused archive left %v behind", got)
				}
			}
			// Nothing beside the checkout folder.
			if beside, _ := os.ReadDir(parent); len(beside) != 1 {
				t.Errorf("the folder holding the checkout has %d entries", len(beside))
			}
		})
	}
}

func TestArchiveLimitError(t *testing.T) {
	for _, tc := range []struct {
		err  ArchiveLimitError
		want string
	}{
		{ArchiveLimitError{Max: 1 << 30}, "the archive unpacks to more than 1 GiB"},
		{ArchiveLimitError{Max: 1536 << 20}, "the archive unpacks to more than 1536 MiB"},
		{ArchiveLimitError{Max: 1000}, "the archive unpacks to more than 1000 bytes"},
		{ArchiveLimitError{Files: true, Max: 100000}, "the archive holds more than 100000 files and folders"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.err, got, tc.want)
		}
	}
}

// FuzzUntar unpacks archives of any entries: names (one a line, under
// the top folder or not), types and sizes as the fuzzer picks them, and
// any gzip stream at all (raw). It must never panic, never write outside
// its folder nor make a link, stay within its limits, and leave its folder
// empty whenever it fails. Entries are described rather than given as tar
// bytes: the tar format's 512-byte blocks would make every input
// kilobytes long, and the fuzzer spend its time shrinking them.
func FuzzUntar(f *testing.F) {
	f.Add("top/\ntop/a/b\ntop/c/", []byte{tar.TypeDir, tar.TypeReg, tar.TypeDir}, []byte{0, 1, 0}, []byte(nil))
	f.Add("top/../x\ntop/a/../../y\n/etc/z", []byte{tar.TypeReg}, []byte{1}, []byte(nil))
	f.Add("top/l\ntop/l/passwd\ntop/h", []byte{tar.TypeSymlink, tar.TypeReg, tar.TypeLink}, []byte{0, 1, 0}, []byte(nil))
	f.Add("top/a\ntop/a\ntop/a/b\ntop/big", []byte{tar.TypeReg}, []byte{1, 1, 1, 200}, []byte(nil))
	f.Add("top/f", []byte{tar.TypeReg}, []byte{1}, tarball(f, []entry{{name: "a", body: "x"}, {name: "b/", typ: tar.TypeDir}}))
	lim := ArchiveLimits{MaxBytes: 4096, MaxFiles: 10}
	// A memory file system when there is one: each input is unpacked,
	// and a busy disk would leave the fuzzer a few runs a second.
	tmp := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		tmp = "/dev/shm"
	}
	f.Fuzz(func(t *testing.T, names string, types, sizes, raw []byte) {
		if len(types) == 0 || len(sizes) == 0 {
			return
		}
		var stream bytes.Buffer
		tw := tar.NewWriter(&stream)
		for i, name := range strings.Split(names, "\n") {
			h := &tar.Header{Name: name, Typeflag: types[i%len(types)], Mode: 0o644, Linkname: "../../etc", Format: tar.FormatPAX}
			if h.Typeflag == tar.TypeReg {
				h.Size = int64(sizes[i%len(sizes)]) * 37 // up to 9435 bytes, past MaxBytes
			}
			if tw.WriteHeader(h) != nil {
				return // a header tar cannot write: nothing GitHub would send either
			}
			tw.Write(make([]byte, h.Size))
		}
		tw.Close()
		unpack := func(name string, fn func(dir string) error) {
			parent, err := os.MkdirTemp(tmp, "fuzzuntar")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(parent)
			dir := filepath.Join(parent, "checkout")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			err = fn(dir)
			if beside, _ := os.ReadDir(parent); len(beside) != 1 {
				t.Fatalf("%s: wrote beside its folder: %d entries there", name, len(beside))
			}
			var n, size int64
			filepath.WalkDir(dir, func(p string, d fs.DirEntry, werr error) error {
				if werr != nil || p == dir {
					return werr
				}
				n++
				if d.Type()&fs.ModeSymlink != 0 {
					t.Fatalf("%s: made a link", name)
				}
				if fi, err := d.Info(); err == nil && d.Type().IsRegular() {
					size += fi.Size()
				}
				return nil
			})
			if err != nil && n != 0 {
				t.Fatalf("%s: failed (%v) and left %d entries", name, err, n)
			}
			if n > lim.MaxFiles || size > lim.MaxBytes {
				t.Fatalf("%s: wrote %d entries, %d bytes, past its limits", name, n, size)
			}
		}
		unpack("entries", func(dir string) error { return unpackTar(bytes.NewReader(stream.Bytes()), dir, lim) })
		if len(raw) > 0 {
			unpack("raw gzip", func(dir string) error { return untar(bytes.NewReader(raw), dir, lim) })
		}
	})
}
