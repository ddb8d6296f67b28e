package backend

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kusionpr/kusionpr/internal/testenv"
	"github.com/kusionpr/kusionpr/model"
)

// TestKusionBackendConfig opens stores from Kusion's own configuration file,
// credentials included, and the oss:// form through the S3 driver.
func TestKusionBackendConfig(t *testing.T) {
	ctx := context.Background()
	bucketURL := testenv.S3(t).NewBucket(t)
	u, _ := url.Parse(bucketURL)
	endpoint := u.Query().Get("endpoint")
	// Only the configuration carries credentials.
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")

	home := t.TempDir()
	config := `backends:
  current: team-s3
  team-s3:
    type: s3
    configs:
      bucket: ` + u.Host + `
      endpoint: ` + endpoint + `
      region: us-east-1
      accessKeyID: ` + os.Getenv("KUSIONPR_TEST_S3_ACCESS_KEY") + `
      accessKeySecret: ` + os.Getenv("KUSIONPR_TEST_S3_SECRET_KEY") + `
      prefix: kusion
  local-dir:
    type: local
    configs:
      path: ` + filepath.Join(home, "releases") + `
`
	path := filepath.Join(home, "config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, ok, err := CurrentKusionBackend(path)
	if err != nil || !ok || cfg.Type != "s3" {
		t.Fatalf("CurrentKusionBackend = %+v, %v, %v", cfg, ok, err)
	}
	s, err := OpenConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := release("p", "w", model.PhaseSucceeded, "kusion-user")
	r.Revision = 1
	if err := s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.obj.exists(ctx, "kusion/releases/p/w/1.yaml"); !ok {
		t.Error("the prefix from the configuration was not used")
	}

	// oss:// reaches an S3-compatible endpoint with OSS's credential variables.
	t.Setenv("OSS_ACCESS_KEY_ID", os.Getenv("KUSIONPR_TEST_S3_ACCESS_KEY"))
	t.Setenv("OSS_ACCESS_KEY_SECRET", os.Getenv("KUSIONPR_TEST_S3_SECRET_KEY"))
	oss, err := Open(ctx, "oss://"+u.Host+"?"+url.Values{"endpoint": {endpoint}, "use_path_style": {"true"}, "prefix": {"kusion"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer oss.Close()
	if got, err := oss.Latest(ctx, "p", "w"); err != nil || got == nil || got.Origin.User != "kusion-user" {
		t.Errorf("oss:// Latest = %+v, %v", got, err)
	}

	for _, tc := range []struct {
		name, config, want string
	}{
		{"no file", "", ""},
		{"no current", "backends:\n  a: {type: s3}\n", ""},
		{"current names nothing", "backends:\n  current: b\n", `backends.current is "b", but there is no backend of that name`},
	} {
		p := filepath.Join(t.TempDir(), "config.yaml")
		if tc.config != "" {
			os.WriteFile(p, []byte(tc.config), 0o600)
		}
		_, ok, err := CurrentKusionBackend(p)
		if tc.want == "" && (ok || err != nil) || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: ok %v, err %v; want %q", tc.name, ok, err, tc.want)
		}
	}
	if _, err := OpenConfig(ctx, Config{Type: "ftp"}); err == nil || err.Error() != `open backend: unknown type "ftp": want local, oss, s3 or google` {
		t.Errorf("unknown type: %v", err)
	}
	if _, err := Open(ctx, "oss://bucket"); err == nil || !strings.Contains(err.Error(), "OSS needs its endpoint") {
		t.Errorf("oss without endpoint: %v", err)
	}
}

// TestSchemeErrors: a backend given as a bare path, or with a scheme no
// store has, is refused with the form to write and every scheme there is.
func TestSchemeErrors(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url  string
		want string
	}{
		{"/tmp/x", `open backend "/tmp/x": not a URL: a folder is written file:///tmp/x`},
		{"releases/dev", "a folder is written file://" + filepath.ToSlash(filepath.Join(wd, "releases/dev"))},
		{"~/releases", "a folder is written file://" + filepath.ToSlash(filepath.Join(home, "releases"))},
		{"?prefix=x", "no scheme: want"},
		{"minio://bucket", `open backend minio://bucket: unknown scheme "minio": want`},
		{"S3X://bucket?endpoint=https://key:secret@host", `unknown scheme "s3x"`},
	} {
		t.Run(tc.url, func(t *testing.T) {
			_, err := Open(context.Background(), tc.url)
			if err == nil {
				t.Fatal("opened")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error %q does not say %q", msg, tc.want)
			}
			if !strings.Contains(msg, Schemes) {
				t.Errorf("error %q does not list every scheme", msg)
			}
			if strings.Contains(msg, "secret") {
				t.Errorf("error %q shows the URL's query", msg)
			}
		})
	}
	// Nothing was created where the bare path pointed.
	if _, err := os.Stat(filepath.Join(wd, "releases")); err == nil {
		t.Error("a folder was created for a bare path")
	}
}

// TestRelativeFolderRefused: a file:// URL whose folder is relative
// (file://.kusion-demo names a host, file://./x and file:x a path from
// wherever the command runs) is refused with the absolute form to write,
// and nothing is created, where it would otherwise open another folder.
func TestRelativeFolderRefused(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, tc := range []struct{ url, want string }{
		{"file://.kusion-demo", "write file://" + filepath.ToSlash(filepath.Join(dir, ".kusion-demo"))},
		{"file://./releases", "write file://" + filepath.ToSlash(filepath.Join(dir, "releases"))},
		{"file:releases", "write file://" + filepath.ToSlash(filepath.Join(dir, "releases"))},
		{"file://server/share", "write file://" + filepath.ToSlash(filepath.Join(dir, "server/share"))},
	} {
		_, err := Open(context.Background(), tc.url)
		if err == nil || !strings.Contains(err.Error(), "a folder store needs an absolute path") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want a refusal saying %q", tc.url, err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused URL created %v", entries)
	}
	s, err := Open(context.Background(), "file://"+filepath.ToSlash(filepath.Join(dir, "ok")))
	if err != nil {
		t.Fatalf("an absolute folder: %v", err)
	}
	s.Close()
	if got := Location("s3://bucket/x?endpoint=https://key:secret@host"); got != "s3://bucket/x" {
		t.Errorf("Location shows %q", got)
	}
}
