//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

const (
	// marker is argv[0] of the confining process: no program is started
	// under this name otherwise.
	marker = "kusionpr-sandbox"
	// policyVar carries the encoded policy to the confining process. It is
	// that process's only variable and is not passed on: the target gets
	// Policy.Env, nothing else.
	policyVar = "KUSIONPR_SANDBOX_POLICY"
	// exitSetup is the confining process's exit code when it cannot confine
	// or exec the target, as env(1) and chroot(1) use 125 for their own
	// failures; its reason is on the target's standard error.
	exitSetup = 125
	// minABI is the least Landlock ABI that confines reads and writes.
	// truncate(2), which Landlock restricts from ABI 3 only, the seccomp
	// filter refuses on every kernel; the network, before ABI 4, too. So
	// Linux 5.13's Landlock is enough: the 6.1 kernels of Debian 12,
	// Amazon Linux 2023 and Container-Optimized OS among them.
	minABI = 1
)

// Rights a Read path gets: read and execute. A file can only be given
// rights that apply to files.
const (
	readDirRights  = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir
	readFileRights = llsys.AccessFSExecute | llsys.AccessFSReadFile
	// No execute in scratch, no devices, sockets, pipes or links made.
	writeDirRights = llsys.AccessFSReadFile | llsys.AccessFSReadDir | llsys.AccessFSWriteFile |
		llsys.AccessFSTruncate | llsys.AccessFSMakeReg | llsys.AccessFSMakeDir |
		llsys.AccessFSRemoveFile | llsys.AccessFSRemoveDir
	writeFileRights = llsys.AccessFSReadFile | llsys.AccessFSWriteFile | llsys.AccessFSTruncate
)

// layers switches off one control at a time, so the tests can show that
// each one stops an attack by itself. Command always has all of them on.
type layers struct {
	NoNamespaces  bool `json:"no_namespaces,omitempty"`
	NoSeccomp     bool `json:"no_seccomp,omitempty"`
	NoLandlockNet bool `json:"no_landlock_net,omitempty"`
	// MaxABI, when set, uses no more of Landlock than that ABI has, as
	// an older kernel would.
	MaxABI int `json:"max_abi,omitempty"`
}

// wire is what the confining process is told.
type wire struct {
	Path   string   `json:"path"`
	Argv   []string `json:"argv"`
	Env    []string `json:"env"`
	Read   []string `json:"read"`
	Write  []string `json:"write"`
	Limits Limits   `json:"limits"`
	Layers layers   `json:"layers"`
}

// init is this package's one package-level hook, and the reason it has
// one: the confining step has to run in a fresh process, before the
// program's own initialisation starts goroutines or reads its environment,
// and Go has no fork without exec. Any binary importing this package (the
// bot, the action, a test binary) can therefore be re-executed as the
// confining parent of a target. Every other start of the binary returns
// here at once: argv[0] is the marker only when Command started it.
func init() {
	if len(os.Args) != 1 || os.Args[0] != marker {
		return
	}
	enc, ok := os.LookupEnv(policyVar)
	if !ok {
		return
	}
	// Landlock and seccomp are enforced on this thread only and inherited
	// by the exec'd target; the main goroutine must not move meanwhile.
	runtime.LockOSThread()
	err := confineAndExec(enc)
	fmt.Fprintf(os.Stderr, "kusionpr sandbox: %v\n", err)
	os.Exit(exitSetup)
}

// Command returns a command that runs name (looked up in this process's
// PATH when it has no slash) with args, confined by p. The caller sets
// Dir, Stdin, Stdout, Stderr and ExtraFiles as usual; it must not replace
// SysProcAttr, Env, Path or Args. Cancelling ctx kills the target and what
// it started. If the target cannot be confined, Command fails: the error
// wraps ErrUnavailable when it is this kernel that cannot.
func Command(ctx context.Context, p Policy, name string, args ...string) (*exec.Cmd, error) {
	return command(ctx, p, layers{}, name, args...)
}

