package engine

import (
	"testing"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// TestGateHoldSkipsRoomPlaces: a job holds at the gate for the lower
// line tickets that may still come, not for every lower ticket. The
// waiting room's places are tickets that never come to the gate (their
// jobs take new tickets when booked): the first job booked from the room
// after the line's last started ticket starts at its slot. A lower line
// ticket that may still come is held for as before: a late neighbour
// whose opening a scheduled start took gets the next one.
func TestGateHoldSkipsRoomPlaces(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	const T = 10 * time.Millisecond
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	q := func(st slot.State) Queue { return Queue{Name: "q", Config: slot.Config{Interval: T}, State: st} }
	for _, c := range []struct {
		name   string
		st     slot.State
		ticket int64
		slotAt time.Time
		want   time.Time
	}{
		{
			// Tickets 1–3 booked at enqueue (slots 2, 12, 22 ms), 4–10
			// the room's places, 11 the first booked from the room at
			// the next place, 32 ms: 3 started on time.
			name: "room places between", st: slot.State{Ticket: 13, Line: 13, Current: 3, Front: at(22), LastStart: at(22), Clock: at(52)},
			ticket: 11, slotAt: at(32),
		},
		{
			// Ticket 4 (slot 32 ms) has not started: 5 leaves it its
			// opening, which comes before 5's own slot.
			name: "neighbour on its way", st: slot.State{Ticket: 5, Line: 5, Current: 3, Front: at(22), LastStart: at(22), Clock: at(42)},
			ticket: 5, slotAt: at(42), want: at(42),
		},
		{
			// A scheduled start took ticket 4's opening at 32 ms: 4,
			// late, gets the next one, and 5 the one after.
			name: "late neighbour", st: slot.State{Ticket: 6, Line: 5, Current: 3, Front: at(22), LastStart: at(32), Clock: at(42)},
			ticket: 5, slotAt: at(42), want: at(52),
		},
	} {
		j := job.Job{Queue: "q", Ticket: c.ticket, SlotAt: c.slotAt}
		if got := lineOpening(q(c.st), &j, c.slotAt); !got.Equal(c.want) {
			t.Errorf("%s: lineOpening = %v, want %v", c.name, since(t0, got), since(t0, c.want))
		}
	}
}

// since is t after t0, or "none" for no time.
func since(t0, t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.Sub(t0).String()
}
