package api

import (
	"encoding/json"
	"time"
)

// Status is a job's status.
type Status string

// The statuses of a job.
const (
	// Queued: waiting in the slot queue for its slot.
	Queued Status = "queued"
	// Parked: waiting in the state store: its slot is further away than
	// SQS can delay, its queue is paused, or it waits for its key or a
	// running place (ParkReason). It is released by itself.
	Parked Status = "parked"
	// Running: an attempt passed the gate and has started.
	Running Status = "running"
	// Succeeded: an attempt finished without error. Final.
	Succeeded Status = "succeeded"
	// Failed: the last attempt failed; the record is the dead letter.
	// Final, unless retried on request.
	Failed Status = "failed"
	// Cancelled: cancelled on request before it started. Final, unless
	// retried on request.
	Cancelled Status = "cancelled"
)

// StatusDebounced is the status an enqueue answer (Accepted) gives a job
// that joined a waiting job of its debounce key (Spec.DebounceKey): no
// job was made of it; its payload is the joined job's now, and
// Accepted.DebouncedInto names that job. No record ever has it.
const StatusDebounced Status = "debounced"

// Statuses lists every status, in life order.
var Statuses = []Status{Queued, Parked, Running, Succeeded, Failed, Cancelled}

// Final reports whether s ends the job.
func (s Status) Final() bool { return s == Succeeded || s == Failed || s == Cancelled }

// Waiting reports whether a job of status s has not started: it can be
// cancelled.
func (s Status) Waiting() bool { return s == Queued || s == Parked }

// Listed reports whether the admin function lists jobs of status s
// (list with a status): parked and failed ones. Others are read by id.
func (s Status) Listed() bool { return s == Parked || s == Failed }

// Valid reports whether s is one of Statuses.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if s == v {
			return true
		}
	}
	return false
}

// ParkReason says why a job is parked.
type ParkReason string

// Why a job is parked.
const (
	// Far: its slot lies further away than SQS can delay (15 minutes).
	Far ParkReason = "far"
	// PausedQueue: its queue is paused.
	PausedQueue ParkReason = "paused"
	// Unsent: SQS refused it; the resume function sends it again.
	Unsent ParkReason = "unsent"
	// WaitKey: another job of its key runs or is ahead of it; it is
	// handed the key when that one ends.
	WaitKey ParkReason = "key"
	// WaitPlace: its queue runs max_running attempts; it is handed the
	// next place to come free.
	WaitPlace ParkReason = "max_running"
	// WaitGate: its queue's gate opens for it further away than SQS can
	// delay; the resume function sends it once, in time.
	WaitGate ParkReason = "gate"
	// Room: it waits in its queue's waiting room, without a slot, for
	// the queue's booking horizon (book_ahead, key_book_ahead) to book
	// it; its ticket keeps its place, and it is booked by priority, then
	// round-robin across keys, then ticket.
	Room ParkReason = "waiting_room"
)

// Waits reports whether r parks a job on its key or a running place:
// another job's end releases it, not time.
func (r ParkReason) Waits() bool { return r == WaitKey || r == WaitPlace }

// EventKind names an event of a job's history.
type EventKind string

