package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// ResumeReport says what one Resume run did: api.ResumeReport, the type
// users decode (one declaration of each field). Due counts the entries
// read of State.ListDue; Continued the rounds a pass left when it used
// its ResumeBudget, and the run's read when it filled ResumeRead;
// Occurrences the schedules' occurrences (schedules_run.go); Backlog
// the entries left when the run's time ran out (urgency.go).
type ResumeReport api.ResumeReport

func (r *ResumeReport) add(o ResumeReport) {
	r.Lifted += o.Lifted
	r.Reticketed += o.Reticketed
	r.Released += o.Released
	r.Held += o.Held
	r.Busy += o.Busy
	r.Continued += o.Continued
	r.Backlog += o.Backlog
}

// Resume does Engine.Resume's work.
func (e *resumer) Resume(ctx context.Context) (rep ResumeReport, err error) {
	ctx, end := e.traceResume(ctx)
	defer func() { end(&rep, err) }()
	return e.resume(ctx)
}

func (e *resumer) resume(ctx context.Context) (ResumeReport, error) {
	var rep ResumeReport
	var errs []error
	rebuilding, err := e.rebuildDue(ctx)
	if err != nil {
		errs = append(errs, fmt.Errorf("resume: %w", err))
	}
	b := e.newRunBudget(ctx, rebuilding)
	now := e.now()
	due, err := e.state.ListDue(ctx, now, e.opts.ResumeRead)
	switch {
	case errors.Is(err, ErrIndexNotReady):
		// A table upgraded with the due index, which DynamoDB still
		// builds: nothing of it can be read yet. What is due waits for
		// a later run; nothing is lost. The rebuild takes the run.
		e.log.InfoContext(ctx, "due index still being built: nothing due read this run")
		rep.IndexBuilding = true
	case err != nil:
		errs = append(errs, fmt.Errorf("resume: %w", err))
	default:
		errs = append(errs, e.actOnReads(ctx, due, b, &rep)...)
	}
	if rebuilding {
		// After the due work, with what is left of the run (at least
		// its share): the cursor it leaves survives a timeout.
		r, err := e.rebuild(ctx, b.rebuildStop)
		if r.Queues+r.Jobs+r.Lanes > 0 {
			rep.Upgraded = &r
		}
		rep.Reindex = &r.Progress
		if err != nil {
			errs = append(errs, fmt.Errorf("resume: rebuild: %w", err))
		}
	}
	if e.opts.Figures && !rep.IndexBuilding {
		if err := e.figures(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return rep, errors.Join(errs...)
}

// actOnReads acts on due, the run's first read of the due index, and
// reads again as long as a read came full (ResumeRead entries) and was
// acted on all, with progress, within the run's time: a backlog larger
// than one read is released by one run, as fast as its passes go, not a
// read a minute. A full read with nothing done (its queues' leases held
// by another run, say) ends the run: the next finds it again.
func (e *resumer) actOnReads(ctx context.Context, due []DueEntry, b runBudget, rep *ResumeReport) []error {
	var errs []error
	for {
		rep.Due += len(due)
		full := len(due) == e.opts.ResumeRead
		if full {
			rep.Continued++
		}
		progress := func() int { return rep.Released + rep.Reticketed + rep.Held + rep.Lifted + rep.Occurrences }
		before := progress()
		errs = append(errs, e.actOnAll(ctx, due, b, rep)...)
		if !full || rep.Backlog > 0 || progress() == before || !b.dueFits() {
			return errs
		}
		var err error
		if due, err = e.state.ListDue(ctx, e.now(), e.opts.ResumeRead); err != nil {
			return append(errs, fmt.Errorf("resume: %w", err))
		}
	}
}

// figures reads every queue and reports its figures (Options.Figures),
// as long as the run's deadline allows.
func (e *resumer) figures(ctx context.Context) error {
	queues, err := e.state.ListQueues(ctx)
	if err != nil {
		return fmt.Errorf("resume: figures: %w", err)
	}
	first := 0
	if n := len(queues); n > 0 {
		// Rotate by the minute: with more queues than a run can read,
		// one late in the list is early in another run.
		first = int((e.now().Unix() / 60) % int64(n))
	}
	for i := range queues {
		q := queues[(first+i)%len(queues)]
		if !e.fits(ctx, e.opts.RecordTimeout) {
			return nil
		}
		now := e.now()
		fig := Figures{Waiting: waiting(q.Settled(now)), Parked: -1, Lag: lag(q, now), Paused: q.State.Paused, Lanes: LaneFigures{Running: -1}}
		if n, err := e.state.CountJobs(ctx, q.Name, q.Gen, job.Parked); err == nil {
			fig.Parked = n
		}
		if lanes, err := e.lanes.Lanes(ctx, q); err == nil {
			fig.Lanes = lanes
		}
		e.observe(ctx, Event{Kind: EventFigures, Queue: q.Name, Figures: &fig})
	}
	return nil
}

// newHolder names one Resume run (or admin resume) as a lease holder.
func newHolder() string {
	return fmt.Sprintf("resume-%016x", rand.Uint64())
}

// leaseUntil is how long a pass holds a queue's lease: past ctx's deadline
// (after which nothing of the pass is written), plus a minute for clock
// differences; without a deadline, two minutes.
func (e *resumer) leaseUntil(ctx context.Context, now time.Time) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return now.Add(time.Until(d) + time.Minute)
	}
	return now.Add(2 * time.Minute)
}

