//go:build unix

package lambdahost

import (
	"os"
	goruntime "runtime"
	"syscall"
)

// maxRSS is the peak resident memory of an exited process, in bytes.
func maxRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0
	}
	if goruntime.GOOS == "darwin" || goruntime.GOOS == "ios" {
		return int64(ru.Maxrss) // bytes there
	}
	return int64(ru.Maxrss) * 1024 // kilobytes on Linux and the BSDs
}
