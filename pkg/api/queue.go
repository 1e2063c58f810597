package api

import "time"

// QueueState is a queue's shared state: its counters and its gate.
type QueueState struct {
	// Ticket is the last ticket handed out; Current the highest that
	// started.
	Ticket  int64 `json:"ticket"`
	Current int64 `json:"current"`
	// Front is the latest slot of a line ticket that started within its
	// room: a line ticket whose slot lies further behind it than the room
	// of the queue's limits is passed (it takes a new ticket).
	Front time.Time `json:"front,omitzero"`
	// Clock is the theoretical time of the last ticket in the line (its
	// slot, for the interval form).
	Clock time.Time `json:"clock,omitzero"`
	// LastStart is the theoretical time of the last start: the gate
	// opens at LastStart + T − burst·T (the interval form: LastStart +
	// interval).
	LastStart time.Time `json:"last_start,omitzero"`
	// Paused stops the gate; PausedUntil, if set, is when the pause
	// lifts by itself.
	Paused      bool      `json:"paused"`
	PausedUntil time.Time `json:"paused_until,omitzero"`
	// Purged is the last ticket a purge cancelled.
	Purged int64 `json:"purged,omitempty"`
	// Running holds a capped queue's running attempts: ticket → the end
	// of the attempt's lease.
	Running map[int64]time.Time `json:"running,omitempty"`
	// SlowUntil is when the queue's slow-down ends: a target answered
	// "slow down" (an HTTP 429 with Retry-After, say) and no job of the
	// queue starts before it. SlowDowns counts those answers.
	SlowUntil time.Time `json:"slow_until,omitzero"`
	SlowDowns int64     `json:"slow_downs,omitempty"`
}

// Queue is a queue: its name, configuration and state.
type Queue struct {
	Name string `json:"queue"`
	// Gen is the queue's generation, new each time it is created.
	Gen       int64      `json:"gen,omitempty"`
	Config    Config     `json:"config"`
	State     QueueState `json:"state"`
	CreatedAt time.Time  `json:"created_at"`
}

// Stats are a queue's counts, lag and state.
type Stats struct {
	Queue  string     `json:"queue"`
	Config Config     `json:"config"`
	State  QueueState `json:"state"`
	// Waiting counts the jobs in line that have not reached the gate, from
	// the queue's counters: an upper bound (a cancelled job's ticket still
	// counts), 0 once the line has run. Jobs out of line (scheduled ones,
	// jobs under key limits) are not in it; Parked counts those parked.
	Waiting int64 `json:"waiting"`
	// Parked and Failed count jobs of those statuses.
	Parked int `json:"parked"`
	Failed int `json:"failed"`
	// Lag is how far the queue's starts trail its line; Backlog how far
	// ahead the line is booked.
	Lag     Duration    `json:"lag"`
	Backlog Duration    `json:"backlog"`
	Lanes   LaneFigures `json:"lanes"`
	// Room, for a queue with book_ahead or key_book_ahead, counts its
	// booking horizon and its waiting room.
	Room *RoomFigures `json:"room,omitempty"`
}

// RoomFigures count a bounded queue's bookings and waiting room.
type RoomFigures struct {
	// Booked counts the jobs that hold a slot of the horizon (booked,
	// not started).
	Booked int `json:"booked"`
	// Waiting counts the jobs in the waiting room, and ByPriority those
	// of each priority, 1 first.
	Waiting    int              `json:"waiting"`
	ByPriority [MaxPriority]int `json:"by_priority"`
	// Keys are the busiest keys of the waiting room: those with the most
	// jobs waiting, most first, then by name, at most MaxRoomKeys (the
	// jobs without a key count as the key "").
	Keys []RoomKey `json:"keys,omitempty"`
}

// MaxRoomKeys is how many of its busiest keys RoomFigures lists.
const MaxRoomKeys = 10

// RoomKey is one key of a waiting room and how many of its jobs wait
// there.
type RoomKey struct {
	Key     string `json:"key"`
	Waiting int    `json:"waiting"`
}

