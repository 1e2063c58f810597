package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
	"unicode/utf8"

	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/pkg/job"
	"github.com/slotq/slotq/pkg/slot"
)

// Work handles one delivered envelope. It returns nil when the message is
// done with (the job ran, was re-ticketed, parked, handed back, or the
// message was a stale duplicate) and an error when the transport should
// deliver it again.
//
// The steps: drop envelopes that no longer match the job record; wait to
// the exact slot; pass the gate (one write on the queue's state); claim
// the attempt (one conditional write on the job); run the target; record
// the outcome or retry.
//
// Each message is budgeted against ctx's deadline (the invocation's):
// the slot wait, the queue's target timeout and RecordTimeout for the
// writes after it, plus Margin. A job whose budget does not fit is handed
// back to the transport, unstarted, with the delay its slot still needs,
// so what starts is recorded before Lambda stops the invocation. The
// target runs under its timeout (Go handlers too) and a panic in it fails
// the attempt; the outcome is written on a context of its own.
func (e *Engine) Work(ctx context.Context, env job.Envelope) error {
	j, err := e.record(ctx, env)
	if errors.Is(err, ErrJobNotFound) {
		e.log.WarnContext(ctx, "dropped message of unknown job", "queue", env.Queue, "job_id", env.JobID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("work %s: %w", env.Key(), err)
	}
	want := job.Version{Status: job.Queued, Ticket: env.Ticket, Attempt: env.Attempt, Gen: env.Gen}
	if j.Version() == (job.Version{Status: job.Running, Ticket: env.Ticket, Attempt: env.Attempt, Gen: env.Gen}) {
		return e.watch(ctx, j)
	}
	if j.Version() != want {
		e.log.DebugContext(ctx, "dropped stale message", "queue", j.Queue, "job_id", j.ID,
			"ticket", env.Ticket, "status", j.Status, "job_ticket", j.Ticket)
		return nil
	}
	wake := j.SlotAt
	var cfg *slot.Config // the queue's configuration, once read
	// recheck: a scheduled job found the gate closed at its slot; the
	// start that closed it may have been a duplicate of this message.
	recheck := false
	// holding: j holds its key (Job.Lane), taken in this invocation.
	holding := false
	for {
		if wait := wake.Sub(e.now()); wait > 0 {
			if cfg == nil {
				q, err := e.state.GetQueue(ctx, j.Queue)
				if errors.Is(err, ErrQueueNotFound) || err == nil && q.Gen != j.Gen {
					return e.orphan(ctx, j)
				}
				if err != nil {
					return fmt.Errorf("work %s: %w", env.Key(), err)
				}
				cfg = &q.Config
			}
			// The whole budget, not only the wait: a job that starts
			// must be recorded before the invocation ends.
			if !e.fits(ctx, wait+e.budget(*cfg)) {
				return e.handBack(ctx, &j, wake)
			}
			if err := clock.Sleep(ctx, wait); err != nil {
				return fmt.Errorf("work %s: wait for slot: %w", env.Key(), err)
			}
		}
		// Read the queue after the wait, so the hold below sees the
		// starts that happened meanwhile.
		q, err := e.state.GetQueue(ctx, j.Queue)
		if errors.Is(err, ErrQueueNotFound) || err == nil && q.Gen != j.Gen {
			return e.orphan(ctx, j)
		}
		if err != nil {
			return fmt.Errorf("work %s: %w", env.Key(), err)
		}
		cfg = &q.Config
		// Checked again before the gate: the configuration may have
		// changed, and a job whose slot passed has had no wait to check.
		if !e.fits(ctx, e.budget(q.Config)) {
			return e.handBack(ctx, &j, wake)
		}
		if q.State.Current == j.Ticket && !outOfLine(&j) || recheck {
			// The gate passed this ticket already (or, for a scheduled
			// job, some ticket since its slot): this may be a duplicate
			// of a message whose job was claimed, or the worker that
			// passed it died before its claim. Only in the second case
			// may it pass again.
			if done, err := e.claimedMeanwhile(ctx, want, &j); done || err != nil {
				return err
			}
			recheck = false
		}
		now := e.now()
		// Hold: while lower tickets have not started, leave them the
		// intervals they need, so a late neighbour is not passed by a
		// hair (see holdUntil). A scheduled job does not wait for the line.
		if hold := holdUntil(q, &j, now); now.Before(hold) {
			wake = hold
			continue
		}
		gr := GateRequest{
			Queue: j.Queue, Ticket: j.Ticket, Interval: q.Config.Interval, Skew: q.Config.Skew, Now: now,
			Scheduled: outOfLine(&j), Seen: q.State,
			MaxRunning: q.Config.MaxRunning, Until: now.Add(e.opts.Lease), Gen: j.Gen,
		}
		// The queue state just read says when the gate opens: waiting for
		// it here saves a write that would fail (and still be billed).
		switch v, open := gr.Decide(q.State); {
		case v == slot.Early:
			wake, recheck = yieldTo(open, &j, q.Config), outOfLine(&j)
			continue
		case (v == slot.Start || v == slot.Full) && j.Lane != "" && !holding:
			// The key before the gate: a job that waits for its key
			// spends no slot, and waits for its key, not for a place it
			// could not use.
			ok, err := e.arrive(ctx, &q, &j)
			if !ok || err != nil {
				return err
			}
			holding = true
			wake = time.Time{}
			continue // the gate, with the queue read again
		case v == slot.Full:
			// Every running place is taken: wait for one, without a
			// write to the gate.
			if again, err := e.waitPlace(ctx, q, &j); !again || err != nil {
				return err
			}
			wake = time.Time{}
			continue
		}
		st, err := e.state.Gate(ctx, gr)
		var gate *GateError
		switch {
		case err == nil:
			return e.claim(ctx, q, j, want, st, now)
		case errors.Is(err, ErrQueueNotFound):
			return e.orphan(ctx, j)
		case errors.Is(err, ErrIntervalChanged):
			continue // read the queue again
		case errors.As(err, &gate):
			switch gate.Verdict {
			case slot.Early:
				q.State = gate.State
				wake, recheck = laterOf(yieldTo(gate.OpenAt, &j, q.Config), holdUntil(q, &j, now)), outOfLine(&j)
			case slot.Full:
				// Keeps its key, if it took one: its place in the key's
				// order is its ticket's.
				if again, err := e.waitPlace(ctx, q, &j); !again || err != nil {
					return err
				}
				wake = time.Time{}
			case slot.Paused:
				err := e.park(ctx, &j, job.PausedQueue)
				e.leaveUnlessRunning(ctx, q, j, want.Ticket)
				return err
			case slot.Purged:
				return e.purged(ctx, q, j)
			case slot.Passed:
				q.State = gate.State
				err := e.reticket(ctx, &q, &j)
				e.leaveUnlessRunning(ctx, q, j, want.Ticket)
				return err
			}
		default:
			return fmt.Errorf("work %s: gate: %w", env.Key(), err)
		}
	}
}

// record reads the job an envelope carries. Writers send a job's message
// before they write its record, so a fresh message may find the record
// missing or behind it (an older ticket, or still parked at this ticket):
// record reads again, with backoff, until RecordGrace after the message
// was sent. A record still behind then was never written (its writer
// died), and the message is stale.
//
// A record that keeps it waiting past recordHold lets the later messages
// of its queue in the worker's batch go on (Started): a record that
// lags that long is rare, and mostly one that will never come (a
// re-ticket that lost to a duplicate, a concurrent enqueue of the same
// id), so the batch is not held up for RecordGrace.
func (e *Engine) record(ctx context.Context, env job.Envelope) (job.Job, error) {
	wait := 10 * time.Millisecond
	began := e.now()
	for {
		j, err := e.state.GetJob(ctx, env.Key())
		if err != nil && !errors.Is(err, ErrJobNotFound) {
			return j, err
		}
		// A record of another generation may be a deleted queue's job
		// of the same id, not yet replaced by the new one's.
		behind := err != nil || j.Gen != env.Gen || j.Ticket < env.Ticket ||
			(j.Ticket == env.Ticket && j.Attempt == env.Attempt && j.Status == job.Parked)
		if !behind || env.SentAt.IsZero() || e.now().Add(wait).After(env.SentAt.Add(e.opts.RecordGrace)) {
			return j, err
		}
		if e.now().Sub(began) >= recordHold {
			Started(ctx)
		}
		if err := clock.Sleep(ctx, wait); err != nil {
			return j, err
		}
		wait = min(2*wait, time.Second)
	}
}

// recordHold is how long a message waiting for its record holds up the
// later messages of its queue in a batch (see record).
const recordHold = 100 * time.Millisecond

// ErrStillRunning is Work's answer to a message whose attempt is running
// and within its lease: the transport should deliver it again later. The
// message is the attempt's watchdog: if the worker running it dies, the
// message comes back after the lease and Work recovers the attempt; if the
// attempt ends, the message is stale then and dropped.
var ErrStillRunning = errors.New("attempt still running")

// watch handles a delivery of the message whose attempt j is running: a
// duplicate delivery, or the redelivery of a message whose worker died.
// Past the lease the attempt is lost: it fails, and is retried like any
// failed attempt (so a crashed attempt may run again: slotq is
// at-least-once).
func (e *Engine) watch(ctx context.Context, j job.Job) error {
	now := e.now()
	if now.Sub(j.StartedAt) < e.opts.Lease {
		return fmt.Errorf("work %s: %w (started %v)", j.Key(), ErrStillRunning, j.StartedAt)
	}
	q, err := e.state.GetQueue(ctx, j.Queue)
	if errors.Is(err, ErrQueueNotFound) || err == nil && q.Gen != j.Gen {
		return e.orphan(ctx, j)
	}
	if err != nil {
		return fmt.Errorf("work %s: %w", j.Key(), err)
	}
	e.log.WarnContext(ctx, "attempt lost", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "started_at", j.StartedAt)
	rctx, cancel := e.recordContext(ctx)
	defer cancel()
	return e.finish(rctx, q, j, q.State, errors.New("attempt lost: its worker stopped before recording an outcome"))
}

// orphan ends a job whose queue was deleted (or deleted and created again:
// another generation) as its message comes: a waiting job is cancelled, a
// running one (its worker died, or this is the watchdog) failed, and
// either expires at once, so it reads as not found and DynamoDB's TTL
// removes it. The message is done with.
func (e *Engine) orphan(ctx context.Context, j job.Job) error {
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
		return fmt.Errorf("work %s: expire job of deleted queue: %w", j.Key(), err)
	}
	e.log.WarnContext(ctx, "expired job of deleted queue", "queue", j.Queue, "job_id", j.ID, "gen", j.Gen, "status", string(from.Status))
	return nil
}

