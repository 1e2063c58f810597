package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/slotq/slotq/pkg/job"
)

// ResumeReport says what one Resume run did.
type ResumeReport struct {
	Queues int `json:"queues"`
	// Lifted counts pauses whose paused_until had come.
	Lifted int `json:"lifted"`
	// Reticketed counts parked jobs that took new tickets (their queue was
	// paused, or their slot passed while they waited).
	Reticketed int `json:"reticketed"`
	// Released counts parked jobs sent to the transport.
	Released int `json:"released"`
	// Busy counts queues another pass held (their lease was taken).
	Busy int `json:"busy,omitempty"`
	// Continued counts queues with parked jobs left for the next run
	// (the pass used its budget).
	Continued int `json:"continued,omitempty"`
	// Deferred counts queues this run did not reach before its deadline;
	// the next run starts elsewhere in the list.
	Deferred int `json:"deferred,omitempty"`
}

func (r *ResumeReport) add(o ResumeReport) {
	r.Lifted += o.Lifted
	r.Reticketed += o.Reticketed
	r.Released += o.Released
	r.Busy += o.Busy
	r.Continued += o.Continued
}

// Resume is what the schedule calls, once a minute. Over every queue it
// lifts pauses whose time has come, re-tickets stale parked jobs in their
// old order, and releases parked jobs whose slot came within the
// transport's reach (with exact delays), including those whose message the
// transport refused. It goes on past a failing queue and returns the
// errors joined.
//
// A pass over a queue holds the queue's resume lease (State.Lease), so two
// passes (an overlapping run, the schedule's retry, an admin resume) never
// interleave on a queue: each would take its own ticket range for the
// same parked jobs and win some of them, inverting their order. A pass
// looks at no more than ResumeBudget parked jobs and leaves a cursor for
// the next, so a backlog of any size is worked a bounded slice per run;
// the run stops starting passes once its deadline is near (Margin), and
// starts each run at another queue of the list, so no queue starves
// behind the others.
//
// Queued and running jobs need no sweep: a queued job's message is sent
// before its record is written, and a running attempt's message stays with
// the transport until the attempt ends, coming back (Work's watch) if its
// worker dies.
func (e *Engine) Resume(ctx context.Context) (ResumeReport, error) {
	var rep ResumeReport
	queues, err := e.state.ListQueues(ctx)
	if err != nil {
		return rep, fmt.Errorf("resume: %w", err)
	}
	var errs []error
	first := 0
	if n := len(queues); n > 0 {
		// Rotate by the minute: the schedule runs once a minute, so a
		// queue late in the list is early in another run.
		first = int((e.now().Unix() / 60) % int64(n))
	}
	holder := newHolder()
	for i := range queues {
		q := queues[(first+i)%len(queues)]
		if !e.fits(ctx, e.opts.RecordTimeout) {
			rep.Deferred = len(queues) - i
			break
		}
		rep.Queues++
		var fig Figures
		r, err := e.resumeQueue(ctx, q, holder, false, &fig)
		rep.add(r)
		if err != nil {
			errs = append(errs, err)
		}
		if r.Busy == 0 && err == nil {
			e.observe(ctx, Event{Kind: EventFigures, Queue: q.Name, Figures: &fig})
		}
	}
	return rep, errors.Join(errs...)
}

// newHolder names one Resume run (or admin resume) as a lease holder.
func newHolder() string {
	return fmt.Sprintf("resume-%016x", rand.Uint64())
}

// leaseUntil is how long a pass holds a queue's lease: past ctx's deadline
// (after which nothing of the pass is written), plus a minute for clock
// differences; without a deadline, two minutes.
func (e *Engine) leaseUntil(ctx context.Context, now time.Time) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return now.Add(time.Until(d) + time.Minute)
	}
	return now.Add(2 * time.Minute)
}

