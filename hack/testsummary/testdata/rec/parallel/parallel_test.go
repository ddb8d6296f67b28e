package parallel

import (
	"testing"
	"time"
)

func TestParallel(t *testing.T) {
	for _, name := range []string{"left", "right"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for i := 0; i < 3; i++ {
				t.Logf("%s line %d", name, i)
				time.Sleep(20 * time.Millisecond)
			}
			if name == "right" {
				t.Error("right failed")
			}
		})
	}
}

func TestAlone1(t *testing.T) {
	t.Parallel()
	for i := 0; i < 3; i++ {
		t.Logf("alone1 %d", i)
		time.Sleep(15 * time.Millisecond)
	}
	t.Error("alone1 failed")
}

func TestAlone2(t *testing.T) {
	t.Parallel()
	for i := 0; i < 3; i++ {
		t.Logf("alone2 %d", i)
		time.Sleep(15 * time.Millisecond)
	}
}
