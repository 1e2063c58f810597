package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/slotq/slotq/internal/attempt"
	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// claim moves the job, whose ticket passed the gate, from queued to
// running, started at the start the gate reserved. A refused claim means
// another delivery of the same message claimed it first (or it was
// cancelled): the gate this one passed is spent, and the message is done
// with.
func (d *delivery) claim(ctx context.Context) (next, error) {
	e, j := d.e, &d.j
	err := e.state.UpdateJob(ctx, *started(j, d.gr.Start()), d.want)
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrJobNotFound) {
		e.log.InfoContext(ctx, "dropped duplicate delivery after the gate", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket)
		d.giveUpGate(ctx)
		return stop, nil
	}
	if err != nil {
		// The job stays queued at a ticket the gate passed: the message
		// comes again and rolls forward through the gate.
		return stop, fmt.Errorf("work %s: claim: %w", j.Ref(), err)
	}
	// The gate is behind: the queue's next message may go on to its own
	// while this one sleeps to its start.
	GateDone(ctx)
	return proceed, nil
}

// started is j moved from queued to running, started at at.
func started(j *job.Job, at time.Time) *job.Job {
	j.Status, j.StartedAt, j.SentBack, j.RetryAt = job.Running, at, 0, time.Time{}
	j.Record(job.Event{At: at, Kind: job.Started, Attempt: j.Attempt, LatenessMs: at.Sub(j.SlotAt).Milliseconds()})
	return j
}

// unstarted takes back what started wrote on j but its status: it did
// not start.
func unstarted(j *job.Job) {
	j.StartedAt = time.Time{}
	if n := len(j.History); n > 0 && j.History[n-1].Kind == job.Started {
		j.History = slices.Clip(j.History[:n-1])
	}
}

// sleepToStart sleeps to the start the gate reserved. A worker that wakes
// more than skew after it (descheduled, stalled) must not start: the next
// ticket may start an interval after the reserved start, less skew. It
// gives the start up (giveUpStart).
func (d *delivery) sleepToStart(ctx context.Context) (next, error) {
	at := d.gr.Start()
	slept := clock.Sleep(ctx, at.Sub(d.e.now()))
	if now := d.e.now(); slept != nil || slot.Overslept(d.gr.CallBy(), now) {
		return d.giveUpStart(ctx, max(0, now.Sub(at)))
	}
	return proceed, nil
}

// giveUpStart gives up the start the gate reserved for the job, whose
// worker woke late by late after its claim: the job goes back from
// running to waiting, as if it had not passed the gate, and its slot is
// spent (the gate counted it). A line job takes a new ticket at the end
// of the line (reticket, lateBy), once an attempt; a job out of line, one
// that missed a slot already in this attempt, or one with nothing booked
// behind it (a lone job on an idle queue: its place is the line's end
// already) is queued again at its ticket and goes to the gate again for
// the next opening (again). On a bounded queue the job goes through the
// waiting room instead, as its booking ended with its start
// (rebookMissed). Its
// running place, if it took one, is freed; a line job leaves its key. The
// writes are on a context of their own: a job left running would wait
// for its lease.
func (d *delivery) giveUpStart(ctx context.Context, late time.Duration) (next, error) {
	e, j := d.e, &d.j
	rctx, cancel := e.recordContext(ctx)
	defer cancel()
	from := j.Version()
	ticket := j.Ticket
	unstarted(j)
	q := d.q
	q.State = d.st
	e.lanes.unstartKey(rctx, q, d.keyPrev, d.keyPut)
	d.keyPrev, d.keyPut = slot.Meter{}, slot.Meter{}
	if held := j.Booking; held != 0 && q.Config.Bounded() {
		err := e.rebookMissed(rctx, &q, j, from, late)
		e.lanes.endRun(rctx, q, ticket)
		e.lanes.leaveUnlessRunning(rctx, q, *j, ticket)
		// Its old booking (freed at its start already, or held for its
		// key: keyHeld) is freed once its record and its key's lane
		// left it, and the room books its next (this job, it may be).
		e.room.bookNext(rctx, q, held)
		return stop, err
	}
	if !outOfLine(j) && !missedBefore(j) && !d.alone {
		err := e.reticket(rctx, &q, j, lateBy(late))
		e.lanes.endRun(rctx, q, ticket)
		e.lanes.leaveUnlessRunning(rctx, q, *j, ticket)
		return stop, err
	}
	j.Status = job.Queued
	j.Record(job.Event{At: e.now(), Kind: job.SlotMissed, Ticket: ticket, Attempt: j.Attempt, LatenessMs: late.Milliseconds()})
	if err := e.state.UpdateJob(rctx, *j, from); err != nil {
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrJobNotFound) {
			return stop, nil
		}
		return stop, fmt.Errorf("work %s: give up a missed start: %w", j.Ref(), err)
	}
	e.lanes.endRun(rctx, q, ticket)
	e.observe(ctx, Event{Kind: EventSlotMissed, Queue: j.Queue, Lateness: late})
	e.log.InfoContext(ctx, "slot missed", "queue", j.Queue, "job_id", j.ID, "ticket", ticket, "late_ms", late.Milliseconds())
	if err := ctx.Err(); err != nil {
		// Queued again with no worker on it: the message must come back.
		return stop, fmt.Errorf("work %s: after a missed start: %w", j.Ref(), err)
	}
	// Its slot is spent: it takes the next opening, queued again as it was.
	d.wake = time.Time{}
	return again, nil
}