// The events a job's history records.
const (
	// Enqueued: accepted, with its first Ticket.
	Enqueued EventKind = "enqueued"
	// ParkedEvent: parked, for Reason (a ParkReason).
	ParkedEvent EventKind = "parked"
	// Released: sent to the slot queue by the resume function.
	Released EventKind = "released"
	// Reticketed: took Ticket at the end of the line instead of
	// OldTicket (passed at the gate, or its queue was paused).
	Reticketed EventKind = "reticketed"
	// SlotMissed: its worker came LatenessMs too late for its start, so
	// it gave the slot up rather than start late and push every later
	// start back; it took a new Ticket (OldTicket set) or, out of line,
	// the next opening.
	SlotMissed EventKind = "slot_missed"
	// HandedBack: its message was sent again, DelayMs before its slot,
	// which lay past the worker invocation's deadline.
	HandedBack EventKind = "handed_back"
	// Started: Attempt started, LatenessMs after its slot.
	Started EventKind = "started"
	// AttemptFailed: Attempt failed with Error.
	AttemptFailed EventKind = "attempt_failed"
	// Retried: the next Attempt took Ticket, after its backoff.
	Retried EventKind = "retried"
	// Rerun: run again on request (a retry) by Reason, with its next
	// Attempt and a new Ticket.
	Rerun EventKind = "rerun"
	// SucceededEvent, FailedEvent, CancelledEvent: the job's end.
	SucceededEvent EventKind = "succeeded"
	FailedEvent    EventKind = "failed"
	CancelledEvent EventKind = "cancelled"
	// SlowedDown: the attempt's target answered "slow down" (an HTTP 429
	// or 503, a RetryAfterError): not a failed attempt. DelayMs is the
	// wait, Reason "queue" or "key" (what waits), Error the target's
	// answer.
	SlowedDown EventKind = "slowed_down"
	// BookedEvent: booked from the waiting room, with Ticket and its
	// slot from then on a promise.
	BookedEvent EventKind = "booked"
)

