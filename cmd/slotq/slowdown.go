package main

import (
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/cli/clikit"
)

// slowed says whether a target's "slow down" holds a queue (or a key)
// back at now: "by its target until T", and how many slow-downs its
// targets answered so far.
func slowed(until time.Time, n int64, now time.Time) string {
	var s string
	switch {
	case n == 0:
		return "no"
	case now.Before(until):
		s = "by its target until " + clikit.Time(until)
	default:
		s = "no"
	}
	return fmt.Sprintf("%s (%d slow-downs so far)", s, n)
}

// numSetting and durSetting print a setting, "" when it is zero (a queue
// from before it existed: the default applies).
func numSetting(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

func durSetting(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return clikit.Setting(d)
}

// slowedTo is a slow-down's end while it holds back at now, else zero:
// keys list shows a slowed key's next start no sooner.
func slowedTo(until, now time.Time) time.Time {
	if now.Before(until) {
		return until
	}
	return time.Time{}
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