// newRound is the cursor of a release round that starts at now: due at
// once, and kept due for a worker's lease, the longest a job that saw the
// queue paused may take to park (Options.Lease).
func (e *resumer) newRound(now time.Time) Cursor {
	return Cursor{Round: now, Until: now.Add(e.opts.Lease)}
}

// resumeQueue is one pass over a queue under its lease, acting on due, the
// queue's due entries.
func (e *resumer) resumeQueue(ctx context.Context, name string, due []DueEntry, holder string) (rep ResumeReport, err error) {
	now := e.now()
	cur, err := e.state.Lease(ctx, name, holder, e.leaseUntil(ctx, now), now)
	if errors.Is(err, ErrLeaseHeld) {
		rep.Busy++
		e.log.InfoContext(ctx, "resume pass skipped: another pass holds the queue", "queue", name)
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("resume %s: %w", name, err)
	}
	held := true
	defer func() {
		if !held {
			return
		}
		// Released on a context of its own: a pass cut short by its
		// deadline still leaves its cursor (or, failing that, the lease
		// expires at its until, and the round stays due as it was).
		rctx, cancel := e.worker.recordContext(ctx)
		defer cancel()
		if rerr := e.state.ReleaseLease(rctx, name, holder, cur); rerr != nil {
			err = errors.Join(err, fmt.Errorf("resume %s: %w", name, rerr))
		}
	}()
	q, err := e.state.GetQueue(ctx, name)
	if errors.Is(err, ErrQueueNotFound) {
		// Deleted: what it left due goes with it.
		cur = Cursor{}
		return rep, e.forget(ctx, Queue{Name: name}, due)
	}
	if err != nil {
		return rep, fmt.Errorf("resume %s: %w", name, err)
	}
	if until := QueueDue(q.State); !until.IsZero() && !now.Before(until) {
		busy, err := e.liftPause(ctx, &q, holder, until, &cur, &rep, now)
		if busy {
			// Another pass took the lease between the release and
			// the take: it runs the round and lifts the pause.
			held = false
			rep.Busy++
			return rep, nil
		}
		if err != nil {
			return rep, err
		}
	}
	reslotLeft := false
	if cur.Reslot {
		moves, err := e.admin.finishReslot(ctx, q)
		if err != nil {
			return rep, err
		}
		cur.Reslot, reslotLeft = false, moves.Remaining > 0
		if q, err = e.state.GetQueue(ctx, name); err != nil {
			return rep, fmt.Errorf("resume %s: %w", name, err)
		}
	}
	cur, err = e.actOnDue(ctx, &q, due, cur, &rep, now)
	if reslotLeft {
		// Moves left past the budget: the next pass goes on with them.
		cur.Reslot = true
		if cur.Round.IsZero() || cur.Round.After(now) {
			cur.Round = now
		}
	}
	return rep, err
}

// liftPause lifts q's pause, whose paused_until came, and starts its
// release round (*cur). The round is stored before the lift, so a pass
// after a crash here runs it as well. busy says another pass took the
// queue's lease meanwhile (restartRound): nothing was lifted. q is read
// again after the lift.
func (e *resumer) liftPause(ctx context.Context, q *Queue, holder string, until time.Time, cur *Cursor, rep *ResumeReport, now time.Time) (busy bool, _ error) {
	name := q.Name
	if err := e.restartRound(ctx, name, holder, e.newRound(now), now); err != nil {
		return errors.Is(err, ErrLeaseHeld), err
	}
	*cur = e.newRound(now)
	lifted, err := e.state.Unpause(ctx, name, until)
	if err != nil {
		return false, fmt.Errorf("resume %s: lift pause: %w", name, err)
	}
	if lifted {
		rep.Lifted++
		e.observe(ctx, Event{Kind: EventLifted, Queue: name})
		e.log.InfoContext(ctx, "pause lifted", "queue", name, "paused_until", until)
	}
	if *q, err = e.state.GetQueue(ctx, name); err != nil {
		return false, fmt.Errorf("resume %s: %w", name, err)
	}
	return false, nil
}

