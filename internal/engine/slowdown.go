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

// Slow down. A target may answer that it takes no more calls for a while
// (attempt.RetryAfterError: an HTTP 429 or 503, a Lambda function's
// RetryAfterError, a Go handler's target.RetryAfter). The attempt is not
// a failed one: the engine records the slow-down where the job's starts
// are counted (slowDownAt) — on the queue's state, or on the key's meter
// when the key has a limit of its own, so that only that key waits — and
// the job goes back to waiting at its own ticket, out of line (Detached,
// so that neither a later ticket passes it nor is it taken for late), its
// slot the slow-down's end, its message sent to come then. The gate lets
// nothing of the queue (or the key) start before that end, and the
// answered ticket first after it (slot.SlowOpen). The queue's
// max_slow_downs bounds how often one job is answered so: past it the job
// fails with the last answer (ErrSlowedDownTooOften). A job that is never
// slowed down costs no write more.

// ErrSlowedDownTooOften is the error of a job whose target answered "slow
// down" more often than its queue's max_slow_downs: it fails for good,
// with the target's last answer.
var ErrSlowedDownTooOften = errors.New("slowed down too often")

// slowDownOf returns the slow-down runErr carries, if any.
func slowDownOf(runErr error) (*attempt.RetryAfterError, bool) {
	var ra *attempt.RetryAfterError
	return ra, errors.As(runErr, &ra)
}

// slowDown records a slow-down answered to j's attempt (ra) at now: past
// the queue's bound the job fails; else the slow-down is written
// (slowDownAt) and the job waits for its end (requeueSlowed). An error
// leaves the job running: its message comes again, and after its lease
// the attempt is taken for lost.
func (e *worker) slowDown(ctx context.Context, q Queue, j job.Job, st slot.State, ra *attempt.RetryAfterError, now time.Time) error {
	bound := q.Config.MaxSlowDowns
	if bound == 0 {
		bound = slot.DefaultMaxSlowDowns
	}
	if j.SlowDowns >= bound {
		err := fmt.Errorf("%w (%d times; the queue's max_slow_downs is %d): %w", ErrSlowedDownTooOften, j.SlowDowns+1, bound, ra)
		return e.retryOrDeadLetter(ctx, q, j, st, err, now)
	}
	wait := slowWait(q.Config, ra)
	until := now.Add(wait)
	what, err := e.slowDownAt(ctx, q, &j, until)
	if errors.Is(err, ErrQueueNotFound) {
		return e.expireOfDeletedQueue(ctx, j)
	}
	if err != nil {
		return fmt.Errorf("slow down %s: %w", j.Ref(), err)
	}
	return e.requeueSlowed(ctx, q, j, st, ra, what, until, wait)
}

// slowWait is how long ra asks its queue (or key) to wait: its own
// time, or the queue's retry_after_default when it names none, at most
// slot.MaxSlowDown.
func slowWait(cfg slot.Config, ra *attempt.RetryAfterError) time.Duration {
	wait := ra.Wait
	if wait <= 0 {
		wait = cfg.RetryAfterDefault
	}
	if wait <= 0 {
		wait = slot.DefaultRetryAfter
	}
	return min(wait, slot.MaxSlowDown)
}

// slowDownAt writes the slow-down until where j's starts are counted:
// its key's meter when its key has a limit of its own (slowKey), else
// its queue's state (State.SlowDown). It says which: "key" or "queue".
// The others wait for j's ticket a tick of the limit after until, at
// least slowHoldFloor (slowFirstFor).
func (e *worker) slowDownAt(ctx context.Context, q Queue, j *job.Job, until time.Time) (string, error) {
	if keyed(q, j) {
		if ok, err := e.slowKey(ctx, q, j, until); ok || err != nil {
			return "key", err
		}
	}
	if cfg := q.Config; cfg.BooksStarts() {
		// The queue turns gated with nothing settled (SlowDownRequest.Gate):
		// the slow-down outlasts every booked start that passed by a
		// read, and an interval after it.
		ls := cfg.LimitList()
		until = laterOf(until, e.settling(cfg, e.now()).By.Add(ls.BookedRoom(cfg.Skew)+ls.Spacing()))
	}
	hold := e.slowFirstFor(until, q.Config.Tick())
	if q.Config.Bounded() {
		hold = until // its job is booked again (requeueSlowed): nobody waits for its ticket
	}
	r := SlowDownRequest{Queue: j.Queue, Gen: j.Gen, Ticket: j.Ticket, Until: until, Hold: hold, Answer: slowAnswer(j), Gate: q.Config.BooksStarts()}
	_, err := e.state.SlowDown(ctx, r)
	return "queue", err
}

