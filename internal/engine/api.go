package engine

import (
	"context"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/schedule"
	"github.com/slotq/slotq/internal/slot"
)

// Enqueue accepts one job or a batch. Bad input returns an *input.Error
// and writes nothing. A batch gets a contiguous range of tickets. Jobs
// whose slot is within the transport's reach are sent with their delay;
// the others are parked for the resume function.
func (e *Engine) Enqueue(ctx context.Context, req job.EnqueueRequest) (res EnqueueResult, err error) {
	return e.enqueuer.Enqueue(ctx, req)
}

// Work handles one delivered envelope. It returns nil when the message is
// done with (the job ran, was re-ticketed, parked, handed back, or the
// message was a stale duplicate) and an error when the transport should
// deliver it again.
//
// A delivery goes through these steps, each a method of delivery: read
// the job's record and drop an envelope that no longer matches it; wait
// for the gate (to Options.Lead before the slot) and pass it for a start
// at the slot (one write on the queue's state, which reserves that
// start); claim the attempt (one conditional write on the job); sleep to
// the start and run the target there; record the outcome, or retry or
// dead-letter the job. A worker that comes too late for its start (by
// more than the queue's skew) does not start late: its job gives the slot
// up (slot.Missed, slot.Overslept; see giveUpStart).
//
// Each message is budgeted against ctx's deadline (the invocation's):
// the slot wait, the queue's target timeout and RecordTimeout for the
// writes after it, plus Margin. A job whose budget does not fit is handed
// back to the transport, unstarted, with the delay its slot still needs,
// so what starts is recorded before Lambda stops the invocation. The
// target runs under its timeout (Go handlers too) and a panic in it fails
// the attempt; the outcome is written on a context of its own.
func (e *Engine) Work(ctx context.Context, env job.Envelope) error {
	return e.worker.Work(ctx, env)
}

// Lanes returns the figures of a queue's lanes (Stats).
func (e *Engine) Lanes(ctx context.Context, q Queue) (LaneFigures, error) {
	return e.lanes.Lanes(ctx, q)
}

// Keys lists q's keys with jobs waiting or running (and those with limits
// of their own), busiest first (most pending), at most MaxKeysListed. It
// reads the queue's lanes (one query) and each listed key's meter.
func (e *Engine) Keys(ctx context.Context, name string) ([]KeyInfo, error) {
	return e.lanes.Keys(ctx, name)
}

// Key returns what key of queue name shows (Keys), also when it has no
// jobs.
func (e *Engine) Key(ctx context.Context, name, key string) (KeyInfo, error) {
	return e.lanes.Key(ctx, name, key)
}

// SetKeyLimits gives each key of ls the limits it names (its own, in
// place of the queue's key_limits), or clears them (nil Limits). At most
// slot.MaxKeyOverrides keys a call. The queue must keep limits per key
// (key_limits): a key's own limits replace the queue's default for that
// key. Bad input is a typed error naming the field (keys[2].limits[0].rate),
// and nothing is written. One compare-and-set of each key's meter; the
// key's starts already recorded stay, so the new limit holds from its
// next start on, counted from the starts before it.
func (e *Engine) SetKeyLimits(ctx context.Context, name string, ls []KeyLimit) ([]KeyInfo, error) {
	return e.lanes.SetKeyLimits(ctx, name, ls)
}

