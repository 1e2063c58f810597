package slot

import "time"

// State is the shared, per-queue state every worker sees. All four times
// and counters only move forward (docs/guarantees.md §7).
//
// The gate is virtual scheduling, as GCRA does it: LastStart is the
// theoretical time of the last start, not the wall-clock one. A start at
// now is allowed when now ≥ LastStart + interval − skew and moves LastStart
// to max(LastStart + interval, now). So a late start does not push every
// later job back (no drift), and a run of late jobs cannot start closer
// than one interval apart on average (no burst): for any two starts i < j,
// start_j − start_i ≥ (j − i)·interval − skew (docs/guarantees.md §3).
type State struct {
	// Ticket is the last ticket handed out (0: none yet).
	Ticket int64 `json:"ticket"`
	// Current is the highest ticket that has started.
	Current int64 `json:"current"`
	// Front is the latest slot of a line ticket that started: a line
	// ticket whose slot lies further behind it than its room (Behind)
	// is passed, since the queue started a later moment beyond the room
	// while it was away (its gate write landed late, say).
	Front time.Time `json:"front,omitzero"`
	// Line is the last ticket of the last take of jobs that start in
	// ticket order (the gate moves Current to them): tickets after it
	// are scheduled jobs and jobs under key limits, which Current never
	// reaches, so the jobs waiting in line are at most Line − Current
	// (Waiting). The stores keep it (engine.TakeRequest.MovesLine); the
	// wire does not carry it.
	Line int64 `json:"-"`
	// Clock is the slot of the last ticket that took a place in the line.
	Clock time.Time `json:"clock,omitzero"`
	// RunFrom is, for a queue under one interval or rate, the
	// theoretical time of the first booking of the line's current run:
	// from it to Clock the line's bookings lie one interval apart, so
	// the time of the last booking by a moment is known (GateAll). A
	// take starts a run when the line was idle or a start off the line
	// came after its last booking. The stores keep it; the wire does not
	// carry it.
	RunFrom time.Time `json:"-"`
	// LastStart is the theoretical time of the last start: the gate opens
	// at LastStart + interval − skew. It equals the actual start of a job
	// that started late, and is up to skew after the actual start of one
	// that started early.
	LastStart time.Time `json:"last_start,omitzero"`
	// Paused stops the gate: nothing of the queue starts while it is set.
	Paused bool `json:"paused"`
	// PausedUntil, if set with Paused, is when the resume function lifts
	// the pause by itself.
	PausedUntil time.Time `json:"paused_until,omitzero"`
	// PausedAt, with Paused, is when the pause began (a pause while
	// paused keeps it): the booked starts whose slots came after it did
	// not start (Settled). The stores keep it; the wire does not carry it.
	PausedAt time.Time `json:"-"`
	// Purged is the last ticket a purge cancelled: a job whose ticket is at
	// most Purged is cancelled when it reaches the gate, so a purge is one
	// write however many jobs wait.
	Purged int64 `json:"purged,omitempty"`
	// Running holds the attempts of a queue with a MaxRunning that run
	// now: ticket → the end of the attempt's lease. An attempt whose
	// worker died stops counting when its lease ends. Queues without a
	// cap keep no entries (a write per finished attempt would double the
	// writes to the hot item).
	Running map[int64]time.Time `json:"running,omitempty"`
	// Marks are what the gate remembers of the queue's limits beyond the
	// first limit's LastStart and Clock: the marks of its other limits,
	// and a window's recent starts and bookings (Mark). Nil for a queue
	// under one interval or rate. The stores keep them; the wire does
	// not carry them.
	Marks []Mark `json:"-"`
	// SlowUntil is when the queue's slow-down ends: a target answered
	// "slow down" (SlowDown), and no start passes the gate before it.
	// SlowDowns counts the slow-downs the queue's targets answered.
	SlowUntil time.Time `json:"slow_until,omitzero"`
	SlowDowns int64     `json:"slow_downs,omitempty"`
	// SlowTicket is the ticket of the job that got the answer, and
	// SlowHold how long the other tickets wait for it after SlowUntil:
	// it starts first (SlowOpen). Zero once it has started.
	SlowTicket int64     `json:"-"`
	SlowHold   time.Time `json:"-"`
	// Gated says every start of the queue passes the gate's write, on a
	// queue whose line books its starts (Config.BooksStarts) and would
	// else start them by a read (Admit): a start that cuts in off the
	// line's bookings (a scheduled job, a job handed its key, the job a
	// slow-down answered, one that starts late rather than lose its
	// place) is due, and the gate's write lets the line move for it, as
	// on every other queue. Turning gated settles the last start to the
	// latest a booked start that passed by a read may have come (GateAll),
	// so that the gate counts those too. GatedUntil is the latest a start
	// known to cut in may come; the queue books its starts again (Ungate)
	// once that and every booking have passed. The stores keep them; the
	// wire does not carry them.
	Gated      bool      `json:"-"`
	GatedUntil time.Time `json:"-"`
	// GatedThrough is Current as gating settled it: the line tickets up
	// to it are counted in the settled last start, so those that had not
	// passed by a read yet still may, at their booked slots.
	GatedThrough int64 `json:"-"`
	// BatchTicket, BatchAt and BatchFill are, on a queue that starts its
	// jobs in batches (Config.Batched), the last batch booked: its
	// ticket, its slot and how many jobs it holds (TakeBatch). Zero
	// else. The stores keep them; the wire does not carry them.
	BatchTicket int64     `json:"-"`
	BatchAt     time.Time `json:"-"`
	BatchFill   int       `json:"-"`
	// SlowSeen remembers the answers SlowDowns counted last, one per
	// ticket modulo SlowSeenSlots, so that a write of one sent again
	// (a retry of a write that landed) counts it once.
	SlowSeen [SlowSeenSlots]string `json:"-"`
}

