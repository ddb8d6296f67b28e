package image

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallTerraformChecksEveryFile: hack/install-terraform.sh, which puts
// Terraform into the image, installs nothing whose SHA-256 is not the pinned
// one (or the one passed): a swapped zip, a binary with no checksum given,
// or one that does not match is refused and DEST stays empty. The pinned
// checksums are those of HashiCorp's release zips for both architectures
// the release builds.
func TestInstallTerraformChecksEveryFile(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "terraform-binary")
	if err := os.WriteFile(binary, []byte("#!/bin/sh\necho terraform\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	zipped := filepath.Join(dir, "terraform_1.11.4_linux_amd64.zip")
	writeZip(t, zipped, "terraform", "not HashiCorp's terraform")
	sum := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		return hex.EncodeToString(h[:])
	}
	tests := []struct {
		name    string
		args    []string // after DEST
		wantErr string   // "" when it installs
	}{
		{name: "a zip that is not the pinned release", args: []string{"1.11.4", "", zipped}, wantErr: "checksum mismatch"},
		{name: "the same zip for arm64", args: []string{"1.11.4", "", zipped, "arm64"}, wantErr: "a43d1d0da9b9bab214a8305a39db0e40869572594ccf50c416a7756499143633"},
		{name: "a binary with no checksum given", args: []string{"1.11.4", "", binary}, wantErr: "pass its SHA-256"},
		{name: "a binary with another's checksum", args: []string{"1.11.4", sum(zipped), binary}, wantErr: "checksum mismatch"},
		{name: "a version with nothing pinned", args: []string{"0.0.1", "", zipped}, wantErr: "no checksum pinned"},
		{name: "a zip with its own checksum passed", args: []string{"1.11.4", sum(zipped), zipped}},
		{name: "a binary with its checksum passed", args: []string{"1.11.4", sum(binary), binary, "arm64"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := t.TempDir()
			cmd := exec.Command("bash", append([]string{"../hack/install-terraform.sh", dest}, tt.args...)...)
			out, err := cmd.CombinedOutput()
			_, statErr := os.Stat(filepath.Join(dest, "terraform"))
			installed := statErr == nil
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(string(out), tt.wantErr) || installed {
					t.Errorf("err %v, installed %v, output %q; want it refused saying %q", err, installed, out, tt.wantErr)
				}
				return
			}
			if err != nil || !installed {
				t.Errorf("err %v, installed %v, output %q; want it installed", err, installed, out)
			}
		})
	}
}

func writeZip(t *testing.T, path, name, content string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	w, err := z.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
