package terraform

import "syscall"

// procAttr puts terraform in a process group of its own, so that an
// interrupt meant for us (a Ctrl-C in a terminal) does not reach it before
// we pass it on, and kills it if we die first, as terraform-exec does.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