func command(ctx context.Context, p Policy, l layers, name string, args ...string) (*exec.Cmd, error) {
	sup, err := Check()
	if err != nil {
		return nil, err
	}
	path := name
	if filepath.Base(name) == name {
		if path, err = exec.LookPath(name); err != nil {
			return nil, fmt.Errorf("finding %s to run confined: %w", name, err)
		}
	}
	if path, err = filepath.Abs(path); err != nil {
		return nil, fmt.Errorf("finding %s to run confined: %w", name, err)
	}
	for _, set := range [][]string{p.Read, p.Write} {
		for _, q := range set {
			if !filepath.IsAbs(q) {
				return nil, fmt.Errorf("sandbox policy path %q is not absolute", q)
			}
			if _, err := os.Stat(q); err != nil {
				return nil, fmt.Errorf("checking sandbox policy path: %w", err)
			}
		}
	}
	if !sup.Namespaces {
		l.NoNamespaces = true
	}
	enc, err := json.Marshal(wire{
		Path:   path,
		Argv:   append([]string{name}, args...),
		Env:    append([]string{}, p.Env...),
		Read:   p.Read,
		Write:  p.Write,
		Limits: p.Limits,
		Layers: l,
	})
	if err != nil {
		return nil, fmt.Errorf("encoding sandbox policy: %w", err)
	}
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	cmd.Args = []string{marker}
	cmd.Env = []string{policyVar + "=" + string(enc)}
	// Its own process group, so that without a PID namespace Cancel still
	// reaches the target's children that stayed in it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !l.NoNamespaces {
		cmd.SysProcAttr = namespaced()
	}
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	return cmd, nil
}

// namespaced is the SysProcAttr for new user, network, PID and IPC
// namespaces, this process's user and group mapped to themselves: files
// keep their owners, and a root caller's capabilities stop at the new
// namespaces.
func namespaced() *syscall.SysProcAttr {
	uid, gid := os.Getuid(), os.Getgid()
	return &syscall.SysProcAttr{
		Setpgid:                    true,
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
}

// Check says what this kernel offers. It fails, wrapping ErrUnavailable,
// when Landlock is missing; Support.Missing names what is confined less
// well here.
func Check() (Support, error) {
	var s Support
	if _, err := seccompArch(); err != nil {
		return s, err
	}
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return s, fmt.Errorf("%w: Landlock is not available in this kernel (needs Linux 5.13+ with landlock in the LSM list, lsm= on the kernel command line)", ErrUnavailable)
	}
	s.LandlockABI = abi
	s.Namespaces = namespacesWork()
	if !s.Namespaces {
		s.Missing = append(s.Missing, "user namespaces are refused here: no network or PID namespace, so a process the target starts in a new session outlives cancelling it")
	}
	if abi < 3 {
		s.Missing = append(s.Missing, fmt.Sprintf("Landlock ABI %d does not restrict truncate(2) (ABI 3): the seccomp filter refuses it", abi))
	}
	if abi < 6 && !s.Namespaces {
		s.Missing = append(s.Missing, fmt.Sprintf("Landlock ABI %d does not scope signals (ABI 6) and there is no PID namespace: the target can signal processes of its user", abi))
	}
	return s, nil
}

// namespacesWork tries to start a process in the namespaces Command asks
// for. It execs the empty path, which never exists: ENOENT comes from
// execve in the new namespaces, so creating them worked, and nothing ran;
// any other error is the kernel (or a container's seccomp profile)
// refusing them.
func namespacesWork() bool {
	_, err := syscall.ForkExec("", []string{marker}, &syscall.ProcAttr{Env: []string{}, Sys: namespaced()})
	return errors.Is(err, syscall.ENOENT)
}

// confineAndExec runs in the confining process, on its locked main
// thread, and only returns on failure.
func confineAndExec(enc string) error {
	var w wire
	if err := json.Unmarshal([]byte(enc), &w); err != nil {
		return fmt.Errorf("decoding the policy: %w", err)
	}
	if err := os.Unsetenv(policyVar); err != nil {
		return fmt.Errorf("removing the policy from the environment: %w", err)
	}
	fd, flags, err := ruleset(w)
	if err != nil {
		return err
	}
	// go-landlock's Restrict enforces on every thread of the process
	// (through libpsx, or TSYNC from ABI 8); only this thread execs, so it
	// alone is restricted, with the library's single-thread call, which
	// does not depend on how the binary is linked (cgo under -race).
	// no_new_privs is set by hand first (prctl, as the library's own
	// per-thread path does), as Landlock requires without CAP_SYS_ADMIN,
	// and so that no setuid binary regains privileges.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("enforcing the Landlock ruleset: %w", err)
	}
	unix.Close(fd)
	if !w.Layers.NoSeccomp {
		if err := installSeccomp(); err != nil {
			return err
		}
	}
	path, err := syscall.BytePtrFromString(w.Path)
	if err != nil {
		return fmt.Errorf("preparing exec of %s: %w", w.Path, err)
	}
	argv, err := syscall.SlicePtrFromStrings(w.Argv)
	if err != nil {
		return fmt.Errorf("preparing exec of %s: %w", w.Path, err)
	}
	envv, err := syscall.SlicePtrFromStrings(w.Env)
	if err != nil {
		return fmt.Errorf("preparing exec of %s: %w", w.Path, err)
	}
	// Limits last: RLIMIT_AS and RLIMIT_NOFILE could make this process's
	// own allocations fail. Nothing between here and execve allocates,
	// which is why execve is called directly rather than through
	// syscall.Exec (which converts its strings after this point).
	if err := setLimits(w.Limits); err != nil {
		return err
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_EXECVE,
		uintptr(unsafe.Pointer(path)), uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	return fmt.Errorf("executing %s: %w", w.Path, errno)
}

