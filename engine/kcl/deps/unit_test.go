package deps

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAllowlist(t *testing.T) {
	a, err := ParseAllow("")
	if err != nil {
		t.Fatal(err)
	}
	local, err := ParseAllow("127.0.0.1:5001/kusionstack, localhost:8080, pkgs.example.com")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		allow   Allowlist
		loc     string
		ok      bool
		private bool
	}{
		{"default github org", a, "github.com/KusionStack/kam.git", true, false},
		{"default ghcr org", a, "ghcr.io/kcl-lang/helloworld", true, false},
		{"org prefix is whole segments", a, "ghcr.io/kusionstackevil/x", false, false},
		{"other org", a, "github.com/someone/kam.git", false, false},
		{"other host", a, "gitlab.com/KusionStack/kam.git", false, false},
		{"port not named", a, "ghcr.io:8443/kusionstack/x", false, false},
		{"plain http needs a named port", a, "http://ghcr.io/kusionstack/x", false, false},
		{"loopback entry", local, "http://127.0.0.1:5001/kusionstack/service", true, true},
		{"loopback entry other port", local, "http://127.0.0.1:5002/kusionstack/service", false, false},
		{"loopback entry other path", local, "http://127.0.0.1:5001/other/service", false, false},
		{"localhost entry", local, "http://localhost:8080/x/y", true, true},
		{"host entry allows any path", local, "pkgs.example.com/a/b", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := parseLocation(tt.loc)
			if err != nil {
				t.Fatal(err)
			}
			e, ok := tt.allow.match(l)
			if ok != tt.ok || e.private != tt.private {
				t.Errorf("match(%s) = %v private %v, want %v private %v", tt.loc, ok, e.private, tt.ok, tt.private)
			}
		})
	}
}

func TestParseSettingsErrors(t *testing.T) {
	for _, tt := range []struct{ allow, mirrors, want string }{
		{"https://ghcr.io/x", "", AllowSetting},
		{"ghcr.io/../x", "", AllowSetting},
		{"", "ghcr.io/kusionstack", MirrorsSetting},
		{"", "oci://ghcr.io=127.0.0.1:1", MirrorsSetting},
	} {
		_, err := New(Options{CacheDir: t.TempDir(), Allow: tt.allow, Mirrors: tt.mirrors})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("allow %q mirrors %q: %v, want an error naming %s", tt.allow, tt.mirrors, err, tt.want)
		}
	}
}

func TestMirrors(t *testing.T) {
	m, err := ParseMirrors("ghcr.io/kusionstack=127.0.0.1:5001/kusionstack github.com/KusionStack=http://git.internal:8080/mirror")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ in, want string }{
		{"ghcr.io/kusionstack/service", "http 127.0.0.1:5001/kusionstack/service"},
		{"ghcr.io/kcl-lang/helloworld", "https ghcr.io/kcl-lang/helloworld"},
		{"github.com/KusionStack/kam.git", "http git.internal:8080/mirror/kam.git"},
		{"ghcr.io/kusionstackevil/x", "https ghcr.io/kusionstackevil/x"},
	} {
		l, _ := parseLocation(tt.in)
		got, _ := m.rewrite(l)
		scheme := "https"
		if got.plain {
			scheme = "http"
		}
		if s := scheme + " " + got.String(); s != tt.want {
			t.Errorf("rewrite(%s) = %s, want %s", tt.in, s, tt.want)
		}
	}
}

type entry struct {
	name, link string
	typ        byte
	body       string
}

func tarOf(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	return b.Bytes()
}

func TestExtractRefuses(t *testing.T) {
	lim := DefaultLimits()
	tests := []struct {
		name    string
		entries []entry
		limit   string // a LimitError's limit, or "" for another error
		want    string
	}{
		{"dot-dot", []entry{{name: "../evil.k", typ: tar.TypeReg, body: "x"}}, "", "not a relative path"},
		{"nested dot-dot", []entry{{name: "a/../../evil.k", typ: tar.TypeReg, body: "x"}}, "", "not a relative path"},
		{"absolute", []entry{{name: "/etc/evil", typ: tar.TypeReg, body: "x"}}, "", "not a relative path"},
		{"symlink out", []entry{{name: "a/link", link: "../../etc", typ: tar.TypeSymlink}}, "", "outside the package"},
		{"absolute symlink", []entry{{name: "link", link: "/etc/passwd", typ: tar.TypeSymlink}}, "", "absolute path"},
		{"hard link", []entry{{name: "h", link: "x", typ: tar.TypeLink}}, "", "not accepted"},
		{"device", []entry{{name: "d", typ: tar.TypeChar}}, "", "not accepted"},
		{"file twice", []entry{{name: "a.k", typ: tar.TypeReg, body: "1"}, {name: "a.k", typ: tar.TypeReg, body: "2"}}, "", "exists"},
		{"files", []entry{{name: "a", typ: tar.TypeReg}, {name: "b", typ: tar.TypeReg}, {name: "c", typ: tar.TypeReg}}, LimitFiles, ""},
		{"file size", []entry{{name: "a", typ: tar.TypeReg, body: strings.Repeat("x", 11)}}, LimitFileBytes, ""},
		{"total", []entry{{name: "a", typ: tar.TypeReg, body: "123456"}, {name: "b", typ: tar.TypeReg, body: "123456"}}, LimitBytes, ""},
	}
	lim.MaxFiles, lim.MaxFileBytes, lim.MaxBytes = 2, 10, 10
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			err := extract(bytes.NewReader(tarOf(t, tt.entries...)), dir, lim)
			if err == nil {
				t.Fatal("extracted")
			}
			var le *LimitError
			if tt.limit != "" {
				if !errors.As(err, &le) || le.Limit != tt.limit {
					t.Fatalf("error %v, want the %s limit", err, tt.limit)
				}
				return
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if _, err := os.Lstat(filepath.Join(filepath.Dir(dir), "evil.k")); err == nil {
				t.Error("a file was written outside the folder")
			}
		})
	}
}

func TestExtractAcceptsInsideLinks(t *testing.T) {
	dir := t.TempDir()
	data := tarOf(t, entry{name: "sub/", typ: tar.TypeDir}, entry{name: "sub/a.k", typ: tar.TypeReg, body: "a = 1"},
		entry{name: "sub/b.k", link: "a.k", typ: tar.TypeSymlink}, entry{name: "top", link: "sub/../sub", typ: tar.TypeSymlink})
	if err := extract(bytes.NewReader(data), dir, DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "top", "b.k")); err != nil || string(b) != "a = 1" {
		t.Errorf("top/b.k = %q, %v", b, err)
	}
}
