package dynamostore

import (
	"reflect"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// DynamoDB's update expressions cannot take a maximum, so the take's and
// the gate's writes pick a conditional form from the state the caller
// read (TakeRequest.Seen, GateRequest.Seen): which of the slot clock and
// the last start leads, whether the gate's limit is busy or idle,
// whether the ticket moves the line's current and front. A form picked
// from a read that another write has since made stale is refused, billed
// as a write, and sent again in the form the item sent back. StaleTake
// and StaleGate say whether that happens, for a model of the store that
// keeps the state itself (internal/bench/dynamomodel): the forms stay
// written here, once.

// StaleTake reports whether r's first write is refused on st, the queue's
// state when it lands, for a form picked from r.Seen that st no longer
// holds (for several limits or a window, whose take is a compare-and-set
// of the limit state, for any change of that state).
func StaleTake(r engine.TakeRequest, st slot.State) bool {
	t, _, forms := gcra(r.LimitList())
	if !forms || casTaking(r, r.Seen) {
		return !sameLimitState(r.Seen, st) || r.Seen.Current != st.Current
	}
	return casTaking(r, st) || formOf(r.Seen, r.Line, t, r.Now) != formOf(st, r.Line, t, r.Now)
}

// StaleGate reports whether r's first write is refused on st, the queue's
// state when it lands, although the gate lets r through on st: its busy
// or idle form, or its line's forms (lineMoves), picked from r.Seen, no
// longer hold (for several limits or a window, the limit state it pins
// has changed).
func StaleGate(r engine.GateRequest, st slot.State) bool {
	seen := r.Seen
	if staleLine(r, seen, st) {
		return true
	}
	t, _, forms := gcra(r.LimitList())
	if !forms || r.CutIn && !seen.Gated || r.Alone {
		return !sameLimitState(seen, st) || seen.Current != st.Current || !seen.Front.Equal(st.Front)
	}
	if r.CutIn && !st.Gated {
		return true
	}
	rec := recorded(r)
	return isBusy(seen, t, rec) != isBusy(st, t, rec)
}

// staleLine reports whether the line's forms lineMoves picks from seen
// fail on st: current moved to the ticket or past it, or front to the
// ticket's slot or past it, since seen.
func staleLine(r engine.GateRequest, seen, st slot.State) bool {
	if r.Scheduled {
		return false
	}
	if r.Ticket > seen.Current && st.Current >= r.Ticket {
		return true
	}
	if r.SlotAt.IsZero() {
		return false
	}
	moves := slot.MovesFront(r.SlotAt, r.Start(), r.LimitList(), r.Skew) && r.SlotAt.After(seen.Front)
	return moves && !st.Front.Before(r.SlotAt)
}

// sameLimitState reports whether a and b hold the same limit state, what
// a compare-and-set take or gate pins (pin).
func sameLimitState(a, b slot.State) bool {
	return a.LastStart.Equal(b.LastStart) && a.Clock.Equal(b.Clock) && reflect.DeepEqual(a.Marks, b.Marks) &&
		a.RunFrom.Equal(b.RunFrom) && a.Gated == b.Gated && a.GatedUntil.Equal(b.GatedUntil) && a.GatedThrough == b.GatedThrough
}