// deadGeneration reads j's queue after j was written parked, and expires
// j (orphan) if the queue was deleted meanwhile: DeleteQueue removes the
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
		if err := e.orphan(ctx, *j); err != nil {
			e.log.WarnContext(ctx, "parked job of a deleted queue not expired", "queue", j.Queue, "job_id", j.ID, "error", err.Error())
		}
	}
	return len(parked)
}

// purged cancels a job whose ticket a purge covered.
func (e *Engine) purged(ctx context.Context, q Queue, j job.Job) error {
	if err := e.cancel(ctx, q.Config, j); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil
		}
		return fmt.Errorf("work %s: cancel purged job: %w", j.Key(), err)
	}
	e.cancelled(ctx, q, j)
	e.log.InfoContext(ctx, "cancelled by purge", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket)
	return nil
}

// claimedMeanwhile reads the job again, strongly, and reports whether it is
// no longer queued at want: someone else claimed (or cancelled) it, so this
// message is done with.
func (e *Engine) claimedMeanwhile(ctx context.Context, want job.Version, j *job.Job) (bool, error) {
	fresh, err := e.state.GetJob(ctx, j.Key())
	if errors.Is(err, ErrJobNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("work %s: %w", j.Key(), err)
	}
	if fresh.Version() != want {
		e.log.DebugContext(ctx, "dropped duplicate delivery", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "status", fresh.Status)
		return true, nil
	}
	*j = fresh
	return false, nil
}