// Resume is what the schedule calls, once a minute. It reads the due
// index (State.ListDue): up to ResumeRead entries due by now, of every
// queue, and acts on them most urgent first for as long as ctx's deadline
// allows (actOnAll). For each queue that has some, under the queue's
// resume lease, it lifts the pause whose paused_until came and starts its
// release round; runs a due round, which re-tickets the jobs the pause
// held in line order (job.Job.LineOrder) and sends them; releases parked
// jobs whose slot came within the transport's reach, with exact delays,
// and those whose message the transport refused; and hands on keys and
// running places whose holder's lease ran out. A queue with nothing due
// costs nothing: it is not read, written or measured. It goes on past a
// failing queue and returns the errors joined.
//
// A pass over a queue holds the queue's resume lease (State.Lease), so two
// passes (an overlapping run, the schedule's retry, an admin resume) never
// interleave on a queue: each would take its own ticket range for the
// same held jobs and win some of them, inverting their order. A round's
// pass re-tickets no more than ResumeBudget held jobs and leaves the
// round due for the next run; since a re-ticket takes a job out of the
// held ones for good (it keeps its line order should a pause hold it
// again), the next pass starts from the first job still held. Entries
// the run's deadline left stay due (its Backlog), and the next run finds
// them first. A rebuild of the records under way (an upgrade, Reindex)
// goes on after the due work, with at least a share of the run kept for
// it (rebuildShare).
//
// Queued and running jobs need no sweep: a queued job's message is sent
// before its record is written, and a running attempt's message stays with
// the transport until the attempt ends, coming back if its worker dies
// (Work recovers the attempt: recoverIfLost).
func (e *Engine) Resume(ctx context.Context) (rep ResumeReport, err error) {
	return e.resumer.Resume(ctx)
}

// Reindex writes every record that may be due again, as it is, so that
// its store puts it in the due index: for a table whose records were
// written before the due index existed (an upgrade), or to repair one.
// It walks every queue in name order: its parked jobs by ticket (each
// rewritten at its version: a job that moved meanwhile was written by a
// writer that indexed it) and its lanes with a holder or waiters (a
// compare-and-set at their version). It does not touch a queue's pause: a
// queue paused with a paused_until from before is counted in TimedPauses,
// and lifts when it is resumed or paused again by hand. It costs a read
// and a write per parked job and lane, once.
//
// It is the same rebuild the resume function steps by itself on a table
// whose schema mark asks for one (rebuild): Reindex asks for one if none
// is under way, then steps it as far as ctx's deadline allows, and
// answers how far it is (Progress). Calling it again, or the resume runs
// that follow, goes on from there: the cursor is in the schema mark,
// written every reindexPage records.
func (e *Engine) Reindex(ctx context.Context) (ReindexReport, error) {
	return e.resumer.Reindex(ctx)
}

// Redrive moves the dead-letter queue's messages back to the slot queue,
// up to limit of them (default DefaultRedrive, at most MaxRedrive), each
// re-checked against its job: a message whose job still waits for it
// (queued at the message's ticket and attempt, or running at that
// attempt: the attempt's watchdog) is sent again, due at once or at its
// slot, and its job then goes through the gate like any delivery; one
// whose job ended or moved on is dropped, as a worker would drop it, so
// a redrive never runs anything twice. A message is deleted from the
// dead-letter queue only once it is sent back (or dropped); one that
// could not be sent stays there.
//
// Receive-and-send rather than SQS's StartMessageMoveTask: the move task
// copies every message blindly and in the background, so nothing would
// check the jobs, and a call could not say what it did.
func (e *Engine) Redrive(ctx context.Context, dlq DeadLetterQueue, limit int) (RedriveReport, error) {
	return e.resumer.Redrive(ctx, dlq, limit)
}

// CreateQueue creates a queue. Zero config fields take Options.Defaults.
func (e *Engine) CreateQueue(ctx context.Context, name string, cfg slot.Config) (Queue, error) {
	return e.admin.CreateQueue(ctx, name, cfg)
}

// Configure replaces a queue's configuration; zero fields take
// Options.Defaults. The jobs waiting in line move to the slots the new
// limits give them (Reconfigure, which also says how many moved).
func (e *Engine) Configure(ctx context.Context, name string, cfg slot.Config) (Queue, error) {
	return e.admin.Configure(ctx, name, cfg)
}

// Queue returns a queue's configuration and state.
func (e *Engine) Queue(ctx context.Context, name string) (Queue, error) {
	return e.admin.Queue(ctx, name)
}

// Queues lists every queue.
func (e *Engine) Queues(ctx context.Context) ([]Queue, error) {
	return e.admin.Queues(ctx)
}

