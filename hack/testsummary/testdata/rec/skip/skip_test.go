package skip

import "testing"

func TestRuns(t *testing.T) {}

func TestNeedsCluster(t *testing.T) {
	t.Skip("KUSIONPR_TEST_KUBECONFIG is not set")
}

func TestSubSkips(t *testing.T) {
	t.Run("store", func(t *testing.T) { t.Skip("no S3") })
}
