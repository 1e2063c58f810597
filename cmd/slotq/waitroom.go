package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/slotq/slotq/internal/cli/clikit"
	"github.com/slotq/slotq/pkg/api"
)

// roomLine says where a job of the waiting room stands: "3,212th of key
// A (priority 3); about 48s" (of the jobs without a key, for one without).
func roomLine(r api.RoomPlace, now time.Time) string {
	of := "of the jobs without a key"
	if r.Key != "" {
		of = "of key " + r.Key
	}
	return fmt.Sprintf("%s %s (priority %d); about %s", ordinal(r.Place), of, r.Priority, clikit.Human(max(0, r.EstimatedStartAt.Sub(now))))
}

// ordinal writes n as an English ordinal with thousands separators:
// 1st, 22nd, 3,212th.
func ordinal(n int64) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return thousands(n) + suffix
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// roomRows are stats' rows of a bounded queue's booking horizon and
// waiting room.
func roomRows(w io.Writer, f *api.RoomFigures) {
	if f == nil {
		return
	}
	clikit.Row(w, "booked", f.Booked)
	var by []string
	for p, n := range f.ByPriority {
		if n > 0 {
			by = append(by, fmt.Sprintf("priority %d: %d", p+1, n))
		}
	}
	in := strconv.Itoa(f.Waiting)
	if len(by) > 0 {
		in += " (" + strings.Join(by, ", ") + ")"
	}
	clikit.Row(w, "in waiting room", in)
	if len(f.Keys) > 0 {
		clikit.Row(w, "busiest keys waiting", roomKeys(f.Keys))
	}
}

// roomKeys writes the busiest keys of a waiting room: "A 3,995, k01 10,
// (no key) 2".
func roomKeys(keys []api.RoomKey) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := k.Key
		if name == "" {
			name = "(no key)"
		}
		parts[i] = name + " " + thousands(int64(k.Waiting))
	}
	return strings.Join(parts, ", ")
}
