package slot

import "time"

// The gate reserves a start ahead of it. A worker wakes a lead before the
// start it wants, passes the gate for that start (the gate checks and
// moves the queue's theoretical times by the start, not by the moment it
// is asked), claims its job, sleeps to the start and begins the target
// there. The writes are behind it when the start comes, so their latency
// makes no start late; and a worker that comes too late for its start
// does not start late, since a late start would push every start booked
// after it (the gate opens an interval after the last start): it gives
// its slot up, and only its own job moves (Missed, Overslept).

// DefaultLead is how long before a start a worker of the embedded runtime
// goes to the gate (engine.Options.Lead's default): it covers a read of
// the queue, the gate and the claim on an in-process store, microseconds
// each, and the scheduling delays of a loaded 2-core host, where a
// goroutine may wait a millisecond to run. The Lambda stack sets its own
// (template parameter SlotLead), from DynamoDB's write latency.
const DefaultLead = 2 * time.Millisecond

// StartAt is the start a worker asks the gate for, ready at now for a start
// it wants at want (its slot, or the gate's opening): want itself while it
// lies ahead. A worker past it asks for now + lead, the soonest its gate
// and claim are surely behind it, if that is within skew of want; else,
// while now is still within skew of want, for want + skew, the last start
// that counts as on time (its writes may make it: if not, it oversleeps
// and misses, as it would have anyway); else for now + lead, and it is
// late.
func StartAt(want, now time.Time, lead, skew time.Duration) time.Time {
	switch {
	case !now.After(want):
		return want
	case !now.Add(lead).After(want.Add(skew)):
		return now.Add(lead)
	case now.Before(want.Add(skew)):
		return want.Add(skew)
	}
	return now.Add(lead)
}

// Due is the theoretical start of a line ticket whose slot is slotAt: its
// slot, or the queue's next theoretical start under ls when the queue
// runs behind it (for the interval and rate forms LastStart + T, the
// time a start moves nobody's opening: a burst's room is not counted as
// the queue running ahead; for a window, its opening).
func Due(s State, slotAt time.Time, ls Limits) time.Time {
	due := slowDue(s, slotAt)
	for i, l := range ls {
		m := s.mark(i)
		switch {
		case !l.Window.IsZero():
			due = later(due, opens(l, m))
		case !m.Last.IsZero():
			due = later(due, m.Last.Add(every(l)))
		}
	}
	return due
}

// Missed reports whether a line ticket whose slot is slotAt has lost it,
// when at is the soonest its worker can start: at lies more than skew
// after the ticket's due start (Due), and the line has slots booked after
// slotAt (Clock is later), which a start at at would push back, each of
// them by as much. Such a ticket takes a new ticket at the end of the line
// instead. With nothing booked behind it a late ticket starts late, which
// moves nobody.
func Missed(s State, slotAt, at time.Time, ls Limits, skew time.Duration) bool {
	if at.Sub(Due(s, slotAt, ls)) <= skew {
		return false
	}
	for i := range ls {
		if s.mark(i).Clock.After(slotAt) {
			return true
		}
	}
	return false
}

// The skew is the allowance for clocks and wake-ups, and it is the
// worker's: the engine's gate lets no start through before its limits
// open (it asks with no skew), and a worker may begin its target up to
// Wake after the start the gate reserved for it (one that comes later
// gives the start up: Overslept). So the gate's reserved starts keep
// every limit exactly, and the targets' starts keep them within the skew.

// Wake is how long after the start the gate reserved a worker may still
// begin its target: the skew.
func Wake(skew time.Duration) time.Duration { return skew }

// Overslept reports whether a worker that passed the gate for a start at
// at and woke at now must not start: it woke more than Wake(skew) after
// at. The gate counted the start at at, and the next ticket may start at
// at + interval; a start later than at + Wake(skew) would come closer to
// it than the spacing allows, beyond the skew. Its slot is spent.
func Overslept(at, now time.Time, skew time.Duration) bool {
	return now.Sub(at) > Wake(skew)
}
