package pass

import "testing"

func TestOne(t *testing.T) { t.Log("quiet when it passes") }

func TestTable(t *testing.T) {
	for _, name := range []string{"a", "b"} {
		t.Run(name, func(t *testing.T) {})
	}
}