// RunningAt is how many of s.Running still run at now (their lease has
// not ended).
func (s State) RunningAt(now time.Time) int {
	n := 0
	for _, until := range s.Running {
		if now.Before(until) {
			n++
		}
	}
	return n
}

// Capped reports whether a queue with at most maxRunning attempts at once
// (0: no cap) has none free at now.
func Capped(s State, maxRunning int, now time.Time) bool {
	return maxRunning > 0 && s.RunningAt(now) >= maxRunning
}

// CappedFor is Capped for ticket at the gate: its own place, if it holds
// one (it passed the gate before and its worker died before the claim),
// is not counted against it, since passing again takes that same place.
func CappedFor(s State, maxRunning int, ticket int64, now time.Time) bool {
	n := s.RunningAt(now)
	if until, ok := s.Running[ticket]; ok && now.Before(until) {
		n--
	}
	return maxRunning > 0 && n >= maxRunning
}

// Run returns the state after an attempt of ticket began at now under a
// running cap, with its lease ending at until: the attempt is entered in
// Running, and entries whose lease ended are dropped.
func Run(s State, ticket int64, until, now time.Time) State {
	running := make(map[int64]time.Time, len(s.Running)+1)
	for t, u := range s.Running {
		if now.Before(u) {
			running[t] = u
		}
	}
	running[ticket] = until
	s.Running = running
	return s
}

// Ended returns the state after the attempt of ticket ended: its running
// place is free.
func Ended(s State, ticket int64) State {
	if _, ok := s.Running[ticket]; !ok {
		return s
	}
	running := make(map[int64]time.Time, len(s.Running))
	for t, u := range s.Running {
		if t != ticket {
			running[t] = u
		}
	}
	s.Running = running
	return s
}

// NextSlot is the slot the next ticket in line would get at now under
// ls, for a queue whose skew is skew: the earliest every limit allows
// after the tickets booked before it and the theoretical last starts, and
// not before now.
func NextSlot(s State, ls Limits, skew time.Duration, now time.Time) time.Time {
	_, at := book(s, ls, skew, now)
	return at
}

// NextSlotAfter is NextSlot for a ticket that n line tickets booked
// before it and not started yet precede: under each interval or rate
// limit, no sooner than its opening after n more starts from its last
// start. A line that runs late (its last start after the slots it
// booked: a late worker the line waited for) gives a slot that its
// start can keep, where its clock alone would give one the gate cannot.
func NextSlotAfter(s State, ls Limits, skew time.Duration, n int, now time.Time) time.Time {
	for i, l := range ls {
		m := s.mark(i)
		if !l.Window.IsZero() || m.Last.IsZero() {
			continue
		}
		m.Clock = later(m.Clock, m.Last.Add(time.Duration(n)*every(l)))
		s = s.withMark(i, m)
	}
	return NextSlot(s, ls, skew, now)
}

// Take hands out n tickets of which the first line take a place in the line
// (the rest are scheduled jobs that keep the slot clock where it is). It
// returns the new state, the first ticket and the line's slots, one per
// line ticket: for the interval form one interval apart; for a rate with
// burst B, B+1 at once after an idle time, then one per T; for a window
// of N, N at once, then the next when the first is a period old. skew is
// the queue's skew, which the gate allows a window's count (see
// bookedPer).
//
// This is the rule every state implementation applies atomically.
func Take(s State, n, line int, ls Limits, skew time.Duration, now time.Time) (next State, first int64, slots []time.Time) {
	first = s.Ticket + 1
	s.Ticket += int64(n)
	if line > 0 {
		slots = make([]time.Time, line)
		for k := range slots {
			s, slots[k] = book(s, ls, skew, now)
		}
	}
	return s, first, slots
}

