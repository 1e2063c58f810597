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
// The steps: drop envelopes that no longer match the job record; wait to
// Options.Lead before the slot; pass the gate for a start at the slot (one
// write on the queue's state, which reserves that start); claim the
// attempt (one conditional write on the job); sleep to the start and run
// the target there; record the outcome or retry. A worker that comes too
// late for its start (by more than the queue's skew) does not start late:
// its job gives the slot up (slot.Missed, slot.Overslept; see missed).
//
// Each message is budgeted against ctx's deadline (the invocation's):
// the slot wait, the queue's target timeout and RecordTimeout for the
// writes after it, plus Margin. A job whose budget does not fit is handed
// back to the transport, unstarted, with the delay its slot still needs,
// so what starts is recorded before Lambda stops the invocation. The
// target runs under its timeout (Go handlers too) and a panic in it fails
// the attempt; the outcome is written on a context of its own.
func (e *Engine) Work(ctx context.Context, env job.Envelope) error {
	j, waited, err := e.record(ctx, env)
	if errors.Is(err, ErrJobNotFound) {
		e.log.WarnContext(ctx, "dropped message of unknown job", "queue", env.Queue, "job_id", env.JobID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("work %s: %w", env.Ref(), err)
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
	// wake is the start aimed at: the slot, a hold's end or the gate's
	// opening. The worker wakes Lead before it.
	wake := j.SlotAt
	// writerLate: the job's record came after its worker's time to go to
	// the gate (its enqueue was still writing its batch's records, say):
	// the job is late by its writer, not by its worker, and starts late
	// rather than lose its place (as if its slot had been booked later).
	writerLate := waited && e.now().After(wake.Add(-e.opts.Lead))
	// turn is when the worker may go to the gate at the earliest, by the
	// clock: a hold's (see holdTurn).
	var turn time.Time
	var cfg *slot.Config // the queue's configuration, once read
	// recheck: a scheduled job found the gate closed at its slot; the
	// start that closed it may have been a duplicate of this message.
	recheck := false
	// holding: j holds its key (Job.Key), taken in this invocation.
	holding := false
	for {
		if wait := laterOf(wake.Add(-e.opts.Lead), turn).Sub(e.now()); wait > 0 {
			if cfg == nil {
				q, err := e.state.GetQueue(ctx, j.Queue)
				if errors.Is(err, ErrQueueNotFound) || err == nil && q.Gen != j.Gen {
					return e.orphan(ctx, j)
				}
				if err != nil {
					return fmt.Errorf("work %s: %w", env.Ref(), err)
				}
				cfg = &q.Config
			}
			// The whole budget, not only the wait: a job that starts
			// must be recorded before the invocation ends.
			if !e.fits(ctx, wait+e.opts.Lead+e.budget(*cfg)) {
				if wake.Sub(e.now()) > e.transport.MaxDelay() {
					return e.parkForGate(ctx, &j, wake, holding)
				}
				return e.handBackHolding(ctx, &j, wake, holding)
			}
			if err := clock.Sleep(ctx, wait); err != nil {
				return fmt.Errorf("work %s: wait for slot: %w", env.Ref(), err)
			}
		}
		// Read the queue after the wait, so the hold below sees the
		// starts that happened meanwhile.
		q, err := e.state.GetQueue(ctx, j.Queue)
		if errors.Is(err, ErrQueueNotFound) || err == nil && q.Gen != j.Gen {
			return e.orphan(ctx, j)
		}
		if err != nil {
			return fmt.Errorf("work %s: %w", env.Ref(), err)
		}
		cfg = &q.Config
		// Checked again before the gate: the configuration may have
		// changed, and a job whose slot passed has had no wait to check.
		if !e.fits(ctx, e.budget(q.Config)) {
			return e.handBackHolding(ctx, &j, wake, holding)
		}
		if q.State.Current == j.Ticket && !outOfLine(&j) || recheck {
			// The gate passed this ticket already (or, for a scheduled
			// job, some ticket since its slot): this may be a duplicate
			// of a message whose job was claimed, or the worker that
			// passed it died before its claim. Only in the second case
			// may it pass again.
			if done, err := e.claimedMeanwhile(ctx, want, &j); done || err != nil {
				if done && holding {
					// Cancelled (or run by another delivery) since this
					// one took the key: a cancelled job holds nothing.
					e.leaveUnlessRunning(ctx, q, j, want.Ticket)
				}
				return err
			}
			recheck = false
		}
		now := e.now()
		// The start to reserve: wake, or, for a worker that came too
		// late for it, the soonest it can start.
		at := slot.StartAt(wake, now, e.opts.Lead, q.Config.Skew)
		// Hold: while lower tickets have not started, leave them the
		// intervals they need, so a late neighbour is not passed by a
		// hair (see holdUntil). A scheduled job does not wait for the line.
		if hold := holdUntil(q, &j, at); at.Before(hold) {
			wake = hold
			continue
		}
		if turn = holdTurn(q, &j, at); now.Before(turn) {
			continue
		}
		gr := GateRequest{
			Queue: j.Queue, Ticket: j.Ticket, Interval: q.Config.Interval, Skew: q.Config.Skew, Now: now, At: at,
			Scheduled: outOfLine(&j), Seen: q.State,
			MaxRunning: q.Config.MaxRunning, Until: at.Add(e.opts.Lease), Gen: j.Gen,
		}
		// The queue state just read says when the gate opens: waiting for
		// it here saves a write that would fail (and still be billed).
		switch v, open := gr.Decide(q.State); {
		case v == slot.Early:
			wake, recheck = yieldTo(open, &j, q.Config), outOfLine(&j)
			continue
		case (v == slot.Start || v == slot.Full) && j.Key != "" && !holding:
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
				if err == nil && holding {
					e.leaveIfGone(ctx, q, j, want.Ticket)
				}
				return err
			}
			wake = time.Time{}
			continue
		}
		// A line job whose worker came too late for its slot (a stall, a
		// late delivery) gives it up rather than push every start booked
		// behind it; a job out of line takes the opening it finds.
		if !outOfLine(&j) && !writerLate && !missedBefore(&j) && slot.Missed(q.State, j.SlotAt, at, q.Config.Interval, q.Config.Skew) {
			late := at.Sub(slot.Due(q.State, j.SlotAt, q.Config.Interval))
			err := e.missed(ctx, &q, &j, late)
			e.leaveUnlessRunning(ctx, q, j, want.Ticket)
			return err
		}
		st, err := e.state.Gate(ctx, gr)
		var gate *GateError
		switch {
		case err == nil:
			again, err := e.claim(ctx, q, &j, want, st, gr)
			if !again || err != nil {
				return err
			}
			// A job out of line overslept its start: its slot is spent,
			// and it takes the next opening, queued again as it was.
			wake = time.Time{}
		case errors.Is(err, ErrQueueNotFound):
			return e.orphan(ctx, j)
		case errors.Is(err, ErrIntervalChanged):
			continue // read the queue again
		case errors.As(err, &gate):
			switch gate.Verdict {
			case slot.Early:
				q.State = gate.State
				wake, recheck = laterOf(yieldTo(gate.OpenAt, &j, q.Config), holdUntil(q, &j, at)), outOfLine(&j)
			case slot.Full:
				// Keeps its key, if it took one: its place in the key's
				// order is its ticket's.
				if again, err := e.waitPlace(ctx, q, &j); !again || err != nil {
					if err == nil && holding {
						e.leaveIfGone(ctx, q, j, want.Ticket)
					}
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
				var err error
				if late := max(e.now().Sub(at), now.Sub(wake)); late > q.Config.Skew && !outOfLine(&j) {
					// Passed while its own worker was late: it came to
					// the gate after the start it wanted, or the gate
					// answered after the start it reserved (a stall, a
					// slow gate write). A missed slot.
					err = e.missed(ctx, &q, &j, late)
				} else {
					err = e.reticket(ctx, &q, &j)
				}
				e.leaveUnlessRunning(ctx, q, j, want.Ticket)
				return err
			}
		default:
			return fmt.Errorf("work %s: gate: %w", env.Ref(), err)
		}
	}
}

// record reads the job an envelope carries. Writers send a job's message
// before they write its record, so a fresh message may find the record
// missing or behind it (an older ticket, or still parked at this ticket):
// record reads again, with backoff, until RecordGrace after the message
// was sent. A record still behind then was never written (its writer
// died), and the message is stale. waited says the record was behind
// the message when first read.
//
// A record that keeps it waiting past recordHold lets the later messages
// of its queue in the worker's batch go on (GateDone): a record that
// lags that long is rare, and mostly one that will never come (a
// re-ticket that lost to a duplicate, a concurrent enqueue of the same
// id), so the batch is not held up for RecordGrace.
func (e *Engine) record(ctx context.Context, env job.Envelope) (j job.Job, waited bool, err error) {
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
		return fmt.Errorf("work %s: %w (started %v)", j.Ref(), ErrStillRunning, j.StartedAt)
	}
	q, err := e.state.GetQueue(ctx, j.Queue)
	if errors.Is(err, ErrQueueNotFound) || err == nil && q.Gen != j.Gen {
		return e.orphan(ctx, j)
	}
	if err != nil {
		return fmt.Errorf("work %s: %w", j.Ref(), err)
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
	e.leave(ctx, q, j, ticket, false)
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
		return fmt.Errorf("work %s: cancel purged job: %w", j.Ref(), err)
	}
	e.cancelled(ctx, q, j)
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

// claim moves a job whose ticket passed the gate from queued to running,
// sleeps to the start the gate reserved (r.Start) and runs it there. A
// refused claim means another delivery of the same message claimed it
// first (or it was cancelled): the gate this one passed is spent, and the
// message is done with. again is true only for a job out of line whose
// worker overslept its start: it is queued again at its ticket (*j), and
// goes to the gate again for the next opening.
func (e *Engine) claim(ctx context.Context, q Queue, j *job.Job, from job.Version, st slot.State, r GateRequest) (again bool, err error) {
	at := r.Start()
	j.Status, j.StartedAt = job.Running, at
	j.Record(job.Event{At: at, Kind: job.Started, Attempt: j.Attempt, LatenessMs: at.Sub(j.SlotAt).Milliseconds()})
	err = e.state.UpdateJob(ctx, *j, from)
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrJobNotFound) {
		e.log.InfoContext(ctx, "dropped duplicate delivery after the gate", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket)
		if q.Config.MaxRunning == 0 && j.Key == "" {
			return false, nil
		}
		// The place the gate gave this ticket, and the key this
		// delivery took before the gate, are given up unless another
		// delivery runs the ticket: the job was cancelled (or purged)
		// after this worker read it, and a cancelled job holds nothing.
		fresh, err := e.state.GetJob(ctx, j.Ref())
		if err == nil && fresh.Status == job.Running && fresh.Ticket == j.Ticket {
			return false, nil
		}
		q.State = st
		e.endRun(ctx, q, j.Ticket)
		e.leave(ctx, q, *j, j.Ticket, false)
		return false, nil
	}
	if err != nil {
		// The job stays queued at a ticket the gate passed: the message
		// comes again and rolls forward through the gate.
		return false, fmt.Errorf("work %s: claim: %w", j.Ref(), err)
	}
	// The gate is behind: the queue's next message may go on to its own
	// while this one sleeps to its start.
	GateDone(ctx)
	// Sleep to the start. A worker that wakes more than skew after it
	// (descheduled, stalled) must not start: the next ticket may start
	// an interval after the reserved start, less skew.
	slept := clock.Sleep(ctx, at.Sub(e.now()))
	if now := e.now(); slept != nil || slot.Overslept(at, now, q.Config.Skew) {
		return e.overslept(ctx, q, j, st, max(0, now.Sub(at)))
	}
	return false, e.run(ctx, q, *j, st, e.now())
}

// overslept gives up the start the gate reserved for j, whose worker woke
// late by late after its claim: j goes back from running to waiting, as
// if it had not passed the gate, and its slot is spent (the gate counted
// it). A line job takes a new ticket at the end of the line (missed); a
// job out of line is queued again at its ticket for the next opening
// (again). Its running place, if it took one, is freed; a line
// job leaves its key. The writes are on a context of their own: a job
// left running would wait for its lease.
func (e *Engine) overslept(ctx context.Context, q Queue, j *job.Job, st slot.State, late time.Duration) (again bool, err error) {
	rctx, cancel := e.recordContext(ctx)
	defer cancel()
	from := j.Version()
	ticket := j.Ticket
	j.StartedAt = time.Time{}
	if n := len(j.History); n > 0 && j.History[n-1].Kind == job.Started {
		j.History = slices.Clip(j.History[:n-1]) // it did not start
	}
	q.State = st
	if !outOfLine(j) {
		err := e.missed(rctx, &q, j, late)
		e.endRun(rctx, q, ticket)
		e.leaveUnlessRunning(rctx, q, *j, ticket)
		return false, err
	}
	j.Status = job.Queued
	j.Record(job.Event{At: e.now(), Kind: job.SlotMissed, Ticket: ticket, Attempt: j.Attempt, LatenessMs: late.Milliseconds()})
	if err := e.state.UpdateJob(rctx, *j, from); err != nil {
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrJobNotFound) {
			return false, nil
		}
		return false, fmt.Errorf("work %s: give up a missed start: %w", j.Ref(), err)
	}
	e.endRun(rctx, q, ticket)
	e.observe(ctx, Event{Kind: EventMissed, Queue: j.Queue, Lateness: late})
	e.log.InfoContext(ctx, "slot missed", "queue", j.Queue, "job_id", j.ID, "ticket", ticket, "late_ms", late.Milliseconds())
	if err := ctx.Err(); err != nil {
		// Queued again with no worker on it: the message must come back.
		return false, fmt.Errorf("work %s: after a missed start: %w", j.Ref(), err)
	}
	return true, nil
}

