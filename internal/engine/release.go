package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/slotq/slotq/internal/job"
)

// reticketAll gives stale parked jobs (in order) new tickets together, so
// they keep their relative order, places them, sends those within reach
// and writes every record.
func (e *resumer) reticketAll(ctx context.Context, q *Queue, stale []*job.Job, rep *ResumeReport) error {
	// A ticket a purge covered is cancelled, not given a new one: the
	// purge's own listing may have missed its job (parked just then), and
	// a new ticket would let it start after the purge returned.
	live := stale[:0]
	for _, j := range stale {
		if j.Ticket > q.State.Purged {
			live = append(live, j)
			continue
		}
		if err := e.admin.cancel(ctx, q.Config, *j); err != nil && !errors.Is(err, ErrConflict) {
			return fmt.Errorf("resume %s: cancel purged %s: %w", q.Name, j.ID, err)
		}
		e.lanes.takeOffLanes(ctx, *q, *j)
	}
	stale = live
	if len(stale) == 0 {
		return nil
	}
	from := make([]job.Version, len(stale))
	orig := make([]job.Job, len(stale))
	for i, j := range stale {
		from[i], orig[i] = j.Version(), *j
	}
	if err := e.enqueuer.assign(ctx, q, stale); err != nil {
		return fmt.Errorf("resume %s: re-ticket: %w", q.Name, err)
	}
	// A purge that landed since the jobs were read covers their old
	// tickets up to the Purged the take answered: those are cancelled,
	// not carried past it (their new tickets stay unused).
	kept, keptFrom := stale[:0], from[:0]
	for i, j := range stale {
		if from[i].Ticket > q.State.Purged {
			kept, keptFrom = append(kept, j), append(keptFrom, from[i])
			continue
		}
		*j = orig[i]
		if err := e.worker.cancelPurged(ctx, *q, orig[i]); err != nil {
			return fmt.Errorf("resume %s: %w", q.Name, err)
		}
	}
	stale, from = kept, keptFrom
	for i, j := range stale {
		j.Retickets++
		j.Record(job.Event{At: e.now(), Kind: job.Reticketed, OldTicket: from[i].Ticket, Ticket: j.Ticket})
		e.enqueuer.sendOrPark(j, q.State)
	}
	if err := e.releaseAll(ctx, q.Name, stale, from); err != nil {
		return err
	}
	if n := e.worker.expireIfDead(ctx, q.Name, q.Gen, stale); n > 0 {
		// Deleted during the pass: the jobs it parked again went with it.
		e.log.InfoContext(ctx, "queue deleted during the resume pass; its jobs parked again expired", "queue", q.Name, "gen", q.Gen, "jobs", n)
	}
	rep.Reticketed += len(stale)
	for _, j := range stale {
		if j.Status == job.Queued {
			rep.Released++
		}
	}
	return nil
}

// releaseDue acts on q's parked jobs of ids whose DueAt came: on a paused
// queue they are held for its next round; a job whose slot passed (or
// whose ticket the queue passed) takes a new ticket; one whose slot is
// within the transport's reach is sent; one still out of reach (its
// message was refused long before its slot) parks again till it comes.
// A job parked on a lane is checked against its lane (checkListed). A record that moved on since its entry was read is
// left alone: its entry moved with it.
func (e *resumer) releaseDue(ctx context.Context, q *Queue, ids []string, rep *ResumeReport, now time.Time) error {
	read, backlog, err := e.readDue(ctx, q.Name, ids)
	rep.Backlog += backlog
	if err != nil {
		return err
	}
	var stale, due, later, gate []*job.Job
	for _, j := range read {
		at := JobDue(*j)
		switch {
		case at.IsZero() || at.After(now):
			// Moved on since the index was read.
		case j.Gen != q.Gen:
			// A deleted queue's: it expires.
			if err := e.admin.cancel(ctx, q.Config, *j); err != nil && !errors.Is(err, ErrConflict) {
				return fmt.Errorf("resume %s: %w", q.Name, err)
			}
		case j.ParkReason.Waits():
			if err := e.lanes.checkListed(ctx, *q, *j, now); err != nil {
				return err
			}
		case q.State.Paused:
			if err := e.parkForRound(ctx, q.Name, *j, now); err != nil {
				return err
			}
			rep.Held++
		case j.ParkReason == job.WaitGate && !(j.Ticket <= q.State.Current && !j.Scheduled && !j.Detached):
			// Its gate opens a transport's reach after its due time:
			// sent once, to arrive then, its slot kept.
			gate = append(gate, j)
		case j.Ticket <= q.State.Current && !j.Scheduled && !j.Detached || j.SlotAt.Before(now) && !j.Detached:
			stale = append(stale, j)
		case !j.SlotAt.After(now.Add(e.transport.MaxDelay())):
			due = append(due, j)
		default:
			later = append(later, j)
		}
	}
	slices.SortFunc(stale, func(a, b *job.Job) int { return cmp.Compare(a.LineOrder(), b.LineOrder()) })
	if err := e.reticketAll(ctx, q, stale, rep); err != nil {
		return err
	}
	left, err := e.releaseDueJobs(ctx, q.Name, due)
	rep.Backlog += left
	if err != nil {
		return err
	}
	left, err = e.releaseToGate(ctx, q.Name, gate)
	rep.Backlog += left
	if err != nil {
		return err
	}
	rep.Released += queued(gate) + queued(due)
	return inParallel(ctx, len(later), e.opts.ResumeConcurrency, func(i int) error {
		j := later[i]
		from := j.Version()
		j.ParkReason, j.DueAt = job.Far, j.SlotAt.Add(-e.transport.MaxDelay())
		if err := e.state.UpdateJob(ctx, *j, from); err != nil && !errors.Is(err, ErrConflict) {
			return fmt.Errorf("resume %s: park %s: %w", q.Name, j.ID, err)
		}
		return nil
	})
}