// Verdict is the gate's answer.
type Verdict int

// The gate's answers.
const (
	// Start: the ticket may start now.
	Start Verdict = iota
	// Early: the gate opens later (LastStart + interval − skew); try again
	// at the time Gate returns.
	Early
	// Passed: the queue started a later ticket already; the job must take
	// a new ticket.
	Passed
	// Paused: the queue is paused; the job must be parked.
	Paused
	// Purged: a purge cancelled this ticket; the job must be cancelled.
	Purged
	// Full: the queue runs MaxRunning attempts already; the job must wait
	// for a place (Capped).
	Full
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
	case Purged:
		return "purged"
	case Full:
		return "full"
	}
	return "unknown"
}

// Gate decides whether ticket may pass the gate at now, for a queue
// whose skew is skew. For Early it also returns the earliest time the
// gate would open.
//
// The gate keeps slot order, not ticket order: the tickets of one moment
// (a burst's, a window's N) are interchangeable, and a line ticket is
// never passed here for a later ticket having started (a late worker
// keeps its place while its deadline holds; whether its start would move
// the line is Missed, asked before the gate). So the gate lets a ticket
// through when the queue is not paused, not purged past it, not slowed
// for another ticket, and every limit allows a start at now.
//
// A ticket that passed before passes again (when the gate is open): the
// gate and the claim of the job are two writes, and a worker that crashed
// between them leaves the job queued; its next delivery goes through the
// gate again, which costs the queue one more opening but keeps the
// limits. The engine reads the job before it does that, so a duplicate of
// a message whose job was claimed does not.
func Gate(s State, ticket int64, ls Limits, skew time.Duration, now time.Time) (Verdict, time.Time) {
	return GateScheduled(s, ticket, ls, skew, now)
}

// GateScheduled is the gate for the ticket of a scheduled job: one whose
// not_before lay beyond the line when it took its ticket, so it took no
// place in the line (see Take). It is Gate: purge, pause and the limits
// apply. It starts at its not_before, or at the first moment after it
// that the limits allow.
func GateScheduled(s State, ticket int64, ls Limits, skew time.Duration, now time.Time) (Verdict, time.Time) {
	if v, open := Admit(s, ticket, now); v != Start {
		return v, open
	}
	if open := GateOpen(s, ls, skew); now.Before(open) {
		return Early, open
	}
	return Start, time.Time{}
}

// Admit is the gate of a booked start: a line ticket whose slot the
// take booked (Take), on time for it. The booking reserved its moment
// and its room under the limits, so no limit is asked again: the ticket
// starts at its slot unless a purge covered it, the queue is paused, or
// a slow-down holds it back (Early, with the slow-down's opening). It is
// what every gate asks first (GateScheduled).
func Admit(s State, ticket int64, at time.Time) (Verdict, time.Time) {
	switch {
	case ticket <= s.Purged:
		return Purged, time.Time{}
	case s.Paused:
		return Paused, time.Time{}
	}
	if open := SlowOpen(s, ticket, at); at.Before(open) {
		return Early, open
	}
	return Start, time.Time{}
}

// Settled is, for a queue at state s under ls whose booked starts pass
// the gate by a read (Config.BooksStarts) and so do not move Current,
// the highest line ticket whose slot has come by now: every line
// ticket booked, when the line's last slot lies behind now; else all but
// the line tickets whose slots may still lie ahead (each booking moves a
// limit's clock by at least its period T, and a ticket's slot is its
// time on each clock less the burst the line books, or later, so at
// most ⌈(clock − booked burst − now)/T⌉ of them, the least over the
// limits). Never below Current. It counts tickets, not line tickets: where scheduled jobs'
// tickets lie among the last line tickets it may count a waiting line
// ticket as come (see engine's Queue.BookedSlot for what that costs it).
func Settled(s State, ls Limits, now time.Time) int64 {
	ahead := int64(-1)
	for i, l := range ls {
		if !l.Window.IsZero() {
			return s.Current
		}
		// A booking's slot lies no earlier than its time less the
		// burst the line books (bookedBurst), and at it while the line
		// runs behind: count the bookings whose slot may lie ahead.
		c := s.mark(i).Clock
		if !c.IsZero() {
			c = c.Add(-bookedBurst(l, ls.Room()))
		}
		k := int64(0)
		if c.After(now) {
			t := every(l)
			k = int64((c.Sub(now) + t - 1) / t)
		}
		if ahead < 0 || k < ahead {
			ahead = k
		}
	}
	if ahead < 0 {
		return s.Current
	}
	return max(s.Current, s.Line-ahead)
}

