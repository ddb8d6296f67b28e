// Package sandbox runs a program, KCL's Python runtime evaluating a pull
// request's main.k, confined: it reads only what it is given to read,
// writes only its scratch folder, reaches no network, sees only the
// environment it is given, and is bounded in CPU time, memory, file size and
// open files.
//
// # How
//
// Command returns an *exec.Cmd that starts this very binary again
// (/proc/self/exe) with a marker as argv[0]. The package's init hook sees the
// marker before anything else of the program runs and, on its locked main
// thread:
//
//   - builds a Landlock ruleset (github.com/landlock-lsm/go-landlock) that
//     handles every filesystem and network right the kernel knows: Policy.Read
//     may be read and executed, Policy.Write read, written, created and
//     removed in, nothing else; no TCP bind or connect (and, from Landlock
//     ABI 9 and 10 on, no pathname unix socket or UDP either); abstract unix
//     sockets and signals scoped to the sandbox (ABI 6);
//   - sets no_new_privs and enforces the ruleset on its own thread only;
//   - installs a seccomp filter that refuses socket(2) and io_uring, so no
//     socket of any family (UDP, raw, netlink, unix) can be made, whatever
//     Landlock ABI the kernel has;
//   - sets the resource limits (RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE,
//     RLIMIT_NOFILE, RLIMIT_NPROC; RLIMIT_CORE is always 0);
//   - execs the target with exactly Policy.Env.
//
// Landlock and seccomp restrict the thread that asks and are inherited across
// execve, so restricting the one thread that execs is enough; go-landlock's
// own Restrict calls would restrict every thread through libpsx or, from ABI
// 8, TSYNC, which a thread about to exec does not need. The library builds
// the ruleset (Config.NewRulesetFD) and makes the single-thread
// landlock_restrict_self call; no_new_privs, the seccomp filter, the
// rlimits and execve itself are done by hand with golang.org/x/sys/unix.
// (go-landlock documents SysProcAttr.LandlockFD for Go 1.28, which will let
// os/exec do the Landlock step.)
//
// Where the kernel lets this process create them, the marker process is also
// started in new user, network, PID and IPC namespaces: the network
// namespace has only a loopback that is down, so even a socket made some
// other way reaches nothing; the PID namespace hides every other process and
// dies with the target, so killing the target (Cmd.Cancel) kills all it
// started. As root the user namespace also takes away the capabilities over
// the host's resources. In a Kubernetes pod, user namespaces are often
// refused: the namespaces are then skipped and Landlock and seccomp alone
// confine, which Check reports.
//
// # What is not confined
//
//   - Files already open: the caller's Stdin, Stdout, Stderr and ExtraFiles
//     are the target's to use (the KCL driver's protocol pipes).
//   - Reading metadata: Landlock does not restrict stat(2), so the target can
//     learn that a path exists, its size and times, but not read it.
//   - Wall time: Cmd is started with the caller's context; the caller bounds
//     the run with it. RLIMIT_CPU bounds CPU time per process.
//   - RLIMIT_NPROC counts every process of the real user, and root (also
//     root in a user namespace mapped to root) is exempt; it bounds a fork
//     bomb only for a non-root bot, and only together with its own processes.
//   - RLIMIT_AS bounds each process's address space, not the sum of a tree.
//
// # Kernel requirements
//
// Landlock ABI 1 (Linux 5.13, with landlock in the LSM list) is the
// minimum: without Landlock, Command and Check fail with ErrUnavailable.
// Before ABI 3 Landlock does not restrict truncate(2), which the seccomp
// filter refuses on every kernel; ABI 4 adds TCP rules, ABI 6 scoping of
// signals and abstract sockets; without them (and without namespaces),
// seccomp still refuses every socket, and Check names what is missing.
package sandbox

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrUnavailable is returned, wrapped with what is missing, when this
// kernel or platform cannot confine a process. Callers that run code from a
// pull request refuse rather than run it unconfined, unless an operator's
// setting says otherwise.
var ErrUnavailable = errors.New("confinement is not available")

// Policy is what a confined process may do. Paths are absolute; each must
// exist when Command is called. A path that is a file grants that file; a
// folder grants everything beneath it.
type Policy struct {
	// Read may be read and executed: the interpreter, its standard library
	// and shared libraries, the checkout, the dependency cache.
	Read []string
	// Write may be read, written, created in and removed from: scratch.
	Write []string
	// Env is the target's whole environment; nothing is inherited.
	Env []string
	// Limits bound the target and each process it starts.
	Limits Limits
}

// Limits are resource limits; a zero field leaves that limit as inherited.
type Limits struct {
	// CPU is the CPU time of each process, rounded up to whole seconds. The
	// process gets SIGXCPU at the limit and SIGKILL a second later.
	CPU time.Duration
	// Memory is the address space of each process, in bytes (RLIMIT_AS).
	Memory uint64
	// FileSize is the largest file a process may write, in bytes
	// (RLIMIT_FSIZE): a write past it fails.
	FileSize uint64
	// OpenFiles is the number of file descriptors (RLIMIT_NOFILE).
	OpenFiles uint64
	// Processes is RLIMIT_NPROC; see the package comment for what it counts.
	Processes uint64
}

// Support is what this kernel lets Command use.
type Support struct {
	// LandlockABI is the kernel's Landlock ABI version, 0 without Landlock.
	LandlockABI int
	// Namespaces says new user, network, PID and IPC namespaces can be
	// created from this process.
	Namespaces bool
	// Missing names the controls this kernel lacks that Command works
	// around or goes without; empty when nothing is missing.
	Missing []string
}

// String says what confines a process here, for logs and errors.
func (s Support) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Landlock ABI %d", s.LandlockABI)
	if s.Namespaces {
		b.WriteString(", user/network/PID/IPC namespaces")
	} else {
		b.WriteString(", no namespaces")
	}
	b.WriteString(", seccomp socket filter")
	if len(s.Missing) > 0 {
		b.WriteString("; missing: ")
		b.WriteString(strings.Join(s.Missing, "; "))
	}
	return b.String()
}
