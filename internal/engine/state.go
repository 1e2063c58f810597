package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// Errors a State returns and the engine branches on. Implementations turn
// their own errors (DynamoDB's conditional failures, say) into these at
// their boundary.
var (
	// ErrQueueNotFound: no queue of that name.
	ErrQueueNotFound = errors.New("queue not found")
	// ErrQueueExists: CreateQueue found the queue already there.
	ErrQueueExists = errors.New("queue already exists")
	// ErrJobNotFound: no job of that key (or it expired).
	ErrJobNotFound = errors.New("job not found")
	// ErrConflict: a job record was not at the version the caller expected:
	// someone else moved it first (a duplicate delivery, a cancel).
	ErrConflict = errors.New("job changed concurrently")
	// ErrNotListed: ListJobs or CountJobs was asked for a status that is
	// not job.Status.Listed.
	ErrNotListed = errors.New("jobs of this status are not listed")
	// ErrLimitChanged: Take or Gate was asked under limits that are no
	// longer the queue's (a configure came between); read the queue
	// again.
	ErrLimitChanged = errors.New("queue limit changed")
	// ErrLeaseHeld: Lease found a queue's resume lease held by another
	// holder, or ReleaseLease found that the caller no longer holds it.
	ErrLeaseHeld = errors.New("resume lease held by another holder")
	// ErrIndexNotReady: an index the call reads is still being built (a
	// table upgraded with a new index: DynamoDB refuses queries on an
	// index while it backfills). The caller skips what it would read.
	ErrIndexNotReady = errors.New("index still being built")
)

// GateError is Gate's answer when the gate said no.
type GateError struct {
	// Verdict is slot.Early, slot.Passed, slot.Paused, slot.Purged or
	// slot.Full.
	Verdict slot.Verdict
	// OpenAt is, for slot.Early, when the gate opens.
	OpenAt time.Time
	// State is the queue state the gate saw.
	State slot.State
}

func (e *GateError) Error() string { return fmt.Sprintf("gate: %s", e.Verdict) }

// Queue is a queue as stored: name, configuration and shared state.
type Queue struct {
	Name string `json:"queue"`
	// Gen is the queue's generation, taken fresh (at random) when the
	// queue is created: jobs carry it (job.Job.Gen), so the jobs of a
	// queue deleted and created again under its name are not the new
	// queue's. 0 for queues created before generations.
	Gen       int64       `json:"gen,omitempty"`
	Config    slot.Config `json:"config"`
	State     slot.State  `json:"state"`
	CreatedAt time.Time   `json:"created_at"`
	// Rebooked is what the last configure recorded about the queued jobs
	// it booked again without writing them (nil: none): Queue.SlotOf. The
	// stores keep it; it is no part of what slotq answers.
	Rebooked *Rebooked `json:"-"`
}

// TakeRequest asks for N tickets, of which the first Line take places in
// the line (see slot.Take).
type TakeRequest struct {
	Queue string
	N     int
	Line  int
	// Limits are the queue's limits as the caller read them
	// (slot.Config.LimitList); Interval, when Limits is nil, stands for
	// the plain interval form. A store refuses a take under limits that
	// are not the queue's: ErrLimitChanged.
	Limits   slot.Limits
	Interval time.Duration
	// Skew is the queue's skew, which the gate allows a window's count:
	// a window books as tightly as its gate opens (slot.Take). Zero books
	// a window a skew looser, never tighter.
	Skew time.Duration
	Now  time.Time
	// Seen is the queue state the caller read last, a hint only: a store
	// whose atomic step comes in several conditional forms tries the one
	// Seen says first. Zero is fine.
	Seen slot.State
	// Gen is the generation of the queue the caller read (Queue.Gen): if
	// the queue was deleted and created again since, the take fails with
	// ErrQueueNotFound and hands out nothing, so an attempt or a release
	// of the old generation never takes a ticket of the new one. 0 skips
	// the check.
	Gen int64
	// OutOfLine says that none of the tickets starts in ticket order,
	// though Line of them book places (jobs under key limits start by
	// their key's slot): the state's Line stays where it is.
	OutOfLine bool
	// CutIns says some of the take's tickets may start off the line's
	// bookings (a scheduled job's, a keyed job's after its key's wait),
	// on a queue that books its starts (slot.Config.BooksStarts): the
	// take turns the queue gated (slot.GateAll, settled by Settle) until
	// Until, so that they cut in through the gate's write. A take
	// without them lifts a gated state that has run its course
	// (slot.Ungate).
	CutIns bool
	Settle slot.Settling
	Until  time.Time
	// LineEnd is the place in the batch (1 to N) of its last ticket that
	// starts in ticket order, where the take moves the state's Line; 0
	// stands for N. The tickets after it start out of line (scheduled
	// jobs batched behind line jobs: a schedule's occurrences made ahead)
	// and are no part of the line the stats count.
	LineEnd int
	// Batch, with Max above 1, books the line tickets in batches
	// (slot.TakeBatch, slot.Config.Batched): a line job joins the last
	// batch booked or opens one, and Taken.Tickets says each job's
	// ticket. Stores take such a request by compare-and-set on the whole
	// state, its ticket counter included.
	Batch slot.Batch
}

