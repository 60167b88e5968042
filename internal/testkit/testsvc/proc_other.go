//go:build !linux

package testsvc

import "syscall"

// sysProcAttr: no Pdeathsig here; the tests' cleanups stop the services.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