// LaneFigures count a queue's keys and running places.
type LaneFigures struct {
	// Running is how many attempts of a capped queue run; -1 for a queue
	// without max_running.
	Running int `json:"running"`
	// KeysHeld counts keys a job holds; KeysWaiting keys with jobs parked
	// on them; WaitingOnKeys those jobs.
	KeysHeld      int `json:"keys_held"`
	KeysWaiting   int `json:"keys_waiting"`
	WaitingOnKeys int `json:"waiting_on_keys"`
	// WaitingForPlace counts jobs parked for a running place.
	WaitingForPlace int `json:"waiting_for_place"`
	// KeysAtLimit counts, on a queue with key_limits, the keys with jobs
	// waiting whose own limit holds their next start back (of the 1,000
	// busiest); -1 on a queue without key_limits.
	KeysAtLimit int `json:"keys_at_limit"`
}

// Activity is what a queue did over a recent window, read from its
// metrics. Lateness is start − slot in milliseconds, absent when nothing
// started.
type Activity struct {
	Window          Duration `json:"window"`
	Starts          int64    `json:"starts"`
	Succeeded       int64    `json:"succeeded"`
	AttemptFailures int64    `json:"attempt_failures"`
	Retries         int64    `json:"retries"`
	DeadLetters     int64    `json:"dead_letters"`
	Reticketed      int64    `json:"reticketed"`
	HandedBack      int64    `json:"handed_back"`
	// BatchJobs, on a queue that starts its jobs in batches (batch_max),
	// counts the jobs its Starts carried; 0 on other queues.
	BatchJobs   int64    `json:"batch_jobs,omitempty"`
	LatenessP50 *float64 `json:"lateness_p50_ms,omitempty"`
	LatenessP99 *float64 `json:"lateness_p99_ms,omitempty"`
	LatenessMax *float64 `json:"lateness_max_ms,omitempty"`
}

// Start is one start of a job's attempt, as the worker logged it.
type Start struct {
	JobID   string `json:"job_id"`
	Ticket  int64  `json:"ticket"`
	Attempt int    `json:"attempt"`
	// SlotAt is the slot the attempt started in, StartedAt when it
	// started; LatenessMS is the difference in whole milliseconds
	// (negative for a start within the skew before its slot).
	SlotAt     time.Time `json:"slot_at"`
	StartedAt  time.Time `json:"started_at"`
	LatenessMS int64     `json:"lateness_ms"`
	// GateAt is the start the gate reserved for the attempt (the job's
	// StartedAt): the time slotq's spacing is counted by. StartedAt comes
	// after it by the worker's wake-up. Zero for starts logged by a
	// worker older than this field.
	GateAt time.Time `json:"gate_at,omitzero"`
	// Key is the job's key: empty for a job without one, and for starts
	// logged by a worker older than this field.
	Key string `json:"key,omitempty"`
}

// ResumeReport is what a resume (of one queue, or a run of the resume
// function) did.
type ResumeReport struct {
	// Queues counts the queues the run acted on: those with something
	// due. A queue with nothing due is neither read nor written.
	Queues int `json:"queues"`
	// Due counts the due entries the run read.
	Due int `json:"due"`
	// Lifted counts pauses whose paused_until had come.
	Lifted int `json:"lifted"`
	// Reticketed counts parked jobs that took new tickets (a pause held
	// them, or their slot passed while they waited).
	Reticketed int `json:"reticketed"`
	// Released counts parked jobs sent to the slot queue.
	Released int `json:"released"`
	// Held counts parked jobs of paused queues whose release came: they
	// wait for the queue's next release round, in line order.
	Held int `json:"held,omitempty"`
	// Busy counts queues another pass held (their lease was taken).
	Busy int `json:"busy,omitempty"`
	// Continued counts release rounds left for the next run (a pass used
	// its budget), and the run's read when it filled its bound.
	Continued int `json:"continued,omitempty"`
	// Occurrences counts the schedules' occurrences the run made into
	// jobs.
	Occurrences int `json:"occurrences,omitempty"`
	// Deferred counts the queues and schedules with due entries this run
	// did not reach before its deadline; they stay due for the next run.
	Deferred int `json:"deferred,omitempty"`
	// Backlog counts the due entries the run read and did not act on:
	// its time (the invocation's deadline, less what it keeps in hand)
	// ran out first. It acts on what is due most urgent first, so these
	// are the entries whose slots come last.
	Backlog int `json:"backlog,omitempty"`
	// Upgraded is what the run rewrote of a rebuild of the records (a
	// table from an older schema, or a reindex asked); nil when it
	// rewrote nothing.
	Upgraded *ReindexReport `json:"upgraded,omitempty"`
	// Reindex is how far that rebuild is, while one is under way.
	Reindex *ReindexProgress `json:"reindex,omitempty"`
	// IndexBuilding: the due index is still being built (an upgrade that
	// added it), so the run read nothing of it; the next runs will.
	IndexBuilding bool `json:"index_building,omitempty"`
}

