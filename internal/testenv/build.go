package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var built = struct {
	sync.Mutex
	dir  string
	bins map[string]string
	errs map[string]error
}{bins: map[string]string{}, errs: map[string]error{}}

// Binary builds the Go package pkg (a path relative to the test's folder,
// such as ../../cmd/action) once per test process and returns the
// executable: the one a pod or a runner would start.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	if bin, ok := built.bins[pkg]; ok {
		return bin
	}
	if err, ok := built.errs[pkg]; ok {
		t.Fatal(err)
	}
	if built.dir == "" {
		d, err := os.MkdirTemp("", "kusionpr-test-bin")
		if err != nil {
			t.Fatal(err)
		}
		built.dir = d
	}
	bin := filepath.Join(built.dir, strings.NewReplacer("/", "_", ".", "_").Replace(pkg))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		built.errs[pkg] = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		t.Fatal(built.errs[pkg])
	}
	built.bins[pkg] = bin
	return bin
}
