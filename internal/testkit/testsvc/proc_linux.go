package testsvc

import "syscall"

// sysProcAttr kills the service with the test binary.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
