// Package testenv gives integration tests the real components hack/testenv.sh
// started. Under a plain `go test` they skip; under `make test`
// (KUSIONPR_REQUIRE_TESTENV=1) a missing component fails the test instead, so
// CI can never pass by skipping.
package testenv

import (
	"os"
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
	if os.Getenv("KUSIONPR_REQUIRE_TESTENV") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}
