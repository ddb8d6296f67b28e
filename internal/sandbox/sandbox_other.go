//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
)

// Command fails on this platform: confinement uses Linux's Landlock,
// seccomp and namespaces.
func Command(ctx context.Context, p Policy, name string, args ...string) (*exec.Cmd, error) {
	_, err := Check()
	return nil, err
}

// Check fails on this platform.
func Check() (Support, error) {
	return Support{}, fmt.Errorf("%w: %s has no Landlock (needs Linux 5.13+)", ErrUnavailable, runtime.GOOS)
}
