package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/attempt"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// recordOutcome records the attempt's outcome on a context of its own
// (recordContext): the target may have used up ctx (its deadline came, or
// it was cancelled), and an outcome not recorded is an attempt run again
// after the lease.
func (d *delivery) recordOutcome(ctx context.Context, runErr error) error {
	rctx, cancel := d.e.recordContext(ctx)
	defer cancel()
	return d.e.recordOutcome(rctx, d.q, d.j, d.st, runErr)
}

// recordContext is the context of the writes after a target: ctx's values
// without its cancellation or deadline, bounded by RecordTimeout. The
// budget Work checked before the gate keeps RecordTimeout for them.
func (e *worker) recordContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), e.opts.RecordTimeout)
}

// maxLastError bounds a job's LastError, so an error of any size keeps
// the job record within the store's item limits.
const maxLastError = 4096

// lastError is err's text, cut to maxLastError bytes.
func lastError(err error) string { return job.Cut(err.Error(), maxLastError) }

// recordOutcome records an attempt's outcome: succeeded, or, for a failed
// attempt, a retry or the dead letter (retryOrDeadLetter); for a target's
// "slow down", a wait at its ticket (slowDown).
func (e *worker) recordOutcome(ctx context.Context, q Queue, j job.Job, st slot.State, runErr error) error {
	now := e.now()
	if ra, ok := slowDownOf(runErr); ok {
		return e.slowDown(ctx, q, j, st, ra, now) // slowdown.go
	}
	if runErr != nil {
		return e.retryOrDeadLetter(ctx, q, j, st, runErr, now)
	}
	from := j.Version()
	j.Status, j.FinishedAt, j.ExpiresAt, j.LastError = job.Succeeded, now, now.Add(q.Config.Retention), ""
	j.Record(job.Event{At: now, Kind: job.SucceededEvent, Attempt: j.Attempt})
	if ok, err := e.end(ctx, q, j, from, st); !ok {
		return err
	}
	e.observe(ctx, Event{Kind: EventSucceeded, Queue: j.Queue})
	e.log.DebugContext(ctx, "job succeeded", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket)
	return nil
}

// retryOrDeadLetter records a failed attempt: the job takes a new ticket
// (retry), or fails for good when its error says so (attempt.ErrSkipRetry)
// or its slow-downs their bound (ErrSlowedDownTooOften), or its run used
// up the queue's max_attempts; then its record is the
// dead-letter record.
func (e *worker) retryOrDeadLetter(ctx context.Context, q Queue, j job.Job, st slot.State, runErr error, now time.Time) error {
	if !errors.Is(runErr, attempt.ErrSkipRetry) && !errors.Is(runErr, ErrSlowedDownTooOften) && j.RunAttempt() < q.Config.MaxAttempts {
		return e.retry(ctx, q, j, st, runErr, now)
	}
	from := j.Version()
	j.Status, j.FinishedAt, j.ExpiresAt, j.LastError = job.Failed, now, now.Add(q.Config.Retention), lastError(runErr)
	j.Record(job.Event{At: now, Kind: job.FailedEvent, Attempt: j.Attempt, Error: runErr.Error()})
	if ok, err := e.end(ctx, q, j, from, st); !ok {
		return err
	}
	e.observe(ctx, Event{Kind: EventAttemptFailed, Queue: j.Queue})
	e.observe(ctx, Event{Kind: EventFailed, Queue: j.Queue})
	e.log.ErrorContext(ctx, "job failed", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "attempt", j.Attempt, "error", runErr)
	return nil
}

// end writes the final record of j (succeeded or failed; it was at from)
// and hands on what its attempt held. It reports whether it wrote: a
// record that moved on meanwhile keeps its own story.
func (e *worker) end(ctx context.Context, q Queue, j job.Job, from job.Version, st slot.State) (bool, error) {
	if err := e.state.UpdateJob(ctx, j, from); err != nil {
		if errors.Is(err, ErrConflict) {
			e.log.WarnContext(ctx, "outcome not recorded: job moved on", "queue", j.Queue, "job_id", j.ID)
			return false, nil
		}
		return false, fmt.Errorf("record %s/%s: %w", j.Queue, j.ID, err)
	}
	e.endAttempt(ctx, q, st, j, j.Ticket, jobEnded)
	e.room.endKeptBooking(ctx, q, j)
	return true, nil
}

