package engine

import (
	"context"
	"errors"
	"fmt"
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
}

func (r *ResumeReport) add(o ResumeReport) {
	r.Lifted += o.Lifted
	r.Reticketed += o.Reticketed
	r.Released += o.Released
}

// Resume is what the schedule calls, once a minute. Over every queue it
// lifts pauses whose time has come, re-tickets stale parked jobs in their
// old order, and releases parked jobs whose slot came within the
// transport's reach (with exact delays), including those whose message the
// transport refused. It goes on past a failing queue and returns the
// errors joined.
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
	for _, q := range queues {
		rep.Queues++
		r, err := e.resumeQueue(ctx, q)
		rep.add(r)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return rep, errors.Join(errs...)
}

func (e *Engine) resumeQueue(ctx context.Context, q Queue) (ResumeReport, error) {
	var rep ResumeReport
	now := e.now()
	if q.State.Paused && !q.State.PausedUntil.IsZero() && !now.Before(q.State.PausedUntil) {
		lifted, err := e.state.Unpause(ctx, q.Name, q.State.PausedUntil)
		if err != nil {
			return rep, fmt.Errorf("resume %s: lift pause: %w", q.Name, err)
		}
		if lifted {
			rep.Lifted++
			e.log.InfoContext(ctx, "pause lifted", "queue", q.Name, "paused_until", q.State.PausedUntil)
		}
		if q, err = e.state.GetQueue(ctx, q.Name); err != nil {
			return rep, fmt.Errorf("resume %s: %w", q.Name, err)
		}
	}
	if q.State.Paused {
		return rep, nil
	}
	if err := e.release(ctx, &q, &rep, now); err != nil {
		return rep, err
	}
	if rep != (ResumeReport{}) {
		e.log.InfoContext(ctx, "resumed", "queue", q.Name, "reticketed", rep.Reticketed, "released", rep.Released)
	}
	return rep, nil
}

// release walks the parked jobs in ticket order. Stale ones (parked by a
// pause, or whose slot has passed, or whose ticket the queue passed) take
// new tickets together, so they keep their relative order; then every
// parked job whose slot is within reach goes to the transport.
func (e *Engine) release(ctx context.Context, q *Queue, rep *ResumeReport, now time.Time) error {
	parked, err := e.listAll(ctx, q.Name, job.Parked)
	if err != nil {
		return fmt.Errorf("resume %s: %w", q.Name, err)
	}
	var stale []*job.Job
	var from []job.Version
	var due []*job.Job
	for i := range parked {
		j := &parked[i]
		switch {
		case j.ParkReason == job.PausedQueue || j.Ticket <= q.State.Current || j.SlotAt.Before(now):
			stale = append(stale, j)
			from = append(from, j.Version())
		case !j.SlotAt.After(now.Add(e.transport.MaxDelay())):
			due = append(due, j)
		}
	}
	if len(stale) > 0 {
		if err := e.assign(ctx, q, stale, now); err != nil {
			return fmt.Errorf("resume %s: re-ticket: %w", q.Name, err)
		}
		for _, j := range stale {
			j.Retickets++
			e.place(j, q.State.Paused, now)
		}
		if err := e.releaseAll(ctx, q.Name, stale, from, now); err != nil {
			return err
		}
		rep.Reticketed += len(stale)
	}
	dueFrom := make([]job.Version, len(due))
	for i, j := range due {
		dueFrom[i] = j.Version()
		j.Status, j.ParkReason, j.DueAt = job.Queued, "", time.Time{}
	}
	if err := e.releaseAll(ctx, q.Name, due, dueFrom, now); err != nil {
		return err
	}
	for _, js := range [][]*job.Job{stale, due} {
		for _, j := range js {
			if j.Status == job.Queued {
				rep.Released++
			}
		}
	}
	return nil
}

// releaseAll sends the messages of the queued jobs among jobs and then
// writes every record (jobs[i] was at from[i]). A record that moved
// meanwhile (cancelled) is left alone; its message is stale.
func (e *Engine) releaseAll(ctx context.Context, queue string, jobs []*job.Job, from []job.Version, now time.Time) error {
	e.dispatch(ctx, jobs, now)
	for i, j := range jobs {
		if j.Version() == from[i] && j.ParkReason == job.Unsent {
			continue // not sent again and nothing changed: it stays parked
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

// listAll lists every job of a queue and status, page by page.
func (e *Engine) listAll(ctx context.Context, queue string, s job.Status) ([]job.Job, error) {
	var all []job.Job
	var after int64
	for {
		page, err := e.state.ListJobs(ctx, ListRequest{Queue: queue, Status: s, After: after, Limit: 500})
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
