package job

import (
	"encoding/json"
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
)

// Job is the record of one job. The state store keeps it; every change goes
// through a compare-and-set on its Version.
type Job struct {
	Queue string `json:"queue"`
	ID    string `json:"job_id"`
	// Gen is the generation of the queue the job was accepted by
	// (engine.Queue.Gen): a queue deleted and created again under its
	// name is a new generation, and the jobs of an older one are not its
	// jobs — they read as not found and expire.
	Gen int64 `json:"gen,omitempty"`
	// Kind names a Go handler registered in the worker; Target names an
	// HTTP endpoint or Lambda function. Exactly one is set.
	Kind    string          `json:"kind,omitempty"`
	Target  string          `json:"target,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`

	Status Status `json:"status"`
	// Ticket is the job's position in its queue; a re-ticket replaces it.
	Ticket int64 `json:"ticket"`
	// Order is the ticket the job took when it was accepted: re-tickets
	// leave it, so jobs a pause parks are released in the order they were
	// accepted in, however often a release round gave them new tickets
	// (see LineOrder). 0 for jobs from before it was kept.
	Order int64 `json:"order,omitempty"`
	// SlotAt is when the job is expected to start.
	SlotAt time.Time `json:"slot_at"`
	// NotBefore, if set, is the earliest start the producer asked for.
	NotBefore time.Time `json:"not_before,omitzero"`
	// RetryAt, after a failed attempt, is the earliest start of the next
	// one: the end of its backoff. It stays until that attempt starts,
	// so a job a pause parks meanwhile keeps its backoff when a release
	// round gives it a new ticket (Earliest).
	RetryAt time.Time `json:"retry_at,omitzero"`
	// Scheduled is set when the job's not_before lay beyond the line as it
	// took its ticket: it took no place in the line, and its slot is its
	// not_before (docs/algorithm.md). It starts at its slot or at the first
	// moment after it that the queue's spacing allows, whatever tickets
	// started meanwhile: the gate never passes it (slot.GateScheduled).
	Scheduled bool `json:"scheduled,omitempty"`
	// Key is the job's key (JSON "key"; [A-Za-z0-9_.:/@-]{1,200}, or
	// empty): jobs of one queue with the same key run one at a time, in
	// ticket order (docs/guarantees.md §12). The key's shared state is
	// its lane (slot.Lane).
	Key string `json:"key,omitempty"`
	// Detached is set when the job waited, parked, for its key or for a
	// running place, or waits for the end of a slow-down its target
	// answered: it left the line, so, like a scheduled job, it
	// passes the gate by the queue's spacing alone and is never passed.
	// A new ticket (a retry, a re-ticket) puts it back in line.
	Detached bool `json:"detached,omitempty"`
	// Attempt is the number of the current or next attempt, from 1.
	Attempt int `json:"attempt"`
	// SentBack counts the times in a row the worker sent the job back to
	// the transport without starting it: a hand-back, a re-ticket, a come
	// again for a full key or list. A start sets it to 0. Past the
	// engine's bound (Options.MaxSendsBack) the job fails instead of
	// circling.
	SentBack int `json:"sent_back,omitempty"`
	// Retickets counts how often the job took a new ticket because it was
	// passed or its queue was paused.
	Retickets int `json:"retickets,omitempty"`
	// SlowDowns counts the times the job's target answered "slow down"
	// (attempt.RetryAfterError): not failed attempts, but bounded by the
	// queue's max_slow_downs. A job answered so waits, out of line
	// (Detached), at its ticket for the slow-down's end.
	SlowDowns int `json:"slow_downs,omitempty"`
	// Reruns counts how often the job was run again on request after it
	// failed or was cancelled (a retry: engine.Retry), and RerunFrom is
	// the Attempt it had reached then. Attempts keep counting across a
	// rerun (a target never sees an attempt number twice), and each run
	// has the queue's max_attempts of its own: the attempts of this run
	// are Attempt − RerunFrom (RunAttempt).
	Reruns    int `json:"reruns,omitempty"`
	RerunFrom int `json:"rerun_from,omitempty"`

	// ParkReason and DueAt are set while parked: DueAt is when the resume
	// function should release it.
	ParkReason ParkReason `json:"park_reason,omitempty"`
	DueAt      time.Time  `json:"due_at,omitzero"`

	EnqueuedAt time.Time `json:"enqueued_at"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// LastError is the error of the last failed attempt.
	LastError string `json:"last_error,omitempty"`
	// Result is what the job's last attempt answered, written with its
	// outcome (succeeded, or failed for good): a Go handler's value
	// (target.SetResult), an HTTP target's status and body, a Lambda
	// target's response payload. Always JSON, at most MaxResult bytes;
	// a larger one is not stored, and ResultDropped says how many bytes
	// it had.
	Result        json.RawMessage `json:"result,omitempty"`
	ResultDropped int             `json:"result_dropped,omitempty"`
	// ExpiresAt is when a finished job may be deleted (the TTL).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// History is what happened to the job, oldest first: its last
	// MaxHistory events (see Record). HistoryDropped counts the older
	// ones it no longer holds.
	History        []Event `json:"history,omitempty"`
	HistoryDropped int     `json:"history_dropped,omitempty"`
	// TraceParent and TraceState are the W3C trace context the job
	// carries (api.Job): its producer's, or, when the engine traces,
	// its enqueue span's. Every attempt's span is a child of it; a
	// target receives the attempt's context. They never change after
	// enqueue: re-tickets, parking, retries and redrives keep them.
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`
	// AttemptSpan is the traceparent of the span of the job's last
	// attempt (written with its claim): the next attempt's span links
	// to it. Empty when the engine does not trace.
	AttemptSpan string `json:"attempt_span,omitempty"`
}

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
func (j *Job) RunAttempt() int { return j.Attempt - j.RerunFrom }

// Target returns what the job runs, for logs: "kind:NAME" or the target.
func (j *Job) What() string {
	if j.Kind != "" {
		return "kind:" + j.Kind
	}
	return j.Target
}

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
