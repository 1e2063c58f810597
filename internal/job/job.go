package job

import (
	"errors"
	"fmt"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// Status is a job's status (api.Status, with its constants).
type Status = api.Status

// The statuses of a job (api's, named here for the engine's code).
const (
	Queued    = api.Queued
	Parked    = api.Parked
	Running   = api.Running
	Succeeded = api.Succeeded
	Failed    = api.Failed
	Cancelled = api.Cancelled
)

// Statuses lists every status, in life order.
var Statuses = api.Statuses

var transitions = map[Status][]Status{
	// Queued to failed: a job sent back too often without starting
	// (engine.Options.MaxSendsBack).
	Queued:  {Queued, Parked, Running, Cancelled, Failed},
	Parked:  {Parked, Queued, Cancelled},
	Running: {Queued, Parked, Succeeded, Failed},
	// A retry on request (engine.Retry): a dead letter or a cancelled job
	// takes a new ticket at the end of the line, as queued or parked. A
	// succeeded job is never run again.
	Failed:    {Queued, Parked},
	Cancelled: {Queued, Parked},
}

// CanMove reports whether a job may go from one status to another. Queued to
// queued and parked to parked are legal: they are re-tickets. A failed or
// cancelled job may go back to queued or parked: a retry on request.
// Stores refuse every other change (CheckMove), so a bug that would revive
// a succeeded job, finish a job that did not run, or start a parked one
// without its release, writes nothing.
func CanMove(from, to Status) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// ErrIllegalMove is wrapped in the error of a status change CanMove does
// not allow. It is a programming error, not a race: a store refuses the
// update and writes nothing.
var ErrIllegalMove = errors.New("illegal status change")

// CheckMove returns nil if a job may go from one status to another, and
// otherwise an error wrapping ErrIllegalMove that names both. State stores
// call it in UpdateJob, before writing.
func CheckMove(from, to Status) error {
	if CanMove(from, to) {
		return nil
	}
	return fmt.Errorf("%w: %s to %s", ErrIllegalMove, from, to)
}

// ParkReason says why a job is parked (api.ParkReason, with its
// constants).
type ParkReason = api.ParkReason

// Why a job is parked.
const (
	Far         = api.Far
	PausedQueue = api.PausedQueue
	Unsent      = api.Unsent
	WaitKey     = api.WaitKey
	WaitPlace   = api.WaitPlace
	WaitGate    = api.WaitGate
	Room        = api.Room
)

// Job is the record of one job: api.Job's fields (the type is defined by
// it, so a field of the record is declared once, in pkg/api, and the
// record's JSON is its wire form; API converts). The state store keeps
// it; every change goes through a compare-and-set on its Version.
//
// What the engine keeps in the fields, beside api.Job's words:
//
//   - Gen: a queue deleted and created again under its name is a new
//     generation (engine.Queue.Gen), and the jobs of an older one are not
//     its jobs: they read as not found and expire.
//   - Order is the ticket the job took when it was accepted: re-tickets
//     leave it, so jobs a pause parks are released in the order they were
//     accepted in, however often a release round gave them new tickets
//     (LineOrder). 0 for jobs from before it was kept.
//   - RetryAt stays until the next attempt starts, so a job a pause parks
//     meanwhile keeps its backoff when a release round gives it a new
//     ticket (Earliest).
//   - Scheduled: the job's not_before lay beyond the line as it took its
//     ticket, so it took no place in the line and its slot is its
//     not_before (docs/algorithm.md); the gate never passes it
//     (slot.GateScheduled).
//   - Key: jobs of one queue with the same key run one at a time, in
//     ticket order; the key's shared state is its lane (slot.Lane).
//   - Detached: the job waited, parked, for its key or a running place,
//     or waits for the end of a slow-down its target answered: it left
//     the line, so, like a scheduled job, it passes the gate by the
//     queue's spacing alone and is never passed. A new ticket (a retry, a
//     re-ticket) puts it back in line.
//   - SentBack: past the engine's bound (engine Options.MaxSendsBack) the
//     job fails instead of circling.
//   - SlowDowns: a job answered "slow down" (attempt.RetryAfterError)
//     waits, out of line (Detached), at its ticket for the slow-down's end.
//   - Reruns, RerunFrom: attempts keep counting across a rerun
//     (engine.Retry), so a target never sees an attempt number twice, and
//     each run has the queue's max_attempts of its own (RunAttempt).
//   - DueAt is when the resume function should release a parked job;
//     ExpiresAt is the TTL, which stores check too (Expired), because TTL
//     deletion is lazy.
//   - Result is written with the outcome: a Go handler's value
//     (target.SetResult), an HTTP target's status and body, a Lambda
//     target's response payload.
//   - History holds the last MaxHistory events (Record).
//   - TraceParent and TraceState never change after enqueue: re-tickets,
//     parking, retries and redrives keep them. Every attempt's span is a
//     child of them; AttemptSpan, written with the claim, is the last
//     attempt's, which the next attempt's span links to.
type Job api.Job

// MaxResult bounds a job's Result: 32 KiB, so a record with the largest
// payload (192 KiB), its result and its last error stays well within a
// DynamoDB item (400 KB), and a result costs at most 32 more write units
// on its outcome write.
const MaxResult = api.MaxResult

// Version identifies one state of a job record, for compare-and-set. Gen
// is part of it: a record of a queue's new generation under an old job's
// id is another record, whatever its status, ticket and attempt.
type Version struct {
	Status  Status
	Ticket  int64
	Attempt int
	Gen     int64
}

// Version returns the job's current version.
func (j *Job) Version() Version {
	return Version{Status: j.Status, Ticket: j.Ticket, Attempt: j.Attempt, Gen: j.Gen}
}

// LineOrder is the job's place among its queue's jobs held by a pause:
// Order, or the ticket for a job without one.
func (j *Job) LineOrder() int64 {
	if j.Order != 0 {
		return j.Order
	}
	return j.Ticket
}

// RunAttempt is the number of the current or next attempt within the
// job's current run: Attempt, less the attempts made before its last
// rerun. A run fails for good when its RunAttempt reaches max_attempts.
func (j *Job) RunAttempt() int { return (*api.Job)(j).RunAttempt() }

// What returns what the job runs, for logs: "kind:NAME" or the target.
func (j *Job) What() string { return (*api.Job)(j).What() }

// Expired reports whether a finished job's retention has passed at now.
// Stores filter on it, because TTL deletion is lazy.
func (j *Job) Expired(now time.Time) bool {
	return !j.ExpiresAt.IsZero() && !now.Before(j.ExpiresAt)
}

// Ref names a job: its queue and its id. (A job's Key is something else:
// the key whose jobs run one at a time.)
type Ref struct {
	Queue string
	ID    string
}

func (k Ref) String() string { return fmt.Sprintf("%s/%s", k.Queue, k.ID) }

// Ref returns the job's reference: its queue and id.
func (j *Job) Ref() Ref { return Ref{Queue: j.Queue, ID: j.ID} }

// Earliest is the earliest start a new ticket may give j: the later of
// the producer's NotBefore and a retry's backoff (RetryAt).
func (j *Job) Earliest() time.Time {
	if j.RetryAt.After(j.NotBefore) {
		return j.RetryAt
	}
	return j.NotBefore
}
