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
	LatenessP50     *float64 `json:"lateness_p50_ms,omitempty"`
	LatenessP99     *float64 `json:"lateness_p99_ms,omitempty"`
	LatenessMax     *float64 `json:"lateness_max_ms,omitempty"`
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
	// Queues counts the queues acted on; Due the due entries read.
	Queues int `json:"queues"`
	Due    int `json:"due"`
	// Lifted counts pauses lifted; Reticketed parked jobs that took new
	// tickets; Released parked jobs sent to the slot queue; Held jobs of
	// paused queues left for the next round.
	Lifted     int `json:"lifted"`
	Reticketed int `json:"reticketed"`
	Released   int `json:"released"`
	Held       int `json:"held,omitempty"`
	// Busy counts queues another pass held; Continued rounds left for
	// the next run; Deferred queues not reached before the deadline.
	Busy      int `json:"busy,omitempty"`
	Continued int `json:"continued,omitempty"`
	Deferred  int `json:"deferred,omitempty"`
	// Occurrences counts the schedules' occurrences made into jobs.
	Occurrences int `json:"occurrences,omitempty"`
	// Backlog counts the due entries read and not acted on: the run's
	// time ran out first (it acts on the most urgent first).
	Backlog int `json:"backlog,omitempty"`
	// Upgraded is what the run rewrote of a rebuild of the records (after
	// an upgrade, or a reindex asked), Reindex how far that rebuild is
	// while one is under way; IndexBuilding says the due index is still
	// being built, so the run read nothing of it.
	Upgraded      *ReindexReport   `json:"upgraded,omitempty"`
	Reindex       *ReindexProgress `json:"reindex,omitempty"`
	IndexBuilding bool             `json:"index_building,omitempty"`
}

// RedriveReport is what a redrive did with the dead-letter queue's
// messages.
type RedriveReport struct {
	// Received from the dead-letter queue; Redriven sent back, their job
	// still waiting for them; Dropped deleted, their job having moved on;
	// Undecodable left there for a person.
	Received    int `json:"received"`
	Redriven    int `json:"redriven"`
	Dropped     int `json:"dropped"`
	Undecodable int `json:"undecodable"`
	// More: the call stopped at its limit with messages perhaps left.
	More bool `json:"more,omitempty"`
}

// RetryResult is what a retry on request ran again.
type RetryResult struct {
	Queue string     `json:"queue"`
	Jobs  []Accepted `json:"jobs"`
	// Skipped counts failed jobs no longer failed when written.
	Skipped int `json:"skipped,omitempty"`
	// NextAfter is the After of the next page of failed jobs (0: none);
	// UpTo the bound every page of the retry uses.
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
// of one) rewrote: queues finished, parked jobs and busy lanes written
// again, timed pauses left alone; and how far the reindex is.
type ReindexReport struct {
	Queues      int             `json:"queues"`
	Jobs        int             `json:"jobs"`
	Lanes       int             `json:"lanes"`
	TimedPauses int             `json:"timed_pauses,omitempty"`
	Progress    ReindexProgress `json:"progress"`
}

// ReindexProgress is how far a reindex is, over every call that stepped
// it: done, or the queues done and left, the queue it is inside of and
// the last ticket of that queue's parked jobs written again, and what it
// wrote so far.
type ReindexProgress struct {
	Done       bool   `json:"done"`
	QueuesDone int    `json:"queues_done"`
	QueuesLeft int    `json:"queues_left"`
	Queue      string `json:"queue,omitempty"`
	Ticket     int64  `json:"ticket,omitempty"`
	Jobs       int64  `json:"jobs"`
	Lanes      int64  `json:"lanes"`
}
