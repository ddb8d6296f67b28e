package policy

import (
	"time"

	"golang.org/x/sys/unix"
)

// limit bounds the running process pid: its data segment to memory bytes
// (the Go runtime maps its heap there, so an allocation past it fails and
// the child dies) and its CPU time to cpu.
func limit(pid int, memory int64, cpu time.Duration) error {
	if err := unix.Prlimit(pid, unix.RLIMIT_DATA, &unix.Rlimit{Cur: uint64(memory), Max: uint64(memory)}, nil); err != nil {
		return err
	}
	secs := uint64(cpu.Seconds()) + 1
	return unix.Prlimit(pid, unix.RLIMIT_CPU, &unix.Rlimit{Cur: secs, Max: secs + 1}, nil)
}
