package motoserver

import "syscall"

// sysProcAttr has the kernel kill moto_server when the process that
// started it dies without stopping it (a test binary killed at its
// timeout, or one whose package has no TestMain that calls Stop): an
// emulator must not outlive the tests.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