// claim moves a job whose ticket passed the gate from queued to running,
// and runs it. A refused claim means another delivery of the same message
// claimed it first (or it was cancelled): the gate this one passed is
// spent, and the message is done with.
func (e *Engine) claim(ctx context.Context, q Queue, j job.Job, from job.Version, st slot.State, now time.Time) error {
	j.Status, j.StartedAt = job.Running, now
	j.Record(job.Event{At: now, Kind: job.Started, Attempt: j.Attempt, LatenessMs: now.Sub(j.SlotAt).Milliseconds()})
	err := e.state.UpdateJob(ctx, j, from)
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrJobNotFound) {
		e.log.InfoContext(ctx, "dropped duplicate delivery after the gate", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket)
		if q.Config.MaxRunning == 0 && j.Lane == "" {
			return nil
		}
		// The place the gate gave this ticket, and the key this
		// delivery took before the gate, are given up unless another
		// delivery runs the ticket: the job was cancelled (or purged)
		// after this worker read it, and a cancelled job holds nothing.
		fresh, err := e.state.GetJob(ctx, j.Key())
		if err == nil && fresh.Status == job.Running && fresh.Ticket == j.Ticket {
			return nil
		}
		q.State = st
		e.endRun(ctx, q, j.Ticket)
		e.leave(ctx, q, j, j.Ticket, false)
		return nil
	}
	if err != nil {
		// The job stays queued at a ticket the gate passed: the message
		// comes again and rolls forward through the gate.
		return fmt.Errorf("work %s: claim: %w", j.Key(), err)
	}
	return e.run(ctx, q, j, st, now)
}