// Event is one thing that happened to a job. Fields other than At and
// Kind are set by kind (see EventKind); absent means zero.
type Event struct {
	At         time.Time `json:"at"`
	Kind       EventKind `json:"event"`
	Ticket     int64     `json:"ticket,omitempty"`
	OldTicket  int64     `json:"old_ticket,omitempty"`
	Attempt    int       `json:"attempt,omitempty"`
	LatenessMs int64     `json:"lateness_ms,omitempty"`
	DelayMs    int64     `json:"delay_ms,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// Limits of a job.
const (
	// MaxBatch is the most jobs one enqueue call may carry.
	MaxBatch = 500
	// MaxPayload is the largest payload of one job, in bytes.
	MaxPayload = 192 * 1024
	// MaxResult is the largest result kept on a job's record, in bytes.
	MaxResult = 32 << 10
	// MaxHistory is how many events a job's record keeps, the last ones.
	MaxHistory = 10
)

// Job is a job's record: what get, cancel, list and a wait answer, and
// what a Go handler receives.
type Job struct {
	Queue string `json:"queue"`
	ID    string `json:"job_id"`
	// Gen is the generation of the queue that accepted the job: a queue
	// deleted and created again under its name is a new generation.
	Gen int64 `json:"gen,omitempty"`
	// Kind names the Go handler that runs the job; Target the HTTP URL or
	// Lambda function. Exactly one is set.
	Kind    string          `json:"kind,omitempty"`
	Target  string          `json:"target,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	// Key is the job's key: jobs of a queue with one key run one at a
	// time, in ticket order.
	Key    string `json:"key,omitempty"`
	Status Status `json:"status"`
	// Ticket is the job's place in its queue; a re-ticket or retry
	// replaces it. Order is the ticket it was accepted with.
	Ticket int64 `json:"ticket"`
	Order  int64 `json:"order,omitempty"`
	// SlotAt is when the job is due to start, left out while it waits in
	// its queue's waiting room for a slot; NotBefore the earliest start
	// its producer asked for.
	SlotAt    time.Time `json:"slot_at,omitzero"`
	NotBefore time.Time `json:"not_before,omitzero"`
	// Scheduled: its not_before lay beyond the line, so its slot is its
	// not_before. Detached: it waited for its key or a place, and starts
	// at the queue's next opening.
	Scheduled bool `json:"scheduled,omitempty"`
	Detached  bool `json:"detached,omitempty"`
	// Batched: its queue starts jobs in batches (batch_max), and the job
	// shares its ticket and slot with the other jobs of its batch, which
	// start together in one call of their target.
	Batched bool `json:"batched,omitempty"`
	// Attempt is the number of the current or next attempt, from 1;
	// attempts count on across retries on request (Reruns, from attempt
	// RerunFrom). Retickets counts the new tickets it took.
	Attempt   int `json:"attempt"`
	Retickets int `json:"retickets,omitempty"`
	// SentBack counts the times in a row the worker sent the job back
	// without starting it (handed back, re-ticketed, come again for a
	// full key); a start sets it to 0, and a job sent back too often
	// fails rather than circle.
	SentBack int `json:"sent_back,omitempty"`
	// SlowDowns counts the times its target answered "slow down" (an
	// HTTP 429, a RetryAfterError): not failed attempts; past its
	// queue's max_slow_downs the job fails.
	SlowDowns int `json:"slow_downs,omitempty"`
	// RetryAt, after a failed attempt, is the end of its backoff: the
	// next attempt starts no earlier.
	RetryAt   time.Time `json:"retry_at,omitzero"`
	Reruns    int       `json:"reruns,omitempty"`
	RerunFrom int       `json:"rerun_from,omitempty"`
	// ParkReason and DueAt are set while parked: why, and when it is
	// released if time releases it.
	ParkReason ParkReason `json:"park_reason,omitempty"`
	DueAt      time.Time  `json:"due_at,omitzero"`
	EnqueuedAt time.Time  `json:"enqueued_at"`
	StartedAt  time.Time  `json:"started_at,omitzero"`
	FinishedAt time.Time  `json:"finished_at,omitzero"`
	// LastError is the error of the last failed attempt.
	LastError string `json:"last_error,omitempty"`
	// Result is what the last attempt answered (JSON, at most
	// MaxResult); ResultDropped is the size of one too large to keep.
	Result        json.RawMessage `json:"result,omitempty"`
	ResultDropped int             `json:"result_dropped,omitempty"`
	// ExpiresAt is when a finished job's record is deleted.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// History is what happened to the job, oldest first: its last
	// MaxHistory events; HistoryDropped counts the older ones.
	History        []Event `json:"history,omitempty"`
	HistoryDropped int     `json:"history_dropped,omitempty"`
	// TraceParent and TraceState are the W3C trace context the job
	// carries: its producer's, or its enqueue span's when slotq traces.
	// Its spans are in that trace (docs/tracing.md).
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`
	// AttemptSpan is the traceparent of the last attempt's span, when
	// slotq traces: its span id finds the attempt in the trace.
	AttemptSpan string `json:"attempt_span,omitempty"`
	// Priority is the job's priority in its queue's waiting room
	// (Spec.Priority); 0 is DefaultPriority.
	Priority int `json:"priority,omitempty"`
	// Booking is the number of the job's booking in its queue's booking
	// horizon, on a queue with book_ahead or key_book_ahead: set while
	// it holds a slot of the horizon (or held it, once started).
	Booking int64 `json:"booking,omitempty"`
	// DebounceKey is the job's debounce key (Spec.DebounceKey) while it
	// waits for its debounce to end: later jobs of the key join it. It
	// is cleared when the debounce ends and the job takes its place in
	// the line with the last payload enqueued.
	DebounceKey string `json:"debounce_key,omitempty"`
	// Room is, for a job in its queue's waiting room, where it stands
	// there, as get answers it (read when asked; not stored).
	Room *RoomPlace `json:"room,omitempty"`
}

// RoomPlace is where a job stands in its queue's waiting room.
type RoomPlace struct {
	// Place is its place among the waiting jobs of its key (of the jobs
	// without a key, for one without), 1 first, by the room's order:
	// priority, then ticket.
	Place    int64  `json:"place"`
	Key      string `json:"key,omitempty"`
	Priority int    `json:"priority"`
	// EstimatedStartAt is an estimate, not a promise: the queue's next
	// opening after its bookings, and one tick for each job the room
	// books before this one (by priority and round-robin). Its slot comes
	// when it is booked.
	EstimatedStartAt time.Time `json:"estimated_start_at"`
}

// RunAttempt is the attempt's number within its run: attempts since the
// last retry on request, from 1. A queue's max_attempts bounds it.
func (j *Job) RunAttempt() int { return j.Attempt - j.RerunFrom }

// What is what the job runs, for people: "kind:NAME" or the target.
func (j *Job) What() string {
	if j.Kind != "" {
		return "kind:" + j.Kind
	}
	return j.Target
}
