//go:build linux

package lambdahost

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// peakRSS is the most resident memory the live process pid has used, in
// bytes: its VmHWM. Not the exited process's rusage: a child Go starts
// shares its parent's memory until it execs, so its ru_maxrss counts the
// parent's resident memory too (a test binary of 130 MB made every
// function seem to use 130 MB). 0 if pid is gone or the line is missing.
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:"))
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}
