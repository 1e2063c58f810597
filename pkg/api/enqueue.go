package api

import (
	"encoding/json"
	"time"
)

// Spec is one job as a producer asks for it.
type Spec struct {
	// ID is optional; given, it makes enqueue idempotent per queue: a
	// second call with the same id answers the first job (Existing).
	ID string `json:"id,omitempty"`
	// Kind names a Go handler of the worker; Target an HTTP(S) URL or a
	// Lambda function ("lambda:NAME" or an ARN) the queue allows.
	// Exactly one is required.
	Kind   string `json:"kind,omitempty"`
	Target string `json:"target,omitempty"`
	// Payload is any JSON value, passed to the handler or target as is;
	// at most MaxPayload bytes.
	Payload json.RawMessage `json:"payload,omitempty"`
	// NotBefore is the earliest time the job may start, within a year.
	NotBefore *time.Time `json:"not_before,omitempty"`
	// Key, if set, makes jobs of the queue with this key run one at a
	// time, in ticket order.
	Key string `json:"key,omitempty"`
	// TraceParent and TraceState are the producer's W3C trace context
	// (the traceparent and tracestate headers' values): the job's
	// record keeps them, its spans join that trace, and its target
	// receives it (docs/tracing.md). A malformed one refuses the call
	// (field job.traceparent or jobs[i].traceparent). The Go client
	// fills them from its call's context.
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`
	// Priority orders the job in its queue's waiting room, where jobs
	// beyond the queue's book_ahead or key_book_ahead wait for a slot:
	// MinPriority (1) is booked first, MaxPriority (5) last; 0, left
	// out, is DefaultPriority (3). A job that holds a slot keeps it
	// whatever the priorities of jobs that come after it.
	Priority int `json:"priority,omitempty"`
	// DebounceKey and Debounce, given together, debounce the job: a job
	// enqueued while another of its queue with the same debounce key
	// waits for its debounce to end joins that job instead of making a
	// new one (its answer is StatusDebounced, DebouncedInto that job's
	// id). The waiting job then carries the last payload enqueued (last
	// payload wins), and its start moves to Debounce after this
	// enqueue; once Debounce passes with no newer job, it is booked at
	// the queue's next slot like any job. A join changes only the
	// payload: the waiting job keeps its own kind, target, key and
	// priority. Debounce is more than 0 and at most MaxDebounce, with
	// no NotBefore; DebounceKey is a key's form
	// ([A-Za-z0-9_.:/@-]{1,200}). A queue with book_ahead or
	// key_book_ahead refuses debounced jobs.
	DebounceKey string    `json:"debounce_key,omitempty"`
	Debounce    *Duration `json:"debounce,omitempty"`
}

// MaxDebounce is the longest debounce a job may ask for (Spec.Debounce).
const MaxDebounce = time.Hour

// The priorities of a job (Spec.Priority).
const (
	MinPriority     = 1
	MaxPriority     = 5
	DefaultPriority = 3
)

// EnqueueRequest is what the enqueue function takes: one job (Job) or a
// batch (Jobs, at most MaxBatch) for one queue.
type EnqueueRequest struct {
	// Queue is the queue's name (QueueNamePattern); the first enqueue to
	// a queue that does not exist creates it.
	Queue string `json:"queue"`
	// Interval, Rate (with Burst) and Window give the limit of the queue
	// if this call creates it, in one form (as Config's settings of the
	// same names; at most one of Interval, Rate and Window, and Burst
	// only with Rate); left out, it takes the stack's default limit. A
	// queue that exists keeps its own limit whatever the call gives (the
	// admin's configure changes it): they are read only when the call
	// creates the queue, though they are always checked.
	Interval *Duration `json:"interval,omitempty"`
	Rate     *Rate     `json:"rate,omitempty"`
	Burst    *int      `json:"burst,omitempty"`
	Window   *Rate     `json:"window,omitempty"`
	// Job is one job, or Jobs a batch of 1 to MaxBatch: give one of them.
	Job  *Spec  `json:"job,omitempty"`
	Jobs []Spec `json:"jobs,omitempty"`
}

// Specs returns the request's jobs, one or many.
func (r *EnqueueRequest) Specs() []Spec {
	if r.Job != nil {
		return []Spec{*r.Job}
	}
	return r.Jobs
}

// Accepted is one job an enqueue (or a retry) accepted.
type Accepted struct {
	JobID  string `json:"job_id"`
	Ticket int64  `json:"ticket"`
	// SlotAt is the job's slot; left out for a job accepted into the
	// waiting room, which gets its slot when it is booked.
	SlotAt time.Time `json:"slot_at,omitzero"`
	// Position is, when the job was accepted, the number of tickets
	// ahead of it that may still start before it: an upper bound.
	Position int64  `json:"position"`
	Status   Status `json:"status"`
	// Key is the job's key and KeyAhead the jobs of its key ahead of it
	// (an upper bound).
	Key      string `json:"key,omitempty"`
	KeyAhead *int64 `json:"key_ahead,omitempty"`
	// Existing: a job of this id was accepted before; the answer is
	// that job's, and nothing new was written.
	Existing bool `json:"existing,omitempty"`
	// Waiting, for a job accepted into its queue's waiting room (Status
	// StatusWaiting: beyond its book_ahead or key_book_ahead), is its
	// place among the jobs waiting, 1 first (of its key, if it has one;
	// an upper bound), and EstimatedStartAt an estimate of its start,
	// not a promise: it gets its slot when it is booked. Absent for a
	// booked job, whose answer is as without a waiting room.
	Waiting          int64      `json:"waiting,omitempty"`
	EstimatedStartAt *time.Time `json:"estimated_start_at,omitempty"`
	// DebouncedInto, for a debounced job (Status StatusDebounced), is the
	// id of the job it joined, which will start with its payload unless
	// a later job of its debounce key joins it too. The debounced job
	// has no record of its own: JobID names it in this answer only.
	DebouncedInto string `json:"debounced_into,omitempty"`
}

// StatusWaiting is the status an enqueue answer (Accepted) gives a job
// accepted into its queue's waiting room: it has a ticket and a place,
// no slot yet. Its record is parked, park_reason waiting_room, until it
// is booked.
const StatusWaiting Status = "waiting"

// EnqueueResult is the enqueue function's answer, job by job in request
// order.
type EnqueueResult struct {
	Queue string     `json:"queue"`
	Jobs  []Accepted `json:"jobs"`
}

// EnqueueResponse is the enqueue function's answer on the wire: the
// result, or the refusal.
type EnqueueResponse struct {
	Queue string     `json:"queue,omitempty"`
	Jobs  []Accepted `json:"jobs,omitempty"`
	Error *Error     `json:"error,omitempty"`
}