// slowAnswer names the slow-down j's attempt was answered: its ticket,
// attempt and the slow-downs it had before. A write of it that landed
// and is sent again (the SDK's retry, a retry after a conflict) finds
// it counted (slot.SlowCounted).
func slowAnswer(j *job.Job) string { return fmt.Sprintf("%d.%d.%d", j.Ticket, j.Attempt, j.SlowDowns) }

// slowKey writes the slow-down until on j's key's meter, a
// compare-and-set as keyGate's, if the key has a limit of its own (its
// own, or the queue's key_limits); it reports whether it did. A key
// without one (a meter that only keeps the order of a key_max_running
// above one) leaves the slow-down to the queue.
func (e *worker) slowKey(ctx context.Context, q Queue, j *job.Job, until time.Time) (bool, error) {
	for try := 0; ; try++ {
		m, err := e.lanes.readMeter(ctx, q, j.Key)
		if err != nil {
			return false, err
		}
		ls := q.Config.LimitsOf(m)
		if len(ls) == 0 {
			return false, nil
		}
		answer := slowAnswer(j)
		if slot.SlowCounted(m.State, j.Ticket, answer) {
			return true, nil // a write of it landed, its answer lost
		}
		hold := e.keySlowFirstFor(until, ls.Tick())
		if q.Config.Bounded() {
			hold = until // as slowDownAt's
		}
		next := m.SlowDown(j.Ticket, until, hold, e.now(), answer)
		_, err = e.state.PutMeter(ctx, next, m.Version, next.Keep(ls))
		if err == nil || !errors.Is(err, ErrConflict) || try >= meterTries {
			return err == nil, err
		}
	}
}

// slowFirstFor is how long after a slow-down's end (until) the others wait
// for the answered job to start first: a tick of the limit (its next
// start could not come sooner anyway), and at least two leads and
// slowHoldFloor: the others go to the gate a lead before their start,
// and the answered job's worker, woken a lead before until, must be
// through the gate before them. A job that never comes back holds the
// others no longer.
func (e *worker) slowFirstFor(until time.Time, tick time.Duration) time.Time {
	return until.Add(max(tick, 2*e.opts.Lead, slowHoldFloor))
}

// keySlowFirstFor is how long after a key's slow-down ends (until) the key's
// other jobs wait for the answered one to start first: a lease. Unlike
// a queue's answered job, a key's must still win an opening of its
// queue, which the other keys' jobs take meanwhile, so a tick would not
// do; the others look again every tick of the key's limit (awaitKeyed),
// and a job that never comes back holds its key no longer than a lease.
func (e *worker) keySlowFirstFor(until time.Time, tick time.Duration) time.Time {
	return laterOf(until.Add(e.opts.Lease), e.slowFirstFor(until, tick))
}

// slowHoldFloor is the shortest wait for the answered job (slowFirstFor): a
// second, as the answered job's message may come late (SQS's delivery,
// a busy store) and a lost one costs the others no more.
const slowHoldFloor = time.Second

// slowHeld reports whether the slow-down on the queue's state st holds
// j's start at at.
func slowHeld(st slot.State, j *job.Job, at time.Time) bool {
	_, ok := heldBySlowDown(st, j.Ticket, at)
	return ok
}

