package main

import (
	"os"
	"runtime/debug"
)

// localHeap is the heap the slotq program lets grow before it collects
// garbage (tuneGC).
const localHeap = 512 << 20

// tuneGC collects garbage when the heap nears localHeap rather than each
// time it doubles. The program runs the embedded engine (local, demo,
// bench), whose workers sleep on timers to their starts: on a 2-core host
// every collection's mark phase takes the idle cores for a few
// milliseconds, and the timers due meanwhile fire that late, so each
// collection makes a start or two late or passed (a fair workload of
// 4,250 jobs collected 49 times where its jobs held under 15 MB). The
// embedded store holds every job in memory, so its heap grows with the
// jobs kept, never beyond what they need; at localHeap the collector runs
// as usual. GOGC or GOMEMLIMIT in the environment leave the runtime's own
// settings.
func tuneGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(localHeap)
	debug.SetGCPercent(-1)
}
