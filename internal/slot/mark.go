package slot

import (
	"slices"
	"time"
)

// Mark is what the gate remembers of one limit of a queue. Every form
// keeps Last (the gate's side) and Clock (the line's side, what enqueue
// books); a window also keeps its recent starts and bookings as runs.
//
// The first limit's Last and Clock are State.LastStart and State.Clock
// (a queue under the plain interval form keeps nothing else); the rest is
// in State.Marks, index for index with the queue's limits.
type Mark struct {
	// Last is, for the interval and rate forms, the theoretical time of
	// the last start (GCRA's virtual scheduling: see State); for a
	// window, the latest start.
	Last time.Time `json:"last,omitzero"`
	// Clock is, for the interval and rate forms, the theoretical time of
	// the last line ticket booked; for a window, its slot.
	Clock time.Time `json:"clock,omitzero"`
	// Starts are a window's starts within its period before Last, as
	// runs of equal times, oldest first.
	Starts []Tally `json:"starts,omitempty"`
	// Booked are a window's line slots within its period before Clock.
	Booked []Tally `json:"booked,omitempty"`
}

// Tally is N starts (or bookings) at one time.
type Tally struct {
	At time.Time `json:"at"`
	N  int       `json:"n"`
}

func (m Mark) zero() bool {
	return m.Last.IsZero() && m.Clock.IsZero() && len(m.Starts) == 0 && len(m.Booked) == 0
}

// mark is the mark of limit i in s.
func (s State) mark(i int) Mark {
	var m Mark
	if i < len(s.Marks) {
		m = s.Marks[i]
	}
	if i == 0 {
		m.Last, m.Clock = s.LastStart, s.Clock
	}
	return m
}

// withMark returns s with the mark of limit i set to m.
func (s State) withMark(i int, m Mark) State {
	if i == 0 {
		s.LastStart, s.Clock = m.Last, m.Clock
		m.Last, m.Clock = time.Time{}, time.Time{}
	}
	marks := slices.Clone(s.Marks)
	for len(marks) <= i {
		marks = append(marks, Mark{})
	}
	marks[i] = m
	for len(marks) > 0 && marks[len(marks)-1].zero() {
		marks = marks[:len(marks)-1]
	}
	if len(marks) == 0 {
		marks = nil
	}
	s.Marks = marks
	return s
}

// count is how many of runs lie after t.
func count(runs []Tally, t time.Time) int {
	n := 0
	for _, r := range runs {
		if r.At.After(t) {
			n += r.N
		}
	}
	return n
}

// windowOpen is the earliest time t at or after from at which the runs
// leave room for one more in a window of n per per: fewer than n of them
// lie in (t − per, t]. The runs all lie at or before from.
func windowOpen(runs []Tally, n int, per time.Duration, from time.Time) time.Time {
	c := count(runs, from.Add(-per))
	if c < n {
		return from
	}
	// Drop the oldest runs until fewer than n are left: the window opens
	// when the last of them dropped is a period old.
	for _, r := range runs {
		if !r.At.After(from.Add(-per)) {
			continue
		}
		c -= r.N
		if c < n {
			return later(from, r.At.Add(per))
		}
	}
	return from
}

// addRun returns runs with one more at t, without the runs at or before
// t − per (which no later window holds), and at most MaxRuns long: the
// two oldest merge into the later one's time, which counts them later
// than they were, so the window only grows stricter.
func addRun(runs []Tally, t time.Time, per time.Duration) []Tally {
	out := make([]Tally, 0, len(runs)+1)
	for _, r := range runs {
		if r.At.After(t.Add(-per)) {
			out = append(out, r)
		}
	}
	i, found := slices.BinarySearchFunc(out, t, func(r Tally, t time.Time) int { return r.At.Compare(t) })
	if found {
		out[i].N++
	} else {
		out = slices.Insert(out, i, Tally{At: t, N: 1})
	}
	for len(out) > MaxRuns {
		out[1].N += out[0].N
		out = out[1:]
	}
	return out
}

// opens is the earliest start the gate allows for limit l with mark m
// and the queue's skew. The rate and interval forms pass a start at at
// when at ≥ the theoretical next start less the burst (GCRA, strictly:
// the skew went into the deadline the mark records, see started). A
// window counts the deadlines it recorded (which may lie ahead of at:
// the tickets of one moment record theirs in any order) and passes a
// start while fewer than N of them lie after at − (period − skew). Zero
// when the limit holds nothing back.
func opens(l Limit, m Mark, skew time.Duration) time.Time {
	if !l.Window.IsZero() {
		if len(m.Starts) == 0 {
			return time.Time{}
		}
		return windowOpen(m.Starts, l.Window.N, windowGatePer(l, skew), time.Time{})
	}
	if m.Last.IsZero() {
		return time.Time{}
	}
	t := every(l)
	return m.Last.Add(t - time.Duration(l.Burst)*t)
}

