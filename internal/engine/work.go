package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/slotq/slotq/internal/attempt"
	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

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
	d := &delivery{e: e, env: env}
	if n, err := d.readRecord(ctx); n == stop {
		return err
	}
	for {
		if n, err := d.awaitGate(ctx); n == stop {
			return err
		}
		actx := d.traceAttempt(ctx) // trace.go
		if n, err := d.claim(actx); n == stop {
			d.endAttemptSpan(actx, OutcomeNotClaimed, err)
			return err
		}
		switch n, err := d.sleepToStart(actx); n {
		case stop:
			d.endAttemptSpan(actx, OutcomeMissed, err)
			return err
		case again:
			d.endAttemptSpan(actx, OutcomeMissed, nil)
			continue // out of line and overslept: queued again for the next opening
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
	e   *Engine
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
	// clock: a hold's (see holdTurn).
	turn time.Time
	// writerLate: the job's record came after its worker's time to go to
	// the gate (its enqueue was still writing its batch's records, say):
	// the job is late by its writer, not by its worker, and starts late
	// rather than lose its place (as if its slot had been booked later).
	writerLate bool
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
	if j.Version() == (job.Version{Status: job.Running, Ticket: env.Ticket, Attempt: env.Attempt, Gen: env.Gen}) {
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
	d.wake = j.SlotAt
	d.writerLate = waited && e.now().After(d.wake.Add(-e.opts.Lead))
	return proceed, nil
}

// ErrSentBackTooOften is the error of a job that was sent back to the
// transport Options.MaxSendsBack times in a row without starting.
var ErrSentBackTooOften = errors.New("sent back too often without starting")

// failSentBack fails j, queued and sent back MaxSendsBack times without
// starting, for good: its record is its dead-letter record, and it holds
// no key or place (takeOffLanes). The queue's retention applies.
func (e *Engine) failSentBack(ctx context.Context, j job.Job) error {
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
	e.takeOffLanes(ctx, q, j)
	e.observe(ctx, Event{Kind: EventDeadLetter, Queue: j.Queue})
	e.log.ErrorContext(ctx, "job failed", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "error", runErr)
	return nil
}

// awaitGate goes to the gate until it passes the job for a start (d.st is
// the queue's state after it) or the message is done with (stop).
func (d *delivery) awaitGate(ctx context.Context) (next, error) {
	for {
		if n, err := d.tryGate(ctx); n != again {
			return n, err
		}
	}
}

// tryGate is one way to the gate: wait for the job's turn, read the queue,
// leave lower tickets the intervals they need, answer from the state read
// where it can, and write to the gate.
func (d *delivery) tryGate(ctx context.Context) (next, error) {
	if n, err := d.waitForTurn(ctx); n != proceed {
		return n, err
	}
	if n, err := d.checkQueue(ctx); n != proceed {
		return n, err
	}
	if n := d.hold(); n != proceed {
		return n, nil
	}
	if n, err := d.decide(ctx); n != proceed {
		return n, err
	}
	if n, err := d.passGate(ctx); n != proceed {
		return n, err
	}
	return d.passKey(ctx)
}

// waitForTurn sleeps to Lead before the start aimed at (wake), or to the
// job's turn by the clock, whichever is later. The whole budget must fit,
// not only the wait: a job that starts must be recorded before the
// invocation ends. One that does not fit waits elsewhere: parked until
// its gate opens when that is beyond the transport's reach, else handed
// back to the transport.
func (d *delivery) waitForTurn(ctx context.Context) (next, error) {
	e := d.e
	wait := laterOf(d.wake.Add(-e.opts.Lead-aheadOfLine(&d.j, d.q.Config)), d.turn).Sub(e.now())
	if wait <= 0 {
		return proceed, nil
	}
	if !d.queueRead {
		if n, err := d.readQueue(ctx); n != proceed {
			return n, err
		}
	}
	if !e.fits(ctx, wait+e.opts.Lead+e.budget(d.q.Config)) {
		if d.wake.Sub(e.now()) > e.transport.MaxDelay() {
			return stop, d.parkForGate(ctx)
		}
		return stop, d.handBack(ctx)
	}
	if err := clock.Sleep(ctx, wait); err != nil {
		return stop, fmt.Errorf("work %s: wait for slot: %w", d.env.Ref(), err)
	}
	return proceed, nil
}

// readQueue reads the job's queue into q. A queue deleted (or deleted and
// created again: another generation) ends the job (expireOfDeletedQueue).
func (d *delivery) readQueue(ctx context.Context) (next, error) {
	q, err := d.e.state.GetQueue(ctx, d.j.Queue)
	if errors.Is(err, ErrQueueNotFound) || err == nil && q.Gen != d.j.Gen {
		return stop, d.e.expireOfDeletedQueue(ctx, d.j)
	}
	if err != nil {
		return stop, fmt.Errorf("work %s: %w", d.env.Ref(), err)
	}
	d.q, d.queueRead = q, true
	return proceed, nil
}

// checkQueue reads the queue after the wait, so the hold sees the starts
// that happened meanwhile, and checks the budget again before the gate:
// the configuration may have changed, and a job whose slot passed has had
// no wait to check.
func (d *delivery) checkQueue(ctx context.Context) (next, error) {
	if n, err := d.readQueue(ctx); n != proceed {
		return n, err
	}
	if !d.e.fits(ctx, d.e.budget(d.q.Config)) {
		return stop, d.handBack(ctx)
	}
	if d.q.State.Current == d.j.Ticket && !outOfLine(&d.j) || d.recheck {
		// The gate passed this ticket already (or, for a scheduled
		// job, some ticket since its slot): this may be a duplicate
		// of a message whose job was claimed, or the worker that
		// passed it died before its claim. Only in the second case
		// may it pass again.
		if done, err := d.e.claimedMeanwhile(ctx, d.want, &d.j); done || err != nil {
			if done && d.holding {
				// Cancelled (or run by another delivery) since this
				// one took the key: a cancelled job holds nothing.
				d.leaveKeyUnlessRunning(ctx)
			}
			return stop, err
		}
		d.recheck = false
	}
	return proceed, nil
}

// hold picks the start to ask the gate for (at): wake, or, for a worker
// that came too late for it, the soonest it can start. While lower
// tickets have not started, it leaves them the intervals they need, so a
// late neighbour is not passed by a hair (see holdUntil); a scheduled job
// does not wait for the line.
func (d *delivery) hold() next {
	e, q, j := d.e, d.q, &d.j
	d.now = e.now()
	d.at = slot.StartAt(d.wake, d.now, e.opts.Lead, q.Config.Skew)
	if hold := holdUntil(q, j, d.at); d.at.Before(hold) {
		d.wake = hold
		return again
	}
	if d.turn = holdTurn(q, j, d.at); d.now.Before(d.turn) {
		return again
	}
	// The gate is asked with no skew: it keeps the limits exactly, and
	// the skew is left to the worker's wake-up (slot.Wake).
	d.gr = GateRequest{
		Queue: j.Queue, Ticket: j.Ticket, Limits: q.Config.LimitList(), Now: d.now, At: d.at,
		Scheduled: outOfLine(j), Seen: q.State,
		MaxRunning: q.Config.MaxRunning, Until: d.at.Add(e.opts.Lease), Gen: j.Gen,
	}
	return proceed
}

// decide answers from the queue's state just read where it can: waiting
// for the gate's opening here saves a write that would fail (and still be
// billed). A keyed job takes its key first; one that finds every running
// place taken waits for one. A line job whose worker came too late for
// its slot gives it up rather than push every start booked behind it; a
// job out of line takes the opening it finds.
func (d *delivery) decide(ctx context.Context) (next, error) {
	q, j := d.q, &d.j
	switch v, open := d.gr.Decide(q.State); {
	case v == slot.Early && slowHeld(q.State, j, d.at):
		return d.awaitSlowDown(ctx, open) // slowdown.go
	case v == slot.Early:
		d.wake, d.recheck = open, outOfLine(j)
		return again, nil
	case (v == slot.Start || v == slot.Full) && j.Key != "" && !d.holding && q.Config.KeyCap() != 0:
		return d.takeKey(ctx)
	case v == slot.Full:
		return d.waitForPlace(ctx)
	case keyed(q, j):
		return d.awaitKey(ctx)
	}
	if !outOfLine(j) && !d.writerLate && !missedBefore(j) && slot.Missed(q.State, j.SlotAt, d.at, q.Config.LimitList(), q.Config.Skew) {
		late := d.at.Sub(slot.Due(q.State, j.SlotAt, q.Config.LimitList()))
		err := d.e.reticket(ctx, &d.q, &d.j, lateBy(late))
		d.leaveKeyUnlessRunning(ctx)
		return stop, err
	}
	return proceed, nil
}

// awaitKey waits, before the gate, for the job's key to let its start
// through (a limit of the key's own: keyed), without a write: the key's
// meter is read, and a job early for its key aims at the key's opening.
func (d *delivery) awaitKey(ctx context.Context) (next, error) {
	open, m, err := d.e.keyOpen(ctx, d.q, &d.j)
	if err != nil {
		return stop, fmt.Errorf("work %s: %w", d.env.Ref(), err)
	}
	if until, ok := heldBySlowDown(m.State, d.j.Ticket, d.at); ok {
		return d.awaitKeyed(ctx, m, until) // slowdown.go
	}
	if d.at.Before(open) {
		d.wake = open
		return again, nil
	}
	d.meter = m
	return proceed, nil
}

// passKey records the start the queue's gate reserved on the job's key,
// when its key has a limit of its own (keyGate: one compare-and-set of
// the key's meter). A key that refuses it leaves the queue's opening
// spent (stricter, never looser) and its running place freed: early, the
// job aims at the key's opening; overtaken by a later ticket of its key,
// it takes a new ticket, so the key's starts keep ticket order.
func (d *delivery) passKey(ctx context.Context) (next, error) {
	e, j := d.e, &d.j
	if !keyed(d.q, j) {
		return proceed, nil
	}
	v, open, prev, put, err := e.keyGate(ctx, d.q, j, d.gr.Start(), d.meter)
	if err == nil && v == slot.KeyStart {
		d.keyPrev, d.keyPut = prev, put
		return proceed, nil
	}
	q := d.q
	q.State = d.st
	e.endRun(ctx, q, j.Ticket)
	switch {
	case err != nil:
		// Still queued at its ticket: the message comes again.
		return stop, fmt.Errorf("work %s: key gate: %w", d.env.Ref(), err)
	case v == slot.KeyEarly:
		e.observe(ctx, Event{Kind: EventKeyHeld, Queue: j.Queue})
		d.wake = open
		return again, nil
	}
	err = e.reticket(ctx, &d.q, j, passedByLater)
	d.leaveKeyUnlessRunning(ctx)
	return stop, err
}

// takeKey takes the job's key before the gate: a job that waits for its
// key spends no slot, and waits for its key, not for a place it could not
// use. Holding it, the job goes to the gate with the queue read again.
func (d *delivery) takeKey(ctx context.Context) (next, error) {
	ok, err := d.e.arrive(ctx, &d.q, &d.j)
	if !ok || err != nil {
		return stop, err
	}
	d.holding = true
	d.wake = time.Time{}
	return again, nil
}

// waitForPlace waits for a running place, every one being taken, without
// a write to the gate (waitPlace). The job keeps its key, if it took one:
// its place in the key's order is its ticket's.
func (d *delivery) waitForPlace(ctx context.Context) (next, error) {
	if ok, err := d.e.waitPlace(ctx, d.q, &d.j); !ok || err != nil {
		if err == nil && d.holding {
			d.e.leaveIfGone(ctx, d.q, d.j, d.want.Ticket)
		}
		return stop, err
	}
	d.wake = time.Time{}
	return again, nil
}

// passGate asks the gate for the start (one conditional write on the
// queue's state). It proceeds when the gate reserved it.
func (d *delivery) passGate(ctx context.Context) (next, error) {
	st, err := d.e.state.Gate(ctx, d.gr)
	var gate *GateError
	switch {
	case err == nil:
		d.st = st
		return proceed, nil
	case errors.Is(err, ErrQueueNotFound):
		return stop, d.e.expireOfDeletedQueue(ctx, d.j)
	case errors.Is(err, ErrLimitChanged):
		return again, nil // read the queue again
	case errors.As(err, &gate):
		return d.refused(ctx, gate)
	}
	return stop, fmt.Errorf("work %s: gate: %w", d.env.Ref(), err)
}

// refused acts on the gate's refusal: an early job tries again at the
// opening; a full queue makes it wait for a running place; a paused queue
// parks it; a purge cancels it; a passed job takes a new ticket.
func (d *delivery) refused(ctx context.Context, gate *GateError) (next, error) {
	e, j := d.e, &d.j
	switch gate.Verdict {
	case slot.Early:
		d.q.State = gate.State
		if slowHeld(gate.State, j, d.at) {
			return d.awaitSlowDown(ctx, gate.OpenAt) // slowdown.go
		}
		d.wake, d.recheck = laterOf(gate.OpenAt, holdUntil(d.q, j, d.at)), outOfLine(j)
	case slot.Full:
		return d.waitForPlace(ctx)
	case slot.Paused:
		err := e.park(ctx, j, job.PausedQueue)
		d.leaveKeyUnlessRunning(ctx)
		return stop, err
	case slot.Purged:
		return stop, e.cancelPurged(ctx, d.q, *j)
	case slot.Passed:
		d.q.State = gate.State
		cause := passedByLater
		if late := max(e.now().Sub(d.at), d.now.Sub(d.wake)); late > d.q.Config.Skew && !outOfLine(j) {
			// Passed while its own worker was late: it came to
			// the gate after the start it wanted, or the gate
			// answered after the start it reserved (a stall, a
			// slow gate write). A missed slot.
			cause = lateBy(late)
		}
		err := e.reticket(ctx, &d.q, j, cause)
		d.leaveKeyUnlessRunning(ctx)
		return stop, err
	}
	return again, nil
}

// leaveKeyUnlessRunning gives up the key the job's ticket may hold after
// the job was parked or re-ticketed at the gate (leaveUnlessRunning).
func (d *delivery) leaveKeyUnlessRunning(ctx context.Context) {
	d.e.leaveUnlessRunning(ctx, d.q, d.j, d.want.Ticket)
}

// claim moves the job, whose ticket passed the gate, from queued to
// running, started at the start the gate reserved. A refused claim means
// another delivery of the same message claimed it first (or it was
// cancelled): the gate this one passed is spent, and the message is done
// with.
func (d *delivery) claim(ctx context.Context) (next, error) {
	e, j := d.e, &d.j
	at := d.gr.Start()
	j.Status, j.StartedAt, j.SentBack, j.RetryAt = job.Running, at, 0, time.Time{}
	j.Record(job.Event{At: at, Kind: job.Started, Attempt: j.Attempt, LatenessMs: at.Sub(j.SlotAt).Milliseconds()})
	err := e.state.UpdateJob(ctx, *j, d.want)
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

// giveUpGate gives up, after a refused claim, the running place the gate
// gave this ticket and the key this delivery took before the gate, unless
// another delivery runs the ticket: the job was cancelled (or purged)
// after this worker read it, and a cancelled job holds nothing.
func (d *delivery) giveUpGate(ctx context.Context) {
	e, q, j := d.e, d.q, d.j
	if q.Config.MaxRunning == 0 && j.Key == "" {
		return
	}
	fresh, err := e.state.GetJob(ctx, j.Ref())
	if err == nil && fresh.Status == job.Running && fresh.Ticket == j.Ticket {
		return
	}
	q.State = d.st
	e.endRun(ctx, q, j.Ticket)
	e.leave(ctx, q, j, j.Ticket, jobGoesOn)
}

// sleepToStart sleeps to the start the gate reserved. A worker that wakes
// more than skew after it (descheduled, stalled) must not start: the next
// ticket may start an interval after the reserved start, less skew. It
// gives the start up (giveUpStart).
func (d *delivery) sleepToStart(ctx context.Context) (next, error) {
	at := d.gr.Start()
	slept := clock.Sleep(ctx, at.Sub(d.e.now()))
	if now := d.e.now(); slept != nil || slot.Overslept(at, now, d.q.Config.Skew) {
		return d.giveUpStart(ctx, max(0, now.Sub(at)))
	}
	return proceed, nil
}

// giveUpStart gives up the start the gate reserved for the job, whose
// worker woke late by late after its claim: the job goes back from
// running to waiting, as if it had not passed the gate, and its slot is
// spent (the gate counted it). A line job takes a new ticket at the end
// of the line (reticket, lateBy); a job out of line is queued again at
// its ticket and goes to the gate again for the next opening (again). Its
// running place, if it took one, is freed; a line job leaves its key. The
// writes are on a context of their own: a job left running would wait
// for its lease.
func (d *delivery) giveUpStart(ctx context.Context, late time.Duration) (next, error) {
	e, j := d.e, &d.j
	rctx, cancel := e.recordContext(ctx)
	defer cancel()
	from := j.Version()
	ticket := j.Ticket
	j.StartedAt = time.Time{}
	if n := len(j.History); n > 0 && j.History[n-1].Kind == job.Started {
		j.History = slices.Clip(j.History[:n-1]) // it did not start
	}
	q := d.q
	q.State = d.st
	e.unstartKey(rctx, q, d.keyPrev, d.keyPut)
	d.keyPrev, d.keyPut = slot.Meter{}, slot.Meter{}
	if !outOfLine(j) {
		err := e.reticket(rctx, &q, j, lateBy(late))
		e.endRun(rctx, q, ticket)
		e.leaveUnlessRunning(rctx, q, *j, ticket)
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
	e.endRun(rctx, q, ticket)
	e.observe(ctx, Event{Kind: EventMissed, Queue: j.Queue, Lateness: late})
	e.log.InfoContext(ctx, "slot missed", "queue", j.Queue, "job_id", j.ID, "ticket", ticket, "late_ms", late.Milliseconds())
	if err := ctx.Err(); err != nil {
		// Queued again with no worker on it: the message must come back.
		return stop, fmt.Errorf("work %s: after a missed start: %w", j.Ref(), err)
	}
	// Its slot is spent: it takes the next opening, queued again as it was.
	d.wake = time.Time{}
	return again, nil
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
	runErr := e.runTarget(tctx, *j, q.Config, func() error { return d.begin(ctx) })
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
	if at := d.gr.Start(); slot.Overslept(at, now, q.Config.Skew) {
		d.late = now.Sub(at)
		return errOverslept
	}
	gap, hasGap := startGap(q.State, d.st, q.Config.Tick(), now)
	e.observe(ctx, Event{Kind: EventStart, Queue: j.Queue, Lateness: now.Sub(j.SlotAt), Gap: gap, HasGap: hasGap,
		Start: &Start{JobID: j.ID, Ticket: j.Ticket, Attempt: j.Attempt, SlotAt: j.SlotAt, GateAt: j.StartedAt, At: now, Key: j.Key}})
	e.log.InfoContext(ctx, "start", "queue", j.Queue, "ticket", j.Ticket, "job_id", j.ID,
		"slot_at", j.SlotAt, "gate_at", j.StartedAt, "lateness_ms", now.Sub(j.SlotAt).Milliseconds(),
		"attempt", j.Attempt, "target", j.What(), "key", j.Key)
	return nil
}

// recordOutcome records the attempt's outcome on a context of its own
// (recordContext): the target may have used up ctx (its deadline came, or
// it was cancelled), and an outcome not recorded is an attempt run again
// after the lease.
func (d *delivery) recordOutcome(ctx context.Context, runErr error) error {
	rctx, cancel := d.e.recordContext(ctx)
	defer cancel()
	return d.e.recordOutcome(rctx, d.q, d.j, d.st, runErr)
}

// awaitRecord reads the job an envelope carries. Writers send a job's
// message before they write its record, so a fresh message may find the
// record missing or behind it (an older ticket, or still parked at this
// ticket): awaitRecord reads again, with backoff, until RecordGrace after
// the message was sent. A record still behind then was never written (its
// writer died), and the message is stale. waited says the record was
// behind the message when first read.
//
// A record that keeps it waiting past recordHold lets the later messages
// of its queue in the worker's batch go on (GateDone): a record that
// lags that long is rare, and mostly one that will never come (a
// re-ticket that lost to a duplicate, a concurrent enqueue of the same
// id), so the batch is not held up for RecordGrace.
func (e *Engine) awaitRecord(ctx context.Context, env job.Envelope) (j job.Job, waited bool, err error) {
	wait := time.Millisecond // a message due at once may come just before its record
	began := e.now()
	for {
		j, err = e.state.GetJob(ctx, env.Ref())
		if err != nil && !errors.Is(err, ErrJobNotFound) {
			return j, waited, err
		}
		// A record of another generation may be a deleted queue's job
		// of the same id, not yet replaced by the new one's.
		behind := err != nil || j.Gen != env.Gen || j.Ticket < env.Ticket ||
			(j.Ticket == env.Ticket && j.Attempt == env.Attempt && j.Status == job.Parked)
		if !behind || env.SentAt.IsZero() || e.now().Add(wait).After(env.SentAt.Add(e.opts.RecordGrace)) {
			return j, waited, err
		}
		waited = true
		if e.now().Sub(began) >= recordHold {
			GateDone(ctx)
		}
		if err := clock.Sleep(ctx, wait); err != nil {
			return j, waited, err
		}
		wait = min(2*wait, time.Second)
	}
}

// recordHold is how long a message waiting for its record holds up the
// later messages of its queue in a batch (see awaitRecord).
const recordHold = 100 * time.Millisecond

// ErrStillRunning is Work's answer to a message whose attempt is running
// and within its lease: the transport should deliver it again later. The
// message is the attempt's watchdog: if the worker running it dies, the
// message comes back after the lease and Work recovers the attempt; if the
// attempt ends, the message is stale then and dropped.
var ErrStillRunning = errors.New("attempt still running")

// recoverIfLost handles a delivery of the message whose attempt j is
// running: a duplicate delivery, or the redelivery of a message whose
// worker died. Past the lease the attempt is lost: it fails, and is
// retried like any failed attempt (so a crashed attempt may run again:
// slotq is at-least-once).
func (e *Engine) recoverIfLost(ctx context.Context, j job.Job) error {
	now := e.now()
	if now.Sub(j.StartedAt) < e.opts.Lease {
		return fmt.Errorf("work %s: %w (started %v)", j.Ref(), ErrStillRunning, j.StartedAt)
	}
	q, err := e.state.GetQueue(ctx, j.Queue)
	if errors.Is(err, ErrQueueNotFound) || err == nil && q.Gen != j.Gen {
		return e.expireOfDeletedQueue(ctx, j)
	}
	if err != nil {
		return fmt.Errorf("work %s: %w", j.Ref(), err)
	}
	e.log.WarnContext(ctx, "attempt lost", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "started_at", j.StartedAt)
	rctx, cancel := e.recordContext(ctx)
	defer cancel()
	return e.recordOutcome(rctx, q, j, q.State, errors.New("attempt lost: its worker stopped before recording an outcome"))
}

// expireOfDeletedQueue ends a job whose queue was deleted (or deleted and
// created again: another generation) as its message comes: a waiting job is cancelled, a
// running one (its worker died, or this is the watchdog) failed, and
// either expires at once, so it reads as not found and DynamoDB's TTL
// removes it. The message is done with.
func (e *Engine) expireOfDeletedQueue(ctx context.Context, j job.Job) error {
	from := j.Version()
	now := e.now()
	j.Status = job.Cancelled
	if from.Status == job.Running {
		j.Status = job.Failed
	}
	j.FinishedAt, j.ExpiresAt, j.ParkReason, j.DueAt = now, now, "", time.Time{}
	j.LastError = "queue deleted"
	j.Record(job.Event{At: now, Kind: job.EventKind(j.Status), Error: j.LastError})
	err := e.state.UpdateJob(ctx, j, from)
	if err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrJobNotFound) {
		return fmt.Errorf("work %s: expire job of deleted queue: %w", j.Ref(), err)
	}
	e.log.WarnContext(ctx, "expired job of deleted queue", "queue", j.Queue, "job_id", j.ID, "gen", j.Gen, "status", string(from.Status))
	return nil
}

// leaveIfGone gives up the key j took in this invocation when j's record
// shows that it no longer waits at ticket (it was cancelled or purged
// after this worker read it): a cancelled job holds nothing. A job parked
// for a running place, or handed back, keeps its key.
func (e *Engine) leaveIfGone(ctx context.Context, q Queue, j job.Job, ticket int64) {
	fresh, err := e.state.GetJob(ctx, j.Ref())
	if err != nil && !errors.Is(err, ErrJobNotFound) {
		return // unknown: its lease frees the key
	}
	if err == nil && fresh.Ticket == ticket && (fresh.Status.Waiting() || fresh.Status == job.Running) {
		return
	}
	e.leave(ctx, q, j, ticket, jobGoesOn)
}

// deadGeneration reads j's queue after j was written parked, and expires
// j (expireOfDeletedQueue) if the queue was deleted meanwhile: DeleteQueue removes the
// queue before it lists the parked jobs it expires, so a park either
// lands before that listing (and is expired there) or finds the queue
// gone here. Nothing else would ever look at a parked job of a deleted
// generation. It reports whether j was expired.
func (e *Engine) deadGeneration(ctx context.Context, j *job.Job) bool {
	return e.expireIfDead(ctx, j.Queue, j.Gen, []*job.Job{j}) > 0
}

// expireIfDead reads queue after jobs of generation gen were written,
// and if the queue is gone or of another generation, expires those of
// them that were written parked (see deadGeneration). It returns how
// many it expired; with no parked job among them it reads nothing.
func (e *Engine) expireIfDead(ctx context.Context, queue string, gen int64, jobs []*job.Job) int {
	var parked []*job.Job
	for _, j := range jobs {
		if j.Status == job.Parked {
			parked = append(parked, j)
		}
	}
	if len(parked) == 0 {
		return 0
	}
	q, err := e.state.GetQueue(ctx, queue)
	if err == nil && q.Gen == gen || err != nil && !errors.Is(err, ErrQueueNotFound) {
		return 0
	}
	for _, j := range parked {
		if err := e.expireOfDeletedQueue(ctx, *j); err != nil {
			e.log.WarnContext(ctx, "parked job of a deleted queue not expired", "queue", j.Queue, "job_id", j.ID, "error", err.Error())
		}
	}
	return len(parked)
}

// cancelPurged cancels a job whose ticket a purge covered.
func (e *Engine) cancelPurged(ctx context.Context, q Queue, j job.Job) error {
	if err := e.cancel(ctx, q.Config, j); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil
		}
		return fmt.Errorf("work %s: cancel purged job: %w", j.Ref(), err)
	}
	e.takeOffLanes(ctx, q, j)
	e.log.InfoContext(ctx, "cancelled by purge", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket)
	return nil
}

// claimedMeanwhile reads the job again, strongly, and reports whether it is
// no longer queued at want: someone else claimed (or cancelled) it, so this
// message is done with.
func (e *Engine) claimedMeanwhile(ctx context.Context, want job.Version, j *job.Job) (bool, error) {
	fresh, err := e.state.GetJob(ctx, j.Ref())
	if errors.Is(err, ErrJobNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("work %s: %w", j.Ref(), err)
	}
	if fresh.Version() != want {
		e.log.DebugContext(ctx, "dropped duplicate delivery", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "status", fresh.Status)
		return true, nil
	}
	*j = fresh
	return false, nil
}

// holdUntil is when j may try the gate if the lower tickets still ahead of
// it start on time: when the gate opens after they started, each at its
// opening (slot.OpenAfter: for the interval form one interval after the
// last start per ticket between). Only the tickets that can be in flight
// now count: one, plus one per tick that j itself is late (a queue that
// runs behind has that many neighbours waiting at once). So a lower
// ticket that never comes (lost, or a job scheduled for later) costs a
// late job little, and an on-time job at most one interval, once.
func holdUntil(q Queue, j *job.Job, now time.Time) time.Time {
	st := q.State
	ahead := j.Ticket - st.Current - 1
	if ahead <= 0 || outOfLine(j) {
		return time.Time{}
	}
	inFlight := int64(max(0, now.Sub(j.SlotAt))/q.Config.Tick()) + 1
	return slot.OpenAfter(st, q.Config.LimitList(), int(min(ahead, inFlight)))
}

// holdTurn is, for a job that holds for lower tickets (holdUntil), when
// it may go to the gate by the clock: at the due start of the nearest of
// them, until which that one may still pass the gate for its own start.
// Workers go to the gate a lead ahead of their starts; two of them given
// their messages at once (a burst, a late delivery) would otherwise race
// for the gate, and the higher ticket could pass the lower one by a hair.
func holdTurn(q Queue, j *job.Job, at time.Time) time.Time {
	if holdUntil(q, j, at).IsZero() {
		return time.Time{}
	}
	ahead := j.Ticket - q.State.Current - 1
	inFlight := int64(max(0, at.Sub(j.SlotAt))/q.Config.Tick()) + 1
	return slot.OpenAfter(q.State, q.Config.LimitList(), int(min(ahead, inFlight))-1)
}

// missedBefore reports whether j's attempt gave a slot up already for a
// late worker (job.SlotMissed): it does not again before the gate, but
// starts late. So a transport that delivers every message late cannot
// keep a job from starting; each such start moves the line behind it by
// its lateness, as any late start did before the gate reserved starts.
func missedBefore(j *job.Job) bool {
	for _, ev := range j.History {
		if ev.Kind == job.SlotMissed && ev.Attempt == j.Attempt {
			return true
		}
	}
	return false
}

// gateDoneKey is the context key of OnGateDone's callback.
type gateDoneKey struct{}

// OnGateDone returns ctx carrying fn, which Work calls once it is done with
// the gate for its message: once the gate reserved its attempt's start and
// the attempt is claimed (before the worker sleeps to that start), or as
// Work returns without starting anything. A worker that works one queue's
// messages in order (sqstransport.WorkBatch) lets the next message go on
// from there, so neither a start a lead ahead nor a slow target holds up
// a later job.
func OnGateDone(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, gateDoneKey{}, fn)
}