// Batched reports whether r books its line tickets in batches.
func (r TakeRequest) Batched() bool { return r.Batch.Max > 1 }

// Apply is the take r on the queue state s, as every store applies it in
// its atomic step: the state after it, with its Line moved, and the
// tickets and slots it hands out (Taken.Tickets set for a batched take).
func (r TakeRequest) Apply(s slot.State) (slot.State, Taken) {
	s = r.Gating(s)
	if !r.Batched() {
		next, first, slots := slot.Take(s, r.N, r.Line, r.LimitList(), r.Skew, r.Now)
		if r.MovesLine() {
			next.Line = first - 1 + r.LineAfter()
		}
		return next, Taken{First: first, Slots: slots, State: next}
	}
	next, tickets, slots := slot.TakeBatch(s, r.N, r.Line, r.LimitList(), r.Skew, r.Now, r.Batch)
	if r.MovesLine() && r.Line > 0 {
		next.Line = max(next.Line, tickets[r.Line-1])
	}
	opens := make([]bool, r.Line)
	for k := range opens {
		opens[k] = tickets[k] > s.Ticket && (k == 0 || tickets[k] != tickets[k-1])
	}
	return next, Taken{First: tickets[0], Tickets: tickets, Opens: opens, Slots: slots, State: next}
}

// Gating is s, the queue's state the take finds, gated or no longer as
// r says (CutIns), before the take books: the state the take goes on
// from. A store applies it in the take's atomic step.
func (r TakeRequest) Gating(s slot.State) slot.State {
	if r.CutIns {
		return slot.GateAll(s, r.LimitList(), r.Settle, r.Until)
	}
	return slot.Ungate(s, r.LimitList(), r.Now)
}

// MovesLine reports whether the take moves the state's Line (to its
// LineEnd-th ticket): some of its tickets start in ticket order.
func (r TakeRequest) MovesLine() bool { return r.Line > 0 && !r.OutOfLine }

// Check reports a request no store can take: n below 1, or line or
// line_end outside 0 to n.
func (r TakeRequest) Check() error {
	if r.N < 1 || r.Line < 0 || r.Line > r.N || r.LineEnd < 0 || r.LineEnd > r.N {
		return fmt.Errorf("take ticket %s: want 0 ≤ line ≤ n, 0 ≤ line_end ≤ n and n ≥ 1, got n=%d line=%d line_end=%d", r.Queue, r.N, r.Line, r.LineEnd)
	}
	return nil
}

// LineAfter is the number of tickets the take's Line lies past the
// ticket before it: LineEnd, or N.
func (r TakeRequest) LineAfter() int64 {
	if r.LineEnd > 0 {
		return int64(r.LineEnd)
	}
	return int64(r.N)
}

// LimitList is r's limits: Limits, or the plain interval form of
// Interval.
func (r TakeRequest) LimitList() slot.Limits {
	if r.Limits != nil {
		return r.Limits
	}
	return slot.Every(r.Interval)
}

// Taken is a range of tickets [First, First+N) and the slots of its Line
// line tickets (slot.Take).
type Taken struct {
	First int64
	// Tickets, for a batched take (TakeRequest.Batched), is the ticket
	// of each job: the line jobs' first, in order, then those out of
	// line. Nil else: the tickets are First, First+1, ….
	Tickets []int64
	// Opens, for a batched take, says of each line job whether it opened
	// its batch (took a new ticket) rather than join one: it leads the
	// batch's start.
	Opens []bool
	Slots []time.Time
	// State is the queue state right after the take.
	State slot.State
}

