package testenv

import (
	"os"
	"path/filepath"
	"strings"
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

// KCLSettings are the allowlist and mirrors that send Kusion's names
// (github.com/KusionStack, ghcr.io/kusionstack) to the local git server and
// registry serving internal/testenv/kclpkgs, as an air-gapped operator's
// would: the values of KUSIONPR_KCL_ALLOW and KUSIONPR_KCL_MIRRORS.
func KCLSettings(t testing.TB) (allow, mirrors string) {
	t.Helper()
	registry, gitURL := KCLSources(t)
	git := strings.TrimPrefix(gitURL, "http://")
	allow = registry + "/kusionstack," + git + "/KusionStack"
	mirrors = "ghcr.io/kusionstack=" + registry + "/kusionstack,github.com/KusionStack=" + git + "/KusionStack"
	return allow, mirrors
}
