//go:build !linux

package sparkconnect

import "syscall"

// sysProcAttr: only Linux has Pdeathsig; elsewhere a server outlives a
// test binary that dies.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
