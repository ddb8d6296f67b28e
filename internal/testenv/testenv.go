// Package testenv gives integration tests the real components hack/testenv.sh
// started. Under a plain `go test` they skip; under `make test`
// (KUSIONPR_REQUIRE_TESTENV=1) a missing component fails the test instead, so
// CI can never pass by skipping.
package testenv

import (
	"os"
	"strings"
	"testing"
)

// Kubeconfig returns the path of the test cluster's kubeconfig.
func Kubeconfig(t testing.TB) string {
	t.Helper()
	p := os.Getenv("KUSIONPR_TEST_KUBECONFIG")
	if p == "" {
		missing(t, "KUSIONPR_TEST_KUBECONFIG is not set: run `make test` or `eval \"$(hack/testenv.sh env)\"` after `hack/testenv.sh start`")
	}
	if _, err := os.Stat(p); err != nil {
		missing(t, "test cluster kubeconfig: "+err.Error())
	}
	return p
}

func missing(t testing.TB, why string) {
	t.Helper()
	if Required() {
		t.Fatal(why)
	}
	t.Skip(why)
}

// TerraformBinaries returns every terraform and tofu executable the test
// environment provides; tests run once with each. The providers come from
// the environment's filesystem mirror (TF_CLI_CONFIG_FILE).
func TerraformBinaries(t testing.TB) []string {
	t.Helper()
	v := os.Getenv("KUSIONPR_TEST_TERRAFORM_BINARIES")
	if v == "" || os.Getenv("TF_CLI_CONFIG_FILE") == "" {
		missing(t, "KUSIONPR_TEST_TERRAFORM_BINARIES or TF_CLI_CONFIG_FILE is not set: run `make test` or `eval \"$(hack/testenv.sh env)\"` after `hack/testenv.sh start`")
	}
	var out []string
	for _, p := range strings.Split(v, ":") {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			missing(t, "terraform binary: "+err.Error())
		}
		out = append(out, p)
	}
	return out
}

// OctokitDir returns the folder hack/testenv.sh installed GitHub's REST
// description and webhook examples in (node_modules/@octokit), for the fake
// GitHub of internal/githubfake.
func OctokitDir(t testing.TB) string {
	t.Helper()
	p, why := LookupOctokitDir()
	if why != "" {
		missing(t, why)
	}
	return p
}

// LookupOctokitDir is OctokitDir for a caller that can do without the
// packages under a plain go test: it says why they are missing ("" when
// they are not) rather than skipping.
func LookupOctokitDir() (dir, why string) {
	p := os.Getenv("KUSIONPR_TEST_OCTOKIT_DIR")
	if p == "" {
		return "", "KUSIONPR_TEST_OCTOKIT_DIR is not set: run `make test` or `eval \"$(hack/testenv.sh env)\"` after `hack/testenv.sh build`"
	}
	if _, err := os.Stat(p); err != nil {
		return "", "GitHub's REST description: " + err.Error()
	}
	return p, ""
}

// Required reports whether a missing component fails the test rather than
// skipping it: KUSIONPR_REQUIRE_TESTENV is set, as make test sets it.
func Required() bool { return os.Getenv("KUSIONPR_REQUIRE_TESTENV") != "" }

// KCLSources returns the local OCI registry (host:port) and git server
// (http://host:port) hack/testenv.sh started, serving the packages of
// internal/testenv/kclpkgs: kusionstack/{service,network,mysql} and
// KusionStack/kam.git.
func KCLSources(t testing.TB) (registry, gitURL string) {
	t.Helper()
	registry, gitURL = os.Getenv("KUSIONPR_TEST_OCI_REGISTRY"), os.Getenv("KUSIONPR_TEST_GIT_URL")
	if registry == "" || gitURL == "" {
		missing(t, "KUSIONPR_TEST_OCI_REGISTRY or KUSIONPR_TEST_GIT_URL is not set: run `make test` or `eval \"$(hack/testenv.sh env)\"` after `hack/testenv.sh start`")
	}
	return registry, gitURL
}
