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
// (template parameter SlotLead), from a model of the AWS path
// (internal/bench/precision).
const DefaultLead = 2 * time.Millisecond

// Room is ρ, the wake-up allowance: how late after the moment the gate
// reserved a worker may still call its target, at the least, without
// breaking a limit. A Go timer on a loaded 2-core host wakes a
// millisecond or two late; the gate gives every start this much and the
// line books around it (Limits.Room), so a worker that wakes late keeps
// its start instead of giving its slot up.
const Room = 2 * time.Millisecond

// Room is the room the line of a queue under ls keeps for each start:
// Room when every rate's burst can spare it twice over (a rate books its
// burst less the room, and a start on time then records no later than
// its theoretical time) and for a window (which books N per period plus
// the room); none under an interval or a burst smaller than that, where
// the room is the skew alone: a start may come up to the skew after the
// queue's theoretical next start, which moves nobody.
func (ls Limits) Room() time.Duration {
	for _, l := range ls {
		if l.Window.IsZero() && time.Duration(l.Burst)*every(l) < 2*Room {
			return 0
		}
	}
	return Room
}

// BookedRoom is how late after its booked slot a start may come under
// ls, for a queue whose skew is skew: the room the booking kept for it
// (Room) and at least the skew, the rule's own allowance. A booked start
// within it keeps every limit, whatever the other booked starts do.
func (ls Limits) BookedRoom(skew time.Duration) time.Duration {
	return max(ls.Room(), skew)
}

// StartAt is the start a worker asks the gate for, ready at now for a start
// it wants at want (its slot, or the gate's opening): want itself while it
// lies ahead; past it, now + lead, the soonest its gate and claim are
// surely behind it. The gate keeps the limits at that moment, and the
// deadline it records (Deadline) gives the worker room to be late in.
func StartAt(want, now time.Time, lead time.Duration) time.Time {
	if !now.After(want) {
		return want
	}
	return now.Add(lead)
}

// Deadline is θ, the latest a worker whose start the gate reserved at at
// may call its target, at state s under ls with the queue's skew. It is
// at + the room (Limits.Room, and at least the skew, the rule's own
// allowance; Room itself for a start with nothing booked behind it,
// alone, which moves nobody), or, when later, the
// queue's theoretical next start plus the skew (for every rate and
// interval: a start by then records no later than the line's own
// theoretical time, so it costs no one anything). Under a window there is
// no such free extension: a window's recorded deadline counts against the
// starts a period later. The gate records θ on every mark (startedBy), so
// any start in [at, θ] keeps every limit.
func Deadline(s State, ls Limits, at time.Time, skew time.Duration, alone bool) time.Time {
	room := ls.BookedRoom(skew)
	if alone {
		room = max(room, Room)
	}
	theta := at.Add(room)
	var free time.Time
	for _, l := range ls {
		if !l.Window.IsZero() {
			return theta
		}
	}
	for i, l := range ls {
		m := s.mark(i)
		g := at // a limit that never started gives nothing for free
		if !m.Last.IsZero() {
			g = m.Last.Add(every(l) + skew)
		}
		if free.IsZero() || g.Before(free) {
			free = g
		}
	}
	return later(theta, free)
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
			due = later(due, opens(l, m, 0))
		case !m.Last.IsZero():
			due = later(due, m.Last.Add(every(l)))
		}
	}
	return due
}

// Missed reports whether a line ticket whose slot is slotAt has lost it:
// a start reserved for it with deadline would move the line, and the
// line has slots booked after slotAt (some limit's Clock is later), which
// would each start that much later. The line moves when the deadline
// lies beyond a limit's room for the ticket: for the interval and rate
// forms the later of its slot plus its burst (B·T: what the booking left
// unused, the room included) and the queue's theoretical next start,
// plus the skew; for a window the deadline of a start at its slot (or at
// the window's opening) plus the skew: a window books its next moment a
// skew after the gate opens past this one's deadlines (bookedPer), and
// that skew absorbs a deadline this much later without holding the next
// moment back. Such a ticket takes a new ticket at the end of the line
// instead. With nothing booked behind it a late ticket starts
// late, which moves nobody.
func Missed(s State, slotAt, deadline time.Time, ls Limits, skew time.Duration) bool {
	if !BookedAfter(s, ls, slotAt) {
		return false
	}
	base := slowDue(s, slotAt)
	room := ls.Room()
	for i, l := range ls {
		m := s.mark(i)
		var bound time.Time
		if !l.Window.IsZero() {
			bound = later(base, opens(l, m, skew)).Add(max(room, skew) + skew)
		} else {
			bound = base.Add(time.Duration(l.Burst) * every(l))
			if !m.Last.IsZero() {
				bound = later(bound, m.Last.Add(every(l)))
			}
			bound = bound.Add(skew)
		}
		if deadline.After(bound) {
			return true
		}
	}
	return false
}

// Overslept reports whether a worker whose start the gate reserved with
// deadline must not start at now: it came after the deadline. The gate
// recorded the start as late as the deadline and no later; a start after
// it could come closer to the next than the limits allow. Its slot is
// spent.
func Overslept(deadline, now time.Time) bool {
	return now.After(deadline)
}

// BookedAfter reports whether the line of a queue at state s under ls has
// slots booked after slotAt: a start that moved the queue's opening would
// make them later.
func BookedAfter(s State, ls Limits, slotAt time.Time) bool {
	for i := range ls {
		if s.mark(i).Clock.After(slotAt) {
			return true
		}
	}
	return false
}

// Reserve is the start a worker ready at now asks the gate for, wanting
// the start want, and its deadline. On time (now by want) it reserves at
// (StartAt: want itself). A worker late by less than its room (Limits.Room,
// at least the skew) less half its lead reserves want itself, with want's
// deadline: it moves nobody, and half the lead is left for its writes.
// Any other late worker reserves the latest start that keeps its line
// ticket's place (its deadline not Missed; slotAt is the ticket's slot,
// zero for a ticket out of line): at, now plus the lead; halfway to it;
// now; or, ready within its room, want; or now with half the lead as
// its deadline, no room beyond it. The lead is the time the
// worker's writes may take, so a start closer than at leaves them less of
// it: the worker calls its target by its deadline or not at all
// (Overslept). A worker that no start keeps in its place reserves at and
// is passed.
func Reserve(s State, ls Limits, want, now, at, slotAt time.Time, skew time.Duration, alone bool) (time.Time, time.Time) {
	deadline := Deadline(s, ls, at, skew, alone)
	if !now.After(want) {
		return at, deadline
	}
	room := want.Add(max(ls.Room(), skew))
	if !now.Add(at.Sub(now) / 2).After(room) {
		return want, Deadline(s, ls, want, skew, alone)
	}
	if slotAt.IsZero() || !Missed(s, slotAt, deadline, ls, skew) {
		return at, deadline
	}
	for _, x := range []time.Time{now.Add(at.Sub(now) / 2), now} {
		if d := Deadline(s, ls, x, skew, alone); !Missed(s, slotAt, d, ls, skew) {
			return x, d
		}
	}
	if !now.After(room) {
		return want, Deadline(s, ls, want, skew, alone)
	}
	// Last, now with half the lead for its writes and no room beyond:
	// a worker that came past its room may still fit before the line's
	// next moment (a window's paced moments lie a period and the room
	// apart, and its bound is the room plus the skew), if it calls its
	// target at once.
	if d := now.Add(at.Sub(now) / 2); !Missed(s, slotAt, d, ls, skew) {
		return now, d
	}
	return at, deadline
}
