//go:build linux

package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter is written by hand: it is ten instructions, and the
// maintained Go seccomp library (libseccomp-golang) needs libseccomp and cgo,
// which the bot's static image does not have. Landlock does not cover UDP
// before ABI 10 nor pathname unix sockets before ABI 9, and the network
// namespace is not there where user namespaces are refused; refusing
// socket(2) itself keeps every family out on every kernel. io_uring is
// refused because its IORING_OP_SOCKET makes sockets without socket(2).
// truncate(2) is refused because Landlock restricts it from ABI 3 only:
// before, the target could empty a file it may only read. (ftruncate(2)
// needs a descriptor open for writing, which Landlock's write right
// governs on every ABI.)

// seccomp_data offsets (linux/seccomp.h).
const (
	seccompDataNr   = 0
	seccompDataArch = 4
	// x32 system calls on amd64 have this bit set in their number.
	x32Bit = 0x40000000
)

// seccompArch is the AUDIT_ARCH of the system calls this binary makes; a
// call made in another ABI (32-bit on amd64) is refused, as its numbers
// differ.
func seccompArch() (uint32, error) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, nil
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, nil
	}
	return 0, fmt.Errorf("%w: no seccomp filter for %s", ErrUnavailable, runtime.GOARCH)
}

// installSeccomp refuses socket(2) and truncate(2) with EACCES and
// io_uring_setup(2) and any call of a foreign ABI with ENOSYS, on this
// thread; execve keeps it.
// no_new_privs must be set already.
func installSeccomp() error {
	arch, err := seccompArch()
	if err != nil {
		return err
	}
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	filter := []unix.SockFilter{
		/* 0 */ {Code: ld, K: seccompDataArch},
		/* 1 */ {Code: jeq, K: arch, Jt: 0, Jf: 7}, // foreign ABI: 9
		/* 2 */ {Code: ld, K: seccompDataNr},
		/* 3 */ {Code: jge, K: x32Bit, Jt: 5, Jf: 0}, // x32: 9
		/* 4 */ {Code: jeq, K: unix.SYS_SOCKET, Jt: 3, Jf: 0}, // 8
		/* 5 */ {Code: jeq, K: unix.SYS_TRUNCATE, Jt: 2, Jf: 0}, // 8
		/* 6 */ {Code: jeq, K: unix.SYS_IO_URING_SETUP, Jt: 2, Jf: 0}, // 9
		/* 7 */ {Code: ret, K: unix.SECCOMP_RET_ALLOW},
		/* 8 */ {Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)},
		/* 9 */ {Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("installing the seccomp socket filter: %w", err)
	}
	return nil
}
