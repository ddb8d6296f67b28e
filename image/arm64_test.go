package image

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fromLine is a Dockerfile FROM instruction: its flags, then the image.
var fromLine = regexp.MustCompile(`(?m)^(FROM(?: --\S+)*) (\S+)`)

// TestDockerfileBuildsForArm64: the release builds the image for
// linux/arm64 too, on an amd64 runner. The Dockerfile's build stage runs on
// the builder's platform and cross-compiles; the run stage only copies. So
// the Dockerfile, built for linux/arm64 here, must give arm64 binaries and
// ask hack/install-terraform.sh for the arm64 release, with nothing run
// under emulation. Debian's buildah resolves every stage for the target
// platform, so the two local stand-in bases are copied with their platform
// set to arm64 (the Go one still runs here: it is the builder's, as
// $BUILDPLATFORM makes it on GitHub; the static one holds no program) and
// the Dockerfile's FROM lines name the copies; every other byte is the
// committed Dockerfile's. KCL's runtime must be the aarch64 wheel's.
func TestDockerfileBuildsForArm64(t *testing.T) {
	b := newBuildah(t)
	dockerfile, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("%08x", rand.Uint32())
	var made []string
	t.Cleanup(func() {
		for _, img := range made {
			b.command(context.Background(), "rmi", "--force", img).Run()
		}
	})
	i := 0
	arm64 := fromLine.ReplaceAllStringFunc(string(dockerfile), func(line string) string {
		m := fromLine.FindStringSubmatch(line)
		copyName := fmt.Sprintf("localhost/kusionpr-arm64-base-%d:%s", i, id)
		i++
		c := b.output(t, "from", "--pull=never", "--quiet", m[2])
		b.output(t, "config", "--arch", "arm64", c)
		b.output(t, "commit", "--quiet", c, copyName)
		b.output(t, "rm", c)
		made = append(made, copyName)
		return m[1] + " " + copyName
	})
	if i != 2 || fromLine.ReplaceAllString(arm64, "$1 IMAGE") != fromLine.ReplaceAllString(string(dockerfile), "$1 IMAGE") {
		t.Fatalf("%d FROM lines rewritten, or more than their images changed:\n%s", i, arm64)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(arm64), 0o644); err != nil {
		t.Fatal(err)
	}
	feed := os.Getenv("KUSIONPR_TEST_IMAGE_TERRAFORM")
	bin, err := os.ReadFile(filepath.Join("..", feed))
	if err != nil {
		t.Fatalf("the Terraform binary hack/image.sh puts in the build context: %v", err)
	}
	sum := sha256.Sum256(bin)
	image := "localhost/kusionpr-arm64:" + id
	made = append(made, image)
	// The build stage is left behind as an untagged image: removed with
	// everything else this build added, so runs do not pile them up.
	before := map[string]bool{}
	for _, img := range strings.Fields(b.output(t, "images", "--all", "--quiet", "--no-trunc")) {
		before[img] = true
	}
	t.Cleanup(func() {
		out, _ := b.command(context.Background(), "images", "--all", "--quiet", "--no-trunc").Output()
		for _, img := range strings.Fields(string(out)) {
			if !before[img] {
				b.command(context.Background(), "rmi", "--force", img).Run()
			}
		}
	})
	// No --layers: every step runs, so its output (install-terraform's
	// line) is in the log; the cache mounts keep it quick.
	build := b.command(t.Context(), "bud", "--pull=never", "--isolation", "chroot",
		"--platform", "linux/arm64", "--build-arg", "TARGETOS=linux", "--build-arg", "TARGETARCH=arm64",
		"--build-arg", "TERRAFORM_FILE="+feed, "--build-arg", "TERRAFORM_SHA256="+hex.EncodeToString(sum[:]),
		"-f", filepath.Join(dir, "Dockerfile"), "-t", image, "..")
	// The module and build caches the image's own build mounts, so a
	// package compiled for arm64 once is not compiled again.
	build.Env = append(os.Environ(), "TMPDIR="+os.Getenv("KUSIONPR_TEST_BUILDAH_TMPDIR"))
	log, err := build.CombinedOutput()
	if err != nil && transientBuild(log) {
		// Once more, as a builder would: the step never started.
		retry := exec.CommandContext(t.Context(), build.Path, build.Args[1:]...)
		retry.Env = build.Env
		log, err = retry.CombinedOutput()
	}
	if err != nil {
		t.Fatalf("buildah bud --platform linux/arm64: %v\n%s", err, log)
	}
	if !strings.Contains(string(log), "for linux/arm64") {
		t.Errorf("install-terraform was not asked for the arm64 release:\n%s", log)
	}
	if arch := b.output(t, "inspect", "--format", "{{.OCIv1.Architecture}}", image); arch != "arm64" {
		t.Errorf("image architecture %q, want arm64", arch)
	}
	c := b.output(t, "from", "--pull=never", "--quiet", image)
	t.Cleanup(func() { b.command(context.Background(), "rm", c).Run() })
	root := b.output(t, "mount", c)
	t.Cleanup(func() { b.command(context.Background(), "umount", c).Run() })
	for _, name := range []string{"action", "bot"} {
		f, err := elf.Open(filepath.Join(root, "usr/local/bin", name))
		if err != nil {
			t.Fatalf("%s in the arm64 image: %v", name, err)
		}
		if f.Machine != elf.EM_AARCH64 {
			t.Errorf("%s in the arm64 image is built for %v", name, f.Machine)
		}
		f.Close()
	}
	// KCL's runtime is the aarch64 wheel's: its native extension runs on
	// the image's Python.
	exts, _ := filepath.Glob(filepath.Join(root, "opt/kcl/lib/python3.11/site-packages/kcl_lib/_kcl_lib*.so"))
	if len(exts) != 1 {
		t.Fatalf("the arm64 image holds %d KCL runtime extensions, want 1: %v", len(exts), exts)
	}
	f, err := elf.Open(exts[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 {
		t.Errorf("KCL's runtime in the arm64 image is built for %v", f.Machine)
	}
}

// transientBuild says a build failed before its step ran, on the kernel's
// refusal to seal the copy of the runtime's binary buildah makes for each
// RUN (fcntl F_ADD_SEALS answers EBUSY while a page of it is still mapped
// writable), which the next attempt does not meet.
func transientBuild(log []byte) bool {
	return strings.Contains(string(log), "sealing memfd copy: Device or resource busy")
}