// actOnDue acts on q's due entries under the pass's lease: it runs the
// release round if one is due (cur), releases the parked jobs whose time
// came and looks at the lanes whose time came. It returns the cursor to
// leave with the lease.
func (e *resumer) actOnDue(ctx context.Context, q *Queue, due []DueEntry, cur Cursor, rep *ResumeReport, now time.Time) (Cursor, error) {
	var jobs []string
	var lanes []string
	room := false
	for _, d := range due {
		switch d.Kind {
		case DueJob:
			jobs = append(jobs, d.ID)
		case DueLane:
			lanes = append(lanes, d.ID)
		case DueRoom:
			room = true
		}
	}
	var err error
	if q.State.Paused {
		// The unpause starts the next round; the jobs due now wait for
		// it (hold), as those a pause parks.
		cur = Cursor{}
	} else if !cur.Round.IsZero() && !now.Before(cur.Round) {
		if cur, err = e.round(ctx, q, rep, cur, now); err != nil {
			return cur, err
		}
	}
	if err := e.releaseDue(ctx, q, jobs, rep, now); err != nil {
		return cur, err
	}
	handed := 0
	for _, key := range lanes {
		n, err := e.lanes.reapLane(ctx, *q, key, now)
		handed += n
		if err != nil {
			return cur, err
		}
	}
	if rep.Reticketed > 0 {
		e.observe(ctx, Event{Kind: EventReticketed, Queue: q.Name, Count: rep.Reticketed})
	}
	if rep.Released > 0 {
		e.observe(ctx, Event{Kind: EventReleased, Queue: q.Name, Count: rep.Released})
	}
	if room {
		// Jobs wait in the room: book what a crash left waiting
		// (waitroom.go). A paused queue's room waits with it; the look
		// comes again.
		if err := e.room.checkRoom(ctx, *q); err != nil {
			return cur, fmt.Errorf("resume %s: waiting room: %w", q.Name, err)
		}
	}
	// Hand-offs observe their own releases (wake).
	rep.Released += handed
	if *rep != (ResumeReport{}) {
		e.log.InfoContext(ctx, "resumed", "queue", q.Name, "reticketed", rep.Reticketed, "released", rep.Released, "held", rep.Held, "continued", rep.Continued)
	}
	return cur, nil
}

// restartRound stores c with holder's lease of queue, and takes the lease
// again: whatever pass comes next runs the round.
func (e *resumer) restartRound(ctx context.Context, queue, holder string, c Cursor, now time.Time) error {
	if err := e.state.ReleaseLease(ctx, queue, holder, c); err != nil {
		return fmt.Errorf("resume %s: %w", queue, err)
	}
	if _, err := e.state.Lease(ctx, queue, holder, e.leaseUntil(ctx, now), now); err != nil {
		return fmt.Errorf("resume %s: %w", queue, err)
	}
	return nil
}

// round is one pass of q's release round: up to ResumeBudget of the jobs
// the pause held take new tickets together, in line order, and those
// within the transport's reach are sent (the others park till their
// slot comes). It returns the cursor to leave: the round due again at
// once when the pass used its budget, or while it is kept (Cursor.Until);
// none after.
func (e *resumer) round(ctx context.Context, q *Queue, rep *ResumeReport, cur Cursor, now time.Time) (Cursor, error) {
	held, err := e.state.ListHeld(ctx, q.Name, q.Gen, e.opts.ResumeBudget)
	if err != nil {
		return cur, fmt.Errorf("resume %s: %w", q.Name, err)
	}
	stale := make([]*job.Job, len(held))
	for i := range held {
		stale[i] = &held[i]
	}
	if err := e.reticketAll(ctx, q, stale, rep); err != nil {
		return cur, err
	}
	switch {
	case len(held) == e.opts.ResumeBudget:
		rep.Continued++
		cur.Round = now
	case now.Before(cur.Until):
		cur.Round = now
	default:
		cur = Cursor{}
	}
	return cur, nil
}

// forget removes the due entries a deleted queue left: its parked jobs
// expire (cancelled) and its lanes are deleted.
func (e *resumer) forget(ctx context.Context, q Queue, due []DueEntry) error {
	var errs []error
	for _, d := range due {
		switch d.Kind {
		case DueJob:
			j, err := e.state.GetJob(ctx, job.Ref{Queue: q.Name, ID: d.ID})
			if err == nil && !JobDue(j).IsZero() {
				err = e.admin.cancel(ctx, q.Config, j)
			}
			if err != nil && !errors.Is(err, ErrJobNotFound) && !errors.Is(err, ErrConflict) {
				errs = append(errs, err)
			}
		case DueRoom:
			h, err := e.state.GetHorizon(ctx, q.Name)
			if err == nil && !h.CheckAt.IsZero() {
				h.CheckAt = time.Time{}
				_, err = e.state.PutHorizon(ctx, h, h.Version)
			}
			if err != nil && !errors.Is(err, ErrConflict) {
				errs = append(errs, err)
			}
		case DueLane:
			l, err := e.state.GetLane(ctx, q.Name, d.ID)
			if err == nil && l.Version != 0 {
				_, err = e.state.PutLane(ctx, slot.Lane{Queue: l.Queue, Key: l.Key, Gen: l.Gen}, l.Version, -l.Pending)
			}
			if err != nil && !errors.Is(err, ErrConflict) {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("resume %s (deleted): %w", q.Name, err)
	}
	return nil
}