// Opens is when the gate opens for the next start of a queue at state s
// under ls, skew left out (the gate lets a start through skew before
// it): the latest of its limits' openings. Zero when none holds anything
// back.
func Opens(s State, ls Limits) time.Time {
	var open time.Time
	for i, l := range ls {
		open = later(open, opens(l, s.mark(i), 0))
	}
	return open
}

// GateOpen is the earliest start the gate lets through at state s under
// ls for a queue whose skew is skew: the latest of its limits' openings
// (opens).
func GateOpen(s State, ls Limits, skew time.Duration) time.Time {
	var open time.Time
	for i, l := range ls {
		open = later(open, opens(l, s.mark(i), skew))
	}
	return open
}

// windowGatePer is the span the gate counts a window's recorded
// deadlines over: the period less the skew, the one allowance of the
// window's rule (s_{i+N} − s_i ≥ period − skew).
func windowGatePer(l Limit, skew time.Duration) time.Duration {
	return max(l.Window.Per-skew, time.Nanosecond)
}

// started returns s after a start at at under ls: each limit's mark
// moves (GCRA: Last to max(Last + T, at); a window: the start joins its
// runs). It is startedBy with the deadline at and no skew.
func started(s State, ls Limits, at time.Time) State {
	return startedBy(s, ls, at, at, 0)
}

// startedBy returns s after a start reserved at at whose worker may begin
// its target until deadline, under ls with the queue's skew: each mark
// records the latest the start can be, so whenever in [at, deadline] it
// comes, the limits hold. GCRA: Last to max(Last + T, deadline − skew)
// (the skew is the rule's own allowance, spent here rather than at the
// gate); a window: the deadline joins its runs.
func startedBy(s State, ls Limits, at, deadline time.Time, skew time.Duration) State {
	deadline = later(deadline, at)
	for i, l := range ls {
		m := s.mark(i)
		switch {
		case !l.Window.IsZero():
			// Keep two periods: a start of an earlier moment may
			// still come to the gate after this one recorded its
			// deadline, and counts the runs before it.
			m.Starts = addRun(m.Starts, deadline, 2*l.Window.Per+deadline.Sub(at))
			m.Last = later(m.Last, deadline)
		case m.Last.IsZero():
			m.Last = later(at, deadline.Add(-skew))
		default:
			m.Last = later(m.Last.Add(every(l)), later(at, deadline.Add(-skew)))
		}
		s = s.withMark(i, m)
	}
	return s
}

// book returns s after one more line ticket was booked at now, and the
// ticket's slot: the earliest time every limit allows after the tickets
// booked before it, and not before now.
func book(s State, ls Limits, skew time.Duration, now time.Time) (State, time.Time) {
	return bookWith(s, ls, now, ls.Room(), skew)
}

// bookWith is book keeping room for each start instead of the limits'
// own (Limits.Room), for a queue whose skew is skew.
func bookWith(s State, ls Limits, now time.Time, room, skew time.Duration) (State, time.Time) {
	at := now
	for i, l := range ls {
		at = later(at, earliest(l, s.mark(i), now, room, skew))
	}
	for i, l := range ls {
		m := s.mark(i)
		if !l.Window.IsZero() {
			m.Booked = addRun(m.Booked, at, bookedPer(l, room, skew))
			m.Clock = at
		} else {
			c := later(m.Clock, m.Last)
			next := at
			if !c.IsZero() {
				next = later(c.Add(every(l)), at)
			}
			if i == 0 && (c.IsZero() || !c.Equal(m.Clock) || !next.Equal(c.Add(every(l)))) {
				// Idle, or after a start off the line: a new run.
				s.RunFrom = next
			}
			m.Clock = next
		}
		s = s.withMark(i, m)
	}
	return s, at
}