// GateDone calls ctx's OnGateDone callback, if any: Work does, once its
// attempt is claimed; a stand-in for Work may too.
func GateDone(ctx context.Context) {
	if fn, ok := ctx.Value(gateDoneKey{}).(func()); ok {
		fn()
	}
}

// aheadOfLine is how much sooner than Lead before its start j goes to the
// gate: a quarter of the skew for a job out of line, none for a line job.
// On a queue that runs behind, line jobs wait for every opening, and a
// job out of line (scheduled, or sent on by a lane) would meet one of
// them there each time and win only by chance; this way it comes to the
// gate first, for the same start. (Making the line job come later
// instead would make its start later, and every start after it, since
// the gate lets none through early.)
func aheadOfLine(j *job.Job, cfg slot.Config) time.Duration {
	if outOfLine(j) {
		return cfg.Skew / 4
	}
	return 0
}

// outOfLine reports whether j passes the gate by the spacing alone, not by
// its ticket: a scheduled job, or one that waited on a lane.
func outOfLine(j *job.Job) bool { return j.Scheduled || j.Detached }

// parkForGate parks the job until its gate opens at wake, further away
// than the transport can delay a message: the resume function sends it
// once, with the exact delay (job.WaitGate), where hand-backs would
// re-send it every 15 minutes. A job that holds its key keeps it
// meanwhile, as a handed-back one does.
func (d *delivery) parkForGate(ctx context.Context) error {
	e, j, wake := d.e, &d.j, d.wake
	if d.holding {
		e.keepHold(ctx, j, wake)
	}
	from := j.Version()
	now := e.now()
	j.Status, j.ParkReason, j.DueAt = job.Parked, job.WaitGate, wake.Add(-e.transport.MaxDelay())
	j.Record(job.Event{At: now, Kind: job.ParkedEvent, Reason: string(job.WaitGate), DelayMs: wake.Sub(now).Milliseconds()})
	if err := e.state.UpdateJob(ctx, *j, from); err != nil {
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrJobNotFound) {
			return nil // moved on (cancelled, or run by another delivery)
		}
		return fmt.Errorf("park %s until its gate opens: %w", j.Ref(), err)
	}
	if e.deadGeneration(ctx, j) {
		return nil
	}
	e.observe(ctx, Event{Kind: EventPark, Queue: j.Queue})
	e.log.InfoContext(ctx, "parked until its gate opens", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "opens_at", wake)
	return nil
}