// GateRequest asks the gate to let one ticket of a queue start.
type GateRequest struct {
	Queue  string
	Ticket int64
	// Limits and Interval are the queue's limits as in TakeRequest.
	Limits   slot.Limits
	Interval time.Duration
	// Skew is the queue's skew: a window's gate counts over its period
	// less the skew, and the marks record Deadline less the skew for the
	// interval and rate forms (slot.StartedBy). It is no early
	// allowance: the gate lets nothing through before its limits open.
	Skew time.Duration
	Now  time.Time
	// At is the start the gate reserves: the limits are checked by At,
	// not by Now (the gate is asked a lead before the start; see
	// slot.StartAt). Zero: Now.
	At time.Time
	// SlotAt is the line ticket's slot (job.Job.SlotAt): a line ticket
	// the queue overtook beyond the room (slot.Behind) is passed, and
	// the start moves the queue's Front to it. Zero skips both.
	SlotAt time.Time
	// Deadline is the latest the worker may call its target
	// (slot.Deadline): the marks record it, so any start in [At,
	// Deadline] keeps every limit. Zero: At.
	Deadline time.Time
	// Scheduled says the ticket is a scheduled job's (job.Job.Scheduled):
	// it took no place in the line, so ticket order does not apply and
	// current does not move (slot.GateScheduled, slot.StartedScheduled).
	Scheduled bool
	// Seen is the queue state the caller read last, a hint as in
	// TakeRequest.
	Seen slot.State
	// MaxRunning is the queue's cap on attempts running at once (0: none).
	// Under a cap the gate also says slot.Full when every place is taken,
	// and a ticket that passes takes a place (slot.Run) until Until, the
	// end of its attempt's lease.
	MaxRunning int
	Until      time.Time
	// Gen is the generation of the job's queue (job.Job.Gen): a gate of
	// a queue deleted and created again since fails with
	// ErrQueueNotFound, so nothing of the old generation starts on the
	// new queue. 0 skips the check.
	Gen int64
	// CutIn says the start cuts in off the line's bookings (a scheduled
	// job's, a job's handed its key, one that starts late rather than
	// lose its place) on a queue whose booked starts pass by a read
	// (AdmitRequest) and move no mark: the gate turns the queue gated
	// (slot.GateAll, its last starts settled by Settle) and judges the
	// start on the gated state.
	CutIn  bool
	Settle slot.Settling
	// Alone says the line ticket starts late, beyond its booked window,
	// as the line's last booking (slot.State.Line): on a queue whose
	// booked starts pass by a read, it may while nothing is booked
	// behind it, and is passed (a new ticket) once a take booked some.
	Alone bool
}

// gating is s, gated for r's start when it cuts in (CutIn): the state
// the gate judges and moves.
func (r GateRequest) gating(s slot.State) slot.State {
	if r.CutIn {
		return slot.GateAll(s, r.LimitList(), r.Settle, time.Time{})
	}
	return s
}

// AdmitRequest asks the gate of a booked start (LineStore.Admit): a line
// ticket whose slot the take booked, starting within its booked window,
// on a queue that books its starts (slot.Config.BooksStarts). Its
// booking kept its moment and its room under the limits, so the gate
// only reads: the queue's generation, a purge, a pause, a slow-down.
type AdmitRequest struct {
	Queue  string
	Gen    int64
	Ticket int64
	// At is the booked start (the job's slot).
	At time.Time
}

// Decide is the gate's verdict on r at state s (slot.Admit).
func (r AdmitRequest) Decide(s slot.State) (slot.Verdict, time.Time) {
	return slot.Admit(s, r.Ticket, r.At)
}

// Admitted is r's answer from q, the queue as a store read it (err its
// error): ErrQueueNotFound for a queue of another generation, a
// *GateError for a start r.Decide stops; with the queue as read either
// way, so that the caller goes on from it.
func (r AdmitRequest) Admitted(q Queue, err error) (Queue, error) {
	switch {
	case err != nil:
		return q, fmt.Errorf("admit %s ticket %d: %w", r.Queue, r.Ticket, err)
	case r.Gen != 0 && q.Gen != 0 && q.Gen != r.Gen:
		return q, fmt.Errorf("admit %s ticket %d of generation %d: %w", r.Queue, r.Ticket, r.Gen, ErrQueueNotFound)
	}
	if v, open := r.Decide(q.State); v != slot.Start {
		return q, &GateError{Verdict: v, OpenAt: open, State: q.State}
	}
	return q, nil
}

