package slot

import "time"

// State is the shared, per-queue state every worker sees. All four times
// and counters only move forward (design.md §5.7).
type State struct {
	// Ticket is the last ticket handed out (0: none yet).
	Ticket int64 `json:"ticket"`
	// Current is the highest ticket that has started.
	Current int64 `json:"current"`
	// Clock is the slot of the last ticket that took a place in the line.
	Clock time.Time `json:"clock,omitzero"`
	// LastStart is when the last start passed the gate.
	LastStart time.Time `json:"last_start,omitzero"`
	// Paused stops the gate: nothing of the queue starts while it is set.
	Paused bool `json:"paused"`
	// PausedUntil, if set with Paused, is when the resume function lifts
	// the pause by itself.
	PausedUntil time.Time `json:"paused_until,omitzero"`
}

// NextSlot is the slot the next ticket in line would get at now.
func NextSlot(clock time.Time, interval time.Duration, now time.Time) time.Time {
	if clock.IsZero() {
		return now
	}
	return later(clock.Add(interval), now)
}

// Take hands out n tickets of which the first line take a place in the line
// (the rest are scheduled jobs that keep the slot clock where it is). It
// returns the new state, the first ticket and the first line slot. Line
// slot k (0-based) is firstSlot + k·interval.
//
// This is the rule every state implementation applies atomically.
func Take(s State, n, line int, interval time.Duration, now time.Time) (next State, first int64, firstSlot time.Time) {
	first = s.Ticket + 1
	s.Ticket += int64(n)
	if line > 0 {
		firstSlot = NextSlot(s.Clock, interval, now)
		s.Clock = firstSlot.Add(time.Duration(line-1) * interval)
	}
	return s, first, firstSlot
}

// Verdict is the gate's answer.
type Verdict int

// The gate's answers.
const (
	// Start: the ticket may start now.
	Start Verdict = iota
	// Early: the last start was less than interval−skew ago; try again at
	// the time Gate returns.
	Early
	// Passed: the queue started this ticket or a later one already; the
	// job must take a new ticket.
	Passed
	// Paused: the queue is paused; the job must be parked.
	Paused
)

func (v Verdict) String() string {
	switch v {
	case Start:
		return "start"
	case Early:
		return "early"
	case Passed:
		return "passed"
	case Paused:
		return "paused"
	}
	return "unknown"
}

// Gate decides whether ticket may start at now. For Early it also returns
// the earliest time the gate would open.
func Gate(s State, ticket int64, interval, skew time.Duration, now time.Time) (Verdict, time.Time) {
	switch {
	case s.Paused:
		return Paused, time.Time{}
	case ticket <= s.Current:
		return Passed, time.Time{}
	}
	if !s.LastStart.IsZero() {
		open := s.LastStart.Add(interval - skew)
		if now.Before(open) {
			return Early, open
		}
	}
	return Start, time.Time{}
}

// Started returns the state after ticket started at now: current and the
// last start move to it, and the slot clock is raised to now if it lagged
// (a scheduled job started after the line ran dry), so that the next line
// slot is at least one interval after this start.
func Started(s State, ticket int64, now time.Time) State {
	s.Current = max(s.Current, ticket)
	s.LastStart = later(s.LastStart, now)
	s.Clock = later(s.Clock, now)
	return s
}

// Position is the number of tickets ahead of ticket in the queue.
func Position(s State, ticket int64) int64 {
	return max(0, ticket-s.Current-1)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
