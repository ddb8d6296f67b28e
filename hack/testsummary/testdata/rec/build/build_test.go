package build

import "testing"

func TestNever(t *testing.T) {
	var n int = "not a number"
	_ = n
}
