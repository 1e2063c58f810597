package engine

import (
	"context"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

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
	BatchStore
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
