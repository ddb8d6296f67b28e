package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
		d, err := binDir()
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

// binDir is this process's folder of built binaries,
// <tmp>/kusionpr-test-bin/<pid>. A test process cannot remove it when it
// ends (nothing runs after its last test), so each removes the folders of
// processes that are gone: a machine running the tests again and again
// keeps one folder per live test process, not one per run.
func binDir() (string, error) {
	root := filepath.Join(os.TempDir(), "kusionpr-test-bin")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && pid != os.Getpid() && !alive(pid) {
			os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
	dir := filepath.Join(root, strconv.Itoa(os.Getpid()))
	return dir, os.MkdirAll(dir, 0o755)
}

// alive says whether a process pid runs (signal 0 checks without sending).
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}
