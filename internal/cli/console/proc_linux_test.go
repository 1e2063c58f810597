package console_test

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the browser in a process group of its own, which
// killGroup ends whole, and has the kernel kill it should this test
// binary die first (a timeout's panic skips TestMain's cleanup).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills every process of the group pgid.
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
