//go:build !linux

package motoserver

import "syscall"

// sysProcAttr: elsewhere, Stop is what ends moto_server.
func sysProcAttr() *syscall.SysProcAttr { return nil }
