package engine

import (
	"context"
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

// State is what the engine needs from a state store, one interface per
// part of the table: internal/memstore and internal/dynamostore implement
// them all; internal/dev/storetest states the contract as tests. Every
// method is safe for concurrent use by many processes.
type State interface {
	QueueStore
	LineStore
	JobStore
	DueStore
	KeyStore
	RoomStore
}

// QueueStore keeps queues: their configuration, pause, purge and delete
// (the admin's side of the queue's state item).
type QueueStore interface {
	// CreateQueue stores a new queue with a zero state. ErrQueueExists if
	// one of that name exists.
	CreateQueue(ctx context.Context, q Queue) error
	// GetQueue returns a queue. ErrQueueNotFound.
	GetQueue(ctx context.Context, name string) (Queue, error)
	// ListQueues returns every queue, in name order.
	ListQueues(ctx context.Context) ([]Queue, error)
	// SetConfig replaces a queue's configuration; the state is untouched.
	SetConfig(ctx context.Context, name string, cfg slot.Config) error
	// Reconfigure replaces a queue's configuration and, in the same
	// atomic step, the limit state of its state item (LastStart, Clock,
	// Marks) by r.Reslot of the state it holds: the ticket boundary of a
	// limit change (see ReconfigureRequest). It returns the state as
	// stored. ErrQueueNotFound, also when r.Gen is set and is not the
	// queue's generation; r.Reslot's error as it returned it, with
	// nothing written.
	Reconfigure(ctx context.Context, r ReconfigureRequest) (slot.State, error)
	// Pause sets the pause flag (and until, zero for none). Once it returns,
	// Start fails with slot.Paused for this queue.
	Pause(ctx context.Context, name string, until time.Time) (slot.State, error)
	// Unpause clears the pause flag. With a non-zero ifUntil it does so only
	// if the queue is paused with exactly that PausedUntil, and reports
	// whether it did: a newer pause wins over an older schedule.
	Unpause(ctx context.Context, name string, ifUntil time.Time) (bool, error)
	// Purge sets the queue's Purged to its Ticket: every ticket handed out
	// so far is cancelled when it reaches the gate (slot.Purged). It
	// returns the state after. ErrQueueNotFound.
	Purge(ctx context.Context, name string) (slot.State, error)
	// Skip moves current to ticket if it stands just below it (current =
	// ticket − 1: every lower ticket has started or left the line), and
	// reports whether it did; nothing else changes. It is for a ticket that
	// left the line without starting (a job parked on a lane): the line's
	// next ticket then need not hold for it. ErrQueueNotFound.
	Skip(ctx context.Context, queue string, ticket int64) (bool, error)
	// DeleteQueue removes a queue's record and its resume lease. Its jobs
	// are left to the engine: they belong to the queue's generation, which
	// no queue has any more.
	DeleteQueue(ctx context.Context, name string) error
}

// LineStore is the queue's line on its state item: the take that hands out
// tickets and slots, the gate, a slow-down and a running place's end.
type LineStore interface {
	// Admit is the gate of a booked start (AdmitRequest): one strongly
	// consistent read of the queue and no write. It returns the queue
	// as read, and r.Admitted's error: ErrQueueNotFound (also for
	// another generation), a *GateError for a purged ticket, a paused
	// queue or a slow-down that holds the ticket back.
	Admit(ctx context.Context, r AdmitRequest) (Queue, error)

	// Take hands out tickets and line slots atomically by slot.Take.
	// Concurrent takes get disjoint, gap-free ranges. ErrQueueNotFound
	// also when r.Gen is set and is not the queue's generation.
	Take(ctx context.Context, r TakeRequest) (Taken, error)
	// Gate is the queue side of a start, one atomic step on the queue's
	// state alone: if r.Decide says Start, the state moves by r.Started
	// and Gate returns it; otherwise a *GateError with the state it saw.
	// ErrQueueNotFound, also when r.Gen is set and is not the queue's
	// generation; ErrLimitChanged when r's limits are not the queue's. Of concurrent gates that slot.Gate would each let
	// through alone, one passes.
	//
	// The job side, the claim, is a separate UpdateJob from queued to
	// running: a start is two writes, never a transaction, so the hot
	// queue item is written once per start and never by a transaction
	// (which would fail concurrent writes to it on DynamoDB). The engine
	// orders them gate first, so the claim can only follow a passed gate;
	// a crash between the two leaves current at the job's ticket with the
	// job queued, and the job's next delivery passes the gate again (see
	// slot.Gate) or, if the queue has started a later ticket since, takes
	// a new ticket.
	Gate(ctx context.Context, r GateRequest) (slot.State, error)
	// SlowDown records a target's "slow down" on the queue's state by
	// slot.SlowDown, with one conditional write that only extends the
	// slow-down (SlowUntil never moves back) and counts it, and returns
	// the state after. ErrQueueNotFound, also when r.Gen is set and is not
	// the queue's generation: a stale generation writes nothing.
	SlowDown(ctx context.Context, r SlowDownRequest) (slot.State, error)

	// EndRun frees the running place ticket's attempt took at the gate
	// (slot.Ended), if the place is still that attempt's or a later
	// gate's of the same ticket: its entry ends at until, the
	// GateRequest.Until it was taken with, or after it (a duplicate
	// delivery that passed the gate again while the attempt's claim was
	// on its way rewrote it, and its own claim was refused). One write on
	// the queue's state; nothing changes if the ticket has no such place
	// (it ended already, or took none), or if the queue is not of
	// generation gen (0: any), so an attempt of a deleted queue frees
	// nothing of one created again under its name. ErrQueueNotFound.
	EndRun(ctx context.Context, queue string, gen, ticket int64, until time.Time) error
}

// JobStore keeps the jobs' records.
type JobStore interface {

	// CreateJobs stores new jobs. created[i] is false where a job of that
	// key and generation (job.Job.Gen), or of a newer generation, existed
	// already; that record is left as it was. A record of the key from an
	// older generation is replaced: it belonged to a deleted queue of the
	// same name. Generations are ordered (a queue created again has a
	// larger one), so an enqueue of a deleted generation that writes late
	// never replaces the job of the queue created again. An expired
	// record (job.Job.Expired) is absent, as for GetJob, and is replaced
	// whatever its generation: TTL deletes it only eventually.
	CreateJobs(ctx context.Context, jobs []job.Job) (created []bool, err error)
	// GetJob returns a job. ErrJobNotFound, also for an expired one.
	GetJob(ctx context.Context, k job.Ref) (job.Job, error)
	// UpdateJob replaces a job record if it is still at version from;
	// otherwise ErrConflict (ErrJobNotFound if it is gone). A status
	// change job.CanMove does not allow is refused before anything is
	// read or written: job.ErrIllegalMove.
	UpdateJob(ctx context.Context, j job.Job, from job.Version) error
	// ListJobs returns jobs of one queue, generation and status, by
	// ticket ascending, without expired ones. Only statuses that are
	// job.Status.Listed are served; others are ErrNotListed.
	ListJobs(ctx context.Context, r ListRequest) ([]job.Job, error)
	// CountJobs counts jobs of one queue, generation and status, as
	// ListJobs lists.
	CountJobs(ctx context.Context, queue string, gen int64, status job.Status) (int, error)
	// ListHeld returns up to limit jobs of queue and generation gen that
	// a pause holds (JobHeld), in line order (job.Job.LineOrder; jobs of
	// one line order, which only jobs from before Order was kept can
	// share, in any order), without expired ones. Like ListDue, it may lag the records.
	ListHeld(ctx context.Context, queue string, gen int64, limit int) ([]job.Job, error)
}

// DueStore is the resume function's side: the due index, the queues'
// resume leases and the table's schema mark.
type DueStore interface {

	// ListDue returns up to limit entries of the due index whose At is at
	// or before before, of every queue, earliest first (ties in any
	// order). The index may lag its records for a moment (an index
	// eventually consistent, on DynamoDB): an entry is a hint to read its
	// record, which decides.
	ListDue(ctx context.Context, before time.Time, limit int) ([]DueEntry, error)

	// Lease takes a queue's resume lease for holder until until, if no
	// other holder has it at now: it was never taken, was released, or
	// its until has passed (a holder may take its own lease again). It
	// returns the cursor the last holder left (zero if none).
	// ErrLeaseHeld if another holder has it. Of concurrent callers, one
	// wins. The lease is a record of its own, apart from the queue's hot
	// state, and needs no queue record; its cursor outlives the lease.
	//
	// Resume passes hold it, so two passes never interleave their writes
	// on one queue (two ticket ranges for one set of parked jobs would
	// invert their order).
	Lease(ctx context.Context, queue, holder string, until, now time.Time) (Cursor, error)
	// ReleaseLease frees holder's lease and stores c for the next holder.
	// ErrLeaseHeld, and nothing written, if holder no longer has it (it
	// expired and another holder took it).
	ReleaseLease(ctx context.Context, queue, holder string, c Cursor) error

	// Schema reads the table's schema mark; a zero Schema if it has none.
	Schema(ctx context.Context) (Schema, error)
	// PutSchema writes the schema mark s if the mark is still from (a
	// zero from: none yet). ErrConflict otherwise.
	PutSchema(ctx context.Context, s, from Schema) error
}

// KeyStore keeps the keys: their lanes and their meters.
type KeyStore interface {

	// GetLane reads a queue's lane of key (slot.Lane; key "" is the
	// queue's own lane), strongly. A lane never written, or deleted, is
	// returned with Version 0 and only Queue and Key set.
	//
	// A lane's versions never repeat, across deletes too: a lane created
	// (by PutLane from 0, or by AddPending where none is stored) starts
	// at a version above every version an earlier lane of that queue and
	// key had, so a read from before a delete is stale for every lane
	// after it, and a PutLane from it fails.
	GetLane(ctx context.Context, queue, key string) (slot.Lane, error)
	// PutLane stores every field of l but Pending if the stored lane is
	// still at version from (0: none is stored), and adds pendingDelta to
	// the stored Pending in the same atomic write: l.Pending is not
	// stored, so the jobs AddPending counted since the caller read the
	// lane stay counted. It returns the lane as stored: at version
	// from+1, or, from 0, at the version a created lane starts at (see
	// GetLane), which callers read from the answer. ErrConflict if the
	// version moved (another PutLane came first, or the lane was deleted,
	// created or started afresh): an AddPending of the lane's generation
	// never makes it fail. Of concurrent writers from one version, one
	// wins.
	//
	// A lane that l leaves Idle whose stored Pending plus pendingDelta is
	// 0 or less is deleted instead (and returned at Version 0), on the
	// same condition of the version and on that count, atomically: if an
	// AddPending raised the count meanwhile, the lane is written, not
	// deleted.
	PutLane(ctx context.Context, l slot.Lane, from, pendingDelta int64) (slot.Lane, error)
	// AddPending adds n (which may be negative) to the Pending jobs of
	// queue's lane of key for generation gen, creating the lane (at the
	// version a created lane starts at, see GetLane), and returns the
	// lane after. It needs no version and does not move it: concurrent
	// adds all count, and a PutLane from a version read before them
	// still lands, keeping them. A lane of another generation (a deleted
	// queue's) is started afresh, as a lane of gen with Pending n and
	// nothing else, its version moved on, so a PutLane from a read of the
	// old one fails — but only if gen is the queue's generation now,
	// atomically with that check: otherwise the caller is of a deleted
	// generation, the lane is left as it is (it may be the new queue's,
	// held by one of its jobs), and AddPending fails with
	// ErrQueueNotFound. It never deletes a lane.
	AddPending(ctx context.Context, queue string, gen int64, key string, n int64) (slot.Lane, error)
	// ListLanes returns a queue's stored lanes of every generation, the
	// queue's own lane included, in key order.
	ListLanes(ctx context.Context, queue string) ([]slot.Lane, error)

	// GetMeter reads a queue's meter of key (slot.Meter: the key's own
	// limit state), strongly. A meter never written, or expired, is
	// returned with Version 0 and only Queue and Key set. A meter's
	// versions never repeat, as a lane's do not (see GetLane).
	GetMeter(ctx context.Context, queue, key string) (slot.Meter, error)
	// PutMeter stores m if the stored meter is still at version from (0:
	// none is stored) and returns it as stored, at the next version.
	// ErrConflict if the version moved: of concurrent writers from one
	// version, one wins. keep is when the meter stops holding anything
	// back (slot.Meter.Keep): the store may drop it after that (a zero
	// keep: never). ErrQueueNotFound if the stored meter is of a later
	// generation than m's (GenBefore): m is of a deleted queue, and the
	// meter, the queue's created again under its name, is left as it is.
	// One write of the key's own record, which shares no partition with
	// the queue's state.
	PutMeter(ctx context.Context, m slot.Meter, from int64, keep time.Time) (slot.Meter, error)
}

// RoomStore keeps a bounded queue's booking horizon and lists its waiting
// room.
type RoomStore interface {

	// GetHorizon reads a queue's booking horizon (slot.Horizon),
	// strongly, with maps of the caller's own (slot.Horizon.Clone): the
	// caller may change it. One never written is returned with Version 0
	// and only Queue set. A horizon's versions never repeat, as a lane's do not
	// (see GetLane).
	GetHorizon(ctx context.Context, queue string) (slot.Horizon, error)
	// PutHorizon stores h if the stored horizon is still at version from
	// (0: none is stored) and returns it as stored, at the next version
	// (h's maps stay the caller's, and the store keeps none of them),
	// with its due entry (HorizonDue) in the same write. ErrConflict if
	// the version moved: of concurrent writers from one version, one
	// wins. ErrQueueNotFound if the stored horizon is of a later
	// generation than h's (GenBefore). One write of the horizon's own
	// record, which shares no partition with the queue's state.
	PutHorizon(ctx context.Context, h slot.Horizon, from int64) (slot.Horizon, error)
	// ListRoom returns up to r.Limit unexpired jobs of the waiting room
	// (JobInRoom) of one queue, generation, priority and key, by ticket
	// ascending: what the room books next reads one key's head without
	// listing the room. Like ListDue, it may lag the records for a
	// moment; the caller's conditional write on the job decides.
	ListRoom(ctx context.Context, r RoomRequest) ([]job.Job, error)
}
