package dynamolocal

import "syscall"

// sysProcAttr puts java in a process group of its own, so a terminal's
// Ctrl-C reaches only our process, which then stops it, and has the kernel
// kill it when our process dies without stopping it (a test binary killed
// at its timeout, say): a JVM must not outlive the tests.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