// missed gives a line job whose worker came late by late for its start a
// new ticket at the end of the line, keeping its id and attempt, as a
// passed job takes one. The end of the line is the one place where a late
// job moves nobody: taking the next opening would push every start booked
// after it by an interval, and starting late would push them by its
// lateness. Its history says so (job.SlotMissed).
func (e *Engine) missed(ctx context.Context, q *Queue, j *job.Job, late time.Duration) error {
	from := j.Version()
	old := j.Ticket
	orig := *j
	if err := e.assign(ctx, q, []*job.Job{j}); err != nil {
		return fmt.Errorf("missed slot %s/%s: %w", j.Queue, j.ID, err)
	}
	if old <= q.State.Purged {
		// A purge covered its ticket meanwhile (see reticket).
		*j = orig
		return e.purged(ctx, *q, orig)
	}
	j.Retickets++
	j.StartedAt = time.Time{}
	j.Record(job.Event{At: e.now(), Kind: job.SlotMissed, OldTicket: old, Ticket: j.Ticket, Attempt: j.Attempt, LatenessMs: late.Milliseconds()})
	e.place(j, q.State.Paused)
	e.dispatch(ctx, []*job.Job{j}) // message first, as in Enqueue
	if err := e.state.UpdateJob(ctx, *j, from); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil // a duplicate got there first; its message is stale
		}
		return fmt.Errorf("missed slot %s/%s: %w", j.Queue, j.ID, err)
	}
	if e.deadGeneration(ctx, j) {
		return nil
	}
	e.observe(ctx, Event{Kind: EventMissed, Queue: j.Queue, Lateness: late})
	e.observe(ctx, Event{Kind: EventReticket, Queue: j.Queue})
	e.log.InfoContext(ctx, "slot missed", "queue", j.Queue, "job_id", j.ID, "old_ticket", old, "ticket", j.Ticket,
		"slot_at", j.SlotAt, "late_ms", late.Milliseconds())
	return nil
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

