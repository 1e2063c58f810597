package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// ErrSentBackTooOften is the error of a job that was sent back to the
// transport Options.MaxSendsBack times in a row without starting.
var ErrSentBackTooOften = errors.New("sent back too often without starting")

// failSentBack fails j, queued and sent back MaxSendsBack times without
// starting, for good: its record is its dead-letter record, and it holds
// no key or place (takeOffLanes). The queue's retention applies.
func (e *worker) failSentBack(ctx context.Context, j job.Job) error {
	q, err := e.state.GetQueue(ctx, j.Queue)
	if err != nil && !errors.Is(err, ErrQueueNotFound) {
		return fmt.Errorf("fail %s: %w", j.Ref(), err)
	}
	if err != nil || q.Gen != j.Gen {
		return e.expireOfDeletedQueue(ctx, j)
	}
	from, now := j.Version(), e.now()
	runErr := fmt.Errorf("%w: %d times in a row (a hand-back, a re-ticket or a come-again each; bound %d)", ErrSentBackTooOften, j.SentBack, e.opts.MaxSendsBack)
	j.Status, j.FinishedAt, j.ExpiresAt, j.LastError = job.Failed, now, now.Add(q.Config.Retention), lastError(runErr)
	j.Record(job.Event{At: now, Kind: job.FailedEvent, Attempt: j.Attempt, Error: runErr.Error()})
	if err := e.state.UpdateJob(ctx, j, from); err != nil {
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrJobNotFound) {
			return nil // it moved on meanwhile
		}
		return fmt.Errorf("fail %s: %w", j.Ref(), err)
	}
	e.lanes.takeOffLanes(ctx, q, j)
	e.room.freeBooking(ctx, q, j)
	e.observe(ctx, Event{Kind: EventFailed, Queue: j.Queue})
	e.log.ErrorContext(ctx, "job failed", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "error", runErr)
	return nil
}

// keepKeyWhileAway makes the hold j has on its key last until a lease after wake.
func (e *worker) keepKeyWhileAway(ctx context.Context, j *job.Job, wake time.Time) {
	w := slot.Waiter{Ticket: j.Ticket, JobID: j.ID}
	until := laterOf(wake, e.now()).Add(e.opts.Lease)
	q := Queue{Name: j.Queue, Gen: j.Gen}
	if err := e.lanes.updateLane(ctx, q, j.Key, func(l slot.Lane) slot.Lane {
		return l.Extend(w, until)
	}); err != nil {
		e.log.WarnContext(ctx, "key's hold not kept while away", "queue", j.Queue, "job_id", j.ID, "key", j.Key, "error", err.Error())
	}
}

// handBack hands the job back to the transport, to come again for wake
// (worker.handBack). A job that holds its key keeps it while it is away:
// its hold is made to last until a lease after it comes back, or the
// resume function would hand the key on meanwhile and the job, back,
// would find itself overtaken.
func (d *delivery) handBack(ctx context.Context) error {
	if d.holding {
		d.e.keepKeyWhileAway(ctx, &d.j, d.wake)
	}
	return d.e.handBack(ctx, &d.j, d.wake)
}

// handBack sends the job's envelope again to arrive at wake, by the clock
// as it goes: the slot lies past this invocation's deadline.
func (e *worker) handBack(ctx context.Context, j *job.Job, wake time.Time) error {
	env := j.Envelope()
	env.SentAt = e.now()
	wait := e.enqueuer.delayTo(wake, env.SentAt)
	err := e.transport.Send(ctx, []Message{{Envelope: env, Delay: wait}})
	if err != nil {
		return fmt.Errorf("hand back %s/%s: %w", j.Queue, j.ID, err)
	}
	// Into the job's history, at the same version: a record that moved
	// on meanwhile (a duplicate claimed it) keeps its own story, and a
	// failed write loses one event, not the message.
	from := j.Version()
	j.SentBack++
	j.Record(job.Event{At: env.SentAt, Kind: job.HandedBack, DelayMs: wait.Milliseconds()})
	if err := e.state.UpdateJob(ctx, *j, from); err != nil && !errors.Is(err, ErrConflict) {
		e.log.WarnContext(ctx, "hand-back not in the job's history", "queue", j.Queue, "job_id", j.ID, "error", err.Error())
	}
	e.observe(ctx, Event{Kind: EventHandedBack, Queue: j.Queue})
	e.log.DebugContext(ctx, "handed back", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "delay_ms", wait.Milliseconds())
	return nil
}