// retry gives a failed attempt's job a new ticket no earlier than its
// backoff: a retry is a start like any other and keeps the queue's rate.
func (e *worker) retry(ctx context.Context, q Queue, j job.Job, st slot.State, runErr error, now time.Time) error {
	from := j.Version()
	ran := j
	q.State = st
	j.Record(job.Event{At: now, Kind: job.AttemptFailed, Attempt: j.Attempt, Error: runErr.Error()})
	j.Attempt++
	j.LastError = lastError(runErr)
	j.Result, j.ResultDropped = nil, 0 // a result is the outcome's
	j.StartedAt = time.Time{}
	// The backoff is the record's, not the take's alone: a pause that
	// parks the job keeps it (job.Earliest).
	j.RetryAt = now.Add(q.Config.RetryDelay(j.RunAttempt()))
	// The take picks its conditional form from the state it is given:
	// the one the attempt's gate saw is as old as the attempt, and on a
	// queue that moved meanwhile a form picked from it is refused, a
	// write billed for nothing. A strong read of the queue costs less.
	if fresh, err := e.state.GetQueue(ctx, q.Name); err == nil && fresh.Gen == q.Gen {
		q = fresh
	}
	// On a bounded queue the retry goes through the waiting room like a
	// new job: booked at once if the bounds leave room and nobody waits.
	var keyAhead []int64
	spare, err := false, error(nil)
	if q.Config.Bounded() {
		keyAhead, _, spare, err = e.room.admit(ctx, q, []*job.Job{&j})
	}
	if err == nil {
		_, err = e.enqueuer.assignSlots(ctx, &q, []*job.Job{&j}, false, keyAhead, time.Time{})
	}
	if errors.Is(err, ErrQueueNotFound) {
		// The queue was deleted (and perhaps created again) while the
		// attempt ran: the job ends with its generation, and its retry
		// takes nothing of a new queue of the name.
		return e.expireOfDeletedQueue(ctx, ran)
	}
	if err != nil {
		return fmt.Errorf("retry %s/%s: %w", j.Queue, j.ID, err)
	}
	// A retry is a new acceptance, at the end of the line: a pause
	// keeps it behind the jobs accepted before it (job.LineOrder).
	j.Order = j.Ticket
	j.Record(job.Event{At: e.now(), Kind: job.Retried, Attempt: j.Attempt, Ticket: j.Ticket})
	e.enqueuer.sendOrPark(&j, q.State)
	e.enqueuer.sendQueued(ctx, []*job.Job{&j}) // message first, as in Enqueue
	if err := e.state.UpdateJob(ctx, j, from); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil
		}
		return fmt.Errorf("retry %s/%s: %w", j.Queue, j.ID, err)
	}
	if e.deadGeneration(ctx, &j) {
		return nil
	}
	e.endAttempt(ctx, q, st, j, ran.Ticket, jobGoesOn)
	e.room.endKeptBooking(ctx, q, ran)
	if spare {
		e.room.bookNext(ctx, q)
	}
	e.observe(ctx, Event{Kind: EventAttemptFailed, Queue: j.Queue})
	e.observe(ctx, Event{Kind: EventRetried, Queue: j.Queue})
	e.log.WarnContext(ctx, "attempt failed; retrying", "queue", j.Queue, "job_id", j.ID,
		"attempt", j.Attempt, "ticket", j.Ticket, "slot_at", j.SlotAt, "error", runErr)
	return nil
}

// endAttempt hands on what the attempt of ticket held once its outcome is
// recorded: its running place (a capped queue) and its key. exit says
// whether the job ended for good or goes on (a retry).
func (e *worker) endAttempt(ctx context.Context, q Queue, st slot.State, j job.Job, ticket int64, exit keyExit) {
	q.State = st
	e.lanes.endRun(ctx, q, ticket)
	e.lanes.leave(ctx, q, j, ticket, exit)
}