// holdTurn is, for a job that holds for lower tickets (holdUntil), when
// it may go to the gate by the clock: at the due start of the nearest of
// them, until which that one may still pass the gate for its own start.
// Workers go to the gate a lead ahead of their starts; two of them given
// their messages at once (a burst, a late delivery) would otherwise race
// for the gate, and the higher ticket could pass the lower one by a hair.
func holdTurn(q Queue, j *job.Job, at time.Time) time.Time {
	hold := holdUntil(q, j, at)
	if hold.IsZero() {
		return time.Time{}
	}
	return hold.Add(q.Config.Skew - q.Config.Interval)
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

// parkForGate parks j until its gate opens at wake, further away than
// the transport can delay a message: the resume function sends it once,
// with the exact delay (job.WaitGate), where hand-backs would re-send it
// every 15 minutes. A job that holds its key keeps it meanwhile, as a
// handed-back one does.
func (e *Engine) parkForGate(ctx context.Context, j *job.Job, wake time.Time, holding bool) error {
	if holding {
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
		if l.Holder == w && l.Until.Before(until) {
			l.Until = until
		}
		return l
	}); err != nil {
		e.log.WarnContext(ctx, "key's hold not kept while away", "queue", j.Queue, "job_id", j.ID, "key", j.Key, "error", err.Error())
	}
}

