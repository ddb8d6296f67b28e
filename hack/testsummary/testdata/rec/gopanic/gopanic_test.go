package gopanic

import (
	"testing"
	"time"
)

func TestStartsWork(t *testing.T) {
	go func() {
		time.Sleep(50 * time.Millisecond)
		panic("background worker crashed")
	}()
}

func TestWaits(t *testing.T) {
	t.Log("waiting")
	time.Sleep(time.Second)
}