// rebookMissed is giveUpStart for a job of a bounded queue that held a
// booking (waitroom.go): its booking ended with its start, so the start
// it now waits for needs a booking of its own, or its key and its queue
// would hold one slot more than their bounds. It goes through the waiting
// room as a retry does: booked at once, with a new ticket and slot, if
// the bounds leave room and nobody waits; else into the room, to be
// booked by its rule. Its history records the missed slot (as
// reticket's, lateBy). from is the version of its record as claimed.
// The new booking is entered before the record is written, and the
// caller frees the old one after (a key whose booking it still holds,
// keyHeld, is at its bound until then: the job waits in the room), so
// the bounds hold at every moment.
func (e *worker) rebookMissed(ctx context.Context, q *Queue, j *job.Job, from job.Version, late time.Duration) error {
	old := j.Ticket
	orig := *j
	keyAhead, _, spare, err := e.room.admit(ctx, *q, []*job.Job{j})
	if err == nil {
		_, err = e.enqueuer.assignSlots(ctx, q, []*job.Job{j}, false, keyAhead, time.Time{})
	}
	if errors.Is(err, ErrQueueNotFound) {
		return e.expireOfDeletedQueue(ctx, orig)
	}
	if err != nil {
		return fmt.Errorf("missed slot %s: %w", j.Ref(), err)
	}
	if old <= q.State.Purged {
		e.room.freeBooking(ctx, *q, *j)
		*j = orig
		return e.cancelPurged(ctx, *q, orig)
	}
	j.Retickets++
	j.Record(job.Event{At: e.now(), Kind: job.SlotMissed, OldTicket: old, Ticket: j.Ticket, Attempt: j.Attempt, LatenessMs: late.Milliseconds()})
	e.enqueuer.sendOrPark(j, q.State)
	e.enqueuer.sendQueued(ctx, []*job.Job{j}) // message first, as in Enqueue
	err = e.state.UpdateJob(ctx, *j, from)
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrJobNotFound) {
		e.room.freeBooking(ctx, *q, *j) // a duplicate got there first: this booking holds nothing
		return nil
	}
	if err != nil {
		return fmt.Errorf("missed slot %s: %w", j.Ref(), err)
	}
	if e.deadGeneration(ctx, j) {
		return nil
	}
	if spare {
		e.room.bookNext(ctx, *q)
	}
	e.observe(ctx, Event{Kind: EventSlotMissed, Queue: j.Queue, Lateness: late})
	e.observe(ctx, Event{Kind: EventReticketed, Queue: j.Queue})
	e.log.InfoContext(ctx, "slot missed: booked again", "queue", j.Queue, "job_id", j.ID, "old_ticket", old, "ticket", j.Ticket,
		"slot_at", j.SlotAt, "waiting", inRoom(j), "late_ms", late.Milliseconds())
	return nil
}