// handBackHolding hands j back (handBack); a job that holds its key
// (holding) keeps it while it is away: its hold is made to last until a
// lease after it comes back, or the resume function would hand the key on
// meanwhile and j, back, would find itself overtaken.
func (e *Engine) handBackHolding(ctx context.Context, j *job.Job, wake time.Time, holding bool) error {
	if holding {
		e.keepHold(ctx, j, wake)
	}
	return e.handBack(ctx, j, wake)
}

// handBack sends the job's envelope again to arrive at wake, by the clock
// as it goes: the slot lies past this invocation's deadline.
func (e *Engine) handBack(ctx context.Context, j *job.Job, wake time.Time) error {
	env := j.Envelope()
	env.SentAt = e.now()
	wait := max(0, wake.Add(-e.opts.Lead).Sub(env.SentAt)) // to arrive Lead before it, as dispatch sends
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
	e.observe(ctx, Event{Kind: EventStart, Queue: j.Queue, Lateness: now.Sub(j.SlotAt), Gap: gap, HasGap: hasGap,
		Start: &Start{JobID: j.ID, Ticket: j.Ticket, Attempt: j.Attempt, SlotAt: j.SlotAt, GateAt: j.StartedAt, At: now}})
	e.log.InfoContext(ctx, "start", "queue", j.Queue, "ticket", j.Ticket, "job_id", j.ID,
		"slot_at", j.SlotAt, "gate_at", j.StartedAt, "lateness_ms", now.Sub(j.SlotAt).Milliseconds(),
		"attempt", j.Attempt, "target", j.What())
	runErr := errors.New("no runner configured")
	if e.runner != nil {
		tctx, res := attempt.New(ctx)
		runErr = e.runTarget(tctx, j, q.Config)
		j.Result, j.ResultDropped = res.Take() // written with the outcome (finish)
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
	case errors.Is(runErr, attempt.ErrSkipRetry) || j.RunAttempt() >= q.Config.MaxAttempts:
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
