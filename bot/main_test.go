package bot

import (
	"os"
	"testing"

	"github.com/kusionpr/kusionpr/policy"
)

// TestMain serves the policy sandbox a bot of these tests starts, as the
// bot's own main does: its runner evaluates policies in a child of the
// running program, this test binary.
func TestMain(m *testing.M) {
	policy.ServeIfSandbox()
	os.Exit(m.Run())
}
