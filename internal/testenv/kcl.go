package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// KCLRuntime returns the folder hack/kcl.sh installed the KCL runtime in
// (KUSIONPR_KCL_RUNTIME): a Python environment whose bin/python3 imports
// kcl_lib.
func KCLRuntime(t testing.TB) string {
	t.Helper()
	p := os.Getenv("KUSIONPR_KCL_RUNTIME")
	if p == "" {
		missing(t, "KUSIONPR_KCL_RUNTIME is not set: run `make test`, or `hack/kcl.sh install` and `eval \"$(hack/kcl.sh env)\"`")
	}
	if _, err := os.Stat(filepath.Join(p, "bin", "python3")); err != nil {
		missing(t, "the KCL runtime: "+err.Error()+" (hack/kcl.sh install)")
	}
	return p
}