// readDue reads the records of queue's parked jobs of ids, many at once
// (inParallel), in the order of ids; a job gone is left out. A read the
// run's time leaves no room for is not made: those jobs stay due, and
// backlog counts them.
func (e *resumer) readDue(ctx context.Context, queue string, ids []string) (_ []*job.Job, backlog int, _ error) {
	jobs := make([]*job.Job, len(ids))
	var cut atomic.Int64
	err := inParallel(ctx, len(ids), e.opts.ResumeConcurrency, func(i int) error {
		if !e.fits(ctx, e.opts.RecordTimeout) {
			// The run's time is up: the rest stay due (its backlog).
			cut.Add(1)
			return nil
		}
		j, err := e.state.GetJob(ctx, job.Ref{Queue: queue, ID: ids[i]})
		if errors.Is(err, ErrJobNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("resume %s: %w", queue, err)
		}
		jobs[i] = &j
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return slices.DeleteFunc(jobs, func(j *job.Job) bool { return j == nil }), int(cut.Load()), nil
}

// parkForRound parks j, due on a paused queue, for the queue's next
// release round.
func (e *resumer) parkForRound(ctx context.Context, queue string, j job.Job, now time.Time) error {
	from := j.Version()
	j.ParkReason, j.DueAt = job.PausedQueue, time.Time{}
	j.Record(job.Event{At: now, Kind: job.ParkedEvent, Reason: string(job.PausedQueue)})
	if err := e.state.UpdateJob(ctx, j, from); err != nil && !errors.Is(err, ErrConflict) {
		return fmt.Errorf("resume %s: hold %s: %w", queue, j.ID, err)
	}
	return nil
}

// queued counts the jobs among js that were written queued.
func queued(js []*job.Job) int {
	n := 0
	for _, j := range js {
		if j.Status == job.Queued {
			n++
		}
	}
	return n
}

// releaseToGate sends jobs parked until their gate opens (job.WaitGate),
// each to arrive a lead before its opening (DueAt + the transport's
// reach), and writes them queued; a job the transport refuses stays
// parked, as unsent. A record that moved meanwhile is left alone.
func (e *resumer) releaseToGate(ctx context.Context, queue string, jobs []*job.Job) (left int, _ error) {
	var cut atomic.Int64
	err := inBatches(ctx, len(jobs), e.opts.ResumeConcurrency, func(lo, hi int) error {
		if !e.fits(ctx, e.opts.RecordTimeout) {
			cut.Add(int64(hi - lo)) // the run's time is up: still due
			return nil
		}
		return e.releaseToGateBatch(ctx, queue, jobs[lo:hi])
	})
	return int(cut.Load()), err
}

// releaseDueJobs sends the jobs of due, parked till their slot came
// within the transport's reach, and writes them queued (releaseAll's
// batches). A batch the run's time leaves no room for is not sent: its
// jobs stay parked and due, and left counts them; the others' records
// say queued, or parked as unsent where the transport refused them.
func (e *resumer) releaseDueJobs(ctx context.Context, queue string, due []*job.Job) (left int, _ error) {
	var cut atomic.Int64
	err := inBatches(ctx, len(due), e.opts.ResumeConcurrency, func(lo, hi int) error {
		if !e.fits(ctx, e.opts.RecordTimeout) {
			cut.Add(int64(hi - lo))
			return nil
		}
		batch := due[lo:hi]
		from := make([]job.Version, len(batch))
		for i, j := range batch {
			from[i] = j.Version()
			j.Status, j.ParkReason, j.DueAt = job.Queued, "", time.Time{}
		}
		return e.releaseBatch(ctx, queue, batch, from)
	})
	return int(cut.Load()), err
}

// releaseToGateBatch is releaseToGate's work for one batch: one send,
// then the records.
func (e *resumer) releaseToGateBatch(ctx context.Context, queue string, jobs []*job.Job) error {
	now := e.now()
	msgs := make([]Message, len(jobs))
	from := make([]job.Version, len(jobs))
	for i, j := range jobs {
		from[i] = j.Version()
		env := j.Envelope()
		env.SentAt = now
		msgs[i] = Message{Envelope: env, Delay: min(e.transport.MaxDelay(), e.enqueuer.messageDelay(j, j.DueAt.Add(e.transport.MaxDelay()), now))}
	}
	failed := map[int]bool{}
	if err := e.transport.Send(ctx, msgs); err != nil {
		var se *SendError
		if !errors.As(err, &se) {
			return fmt.Errorf("resume %s: send: %w", queue, err)
		}
		for i := range se.Failed {
			failed[i] = true
		}
	}
	for i, j := range jobs {
		if failed[i] {
			continue // still due: the next run sends it again
		}
		j.Status, j.ParkReason, j.DueAt = job.Queued, "", time.Time{}
		j.Record(job.Event{At: now, Kind: job.Released, Reason: string(job.WaitGate)})
		if err := e.state.UpdateJob(ctx, *j, from[i]); err != nil && !errors.Is(err, ErrConflict) {
			return fmt.Errorf("resume %s: release %s: %w", queue, j.ID, err)
		}
	}
	return nil
}

// releaseAll sends the messages of the queued jobs among jobs and then
// writes every record (jobs[i] was at from[i]), ReleaseBatch jobs at a
// time, many batches at once (inBatches): a batch's records are written
// once its send returned, so a job whose record says queued was sent, and
// one sent whose record was not written (the run cut short) is still
// parked, sent again by the next run, its duplicate dropped by the
// worker's claim. A record that moved meanwhile (cancelled) is left
// alone; its message is stale.
func (e *resumer) releaseAll(ctx context.Context, queue string, jobs []*job.Job, from []job.Version) error {
	return inBatches(ctx, len(jobs), e.opts.ResumeConcurrency, func(lo, hi int) error {
		return e.releaseBatch(ctx, queue, jobs[lo:hi], from[lo:hi])
	})
}

// releaseBatch is releaseAll's work for one batch.
func (e *resumer) releaseBatch(ctx context.Context, queue string, jobs []*job.Job, from []job.Version) error {
	e.enqueuer.sendQueued(ctx, jobs)
	now := e.now()
	for i, j := range jobs {
		if j.Version() == from[i] && j.ParkReason == job.Unsent {
			continue // not sent again and nothing changed: it stays parked
		}
		if j.Status == job.Queued {
			j.Record(job.Event{At: now, Kind: job.Released})
		}
		if err := e.state.UpdateJob(ctx, *j, from[i]); err != nil {
			if errors.Is(err, ErrConflict) {
				continue
			}
			return fmt.Errorf("resume %s: release %s: %w", queue, j.ID, err)
		}
	}
	return nil
}

// inBatches runs f on [lo, hi) batches of n of at most ReleaseBatch, many
// at once (inParallel), and returns their errors joined.
func inBatches(ctx context.Context, n, limit int, f func(lo, hi int) error) error {
	return inParallel(ctx, (n+ReleaseBatch-1)/ReleaseBatch, limit, func(b int) error {
		return f(b*ReleaseBatch, min(n, (b+1)*ReleaseBatch))
	})
}

// listAll lists every job of a queue (of its generation) and status, page
// by page.
func (e *resumer) listAll(ctx context.Context, q Queue, s job.Status) ([]job.Job, error) {
	var all []job.Job
	var after int64
	for {
		page, err := e.state.ListJobs(ctx, ListRequest{Queue: q.Name, Gen: q.Gen, Status: s, After: after, Limit: 500})
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < 500 {
			return all, nil
		}
		after = page[len(page)-1].Ticket
	}
}