// keepHold makes the hold j has on its key last until a lease after wake.
func (e *Engine) keepHold(ctx context.Context, j *job.Job, wake time.Time) {
	w := slot.Waiter{Ticket: j.Ticket, JobID: j.ID}
	until := laterOf(wake, e.now()).Add(e.opts.Lease)
	q := Queue{Name: j.Queue, Gen: j.Gen}
	if err := e.updateLane(ctx, q, j.Key, func(l slot.Lane) slot.Lane {
		return l.Extend(w, until)
	}); err != nil {
		e.log.WarnContext(ctx, "key's hold not kept while away", "queue", j.Queue, "job_id", j.ID, "key", j.Key, "error", err.Error())
	}
}

// handBack hands the job back to the transport, to come again for wake
// (Engine.handBack). A job that holds its key keeps it while it is away:
// its hold is made to last until a lease after it comes back, or the
// resume function would hand the key on meanwhile and the job, back,
// would find itself overtaken.
func (d *delivery) handBack(ctx context.Context) error {
	if d.holding {
		d.e.keepHold(ctx, &d.j, d.wake)
	}
	return d.e.handBack(ctx, &d.j, d.wake)
}

// handBack sends the job's envelope again to arrive at wake, by the clock
// as it goes: the slot lies past this invocation's deadline.
func (e *Engine) handBack(ctx context.Context, j *job.Job, wake time.Time) error {
	env := j.Envelope()
	env.SentAt = e.now()
	wait := e.delayTo(wake, env.SentAt)
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
	e.observe(ctx, Event{Kind: EventHandBack, Queue: j.Queue})
	e.log.DebugContext(ctx, "handed back", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "delay_ms", wait.Milliseconds())
	return nil
}

