package slot

import (
	"slices"
	"time"
)

// A limit changed while jobs wait. Configure writes the new limits and
// the gate's state for them in one atomic step (the ticket boundary: the
// starts the gate let through before it kept the old limits, those after
// it keep the new ones), and books the waiting line tickets again under
// the new limits. Across the change neither limit breaks:
//
//   - the old limit: its next opening is a floor of the new limits'
//     first opening, so the starts before the change and the first start
//     after it keep the old limit;
//   - the new limit counts the starts before the change that its own
//     period holds (for an interval or a rate, the period is the interval
//     or the rate's period; for a window, its period): the new limit's
//     marks are seeded by replaying those starts under it. The gate does
//     not keep every start, so the replay uses, for each recent start, the
//     latest time the old marks allow it to have had (Recent): stricter,
//     never looser, than the starts were.

// MaxReplay is how many recent starts Seed replays under the new limits.
const MaxReplay = 4096

// Seed returns the gate state of a queue at state s whose limits change
// from old to next, skew being the queue's allowance: what the gate
// remembers of old, carried over to next (see above). Tickets, current,
// pause, purge and running places are kept; the line's clock starts from
// the gate's marks, so the waiting line tickets are booked again from
// there (Reslot), and the slot clock may move back: to the new limits'
// slot of the last waiting ticket. Limits that did not change keep their
// marks; only the line's side of them starts again.
func Seed(s State, old, next Limits, skew time.Duration) State {
	if old.Signature() == next.Signature() {
		return rebook(s, next)
	}
	floor := Opens(s, old)
	recent := Recent(s, old, skew, horizon(old, next))
	out := s
	out.LastStart, out.Clock, out.Marks, out.RunFrom = time.Time{}, time.Time{}, nil, time.Time{}
	for i, l := range next {
		out = out.withMark(i, seedMark(l, recent, floor))
	}
	if m := out.mark(0); m.Last.Before(s.LastStart) {
		// The last start only moves forward (docs/guarantees.md §7): a
		// later mark holds the next start back a little more, never less.
		m.Last = s.LastStart
		out = out.withMark(0, m)
	}
	return out
}

// Reslot is Seed followed by n line bookings at now, in ticket order: the
// state to store with the new limits and the slots of the n waiting line
// tickets (as slot.Take gives them).
func Reslot(s State, old, next Limits, skew time.Duration, n int, now time.Time) (State, []time.Time) {
	return Book(Seed(s, old, next, skew), next, skew, n, now)
}

// Book books n line places under ls at now, as Take does for n line
// tickets, without handing out tickets: the state after and the places'
// slots.
func Book(s State, ls Limits, skew time.Duration, n int, now time.Time) (State, []time.Time) {
	slots := make([]time.Time, n)
	for k := range slots {
		s, slots[k] = book(s, ls, skew, now)
	}
	return s, slots
}

// rebook returns s with its line's side started again from the gate's
// marks under ls: the clocks at zero (booking then follows the
// theoretical last starts) and a window's bookings its starts.
func rebook(s State, ls Limits) State {
	for i, l := range ls {
		m := s.mark(i)
		m.Clock = time.Time{}
		m.Booked = nil
		if !l.Window.IsZero() {
			m.Booked = slices.Clone(m.Starts)
		}
		s = s.withMark(i, m)
	}
	return s
}

// seedMark is the mark of limit l after the recent starts (latest first),
// its first opening no earlier than floor.
func seedMark(l Limit, recent []time.Time, floor time.Time) Mark {
	var m Mark
	if len(recent) == 0 {
		return m
	}
	if !l.Window.IsZero() {
		for _, at := range slices.Backward(recent) {
			m.Starts = addRun(m.Starts, at, l.Window.Per)
		}
		m.Booked = slices.Clone(m.Starts)
		m.Last = later(recent[0], floor)
		return m
	}
	t := every(l)
	for _, at := range slices.Backward(recent) {
		if m.Last.IsZero() {
			m.Last = at
		} else {
			m.Last = later(m.Last.Add(t), at)
		}
	}
	if !floor.IsZero() {
		// opens is Last + T − B·T: no earlier than floor.
		m.Last = later(m.Last, floor.Add(time.Duration(l.Burst)*t-t))
	}
	return m
}

// horizon is how far back before the latest start Seed replays: the
// longest period of next, plus the slack by which an old rate's
// theoretical last start may lie after the actual one.
func horizon(old, next Limits) time.Duration {
	var h, slack time.Duration
	for _, l := range next {
		p := every(l) * time.Duration(l.Burst+1)
		switch {
		case !l.Window.IsZero():
			p = l.Window.Per
		case !l.Rate.IsZero():
			p = max(p, l.Rate.Per)
		}
		h = max(h, p)
	}
	for _, l := range old {
		if l.Window.IsZero() {
			slack = max(slack, every(l)*time.Duration(l.Burst+1))
		}
	}
	return h + slack
}

// Recent returns, latest first, a bound on each of the recent starts of a
// queue at state s under ls: the k-th is no earlier than the k-th latest
// start was (for an interval or a rate, its theoretical last start less
// k emission intervals; for a window, its recorded starts, and before
// them a period less skew per N starts), as far back as within before of
// the latest, and at most MaxReplay of them. Nil when the queue has not
// started.
func Recent(s State, ls Limits, skew, before time.Duration) []time.Time {
	var out []time.Time
	for i, l := range ls {
		b := bounds(l, s.mark(i), skew)
		if b == nil {
			return nil
		}
		out = pointwiseMin(out, b, i == 0)
	}
	if len(out) == 0 {
		return nil
	}
	cut := out[0].Add(-before)
	for k, at := range out {
		if !at.After(cut) {
			return out[:k]
		}
	}
	return out
}

// bounds is one limit's bound on the latest MaxReplay starts, latest
// first (nil: no start).
func bounds(l Limit, m Mark, skew time.Duration) []time.Time {
	if m.Last.IsZero() {
		return nil
	}
	out := make([]time.Time, 0, MaxReplay)
	if l.Window.IsZero() {
		t := every(l)
		for k := range MaxReplay {
			out = append(out, m.Last.Add(-time.Duration(k)*t))
		}
		return out
	}
	for _, r := range slices.Backward(m.Starts) {
		for range r.N {
			if len(out) < MaxReplay {
				out = append(out, r.At)
			}
		}
	}
	n, gap := l.Window.N, l.Window.Per-skew
	for k := len(out); k < MaxReplay; k++ {
		if k < n {
			out = append(out, m.Last.Add(-l.Window.Per))
			continue
		}
		out = append(out, out[k-n].Add(-gap))
	}
	return out
}

func pointwiseMin(a, b []time.Time, first bool) []time.Time {
	if first {
		return b
	}
	for k := range a {
		if b[k].Before(a[k]) {
			a[k] = b[k]
		}
	}
	return a
}
