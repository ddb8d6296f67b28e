package fail

import "testing"

func TestGood(t *testing.T) {}

func TestBad(t *testing.T) {
	t.Log("before the failure")
	t.Errorf("want %d, got %d", 1, 2)
}

func TestSub(t *testing.T) {
	t.Run("ok", func(t *testing.T) {})
	t.Run("broken", func(t *testing.T) { t.Fatal("subtest broke") })
}