// park stores a queued job as parked, for the resume function.
func (e *Engine) park(ctx context.Context, j *job.Job, why job.ParkReason) error {
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
	e.observe(ctx, Event{Kind: EventPark, Queue: j.Queue})
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
func (e *Engine) reticket(ctx context.Context, q *Queue, j *job.Job, cause reticketCause) error {
	op := "re-ticket"
	if cause.missed {
		op = "missed slot"
	}
	from := j.Version()
	old := j.Ticket
	orig := *j
	if err := e.assign(ctx, q, []*job.Job{j}); err != nil {
		return fmt.Errorf("%s %s/%s: %w", op, j.Queue, j.ID, err)
	}
	if old <= q.State.Purged {
		*j = orig
		return e.cancelPurged(ctx, *q, orig)
	}
	j.Retickets++
	j.SentBack++
	ev := job.Event{At: e.now(), Kind: job.Reticketed, OldTicket: old, Ticket: j.Ticket}
	if cause.missed {
		j.StartedAt = time.Time{}
		ev.Kind, ev.Attempt, ev.LatenessMs = job.SlotMissed, j.Attempt, cause.late.Milliseconds()
	}
	j.Record(ev)
	e.place(j, q.State)
	e.sendQueued(ctx, []*job.Job{j}) // message first, as in Enqueue
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
		e.observe(ctx, Event{Kind: EventReticket, Queue: j.Queue})
		e.log.InfoContext(ctx, "re-ticketed", "queue", j.Queue, "job_id", j.ID, "old_ticket", old, "ticket", j.Ticket, "slot_at", j.SlotAt)
		return nil
	}
	e.observe(ctx, Event{Kind: EventMissed, Queue: j.Queue, Lateness: cause.late})
	e.observe(ctx, Event{Kind: EventReticket, Queue: j.Queue})
	e.log.InfoContext(ctx, "slot missed", "queue", j.Queue, "job_id", j.ID, "old_ticket", old, "ticket", j.Ticket,
		"slot_at", j.SlotAt, "late_ms", cause.late.Milliseconds())
	return nil
}

