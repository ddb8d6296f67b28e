//go:build !linux

package policy

import (
	"errors"
	"time"
)

// limit needs Linux's prlimit: elsewhere a sandbox refuses to run rather
// than run unbounded.
func limit(int, int64, time.Duration) error {
	return errors.New("bounding a process's memory needs Linux")
}
