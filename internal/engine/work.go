package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// Work does Engine.Work's work.
func (e *worker) Work(ctx context.Context, env job.Envelope) error {
	d := &delivery{e: e, env: env}
	if n, err := d.readRecord(ctx); n == stop {
		return err
	}
	if n, err := d.joinBatch(ctx); n == stop { // batch.go
		return err
	}
	for {
		if n, err := d.awaitGate(ctx); n == stop {
			return err
		}
		actx := d.traceAttempt(ctx) // trace.go
		if n, err := d.claim(actx); n == stop {
			d.endAttemptSpan(actx, OutcomeNotClaimed, err)
			if err == nil {
				// Lost the claim: if to another delivery of this
				// message, the message is its attempt's watchdog.
				_, err = e.claimedMeanwhile(ctx, d.want, &d.j)
			}
			return err
		}
		// Started: its booking is freed and the waiting room books its
		// next job meanwhile (waitroom.go).
		defer e.room.freeAfterStart(ctx, d.q, d.j)()
		d.gather(actx)
		switch n, err := d.sleepToStart(actx); n {
		case stop:
			d.giveUpMembers(actx)
			d.endAttemptSpan(actx, OutcomeMissed, err)
			return err
		case again:
			d.giveUpMembers(actx)
			d.endAttemptSpan(actx, OutcomeMissed, nil)
			continue // out of line and overslept: queued again for the next opening
		}
		if len(d.members) > 0 {
			err := d.runBatch(actx)
			d.endAttemptSpan(actx, OutcomeSucceeded, err)
			return err
		}
		runErr := d.run(actx)
		if errors.Is(runErr, errOverslept) {
			if n, err := d.giveUpStart(actx, d.late); n == stop {
				d.endAttemptSpan(actx, OutcomeMissed, err)
				return err
			}
			d.endAttemptSpan(actx, OutcomeMissed, nil)
			continue
		}
		err := d.recordOutcome(actx, runErr)
		d.endAttemptSpan(actx, outcomeOf(runErr), errors.Join(runErr, err))
		return err
	}
}

// delivery is one message on its way through Work: the envelope, the job
// record it carries, and what the worker learned on the way to the gate.
// Each step is a method; what a step leaves for the next is a field.
type delivery struct {
	e   *worker
	env job.Envelope
	// j is the job's record as this delivery last read or wrote it, and
	// want its version the envelope was sent for: queued at its ticket.
	j    job.Job
	want job.Version
	// q is the job's queue as last read (queueRead: read at all); after
	// a refusal, with the state the gate answered.
	q         Queue
	queueRead bool
	// wake is the start aimed at: the slot, a hold's end or the gate's
	// opening. The worker wakes Lead before it.
	wake time.Time
	// turn is when the worker may go to the gate at the earliest, by the
	// clock: a hold's (see lineTurn).
	turn time.Time
	// writerLate: the job's record came after its worker's time to go to
	// the gate (its enqueue was still writing its batch's records, say),
	// writerLag after its slot (negative: before it). The job is late by
	// its writer, not by its worker: it starts late rather than lose its
	// place, as if its slot had been booked later, when the lag is short
	// (writerExcused).
	writerLate bool
	writerLag  time.Duration
	// recheck: a scheduled job found the gate closed at its slot; the
	// start that closed it may have been a duplicate of this message.
	recheck bool
	// holding: the job holds its key (Job.Key), taken in this invocation.
	holding bool
	// keyPrev and keyPut are the job's key's meter before and after the
	// start this try recorded on it (passKey), if any: a start given up
	// takes it back (unstartKey).
	keyPrev, keyPut slot.Meter
	// meter is the job's key's meter as awaitKey last read it: the base
	// of the key's compare-and-set in passKey, which reads it again only
	// if it moved.
	meter slot.Meter
	// now is when this try came to the gate, at the start it asks for,
	// and gr the request; st is the queue's state once the gate passed it.
	now time.Time
	at  time.Time
	gr  GateRequest
	st  slot.State
	// late is how long after the reserved start the target's call came,
	// when it came too late to be made (begin).
	late time.Duration
	// admitted: this try passed the gate of a booked start (admitBooked),
	// a read, and goes on to its claim with gr and st as admit set them.
	admitted bool
	// alone: the line had nothing booked after the job's slot when it
	// went to the gate; a start it gives up then costs it no place in
	// the line (giveUpStart).
	alone bool
	// members are, for a batch's leader (leads), the batch's other jobs
	// it claimed (gather), and listed its list of them (prelist).
	members []*delivery
	listed  chan batchList
}

// next is what a delivery's step leaves Work to do.
type next int

const (
	proceed next = iota // go on to the following step
	again               // go back to the wait for the gate (the queue is read again)
	stop                // return the step's error: nil when the message is done with
)

// readRecord reads the job the envelope carries (awaitRecord) and decides
// whether this message goes to the gate: a record running at the
// envelope's attempt makes this the attempt's watchdog (recoverIfLost),
// and a record at any version but the envelope's makes the message stale.
func (d *delivery) readRecord(ctx context.Context) (next, error) {
	e, env := d.e, d.env
	j, waited, err := e.awaitRecord(ctx, env)
	if errors.Is(err, ErrJobNotFound) {
		e.log.WarnContext(ctx, "dropped message of unknown job", "queue", env.Queue, "job_id", env.JobID)
		return stop, nil
	}
	if err != nil {
		return stop, fmt.Errorf("work %s: %w", env.Ref(), err)
	}
	d.j = j
	d.want = job.Version{Status: job.Queued, Ticket: env.Ticket, Attempt: env.Attempt, Gen: env.Gen}
	if j.Version() == runningAt(d.want) {
		return stop, e.recoverIfLost(ctx, j)
	}
	if j.Version() != d.want {
		e.log.DebugContext(ctx, "dropped stale message", "queue", j.Queue, "job_id", j.ID,
			"ticket", env.Ticket, "status", j.Status, "job_ticket", j.Ticket)
		return stop, nil
	}
	if j.SentBack >= e.opts.MaxSendsBack {
		return stop, e.failSentBack(ctx, j)
	}
	if j.DebounceKey != "" {
		return d.awaitDebounce(ctx) // debounce.go: until its debounce ends
	}
	d.wake = j.SlotAt
	now := e.now()
	d.writerLate, d.writerLag = waited && now.After(d.wake.Add(-e.opts.Lead)), now.Sub(j.SlotAt)
	return proceed, nil
}
