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
func (e *Engine) slowDown(ctx context.Context, q Queue, j job.Job, st slot.State, ra *attempt.RetryAfterError, now time.Time) error {
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
	what, err := e.slowDownAt(ctx, q, &j, until, until.Add(e.opts.Lease))
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

// slowDownAt writes the slow-down until (the others waiting for j's
// ticket until hold) where j's starts are counted: its key's meter when
// its key has a limit of its own (a compare-and-set, as keyGate's), else
// its queue's state (State.SlowDown). It says which: "key" or "queue".
func (e *Engine) slowDownAt(ctx context.Context, q Queue, j *job.Job, until, hold time.Time) (string, error) {
	if !keyed(q, j) {
		_, err := e.state.SlowDown(ctx, SlowDownRequest{Queue: j.Queue, Gen: j.Gen, Ticket: j.Ticket, Until: until, Hold: hold})
		return "queue", err
	}
	for try := 0; ; try++ {
		m, err := e.readMeter(ctx, q, j.Key)
		if err != nil {
			return "key", err
		}
		next := m
		next.State = slot.SlowDown(m.State, j.Ticket, until, hold)
		_, err = e.state.PutMeter(ctx, next, m.Version, next.Keep(q.Config.LimitsOf(next)))
		if err == nil || !errors.Is(err, ErrConflict) || try >= meterTries {
			return "key", err
		}
	}
}

// requeueSlowed puts j, whose attempt was answered "slow down until
// until", back to waiting at its ticket: out of line, its slot until, its
// message sent first (or parked, if until is beyond the transport's
// reach), its history recording the answer. Its running place is freed;
// a key it holds stays held until a lease after until, so it keeps its
// place among its key's jobs.
func (e *Engine) requeueSlowed(ctx context.Context, q Queue, j job.Job, st slot.State, ra *attempt.RetryAfterError, what string, until time.Time, wait time.Duration) error {
	from, ticket := j.Version(), j.Ticket
	q.State = st
	j.StartedAt, j.SlotAt, j.Detached = time.Time{}, until, true
	j.Result, j.ResultDropped = nil, 0 // a result is the outcome's
	j.SlowDowns++
	j.Record(job.Event{At: e.now(), Kind: job.SlowedDown, Attempt: j.Attempt, DelayMs: wait.Milliseconds(), Reason: what, Error: answerOf(ra)})
	e.place(&j, q.State)
	e.sendQueued(ctx, []*job.Job{&j}) // message first, as in Enqueue
	if err := e.state.UpdateJob(ctx, j, from); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil
		}
		return fmt.Errorf("slow down %s: %w", j.Ref(), err)
	}
	if e.deadGeneration(ctx, &j) {
		return nil
	}
	e.endRun(ctx, q, ticket)
	if j.Key != "" && q.Config.KeyCap() != 0 {
		e.keepHold(ctx, &j, until)
	}
	e.observe(ctx, Event{Kind: EventSlowDown, Queue: j.Queue})
	e.log.WarnContext(ctx, "slowed down by its target", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket,
		"key", j.Key, "slowed", what, "until", until, "slow_downs", j.SlowDowns, "answer", answerOf(ra))
	return nil
}

// answerOf is the target's answer ra carries, for the job's history: its
// Answer, else its text.
func answerOf(ra *attempt.RetryAfterError) string {
	if ra.Answer != "" {
		return ra.Answer
	}
	return ra.Error()
}