// park stores a queued job as parked, for the resume function.
func (e *worker) park(ctx context.Context, j *job.Job, why job.ParkReason) error {
	from := j.Version()
	j.Status, j.ParkReason, j.DueAt = job.Parked, why, time.Time{}
	j.Record(job.Event{At: e.now(), Kind: job.ParkedEvent, Reason: string(why)})
	if err := e.state.UpdateJob(ctx, *j, from); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil
		}
		return fmt.Errorf("park %s/%s: %w", j.Queue, j.ID, err)
	}
	if e.deadGeneration(ctx, j) {
		return nil
	}
	e.observe(ctx, Event{Kind: EventParked, Queue: j.Queue})
	e.log.InfoContext(ctx, "parked", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "reason", string(why))
	return nil
}

// reticketCause says why a job takes a new ticket at the end of the line
// (reticket): a later ticket passed it, at the gate or on its key
// (passedByLater, job.Reticketed), or its worker came too late for its
// start (lateBy, job.SlotMissed).
type reticketCause struct {
	missed bool
	late   time.Duration // how late the worker came, for a missed slot
}

// passedByLater is the cause of a re-ticket for a job a later ticket passed.
var passedByLater = reticketCause{}

// lateBy is the cause of a re-ticket for a line job whose worker came late
// by late for its start.
func lateBy(late time.Duration) reticketCause { return reticketCause{missed: true, late: late} }

// reticket gives j a new ticket at the end of the line, keeping its id and
// attempt, and sends or parks it. For a missed slot (lateBy) the end of
// the line is the one place where a late job moves nobody: taking the
// next opening would push every start booked after it by an interval, and
// starting late would push them by its lateness; its history says so
// (job.SlotMissed). A job whose old ticket a purge covered is cancelled
// instead: the purge may have landed after the job was read, and a
// re-ticket must not carry a purged job past it.
func (e *worker) reticket(ctx context.Context, q *Queue, j *job.Job, cause reticketCause) error {
	op := "re-ticket"
	if cause.missed {
		op = "missed slot"
	}
	from := j.Version()
	old := j.Ticket
	orig := *j
	if err := e.enqueuer.assign(ctx, q, []*job.Job{j}); err != nil {
		return fmt.Errorf("%s %s/%s: %w", op, j.Queue, j.ID, err)
	}
	if old <= q.State.Purged {
		*j = orig
		return e.cancelPurged(ctx, *q, orig)
	}
	j.Retickets++
	if !cause.missed {
		// A missed slot is no send-back toward failure: the job moved
		// on to a slot of its own, and no job fails for missing slots.
		j.SentBack++
	}
	ev := job.Event{At: e.now(), Kind: job.Reticketed, OldTicket: old, Ticket: j.Ticket}
	if cause.missed {
		j.StartedAt = time.Time{}
		ev.Kind, ev.Attempt, ev.LatenessMs = job.SlotMissed, j.Attempt, cause.late.Milliseconds()
	}
	j.Record(ev)
	e.enqueuer.sendOrPark(j, q.State)
	e.enqueuer.sendQueued(ctx, []*job.Job{j}) // message first, as in Enqueue
	if err := e.state.UpdateJob(ctx, *j, from); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil // a duplicate got there first; its message is stale
		}
		return fmt.Errorf("%s %s/%s: %w", op, j.Queue, j.ID, err)
	}
	if e.deadGeneration(ctx, j) {
		return nil
	}
	if !cause.missed {
		e.observe(ctx, Event{Kind: EventReticketed, Queue: j.Queue})
		e.log.InfoContext(ctx, "re-ticketed", "queue", j.Queue, "job_id", j.ID, "old_ticket", old, "ticket", j.Ticket, "slot_at", j.SlotAt)
		return nil
	}
	e.observe(ctx, Event{Kind: EventSlotMissed, Queue: j.Queue, Lateness: cause.late})
	e.observe(ctx, Event{Kind: EventReticketed, Queue: j.Queue})
	e.log.InfoContext(ctx, "slot missed", "queue", j.Queue, "job_id", j.ID, "old_ticket", old, "ticket", j.Ticket,
		"slot_at", j.SlotAt, "late_ms", cause.late.Milliseconds())
	return nil
}
