package slot

import "time"

// Slow down. A target may answer that it takes no more calls for a while
// (an HTTP 429 with Retry-After, say). The engine records the answer on
// the queue's state, or on the key's meter when the job's key has a limit
// of its own (SlowDown): until SlowUntil no start passes that gate, and
// after it the ticket that got the answer starts first, the others
// waiting for it until SlowHold (a short while: the engine gives it a
// tick of the limit, so a job that never comes back holds nobody for
// long). The limits' own marks are left as
// they are: after the pause the first start finds the limits idle and
// starts at once, and the next ones keep the limits' arithmetic, with no
// catch-up beyond each form's own burst.

// Bounds of a slow-down.
const (
	// MaxSlowDown is the longest slow-down one answer makes: a longer
	// Retry-After is cut to it (the job asks again then, and counts one
	// more slow-down towards its queue's max_slow_downs).
	MaxSlowDown = 12 * time.Hour
	// DefaultRetryAfter is the slow-down of an answer that names no time
	// (an HTTP 429 without Retry-After), unless the queue's
	// RetryAfterDefault says otherwise.
	DefaultRetryAfter = time.Second
	// DefaultMaxSlowDowns is how many slow-downs one job may be answered
	// before it fails, unless the queue's MaxSlowDowns says otherwise.
	DefaultMaxSlowDowns = 20
	// MaxSlowDownsLimit is the highest MaxSlowDowns.
	MaxSlowDownsLimit = 1000
)

// SlowSeenSlots is how many answers a state remembers (State.SlowSeen),
// one per ticket modulo it: the answers of as many jobs at once.
const SlowSeenSlots = 8

// SlowSeenSlot is the slot of State.SlowSeen that remembers ticket's
// answers.
func SlowSeenSlot(ticket int64) int {
	return int((ticket%SlowSeenSlots + SlowSeenSlots) % SlowSeenSlots)
}

// SlowCounted reports whether s counted answer (a SlowDown of ticket's
// job) already: a write of it that landed, sent again.
func SlowCounted(s State, ticket int64, answer string) bool {
	return answer != "" && s.SlowSeen[SlowSeenSlot(ticket)] == answer
}

// SlowDown returns s after a target answered ticket's job "slow down
// until until", its start's lease ending at hold: the slow-down only
// extends (SlowUntil is the later of the two), and the ticket of the
// later answer is the one that starts first. SlowDowns counts it once:
// answer names it (its job's ticket, attempt and slow-downs before it),
// and s, having counted it (SlowCounted), is returned as it is.
func SlowDown(s State, ticket int64, until, hold time.Time, answer string) State {
	if SlowCounted(s, ticket, answer) {
		return s
	}
	if answer != "" {
		s.SlowSeen[SlowSeenSlot(ticket)] = answer
	}
	s.SlowDowns++
	if until.Before(s.SlowUntil) {
		return s
	}
	s.SlowUntil, s.SlowTicket, s.SlowHold = until, ticket, later(hold, until)
	return s
}

// SlowOpen is when ticket may start under s's slow-down, for a start
// asked at at (zero: nothing holds it): SlowUntil; and after it, for any
// ticket but the answered one while that one has not started, SlowHold.
func SlowOpen(s State, ticket int64, at time.Time) time.Time {
	if at.Before(s.SlowUntil) {
		return s.SlowUntil
	}
	if s.SlowTicket == 0 || ticket == s.SlowTicket || !at.Before(s.SlowHold) {
		return time.Time{}
	}
	return s.SlowHold
}

// Answered returns s after ticket started: if it was the answered ticket
// of a slow-down, the others no longer wait for it.
func Answered(s State, ticket int64) State {
	if ticket != 0 && ticket == s.SlowTicket {
		s.SlowTicket, s.SlowHold = 0, time.Time{}
	}
	return s
}

// Slowed reports whether s's slow-down holds starts back at now.
func Slowed(s State, now time.Time) bool { return now.Before(s.SlowUntil) }

// slowDue is slotAt, or the slow-down's end if later (see Due), and
// while the answered ticket has not started, the end of the others' wait
// for it: a ticket that passes the gate then passes at SlowHold.
func slowDue(s State, slotAt time.Time) time.Time {
	due := later(slotAt, s.SlowUntil)
	if s.SlowTicket != 0 {
		due = later(due, s.SlowHold)
	}
	return due
}

// Tick is the longest emission interval of ls: how far apart its starts
// come on average once a backlog formed.
func (ls Limits) Tick() time.Duration { return tickOf(ls) }