// earliest is the earliest slot limit l with mark m gives the next line
// ticket at now, keeping room for every start's wake-up (Limits.Room).
// For the interval and rate forms it follows the line's theoretical
// clock and the theoretical last start, whichever is later (a scheduled
// job's start moves the latter): C + T − (B·T − room), the burst less
// the room (a booking shaped to the limit less the jitter, so that a
// start late by up to the room still keeps the limit). For a window, the
// bookings in its period plus the room: a slot that leaves room for one
// more.
func earliest(l Limit, m Mark, now time.Time, room, skew time.Duration) time.Time {
	if !l.Window.IsZero() {
		from := later(now, later(m.Clock, m.Last))
		per := bookedPer(l, room, skew)
		at := windowOpen(m.Booked, l.Window.N, per, from)
		if m.Clock.After(now) {
			at = paced(l, m, per, at)
		}
		return at
	}
	c := later(m.Clock, m.Last)
	if c.IsZero() {
		return now
	}
	return later(now, c.Add(every(l)-bookedBurst(l, room)))
}

// PacedMoments is how many moments a window's backlog is booked at in
// each of its periods (paced), at the most.
const PacedMoments = MaxRuns * 3 / 8

// paced is the slot at, the earliest window l with mark m allows a line
// ticket booked behind the line's clock (a backlog), spread over the
// period the window books its N in (per): no nearer the clock than
// per/N, or, past PacedMoments a period, per·g/N for moments of g
// tickets each (g = ⌈N/PacedMoments⌉), which keeps the gate's runs
// within MaxRuns over the two periods it keeps. A window booked as it
// opens would book its backlog's N at one moment, a period apart: N
// workers come to the gate at once, and the last of them comes later
// than its room. Paced, a backlog starts N per period as before, each
// start alone at its moment. A window with room now (after an idle time)
// still starts its N together: only tickets booked ahead are paced.
func paced(l Limit, m Mark, per time.Duration, at time.Time) time.Time {
	g := (l.Window.N + PacedMoments - 1) / PacedMoments
	if n := len(m.Booked); g > 1 && n > 0 && m.Booked[n-1].At.Equal(m.Clock) && m.Booked[n-1].N < g {
		return later(at, m.Clock)
	}
	return later(at, m.Clock.Add(per*time.Duration(g)/time.Duration(l.Window.N)))
}

// bookedPer is the span over which window l books its N: its period
// plus the deadline's room (at least the skew: slot.Deadline). The gate
// counts the deadlines of the starts over the period less the skew
// (windowGatePer), so the next moment is booked a skew after the gate
// opens for it: that skew absorbs a start of this moment reserved late
// within its room (Missed), which would otherwise hold every later moment
// back by its lateness, one after the other.
func bookedPer(l Limit, room, skew time.Duration) time.Duration {
	return l.Window.Per + max(room, skew)
}

// bookedBurst is how much of a rate's burst (B·T) the line books: all of
// it less the room, so that every start keeps room to be late in.
func bookedBurst(l Limit, room time.Duration) time.Duration {
	return max(0, time.Duration(l.Burst)*every(l)-room)
}

// OpenAfter is when the gate opens (as Opens) after k more starts, each
// at its opening: where a ticket k places behind the next one stands if
// those before it start on time. Zero when the queue has not started
// (nothing holds the first starts back).
func OpenAfter(s State, ls Limits, k int) time.Time {
	if len(ls) == 1 && ls[0].Window.IsZero() {
		if s.LastStart.IsZero() {
			return time.Time{}
		}
		t := every(ls[0])
		return s.LastStart.Add(time.Duration(k+1)*t - time.Duration(ls[0].Burst)*t)
	}
	for range min(k, 1000) {
		at := Opens(s, ls)
		if at.IsZero() {
			return time.Time{}
		}
		s = started(s, ls, at)
	}
	return Opens(s, ls)
}

// BookedBurst is how much of limit l's burst (B·T) the line of a queue
// under ls books: all of it less the room the line keeps for every
// start's wake-up (Limits.Room). A store that books by its own arithmetic
// (internal/dynamostore's update expressions) places a slot this far
// before the line's theoretical clock.
func (ls Limits) BookedBurst(l Limit) time.Duration {
	return bookedBurst(l, ls.Room())
}

// Ideal is the least span n starts can take under ls: the span of an
// idle queue's first n slots, the form's own arithmetic with no room kept
// for wake-ups. Makespans are judged against it.
func Ideal(ls Limits, n int) time.Duration {
	if n < 2 {
		return 0
	}
	t0 := time.Unix(0, 0)
	var s State
	var first, last time.Time
	for k := range n {
		s, last = bookWith(s, ls, t0, 0, 0)
		if k == 0 {
			first = last
		}
	}
	return last.Sub(first)
}
