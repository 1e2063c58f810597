package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/job"
)

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
func (e *worker) awaitRecord(ctx context.Context, env job.Envelope) (j job.Job, waited bool, err error) {
	// A message due at once may come just before its record: the first
	// looks are close together, so that a record written a millisecond
	// after the message is seen by its worker's time to go to the gate
	// (a lead before the slot), not a doubled wait after it.
	wait := recordPoll
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

// recordPoll is the first wait of awaitRecord between its looks; each
// next one is twice as long. A look is a strong read of the record (on
// DynamoDB half a read unit), and only a message that came before its
// record looks more than once.
const recordPoll = 250 * time.Microsecond

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
func (e *worker) recoverIfLost(ctx context.Context, j job.Job) error {
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
	if !keyHeld(q, j) {
		e.room.freeBooking(rctx, q, j) // its worker may have died before freeing it
	} // else held to its attempt's end: freed once its outcome is recorded (endKeptBooking)
	return e.recordOutcome(rctx, q, j, q.State, errors.New("attempt lost: its worker stopped before recording an outcome"))
}

// expireOfDeletedQueue ends a job whose queue was deleted (or deleted and
// created again: another generation) as its message comes: a waiting job is cancelled, a
// running one (its worker died, or this is the watchdog) failed, and
// either expires at once, so it reads as not found and DynamoDB's TTL
// removes it. The message is done with.
func (e *worker) expireOfDeletedQueue(ctx context.Context, j job.Job) error {
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
func (e *worker) leaveIfGone(ctx context.Context, q Queue, j job.Job, ticket int64) {
	fresh, err := e.state.GetJob(ctx, j.Ref())
	if err != nil && !errors.Is(err, ErrJobNotFound) {
		return // unknown: its lease frees the key
	}
	if err == nil && fresh.Ticket == ticket && (fresh.Status.Waiting() || fresh.Status == job.Running) {
		return
	}
	e.lanes.leave(ctx, q, j, ticket, jobGoesOn)
}

// deadGeneration reads j's queue after j was written parked, and expires
// j (expireOfDeletedQueue) if the queue was deleted meanwhile: DeleteQueue removes the
// queue before it lists the parked jobs it expires, so a park either
// lands before that listing (and is expired there) or finds the queue
// gone here. Nothing else would ever look at a parked job of a deleted
// generation. It reports whether j was expired.
func (e *worker) deadGeneration(ctx context.Context, j *job.Job) bool {
	return e.expireIfDead(ctx, j.Queue, j.Gen, []*job.Job{j}) > 0
}

// expireIfDead reads queue after jobs of generation gen were written,
// and if the queue is gone or of another generation, expires those of
// them that were written parked (see deadGeneration). It returns how
// many it expired; with no parked job among them it reads nothing.
func (e *worker) expireIfDead(ctx context.Context, queue string, gen int64, jobs []*job.Job) int {
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
func (e *worker) cancelPurged(ctx context.Context, q Queue, j job.Job) error {
	if err := e.admin.cancel(ctx, q.Config, j); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil
		}
		return fmt.Errorf("work %s: cancel purged job: %w", j.Ref(), err)
	}
	e.lanes.takeOffLanes(ctx, q, j)
	e.room.freeBooking(ctx, q, j)
	e.log.InfoContext(ctx, "cancelled by purge", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket)
	return nil
}

// claimedMeanwhile reads the job again, strongly, and reports whether it is
// no longer queued at want: someone else claimed (or cancelled) it, so this
// delivery goes no further. A job claimed at want's attempt runs the
// attempt this message carries (another delivery of it claimed it): the
// message is that attempt's watchdog, and is kept, not done with
// (recoverIfLost: ErrStillRunning within the lease), or the transport
// would delete it and leave a running attempt that nothing recovers if
// its worker dies.
func (e *worker) claimedMeanwhile(ctx context.Context, want job.Version, j *job.Job) (bool, error) {
	fresh, err := e.state.GetJob(ctx, j.Ref())
	if errors.Is(err, ErrJobNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("work %s: %w", j.Ref(), err)
	}
	if fresh.Version() == runningAt(want) {
		return true, e.recoverIfLost(ctx, fresh)
	}
	if fresh.Version() != want {
		e.log.DebugContext(ctx, "dropped duplicate delivery", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "status", fresh.Status)
		return true, nil
	}
	*j = fresh
	return false, nil
}

// runningAt is the version of a job whose attempt at want (a queued
// job's version) was claimed: running at the same ticket and attempt.
func runningAt(want job.Version) job.Version {
	want.Status = job.Running
	return want
}
