//go:build !linux

package undumpable

// Set has nothing to do where /proc does not expose a process's
// environment to its user's other processes.
func Set() error { return nil }