// resumeQueue is one pass over a queue under its lease. fresh starts a
// new round of passes (the queue was just unpaused). If fig is not nil, a
// pass that ran fills it with the queue's figures after it.
func (e *Engine) resumeQueue(ctx context.Context, q Queue, holder string, fresh bool, fig *Figures) (rep ResumeReport, err error) {
	now := e.now()
	cur, err := e.state.Lease(ctx, q.Name, holder, e.leaseUntil(ctx, now), now)
	if errors.Is(err, ErrLeaseHeld) {
		rep.Busy++
		e.log.InfoContext(ctx, "resume pass skipped: another pass holds the queue", "queue", q.Name)
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("resume %s: %w", q.Name, err)
	}
	held := true
	defer func() {
		if !held {
			return
		}
		// Released on a context of its own: a pass cut short by its
		// deadline still leaves its cursor (or, failing that, the lease
		// expires at its until).
		rctx, cancel := e.recordContext(ctx)
		defer cancel()
		if rerr := e.state.ReleaseLease(rctx, q.Name, holder, cur); rerr != nil {
			err = errors.Join(err, fmt.Errorf("resume %s: %w", q.Name, rerr))
		}
	}()
	if fresh {
		cur = Cursor{}
	}
	if q.State.Paused && !q.State.PausedUntil.IsZero() && !now.Before(q.State.PausedUntil) {
		// A new round starts with the lift: the jobs the pause parked
		// may lie below the old cursor. Store that before lifting, so a
		// pass after a crash here starts over as well.
		if err := e.restartRound(ctx, q.Name, holder, now); err != nil {
			if errors.Is(err, ErrLeaseHeld) {
				// Another pass took the lease between the release and
				// the take: it starts the new round and lifts the pause.
				held = false
				rep.Busy++
				return rep, nil
			}
			return rep, err
		}
		cur = Cursor{}
		lifted, err := e.state.Unpause(ctx, q.Name, q.State.PausedUntil)
		if err != nil {
			return rep, fmt.Errorf("resume %s: lift pause: %w", q.Name, err)
		}
		if lifted {
			rep.Lifted++
			e.observe(ctx, Event{Kind: EventLifted, Queue: q.Name})
			e.log.InfoContext(ctx, "pause lifted", "queue", q.Name, "paused_until", q.State.PausedUntil)
		}
		if q, err = e.state.GetQueue(ctx, q.Name); err != nil {
			return rep, fmt.Errorf("resume %s: %w", q.Name, err)
		}
	}
	if q.State.Paused {
		if fig != nil {
			// Its parked jobs are not listed while it is paused: Waiting
			// counts them.
			*fig = Figures{Waiting: waiting(q.State), Parked: -1, Lag: lag(q, now), Paused: true, Lanes: LaneFigures{Running: -1}}
		}
		return rep, nil
	}
	parked, onLanes, err := e.release(ctx, &q, &rep, &cur, now)
	if err != nil {
		return rep, err
	}
	handed, lanes, err := e.reapLanes(ctx, q, now, onLanes)
	if err != nil {
		return rep, err
	}
	if fig != nil {
		*fig = Figures{Waiting: waiting(q.State), Parked: parked, Lag: lag(q, now), Lanes: lanes}
	}
	if rep.Reticketed > 0 {
		e.observe(ctx, Event{Kind: EventReticket, Queue: q.Name, Count: rep.Reticketed})
	}
	if rep.Released > 0 {
		e.observe(ctx, Event{Kind: EventRelease, Queue: q.Name, Count: rep.Released})
	}
	// Hand-offs observe their own releases (wake).
	rep.Released += handed
	if rep != (ResumeReport{}) {
		e.log.InfoContext(ctx, "resumed", "queue", q.Name, "reticketed", rep.Reticketed, "released", rep.Released, "continued", rep.Continued)
	}
	return rep, nil
}

// restartRound stores an empty cursor with holder's lease of queue, and
// takes the lease again: whatever pass comes next starts from the first
// parked job.
func (e *Engine) restartRound(ctx context.Context, queue, holder string, now time.Time) error {
	if err := e.state.ReleaseLease(ctx, queue, holder, Cursor{}); err != nil {
		return fmt.Errorf("resume %s: %w", queue, err)
	}
	if _, err := e.state.Lease(ctx, queue, holder, e.leaseUntil(ctx, now), now); err != nil {
		return fmt.Errorf("resume %s: %w", queue, err)
	}
	return nil
}