// holdUntil is when j may try the gate if the lower tickets still ahead of
// it start on time: one interval after the last start per ticket between.
// Only the tickets that can be in flight now count: one, plus one per
// interval that j itself is late (a queue that runs behind has that many
// neighbours waiting at once). So a lower ticket that never comes (lost,
// or a job scheduled for later) costs a late job little, and an on-time job
// at most one interval, once.
func holdUntil(q Queue, j *job.Job, now time.Time) time.Time {
	st, iv := q.State, q.Config.Interval
	ahead := j.Ticket - st.Current - 1
	if st.LastStart.IsZero() || ahead <= 0 || outOfLine(j) {
		return time.Time{}
	}
	inFlight := int64(max(0, now.Sub(j.SlotAt))/iv) + 1
	return st.LastStart.Add(time.Duration(min(ahead, inFlight)+1)*iv - q.Config.Skew)
}

// startedKey is the context key of OnStarted's callback.
type startedKey struct{}

// OnStarted returns ctx carrying fn, which Work calls once it is done with
// the gate for its message: as the claimed attempt's target begins, or as
// Work returns without starting anything. A worker that works one queue's
// messages in order (sqstransport.WorkBatch) lets the next message go on
// from there, so a slow target holds up no later job.
func OnStarted(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, startedKey{}, fn)
}

// Started calls ctx's OnStarted callback, if any: Work does, as its
// attempt's target begins; a stand-in for Work may too.
func Started(ctx context.Context) {
	if fn, ok := ctx.Value(startedKey{}).(func()); ok {
		fn()
	}
}

// yieldTo is when j tries a gate that opens at open: a line job a quarter
// of the skew after it, others at it. A queue that runs behind has its
// line jobs waiting for each opening, and a job out of line (scheduled,
// or sent on by a lane) would meet one of them there every time and win
// only by chance; this way it goes first, and the line job takes the next
// opening. The quarter skew stays within the gate's allowance, so the
// line's theoretical times do not move (no drift).
func yieldTo(open time.Time, j *job.Job, cfg slot.Config) time.Time {
	if outOfLine(j) {
		return open
	}
	return open.Add(cfg.Skew / 4)
}

