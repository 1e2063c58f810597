//go:build !linux

package console_test

import "os/exec"

// ownGroup leaves the browser as chromedp starts it: chromedp kills it
// when its allocator is cancelled.
func ownGroup(*exec.Cmd) {}

func killGroup(int) {}