// Pause stops the queue's gate: once Pause returns, no job of the queue
// starts until it is resumed. A non-zero until makes the resume function
// lift the pause by itself at that time.
func (e *Engine) Pause(ctx context.Context, name string, until time.Time) (slot.State, error) {
	return e.admin.Pause(ctx, name, until)
}

// Unpause lifts a pause now and releases the queue's held jobs at once,
// re-ticketed in line order, without waiting for the schedule. It runs
// the same pass as Resume, under the queue's resume lease: it waits for a
// pass in progress to end, then stores a new release round (due at once)
// before it unpauses, so a crash after the unpause leaves the round to
// the schedule. If another pass keeps the lease past the wait, it
// unpauses nothing and returns ErrLeaseHeld: try again.
func (e *Engine) Unpause(ctx context.Context, name string) (ResumeReport, error) {
	return e.admin.Unpause(ctx, name)
}

// Purge cancels every waiting job of the queue: parked jobs now, queued
// ones when they reach the gate (slot.Purged), so a purge is one write on
// the queue however many jobs wait. The waiting room's jobs it cancels
// leave its counts, and their bookings are freed (leaveRoom, bookNext),
// so the next job is booked as on an empty queue. It returns how many
// jobs it cancelled: the parked ones now, and the line's tickets after
// the last start that it covers (tickets whose job was re-ticketed or
// cancelled before among them: the state does not tell them apart).
func (e *Engine) Purge(ctx context.Context, name string) (int, error) {
	return e.admin.Purge(ctx, name)
}

// DeleteQueue removes the queue, with all its jobs: they belong to its
// generation (Queue.Gen), and a queue created again under the name is a
// new one that starts clean. From then on every job of the old generation
// reads as not found (get, cancel, list, an enqueue of its id), starts
// nothing (Take and Gate check the generation) and touches nothing of a
// new queue of the name (nor its lanes: see AddPending); each expires:
// finished ones by their retention, parked ones here, and queued or
// running ones when their message next comes to a worker (the message of
// a running attempt is its watchdog) — with no write on the path of any
// other job. It returns how many tickets had not started.
//
// The queue goes first and its parked jobs are listed after: a job that
// parks concurrently either lands before the list (and is expired here)
// or reads the queue gone after its park and expires itself
// (deadGeneration).
func (e *Engine) DeleteQueue(ctx context.Context, name string) (int, error) {
	return e.admin.DeleteQueue(ctx, name)
}

// Stats returns a queue's counts, lag and state.
func (e *Engine) Stats(ctx context.Context, name string) (Stats, error) {
	return e.admin.Stats(ctx, name)
}

// Job returns one job. A missing queue is a *NotFoundError for the queue,
// as in every other operation; a missing job one for the job.
func (e *Engine) Job(ctx context.Context, k job.Ref) (job.Job, error) {
	return e.admin.Job(ctx, k)
}

// Jobs lists jobs of a queue in one status, in ticket order.
func (e *Engine) Jobs(ctx context.Context, r ListRequest) ([]job.Job, error) {
	return e.admin.Jobs(ctx, r)
}

// CancelJob cancels a waiting job. ErrNotWaiting if it started or ended.
func (e *Engine) CancelJob(ctx context.Context, k job.Ref) (job.Job, error) {
	return e.admin.CancelJob(ctx, k)
}

// ChangeConfig changes the settings of a queue that u gives and keeps the
// others: configure as the admin function and the CLI ask for it (Configure
// replaces the configuration whole). A list the queue holds empty stays
// none, not the stack's default targets or networks. Two changes of one
// queue at the same moment take their turns (Reconfigure), each applied
// to the configuration the one before it wrote. A new interval that the
// queue's skew does not fit under is refused, naming the skew, rather
// than changing the skew unasked.
func (e *Engine) ChangeConfig(ctx context.Context, name string, u slot.ConfigUpdate) (Queue, error) {
	return e.admin.ChangeConfig(ctx, name, u)
}