// outOfLine reports whether j passes the gate by the spacing alone, not by
// its ticket: a scheduled job, or one that waited on a lane.
func outOfLine(j *job.Job) bool { return j.Scheduled || j.Detached }

// handBack sends the job's envelope again to arrive at wake, by the clock
// as it goes: the slot lies past this invocation's deadline.
func (e *Engine) handBack(ctx context.Context, j *job.Job, wake time.Time) error {
	env := j.Envelope()
	env.SentAt = e.now()
	wait := max(0, wake.Sub(env.SentAt))
	err := e.transport.Send(ctx, []Message{{Envelope: env, Delay: wait}})
	if err != nil {
		return fmt.Errorf("hand back %s/%s: %w", j.Queue, j.ID, err)
	}
	// Into the job's history, at the same version: a record that moved
	// on meanwhile (a duplicate claimed it) keeps its own story, and a
	// failed write loses one event, not the message.
	from := j.Version()
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

// reticket gives a passed job a new ticket at the end of the line, keeping
// its id and attempt, and sends or parks it. A job whose old ticket a
// purge covered is cancelled instead: the purge may have landed after the
// job was read, and a re-ticket must not carry a purged job past it.
func (e *Engine) reticket(ctx context.Context, q *Queue, j *job.Job) error {
	from := j.Version()
	old := j.Ticket
	orig := *j
	if err := e.assign(ctx, q, []*job.Job{j}); err != nil {
		return fmt.Errorf("re-ticket %s/%s: %w", j.Queue, j.ID, err)
	}
	if old <= q.State.Purged {
		*j = orig
		return e.purged(ctx, *q, orig)
	}
	j.Retickets++
	j.Record(job.Event{At: e.now(), Kind: job.Reticketed, OldTicket: old, Ticket: j.Ticket})
	e.place(j, q.State.Paused)
	e.dispatch(ctx, []*job.Job{j}) // message first, as in Enqueue
	if err := e.state.UpdateJob(ctx, *j, from); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil // a duplicate got there first; its message is stale
		}
		return fmt.Errorf("re-ticket %s/%s: %w", j.Queue, j.ID, err)
	}
	if e.deadGeneration(ctx, j) {
		return nil
	}
	e.observe(ctx, Event{Kind: EventReticket, Queue: j.Queue})
	e.log.InfoContext(ctx, "re-ticketed", "queue", j.Queue, "job_id", j.ID, "old_ticket", old, "ticket", j.Ticket, "slot_at", j.SlotAt)
	return nil
}