// recordContext is the context of the writes after a target: ctx's values
// without its cancellation or deadline, bounded by RecordTimeout. The
// budget Work checked before the gate keeps RecordTimeout for them.
func (e *Engine) recordContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), e.opts.RecordTimeout)
}

// runTarget runs one attempt of j through the Runner, bounded by the
// queue's target timeout whatever the target (Go handlers included), and
// turns a panic into the attempt's error. A target that ignores its
// context is not waited for past the timeout: its goroutine is left to
// finish on its own, and the attempt fails (and is retried, so such a
// target may run twice at once).
func (e *Engine) runTarget(ctx context.Context, j job.Job, cfg slot.Config, begin func() error) error {
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
		done <- e.runner.Run(tctx, &j, cfg)
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
	return "panic: " + cut(fmt.Sprint(e.Value), maxPanicValue) + "\n" + cut(string(e.Stack), maxStack)
}

// maxLastError bounds a job's LastError, so an error of any size keeps
// the job record within the store's item limits.
const maxLastError = 4096

// lastError is err's text, cut to maxLastError bytes.
func lastError(err error) string { return cut(err.Error(), maxLastError) }

// cut returns s cut to at most n bytes (on a rune boundary), marked "…"
// when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// recordOutcome records an attempt's outcome: succeeded, or, for a failed
// attempt, a retry or the dead letter (retryOrDeadLetter); for a target's
// "slow down", a wait at its ticket (slowDown).
func (e *Engine) recordOutcome(ctx context.Context, q Queue, j job.Job, st slot.State, runErr error) error {
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
func (e *Engine) retryOrDeadLetter(ctx context.Context, q Queue, j job.Job, st slot.State, runErr error, now time.Time) error {
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
	e.observe(ctx, Event{Kind: EventDeadLetter, Queue: j.Queue})
	e.log.ErrorContext(ctx, "job failed", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "attempt", j.Attempt, "error", runErr)
	return nil
}

// end writes the final record of j (succeeded or failed; it was at from)
// and hands on what its attempt held. It reports whether it wrote: a
// record that moved on meanwhile keeps its own story.
func (e *Engine) end(ctx context.Context, q Queue, j job.Job, from job.Version, st slot.State) (bool, error) {
	if err := e.state.UpdateJob(ctx, j, from); err != nil {
		if errors.Is(err, ErrConflict) {
			e.log.WarnContext(ctx, "outcome not recorded: job moved on", "queue", j.Queue, "job_id", j.ID)
			return false, nil
		}
		return false, fmt.Errorf("record %s/%s: %w", j.Queue, j.ID, err)
	}
	e.endAttempt(ctx, q, st, j, j.Ticket, jobEnded)
	return true, nil
}

// retry gives a failed attempt's job a new ticket no earlier than its
// backoff: a retry is a start like any other and keeps the queue's rate.
func (e *Engine) retry(ctx context.Context, q Queue, j job.Job, st slot.State, runErr error, now time.Time) error {
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
	err := e.assign(ctx, &q, []*job.Job{&j})
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
	e.place(&j, q.State)
	e.sendQueued(ctx, []*job.Job{&j}) // message first, as in Enqueue
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
	e.observe(ctx, Event{Kind: EventAttemptFailed, Queue: j.Queue})
	e.observe(ctx, Event{Kind: EventRetry, Queue: j.Queue})
	e.log.WarnContext(ctx, "attempt failed; retrying", "queue", j.Queue, "job_id", j.ID,
		"attempt", j.Attempt, "ticket", j.Ticket, "slot_at", j.SlotAt, "error", runErr)
	return nil
}

// endAttempt hands on what the attempt of ticket held once its outcome is
// recorded: its running place (a capped queue) and its key. exit says
// whether the job ended for good or goes on (a retry).
func (e *Engine) endAttempt(ctx context.Context, q Queue, st slot.State, j job.Job, ticket int64, exit keyExit) {
	q.State = st
	e.endRun(ctx, q, ticket)
	e.leave(ctx, q, j, ticket, exit)
}
