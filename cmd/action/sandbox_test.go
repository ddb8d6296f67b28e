package main

import (
	"os"
	"testing"

	"github.com/kusionpr/kusionpr/policy"
)

// TestMain serves the policy sandbox when the code under test, run in
// this test binary, starts one of itself, as main does.
func TestMain(m *testing.M) {
	policy.ServeIfSandbox()
	os.Exit(m.Run())
}
