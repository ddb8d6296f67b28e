//go:build !linux

package terraform

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