// RedriveReport is what a redrive did with the dead-letter queue's
// messages.
type RedriveReport struct {
	// Received counts the messages received from the dead-letter queue.
	Received int `json:"received"`
	// Redriven counts those sent back to the slot queue: their job still
	// waits for that very message (queued, or running at its attempt).
	Redriven int `json:"redriven"`
	// Dropped counts those deleted without sending: their job has moved
	// on (finished, re-ticketed, retried, parked) or is gone.
	Dropped int `json:"dropped"`
	// Undecodable counts bodies that are no job envelope: left in the
	// dead-letter queue for a person to look at.
	Undecodable int `json:"undecodable"`
	// More is set when the call stopped at its limit with messages
	// perhaps left.
	More bool `json:"more,omitempty"`
}

// RetryResult is what a retry on request ran again.
type RetryResult struct {
	Queue string `json:"queue"`
	// Jobs are the jobs run again, each with its new ticket, slot and
	// status (queued, or parked if its slot is far or its queue paused).
	Jobs []Accepted `json:"jobs"`
	// Skipped counts, for a retry of the failed jobs, the jobs listed as
	// failed that were no longer failed when their retry was written
	// (run again by another call, or expired).
	Skipped int `json:"skipped,omitempty"`
	// NextAfter is, for a retry of the failed jobs, the After of the next
	// page; 0 when this page was the last. UpTo is the bound every page
	// of the retry uses.
	NextAfter int64 `json:"next_after,omitempty"`
	UpTo      int64 `json:"up_to,omitempty"`
}

// Reslot is what configure did to the jobs already booked: the jobs
// waiting in line beyond the transport's reach move to the slots the new
// limits give them (docs/algorithm.md, "A limit changed while jobs wait").
type Reslot struct {
	// Moved is how many waiting jobs got a new slot_at.
	Moved int `json:"moved"`
	// MaxShiftMs is the largest move of one of them, earlier or later,
	// in milliseconds.
	MaxShiftMs int64 `json:"max_shift_ms"`
	// Remaining is how many waiting jobs were still to be moved when
	// configure answered: one configure writes a bounded number of moves
	// (500 by default, fewer near its deadline), and the resume function
	// moves the rest in the background, within a minute or so. Until a
	// job is moved, get shows it with its new slot_at, and its start
	// keeps the new limits all the same.
	Remaining int `json:"remaining"`
}

// ReindexReport is what one call of a reindex (or a resume run's share
// of one) rewrote, and how far the reindex is.
type ReindexReport struct {
	// Queues counts the queues this call finished.
	Queues int `json:"queues"`
	// Jobs counts parked jobs rewritten; Lanes keys with a holder or
	// waiters rewritten.
	Jobs  int `json:"jobs"`
	Lanes int `json:"lanes"`
	// TimedPauses counts queues paused with a paused_until, which the
	// reindex leaves alone.
	TimedPauses int `json:"timed_pauses,omitempty"`
	// Progress is how far the reindex is after this call.
	Progress ReindexProgress `json:"progress"`
}

// ReindexProgress is how far a reindex is, over every call that stepped
// it.
type ReindexProgress struct {
	// Done: the reindex is over (or none was pending).
	Done bool `json:"done"`
	// QueuesDone counts the queues done; QueuesLeft those still to do,
	// Queue among them.
	QueuesDone int `json:"queues_done"`
	QueuesLeft int `json:"queues_left"`
	// Queue is the queue the reindex is inside of, and Ticket the last
	// ticket of its parked jobs written again.
	Queue  string `json:"queue,omitempty"`
	Ticket int64  `json:"ticket,omitempty"`
	// Jobs and Lanes count what the reindex wrote so far.
	Jobs  int64 `json:"jobs"`
	Lanes int64 `json:"lanes"`
}