// Change is ChangeConfig, also saying what the change did to the jobs
// already booked (Reconfigure).
func (e *Engine) Change(ctx context.Context, name string, u slot.ConfigUpdate) (Queue, Reslot, error) {
	return e.admin.Change(ctx, name, u)
}

// Reconfigure replaces a queue's configuration (as Configure does) and
// moves the jobs already booked to the slots the new limits give them. It
// runs under the queue's resume lease, so a resume pass and another
// configure of the queue never interleave with it: of two concurrent
// configures the later one wins whole. A crash after the atomic step
// leaves the records of some waiting jobs at their old slot_at (their
// starts keep the new limits, as the gate keeps them); the resume
// function's next pass over the queue moves them, as it moves those a
// configure left when its budget ran out (Reslot.Remaining).
func (e *Engine) Reconfigure(ctx context.Context, name string, cfg slot.Config) (Queue, Reslot, error) {
	return e.admin.Reconfigure(ctx, name, cfg)
}

// CreateSchedule checks spec and stores it as schedule name of queue, then
// makes the occurrences that fall within the lead at once (so the first
// ones need not wait for the resume function's next run). Bad input is an
// *input.Error whose field is the full path ("name", "schedule.cron",
// "schedule.job.target"), and nothing is written.
func (e *Engine) CreateSchedule(ctx context.Context, queue, name string, spec schedule.Spec) (Schedule, error) {
	return e.admin.CreateSchedule(ctx, queue, name, spec)
}

// Schedule reads one schedule of queue.
func (e *Engine) Schedule(ctx context.Context, queue, name string) (Schedule, error) {
	return e.admin.Schedule(ctx, queue, name)
}

// Schedules lists queue's schedules in name order.
func (e *Engine) Schedules(ctx context.Context, queue string) ([]Schedule, error) {
	return e.admin.Schedules(ctx, queue)
}

// PauseSchedule pauses a schedule: once it returns, no occurrence of it
// starts any more. The occurrences made ahead of their time (up to the
// lead) are cancelled, and the schedule goes back to the first of them:
// they are no longer counted made, and its resume makes them again (the
// jobs the pause cancelled wait again under their ids) unless their time
// passed meanwhile, when its missed policy says. It returns the schedule
// and how many occurrences it cancelled.
func (e *Engine) PauseSchedule(ctx context.Context, queue, name string) (Schedule, int, error) {
	return e.admin.PauseSchedule(ctx, queue, name)
}

// ResumeSchedule lifts a schedule's pause and makes at once what is due:
// the missed occurrences its policy keeps and those within the lead.
func (e *Engine) ResumeSchedule(ctx context.Context, queue, name string) (Schedule, error) {
	return e.admin.ResumeSchedule(ctx, queue, name)
}

// DeleteSchedule removes a schedule and cancels the occurrences it made
// ahead of their time; it returns how many it cancelled.
func (e *Engine) DeleteSchedule(ctx context.Context, queue, name string) (int, error) {
	return e.admin.DeleteSchedule(ctx, queue, name)
}

// Retry runs failed or cancelled jobs again under their ids: each takes
// a new ticket at the end of its queue's line (all of one call take one
// contiguous range) and goes through the gate like any job, so a mass
// retry keeps the queue's rate. Its history records a rerun event naming
// who asked (By). Its attempts keep counting (Job.Attempt), and the rerun
// has the queue's max_attempts attempts of its own (Job.RerunFrom). The
// earlier run's result is cleared; its last error stays until an attempt
// of the rerun succeeds.
//
// Bad input, a job that does not exist and a job that is not failed or
// cancelled (a *NotRetryableError) refuse the whole call, and nothing is
// written. A job that changes between the check and its write (a
// concurrent retry, say) keeps that change: the write is a
// compare-and-set, so a job is run again once however many retries race.
func (e *Engine) Retry(ctx context.Context, r RetryRequest) (RetryResult, error) {
	return e.admin.Retry(ctx, r)
}