// heldBySlowDown reports whether the slow-down on st (the queue's state,
// or a key's meter) holds ticket's start at at, and until when.
func heldBySlowDown(st slot.State, ticket int64, at time.Time) (time.Time, bool) {
	open := slot.SlowOpen(st, ticket, at)
	return open, !open.IsZero()
}

// awaitSlowDown frees the worker of a job that a slow-down holds until
// open: its message is sent again to come then (parked until then when
// that is beyond the transport's reach), and this one is done with. A
// worker that slept through the slow-down would hold its message, and
// with as many held messages as workers the answered job's own message
// would find no worker to go first. It costs a send, and no write, for
// each job that meets the slow-down at its gate.
func (d *delivery) awaitSlowDown(ctx context.Context, open time.Time) (next, error) {
	e, j := d.e, &d.j
	d.wake = open
	if open.Sub(e.now()) > e.transport.MaxDelay() {
		return stop, d.parkForGate(ctx)
	}
	if d.holding {
		e.keepKeyWhileAway(ctx, j, open)
	}
	env := j.Envelope()
	env.SentAt = e.now()
	if err := e.transport.Send(ctx, []Message{{Envelope: env, Delay: e.enqueuer.delayTo(open, env.SentAt)}}); err != nil {
		// The message comes again from the transport instead.
		return stop, fmt.Errorf("work %s: send again after its queue's slow-down: %w", j.Ref(), err)
	}
	e.log.DebugContext(ctx, "held by a slow-down", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "until", open)
	return stop, nil
}

// awaitKeyed is awaitSlowDown for a job whose key's slow-down (on meter
// m) holds it until open: once the slow-down has ended and the key waits
// for its answered job to start (keySlowFirstFor), it looks again a tick of the
// key's limit later rather than at the hold's end.
func (d *delivery) awaitKeyed(ctx context.Context, m slot.Meter, open time.Time) (next, error) {
	if !d.at.Before(m.State.SlowUntil) {
		tick := max(d.q.Config.LimitsOf(m).Tick(), slowHoldFloor)
		open = earlierOf(open, d.at.Add(tick))
	}
	return d.awaitSlowDown(ctx, open)
}

func earlierOf(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// requeueSlowed puts j, whose attempt was answered "slow down until
// until", back to waiting at its ticket: out of line, its slot until, its
// message sent first (or parked, if until is beyond the transport's
// reach), its history recording the answer. Its running place is freed;
// a key it holds stays held until a lease after until, so it keeps its
// place among its key's jobs.
func (e *worker) requeueSlowed(ctx context.Context, q Queue, j job.Job, st slot.State, ra *attempt.RetryAfterError, what string, until time.Time, wait time.Duration) error {
	from, ticket := j.Version(), j.Ticket
	q.State = st
	j.StartedAt, j.SlotAt, j.Detached = time.Time{}, until, true
	j.Result, j.ResultDropped = nil, 0 // a result is the outcome's
	j.SlowDowns++
	j.Record(job.Event{At: e.now(), Kind: job.SlowedDown, Attempt: j.Attempt, DelayMs: wait.Milliseconds(), Reason: what, Error: answerOf(ra)})
	if q.Config.Bounded() {
		return e.rebookSlowed(ctx, q, j, st, from, ticket, until)
	}
	e.enqueuer.sendOrPark(&j, q.State)
	e.enqueuer.sendQueued(ctx, []*job.Job{&j}) // message first, as in Enqueue
	if err := e.state.UpdateJob(ctx, j, from); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil
		}
		return fmt.Errorf("slow down %s: %w", j.Ref(), err)
	}
	if e.deadGeneration(ctx, &j) {
		return nil
	}
	e.lanes.endRun(ctx, q, ticket)
	if j.Key != "" && q.Config.KeyCap() != 0 {
		e.keepKeyWhileAway(ctx, &j, until)
	}
	e.observe(ctx, Event{Kind: EventSlowedDown, Queue: j.Queue})
	e.log.WarnContext(ctx, "slowed down by its target", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket,
		"key", j.Key, "slowed", what, "until", until, "slow_downs", j.SlowDowns, "answer", answerOf(ra))
	return nil
}