// Settling is when a queue turns gated (GateAll): Now, and By, when the
// booked starts that passed the gate by a read have come at the latest
// (Now plus a worker's lead, since a worker reads no earlier than a lead
// before its slot, and the hosts' skew).
type Settling struct{ Now, By time.Time }

// GateAll returns s, under ls, gated (State.Gated) until at least
// until. A queue not gated yet is settled as st says: each interval's
// and rate's last start moves to the latest theoretical time a booked
// start that passed by a read may have had by st.By (no later than the
// line's clock), and current to the last line ticket whose time has
// come by st.Now (Settled: the later ones take places again when a
// configure books the line anew, and those not yet started still pass by
// a read at their booked slots: GatedThrough); the gate counts them from
// here on. A
// zero st settles nothing (a slow-down: it holds every start back
// longer than a booked start may still come).
func GateAll(s State, ls Limits, st Settling, until time.Time) State {
	if bound := st.By; !s.Gated && !bound.IsZero() {
		s.Current = Settled(s, ls, st.Now)
		s.GatedThrough = s.Current
		for i, l := range ls {
			m := s.mark(i)
			if !l.Window.IsZero() || m.Clock.IsZero() {
				continue
			}
			last := earlier(m.Clock, bound.Add(bookedBurst(l, ls.Room())))
			if len(ls) == 1 {
				last = lastBooked(s, l, last)
			}
			m.Last = later(m.Last, last)
			s = s.withMark(i, m)
		}
	}
	s.Gated = true
	s.GatedUntil = later(s.GatedUntil, until)
	return s
}

// lastBooked is the latest theoretical time, no later than top, of a
// booking of the line of a queue at state s under its one limit l:
// within the line's run (RunFrom to Clock, an interval apart) the run's
// time at or before top; before the run, at most an interval before it
// (the run began after a gap).
func lastBooked(s State, l Limit, top time.Time) time.Time {
	t := every(l)
	switch {
	case !top.Before(s.Clock):
		return s.Clock
	case s.RunFrom.IsZero() || t <= 0:
		return top
	case top.Before(s.RunFrom):
		return earlier(top, s.RunFrom.Add(-t))
	}
	k := (s.Clock.Sub(top) + t - 1) / t
	return s.Clock.Add(-k * t)
}

// Ungate returns s as a take that lets nothing cut in finds it at now,
// under ls: no longer gated once its GatedUntil and any slow-down have
// passed and nothing booked or started lies ahead (every interval's and
// rate's theoretical times an interval behind now), so that no start the
// gate let cut in can meet a booking made from here on.
func Ungate(s State, ls Limits, now time.Time) State {
	if !s.Gated || now.Before(s.GatedUntil) || Slowed(s, now) || s.SlowTicket != 0 {
		return s
	}
	for i, l := range ls {
		m := s.mark(i)
		if !l.Window.IsZero() || later(m.Clock, m.Last).Add(every(l)).After(now) {
			return s
		}
	}
	s.Gated, s.GatedUntil, s.GatedThrough = false, time.Time{}, 0
	return s
}

// Started returns the state after ticket passed the gate at now: current
// moves to the ticket (if it is the highest started) and each limit's
// mark by the start (for the interval and rate forms the theoretical last
// start to max(LastStart + T, now); the first start of a queue sets it to
// now).
func Started(s State, ticket int64, ls Limits, now time.Time) State {
	return StartedBy(s, ticket, ls, time.Time{}, now, now, 0)
}

// StartedScheduled returns the state after a scheduled ticket passed the
// gate at now: the theoretical last start moves as in Started, and current
// stays where it is. Current is the line's highest started ticket.
func StartedScheduled(s State, ls Limits, now time.Time) State {
	return started(s, ls, now)
}

// StartedBy returns the state after line ticket passed the gate for a
// start reserved at at whose worker may call its target until deadline
// (Deadline), under ls with the queue's skew: every mark records the
// latest the start may come (see startedBy), current moves to the ticket
// if it is the highest started, and Front to its slot, slotAt, if it is
// the latest and the start keeps its moment (MovesFront; a zero slotAt
// leaves Front alone). A scheduled ticket's start is StartedScheduledBy.
func StartedBy(s State, ticket int64, ls Limits, slotAt, at, deadline time.Time, skew time.Duration) State {
	s.Current = max(s.Current, ticket)
	if MovesFront(slotAt, at, ls, skew) {
		s.Front = later(s.Front, slotAt)
	}
	return startedBy(s, ls, at, deadline, skew)
}