// release looks at up to ResumeBudget parked jobs after the cursor, in
// ticket order. Stale ones (parked by a pause, or whose slot has passed,
// or whose ticket the queue passed — a scheduled job's ticket is never
// passed: it starts by its slot) take new tickets together, so they
// keep their relative order; then every parked job whose slot is within
// reach goes to the transport. The rest wait: the cursor moves past them
// and remembers when the first of them falls due (Cursor.Wake), when the
// next pass starts a new round from the first parked job. A pass that
// reaches the end of the list starts a new round too.
//
// It returns how many of the jobs it looked at stay parked: the queue's
// parked jobs when the pass saw all of them (a round's first pass, within
// the budget), a lower bound otherwise.
//
// It also returns the jobs parked on lanes it looked at, which only hand
// offs release (reapLanes).
func (e *Engine) release(ctx context.Context, q *Queue, rep *ResumeReport, cur *Cursor, now time.Time) (int, []job.Job, error) {
	if cur.After > 0 && !cur.Wake.IsZero() && !now.Before(cur.Wake) {
		*cur = Cursor{}
	}
	budget := e.opts.ResumeBudget
	parked, err := e.state.ListJobs(ctx, ListRequest{Queue: q.Name, Gen: q.Gen, Status: job.Parked, After: cur.After, Limit: budget})
	if err != nil {
		return 0, nil, fmt.Errorf("resume %s: %w", q.Name, err)
	}
	next := *cur
	if len(parked) < budget {
		next = Cursor{} // the end: the next pass starts over
	} else {
		next.After = parked[len(parked)-1].Ticket
		rep.Continued++
	}
	var stale []*job.Job
	var from []job.Version
	var due []*job.Job
	var onLanes []job.Job
	for i := range parked {
		j := &parked[i]
		switch {
		case j.ParkReason.Waits():
			// Parked on a lane: a hand-off sends it (reapLanes).
			onLanes = append(onLanes, *j)
		case j.ParkReason == job.PausedQueue || j.Ticket <= q.State.Current && !j.Scheduled && !j.Detached || j.SlotAt.Before(now) && !j.Detached:
			stale = append(stale, j)
			from = append(from, j.Version())
		case !j.SlotAt.After(now.Add(e.transport.MaxDelay())):
			due = append(due, j)
		case next.After > 0:
			// Passed over for now; the round comes back for it in time.
			if w := j.SlotAt.Add(-e.transport.MaxDelay()); next.Wake.IsZero() || w.Before(next.Wake) {
				next.Wake = w
			}
		}
	}
	if len(stale) > 0 {
		orig := make([]job.Job, len(stale))
		for i, j := range stale {
			orig[i] = *j
		}
		if err := e.assign(ctx, q, stale); err != nil {
			return 0, nil, fmt.Errorf("resume %s: re-ticket: %w", q.Name, err)
		}
		// A purge that landed since the list was read covers the old
		// tickets up to Purged: those jobs are cancelled, not carried
		// past it (their new tickets stay unused).
		kept, keptFrom := stale[:0], from[:0]
		for i, j := range stale {
			if from[i].Ticket > q.State.Purged {
				kept, keptFrom = append(kept, j), append(keptFrom, from[i])
				continue
			}
			if err := e.purged(ctx, *q, orig[i]); err != nil {
				return 0, nil, fmt.Errorf("resume %s: %w", q.Name, err)
			}
			orig[i].Status = job.Cancelled // not counted as left parked
			*j = orig[i]
		}
		stale, from = kept, keptFrom
		for i, j := range stale {
			j.Retickets++
			j.Record(job.Event{At: e.now(), Kind: job.Reticketed, OldTicket: from[i].Ticket, Ticket: j.Ticket})
			e.place(j, q.State.Paused)
		}
		if err := e.releaseAll(ctx, q.Name, stale, from); err != nil {
			return 0, nil, err
		}
		rep.Reticketed += len(stale)
	}
	dueFrom := make([]job.Version, len(due))
	for i, j := range due {
		dueFrom[i] = j.Version()
		j.Status, j.ParkReason, j.DueAt = job.Queued, "", time.Time{}
	}
	if err := e.releaseAll(ctx, q.Name, due, dueFrom); err != nil {
		return 0, nil, err
	}
	if n := e.expireIfDead(ctx, q.Name, q.Gen, stale); n > 0 {
		e.log.InfoContext(ctx, "queue deleted during the resume pass; its jobs parked again expired", "queue", q.Name, "gen", q.Gen, "jobs", n)
		return 0, nil, nil
	}
	for _, js := range [][]*job.Job{stale, due} {
		for _, j := range js {
			if j.Status == job.Queued {
				rep.Released++
			} else if j.ParkReason == job.Unsent && j.Ticket <= next.After {
				// Its message was refused and it stays parked behind
				// the cursor: the next pass starts over to send it.
				next.Wake = now
			}
		}
	}
	*cur = next
	left := 0
	for i := range parked {
		if parked[i].Status == job.Parked {
			left++
		}
	}
	return left, onLanes, nil
}

// releaseAll sends the messages of the queued jobs among jobs and then
// writes every record (jobs[i] was at from[i]). A record that moved
// meanwhile (cancelled) is left alone; its message is stale.
func (e *Engine) releaseAll(ctx context.Context, queue string, jobs []*job.Job, from []job.Version) error {
	e.dispatch(ctx, jobs)
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

// listAll lists every job of a queue (of its generation) and status, page
// by page.
func (e *Engine) listAll(ctx context.Context, q Queue, s job.Status) ([]job.Job, error) {
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
