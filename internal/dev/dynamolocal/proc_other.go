//go:build !linux

package dynamolocal

import "syscall"

// sysProcAttr has no parent-death signal to ask for outside Linux: there a
// killed test binary can leave java running.
func sysProcAttr() *syscall.SysProcAttr { return nil }
