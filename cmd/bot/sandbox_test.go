package main

import (
	"context"
	"os"
	"testing"

	"github.com/kusionpr/kusionpr/policy"
)

// TestMain serves the policy sandbox when the code under test, run in
// this test binary, starts one of itself, as main does.
func TestMain(m *testing.M) {
	if policy.IsSandbox(os.Args) {
		os.Exit(policy.ServeSandbox(context.Background(), os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}