// rebookSlowed is requeueSlowed on a bounded queue (waitroom.go): its
// booking ended with its start, so the start it waits for needs one of
// its own, or the queue and its key would hold one slot more than their
// bounds. As a missed start (rebookMissed), it goes through the waiting
// room: booked at once, with a new ticket and a slot no earlier than the
// slow-down's end (its earliest start), if the bounds leave room and
// nobody waits; else into the room. So it does not go first after the
// slow-down (slowDownAt holds nobody for it). The new booking is entered
// before the record is written; the old one, still held for a key that
// runs one job at a time (keyHeld), is freed after it (endKeptBooking).
func (e *worker) rebookSlowed(ctx context.Context, q Queue, j job.Job, st slot.State, from job.Version, ticket int64, until time.Time) error {
	ran := j
	ran.Ticket = ticket
	j.SlotAt, j.Detached = time.Time{}, false
	j.RetryAt = laterOf(j.RetryAt, until)
	keyAhead, _, spare, err := e.room.admit(ctx, q, []*job.Job{&j})
	if err == nil {
		_, err = e.enqueuer.assignSlots(ctx, &q, []*job.Job{&j}, false, keyAhead, time.Time{})
	}
	if errors.Is(err, ErrQueueNotFound) {
		return e.expireOfDeletedQueue(ctx, ran)
	}
	if err != nil {
		return fmt.Errorf("slow down %s: %w", j.Ref(), err)
	}
	if j.Ticket != ticket {
		j.Retickets++
		j.Record(job.Event{At: e.now(), Kind: job.Reticketed, OldTicket: ticket, Ticket: j.Ticket, Attempt: j.Attempt})
	}
	e.enqueuer.sendOrPark(&j, q.State)
	e.enqueuer.sendQueued(ctx, []*job.Job{&j}) // message first, as in Enqueue
	err = e.state.UpdateJob(ctx, j, from)
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrJobNotFound) {
		e.room.freeBooking(ctx, q, j) // a duplicate got there first: this booking holds nothing
		return nil
	}
	if err != nil {
		return fmt.Errorf("slow down %s: %w", j.Ref(), err)
	}
	if e.deadGeneration(ctx, &j) {
		return nil
	}
	e.endAttempt(ctx, q, st, ran, ticket, jobGoesOn)
	e.room.endKeptBooking(ctx, q, ran)
	if spare {
		e.room.bookNext(ctx, q)
	}
	e.observe(ctx, Event{Kind: EventSlowedDown, Queue: j.Queue})
	e.log.WarnContext(ctx, "slowed down by its target: booked again", "queue", j.Queue, "job_id", j.ID, "old_ticket", ticket, "ticket", j.Ticket,
		"key", j.Key, "until", until, "slot_at", j.SlotAt, "waiting", inRoom(&j), "slow_downs", j.SlowDowns)
	return nil
}

// answeredAtTicket reports whether j's last slow-down answered an attempt
// at the ticket j holds now (no new ticket since): that ticket started on
// its key in order, and keeps its place after the wait
// (slot.KeyResume), though later tickets of its key started meanwhile.
func answeredAtTicket(j *job.Job) bool {
	if j.SlowDowns == 0 {
		return false
	}
	for i := len(j.History) - 1; i >= 0; i-- {
		switch j.History[i].Kind {
		case job.SlowedDown:
			return true
		case job.Enqueued, job.Retried, job.Reticketed, job.Rerun, job.BookedEvent:
			return false
		}
	}
	return false
}

// answerOf is the target's answer ra carries, for the job's history: its
// Answer, else its text.
func answerOf(ra *attempt.RetryAfterError) string {
	if ra.Answer != "" {
		return ra.Answer
	}
	return ra.Error()
}