// ruleset builds the Landlock ruleset for w: every right this kernel's ABI
// knows is handled, and only w.Read and w.Write are granted any.
func ruleset(w wire) (int, uint32, error) {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < minABI {
		return -1, 0, fmt.Errorf("%w: Landlock ABI %d (needs %d)", ErrUnavailable, abi, minABI)
	}
	if w.Layers.MaxABI > 0 {
		abi = min(abi, w.Layers.MaxABI)
	}
	// The configuration for exactly this ABI, not BestEffort: a rule the
	// kernel could not take must fail here, not silently drop the ruleset.
	cfgs := []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}
	cfg := cfgs[min(abi, 11)-minABI]
	// A right this ABI does not know (truncate before ABI 3) is neither
	// handled nor granted.
	handled := cfg.HandledAccessFS
	if w.Layers.NoLandlockNet {
		cfg.HandledAccessNet = 0
	}
	var rules []landlock.Rule
	for _, q := range w.Read {
		r, err := pathRule(q, readDirRights&handled, readFileRights&handled)
		if err != nil {
			return -1, 0, err
		}
		rules = append(rules, r)
	}
	for _, q := range w.Write {
		r, err := pathRule(q, writeDirRights&handled, writeFileRights&handled)
		if err != nil {
			return -1, 0, err
		}
		rules = append(rules, r)
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return -1, 0, fmt.Errorf("building the Landlock ruleset: %w", err)
	}
	if fd < 0 {
		return -1, 0, fmt.Errorf("building the Landlock ruleset: %w: nothing to restrict", ErrUnavailable)
	}
	return fd, flags, nil
}

// pathRule grants dir rights beneath a folder, file rights to a file.
func pathRule(path string, dir, file landlock.AccessFSSet) (landlock.Rule, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("granting access to a policy path: %w", err)
	}
	if st.IsDir() {
		return landlock.PathAccess(dir, path), nil
	}
	return landlock.PathAccess(file, path), nil
}

// setLimits sets l on this process; the target inherits them.
func setLimits(l Limits) error {
	set := func(name string, res int, soft, hard uint64) error {
		if err := unix.Prlimit(0, res, &unix.Rlimit{Cur: soft, Max: hard}, nil); err != nil {
			return fmt.Errorf("setting %s limit: %w", name, err)
		}
		return nil
	}
	if err := set("core size", unix.RLIMIT_CORE, 0, 0); err != nil {
		return err
	}
	if l.CPU > 0 {
		secs := uint64(math.Ceil(l.CPU.Seconds()))
		// SIGXCPU at the soft limit, SIGKILL at the hard one for a
		// target that catches SIGXCPU.
		if err := set("CPU time", unix.RLIMIT_CPU, secs, secs+1); err != nil {
			return err
		}
	}
	for _, r := range []struct {
		name string
		res  int
		v    uint64
	}{
		{"address space", unix.RLIMIT_AS, l.Memory},
		{"file size", unix.RLIMIT_FSIZE, l.FileSize},
		{"open files", unix.RLIMIT_NOFILE, l.OpenFiles},
		{"processes", unix.RLIMIT_NPROC, l.Processes},
	} {
		if r.v == 0 {
			continue
		}
		if err := set(r.name, r.res, r.v, r.v); err != nil {
			return err
		}
	}
	return nil
}