// run begins the claimed attempt's target at the reserved start and
// returns the attempt's error (nil: it succeeded). The target's result
// goes into the record, written with the outcome (recordOutcome). The
// start is judged and recorded as the target is called (begin), in the
// goroutine that calls it: a worker held up between its wake-up and the
// call (descheduled, its goroutine not yet run) gives the start up
// (errOverslept) rather than begin it late.
func (d *delivery) run(ctx context.Context) error {
	e, q, j := d.e, d.q, &d.j
	tctx, res := attempt.New(ctx)
	tctx, endCall := d.traceCall(tctx, e.now())
	run := *j // the target's copy: a target that outlives its timeout keeps it
	runErr := e.runTarget(tctx, q.Config, func() error { return d.begin(ctx) }, func(tctx context.Context) error {
		return e.runner.Run(tctx, &run, q.Config)
	})
	endCall(runErr)
	j.Result, j.ResultDropped = res.Take()
	return runErr
}

// errOverslept is run's error when the target was not called: its
// worker came to the call more than Wake after the reserved start.
var errOverslept = errors.New("overslept the reserved start")

// begin judges the start as the target is about to be called, and records
// it: the start event and log line carry the time the target was called.
func (d *delivery) begin(ctx context.Context) error {
	e, q, j := d.e, d.q, &d.j
	now := e.now()
	if at := d.gr.Start(); slot.Overslept(d.gr.CallBy(), now) {
		d.late = now.Sub(at)
		return errOverslept
	}
	gap, hasGap := startGap(q.State, d.st, q.Config.Tick(), now)
	if d.admitted {
		gap, hasGap = bookedGap(j, q.Config.Tick(), now)
	}
	e.observe(ctx, Event{Kind: EventStarted, Queue: j.Queue, Jobs: d.batchJobs(), Lateness: now.Sub(j.SlotAt), Gap: gap, HasGap: hasGap,
		Start: &Start{JobID: j.ID, Ticket: j.Ticket, Attempt: j.Attempt, SlotAt: j.SlotAt, GateAt: j.StartedAt, At: now, Key: j.Key}})
	e.log.InfoContext(ctx, "start", "queue", j.Queue, "ticket", j.Ticket, "job_id", j.ID,
		"slot_at", j.SlotAt, "gate_at", j.StartedAt, "lateness_ms", now.Sub(j.SlotAt).Milliseconds(),
		"attempt", j.Attempt, "target", j.What(), "key", j.Key)
	return nil
}

// runTarget runs one attempt's call of its target (the Runner's, for one
// job or a batch), bounded by the
// queue's target timeout whatever the target (Go handlers included), and
// turns a panic into the attempt's error. A target that ignores its
// context is not waited for past the timeout: its goroutine is left to
// finish on its own, and the attempt fails (and is retried, so such a
// target may run twice at once).
func (e *worker) runTarget(ctx context.Context, cfg slot.Config, begin func() error, call func(context.Context) error) error {
	timeout := e.targetTimeout(cfg)
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- &PanicError{Value: v, Stack: debug.Stack()}
			}
		}()
		if err := begin(); err != nil {
			done <- err
			return
		}
		if e.runner == nil {
			done <- errors.New("no runner configured") // after its start, as any failed attempt
			return
		}
		done <- call(tctx)
	}()
	select {
	case err := <-done:
		return err
	case <-tctx.Done():
	}
	// A target that returns as the invocation's context ends (its time is
	// up as the target finishes) still reports its own outcome. (At its
	// own timeout a target has no answer worth waiting for.)
	if ctx.Err() != nil {
		grace := time.NewTimer(targetGrace)
		defer grace.Stop()
		select {
		case err := <-done:
			return err
		case <-grace.C:
		}
	} else {
		select {
		case err := <-done:
			return err
		default:
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("target stopped: %w", context.Cause(ctx))
	}
	return fmt.Errorf("target did not return within its timeout %s: %w", timeout, context.DeadlineExceeded)
}

// targetGrace is how long runTarget waits for a target's answer after the
// target's context ended: one that was returning then is not taken for
// one that ignores its context. The record budget (RecordTimeout) covers it.
const targetGrace = 20 * time.Millisecond

// PanicError is the error of an attempt whose target panicked. The
// attempt fails and is retried like any other failure; the job's
// LastError keeps the value and the start of the stack.
type PanicError struct {
	Value any
	Stack []byte
}

// maxPanicValue and maxStack bound what a PanicError prints of the value
// and of the stack.
const maxPanicValue, maxStack = 1024, 2048

func (e *PanicError) Error() string {
	return "panic: " + job.Cut(fmt.Sprint(e.Value), maxPanicValue) + "\n" + job.Cut(string(e.Stack), maxStack)
}