// run runs a claimed attempt and records its outcome. The outcome is
// written on a context of its own (recordContext): the target may have
// used up ctx (its deadline came, or it was cancelled), and an outcome
// not recorded is an attempt run again after the lease.
func (e *Engine) run(ctx context.Context, q Queue, j job.Job, st slot.State, now time.Time) error {
	gap, hasGap := startGap(q.State, st, q.Config.Interval, now)
	e.observe(ctx, Event{Kind: EventStart, Queue: j.Queue, Lateness: now.Sub(j.SlotAt), Gap: gap, HasGap: hasGap})
	e.log.InfoContext(ctx, "start", "queue", j.Queue, "ticket", j.Ticket, "job_id", j.ID,
		"slot_at", j.SlotAt, "lateness_ms", now.Sub(j.SlotAt).Milliseconds(), "attempt", j.Attempt, "target", j.What())
	Started(ctx) // the gate is behind: the queue's next message may go on
	runErr := errors.New("no runner configured")
	if e.runner != nil {
		tctx, res := withResult(ctx)
		runErr = e.runTarget(tctx, j, q.Config)
		j.Result, j.ResultDropped = res.take() // written with the outcome (finish)
	}
	rctx, cancel := e.recordContext(ctx)
	defer cancel()
	return e.finish(rctx, q, j, st, runErr)
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
func (e *Engine) runTarget(ctx context.Context, j job.Job, cfg slot.Config) error {
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

// finish records an attempt's outcome: succeeded, failed (the record is the
// dead-letter record), or a retry with a new ticket after backoff.
func (e *Engine) finish(ctx context.Context, q Queue, j job.Job, st slot.State, runErr error) error {
	from := j.Version()
	now := e.now()
	switch {
	case runErr == nil:
		j.Status, j.FinishedAt, j.ExpiresAt, j.LastError = job.Succeeded, now, now.Add(q.Config.Retention), ""
		j.Record(job.Event{At: now, Kind: job.SucceededEvent, Attempt: j.Attempt})
	case errors.Is(runErr, ErrSkipRetry) || j.RunAttempt() >= q.Config.MaxAttempts:
		j.Status, j.FinishedAt, j.ExpiresAt, j.LastError = job.Failed, now, now.Add(q.Config.Retention), lastError(runErr)
		j.Record(job.Event{At: now, Kind: job.FailedEvent, Attempt: j.Attempt, Error: runErr.Error()})
	default:
		return e.retry(ctx, q, j, st, runErr, now)
	}
	if err := e.state.UpdateJob(ctx, j, from); err != nil {
		if errors.Is(err, ErrConflict) {
			e.log.WarnContext(ctx, "outcome not recorded: job moved on", "queue", j.Queue, "job_id", j.ID)
			return nil
		}
		return fmt.Errorf("record %s/%s: %w", j.Queue, j.ID, err)
	}
	e.endAttempt(ctx, q, st, j, j.Ticket, true)
	if runErr != nil {
		e.observe(ctx, Event{Kind: EventAttemptFailed, Queue: j.Queue})
	}
	if j.Status == job.Failed {
		e.observe(ctx, Event{Kind: EventDeadLetter, Queue: j.Queue})
		e.log.ErrorContext(ctx, "job failed", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "attempt", j.Attempt, "error", runErr)
	} else {
		e.observe(ctx, Event{Kind: EventSucceeded, Queue: j.Queue})
		e.log.DebugContext(ctx, "job succeeded", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket)
	}
	return nil
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
	floor := j.NotBefore
	j.NotBefore = now.Add(q.Config.RetryDelay(j.RunAttempt()))
	err := e.assign(ctx, &q, []*job.Job{&j})
	j.NotBefore = floor
	if errors.Is(err, ErrQueueNotFound) {
		// The queue was deleted (and perhaps created again) while the
		// attempt ran: the job ends with its generation, and its retry
		// takes nothing of a new queue of the name.
		return e.orphan(ctx, ran)
	}
	if err != nil {
		return fmt.Errorf("retry %s/%s: %w", j.Queue, j.ID, err)
	}
	j.Record(job.Event{At: e.now(), Kind: job.Retried, Attempt: j.Attempt, Ticket: j.Ticket})
	e.place(&j, q.State.Paused)
	e.dispatch(ctx, []*job.Job{&j}) // message first, as in Enqueue
	if err := e.state.UpdateJob(ctx, j, from); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil
		}
		return fmt.Errorf("retry %s/%s: %w", j.Queue, j.ID, err)
	}
	if e.deadGeneration(ctx, &j) {
		return nil
	}
	e.endAttempt(ctx, q, st, j, ran.Ticket, false)
	e.observe(ctx, Event{Kind: EventAttemptFailed, Queue: j.Queue})
	e.observe(ctx, Event{Kind: EventRetry, Queue: j.Queue})
	e.log.WarnContext(ctx, "attempt failed; retrying", "queue", j.Queue, "job_id", j.ID,
		"attempt", j.Attempt, "ticket", j.Ticket, "slot_at", j.SlotAt, "error", runErr)
	return nil
}

// endAttempt hands on what the attempt of ticket held once its outcome is
// recorded: its running place (a capped queue) and its key. final says the
// job ended for good.
func (e *Engine) endAttempt(ctx context.Context, q Queue, st slot.State, j job.Job, ticket int64, final bool) {
	q.State = st
	e.endRun(ctx, q, ticket)
	e.leave(ctx, q, j, ticket, final)
}