// MovesFront reports whether a line ticket whose slot is slotAt, starting
// at at, moves the line's Front to its slot: it starts within the room of
// its slot (LineRoom), keeping its moment. A ticket that starts later (the
// queue ran behind it: a slow-down, a pause, a late worker the line
// waited for) starts at an opening of now, not of its slot, and passes
// nobody whose slot lies before it.
func MovesFront(slotAt, at time.Time, ls Limits, skew time.Duration) bool {
	return !slotAt.IsZero() && !at.After(slotAt.Add(LineRoom(ls, skew)))
}

// StartedScheduledBy is StartedBy for a scheduled (or detached) ticket:
// current and Front stay where they are, they are the line's.
func StartedScheduledBy(s State, ls Limits, at, deadline time.Time, skew time.Duration) State {
	return startedBy(s, ls, at, deadline, skew)
}

// Behind reports whether the queue at state s started a line ticket of
// a later moment, beyond the room of ls, than a line ticket whose slot is
// slotAt: its Front lies after slotAt by more than the room (for the
// interval and rate forms the burst B·T plus the skew, for a window the
// room plus the skew; the least of them). Such a ticket is passed at the
// gate: a start now would come behind the line's, out of slot order.
func Behind(s State, slotAt time.Time, ls Limits, skew time.Duration) bool {
	if slotAt.IsZero() || s.Front.IsZero() {
		return false
	}
	return s.Front.After(slotAt.Add(LineRoom(ls, skew)))
}

// LineBetween is the most line tickets that can still come to the gate
// ahead of a line ticket whose slot is slotAt, at state s under ls, and
// whether ls bounds them at all. The line books its places in ticket
// order, so a lower line ticket that has not started has its slot after
// the line's Front (the slot of a started one, no higher than Current)
// and before slotAt; where the places are spaced at least one period of
// a limit apart (an interval, or a rate without a burst), there are at
// most as many as fit strictly between the two. Every other ticket
// below slotAt's is out of line and never comes in line: a waiting
// room's place (its job takes a new ticket when it is booked), a
// scheduled or keyed job's, a re-ticketed job's old one. A window or a
// burst books several places at one moment: no bound (false).
func LineBetween(s State, ls Limits, slotAt time.Time) (int64, bool) {
	var space time.Duration
	for _, l := range ls {
		if l.Window.IsZero() && l.Burst == 0 {
			space = max(space, every(l))
		}
	}
	if space <= 0 || s.Front.IsZero() || slotAt.IsZero() {
		return 0, false
	}
	return max(0, int64(slotAt.Sub(s.Front)/space)-1), true
}

// LineRoom is how far the line's front may lie past a line ticket's slot
// before the ticket is passed (Behind): the least over ls of each limit's
// room, for the interval and rate forms the burst B·T plus the skew, for
// a window the room plus the skew.
func LineRoom(ls Limits, skew time.Duration) time.Duration {
	room := time.Duration(-1)
	for _, l := range ls {
		r := ls.Room() + skew
		if l.Window.IsZero() {
			r = time.Duration(l.Burst)*every(l) + skew
		}
		if room < 0 || r < room {
			room = r
		}
	}
	return max(room, 0)
}

// Waiting is how many jobs of the line may still reach the gate: the
// tickets after the last one the gate passed (or a purge covered) up to
// the line's last (Line). It is an upper bound, read from the counters
// alone: a ticket among them whose job was cancelled, left behind by a
// re-ticket, or that took no place in the line (a scheduled or keyed job
// booked in the same take) still counts; but jobs that never took a
// place in the line are not counted, so a queue whose line is done shows
// 0 however many such jobs it ran.
func Waiting(s State) int64 { return max(0, s.Line-max(s.Current, s.Purged)) }

// Position is the number of tickets ahead of ticket that may still start
// before it: those handed out after the last ticket the gate passed and
// after the last one a purge covered. It is an upper bound, read from the
// counters alone: a ticket among them whose job was cancelled, or left
// behind by a re-ticket, or that belongs to a scheduled job (which starts
// by its not_before, not by its ticket) still counts. Knowing which
// tickets those are would cost a write on the queue's hot item for each
// of them (docs/algorithm.md).
func Position(s State, ticket int64) int64 {
	return max(0, ticket-max(s.Current, s.Purged)-1)
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
