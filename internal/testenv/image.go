package testenv

import (
	"os"
	"strings"
	"testing"
)

// Image returns the action's image hack/image.sh built and the buildah
// options (storage root and driver) under which it is found: buildah's
// arguments start with them.
func Image(t testing.TB) (name string, buildah []string) {
	t.Helper()
	name, opts := os.Getenv("KUSIONPR_TEST_IMAGE"), os.Getenv("KUSIONPR_TEST_BUILDAH_OPTIONS")
	if name == "" || opts == "" {
		missing(t, "KUSIONPR_TEST_IMAGE is not set: run `make test`, or `hack/image.sh build` and `eval \"$(hack/image.sh env)\"`")
	}
	return name, strings.Fields(opts)
}