// Decide is the gate's verdict on r at state s: slot.Gate, or
// slot.GateScheduled for a scheduled (or detached) ticket; a ticket the
// gate would start is slot.Full when the queue's running places are all
// taken (slot.Capped).
func (r GateRequest) Decide(s slot.State) (slot.Verdict, time.Time) {
	s = r.gating(s)
	v, open := slot.Gate(s, r.Ticket, r.LimitList(), r.Skew, r.Start())
	if r.Scheduled {
		v, open = slot.GateScheduled(s, r.Ticket, r.LimitList(), r.Skew, r.Start())
	}
	if v == slot.Start && r.Alone && s.Line != r.Ticket {
		// Booked behind since it was read: its late start would
		// move those bookings.
		return slot.Passed, time.Time{}
	}
	if v == slot.Start && !r.Scheduled && slot.Behind(s, r.SlotAt, r.LimitList(), r.Skew) {
		return slot.Passed, time.Time{}
	}
	if v == slot.Start && slot.CappedFor(s, r.MaxRunning, r.Ticket, r.Now) {
		return slot.Full, time.Time{}
	}
	return v, open
}

// LimitList is r's limits: Limits, or the plain interval form of
// Interval.
func (r GateRequest) LimitList() slot.Limits {
	if r.Limits != nil {
		return r.Limits
	}
	return slot.Every(r.Interval)
}

// Start is the start r reserves: At, or Now if At is zero.
func (r GateRequest) Start() time.Time {
	if r.At.IsZero() {
		return r.Now
	}
	return r.At
}

// CallBy is the deadline r's worker calls its target by: Deadline, or
// Start if it is zero.
func (r GateRequest) CallBy() time.Time {
	if r.Deadline.IsZero() {
		return r.Start()
	}
	return r.Deadline
}

// Started is the state after r passed the gate at state s: slot.StartedBy
// (current moves only for a line ticket), a start that cuts in turns the
// queue gated (CutIn), and under a cap the ticket's
// running place (slot.Run); the answered ticket of a slow-down no longer
// holds the others (slot.Answered).
func (r GateRequest) Started(s slot.State) slot.State {
	s = r.gating(s)
	if r.Scheduled {
		s = slot.StartedScheduledBy(s, r.LimitList(), r.Start(), r.CallBy(), r.Skew)
	} else {
		s = slot.StartedBy(s, r.Ticket, r.LimitList(), r.SlotAt, r.Start(), r.CallBy(), r.Skew)
	}
	if r.MaxRunning > 0 {
		s = slot.Run(s, r.Ticket, r.Until, r.Now)
	}
	return slot.Answered(s, r.Ticket)
}

// SlowDownRequest is a target's "slow down" for a queue's state
// (State.SlowDown): the ticket of the job that got the answer, the end of
// the slow-down, and Hold, until when the queue's other tickets wait for
// that job to start after it.
type SlowDownRequest struct {
	Queue  string
	Gen    int64
	Ticket int64
	Until  time.Time
	Hold   time.Time
	// Answer names the answer (slowAnswer): a state that counted it
	// (slot.SlowCounted) counts it no more, so a request sent again
	// after it landed leaves the count as it was.
	Answer string
	// Gate turns the queue gated (slot.GateAll) in the same write, on a
	// queue that books its starts: the answered job and the starts the
	// slow-down holds back cut in off the line's bookings. (The
	// slow-down lasts longer than a booked start that passed by a read
	// may still come: nothing needs settling.)
	Gate bool
}

// ListRequest lists jobs of one queue and status in ticket order.
type ListRequest struct {
	Queue string
	// Gen is the queue's generation: only its jobs are listed.
	Gen    int64
	Status job.Status
	// After lists tickets greater than After (0: from the start).
	After int64
	// Limit caps the answer; 0 means 100.
	Limit int
}

// RoomRequest lists the jobs of one queue's waiting room of one priority
// and key (State.ListRoom) in ticket order.
type RoomRequest struct {
	Queue string
	// Gen is the queue's generation: only its jobs are listed.
	Gen int64
	// Priority is the jobs' priority as the room orders it
	// (slot.PriorityOf: 1 to api.MaxPriority) and Key their key ("" for
	// none).
	Priority int
	Key      string
	// After lists tickets greater than After (0: from the start).
	After int64
	// Limit caps the answer; it must be at least 1.
	Limit int
}

// ticketOf is the ticket of the i-th job of a take, the k-th of its line
// jobs or the o-th of those out of line (inLine says which).
func (t Taken) ticketOf(i, k, o int, inLine bool) int64 {
	switch {
	case t.Tickets == nil:
		return t.First + int64(i)
	case inLine:
		return t.Tickets[k]
	}
	return t.Tickets[len(t.Slots)+o]
}
