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
	// Resent counts queued jobs whose message was presumed lost.
	Resent int `json:"resent"`
	// Recovered counts running attempts presumed lost with their worker.
	Recovered int `json:"recovered"`
}

func (r *ResumeReport) add(o ResumeReport) {
	r.Lifted += o.Lifted
	r.Reticketed += o.Reticketed
	r.Released += o.Released
	r.Resent += o.Resent
	r.Recovered += o.Recovered
}

// Resume is what the schedule calls, once a minute. Over every queue it
// lifts pauses whose time has come, re-tickets stale parked jobs in their
// old order, releases parked jobs whose slot came within the transport's
// reach (with exact delays), resends queued jobs whose message was lost and
// recovers attempts whose worker died. It goes on past a failing queue and
// returns the errors joined.
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
	if err := e.recover(ctx, q, &rep, now); err != nil {
		return rep, err
	}
	if q.State.Paused {
		return rep, nil
	}
	if err := e.release(ctx, &q, &rep, now); err != nil {
		return rep, err
	}
	if err := e.resend(ctx, &q, &rep, now); err != nil {
		return rep, err
	}
	if rep != (ResumeReport{}) {
		e.log.InfoContext(ctx, "resumed", "queue", q.Name, "reticketed", rep.Reticketed,
			"released", rep.Released, "resent", rep.Resent, "recovered", rep.Recovered)
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
		for i, j := range stale {
			j.Retickets++
			e.place(j, q.State.Paused, now)
			if err := e.state.UpdateJob(ctx, *j, from[i]); err != nil {
				if errors.Is(err, ErrConflict) {
					continue // cancelled meanwhile; its new ticket stays unused
				}
				return fmt.Errorf("resume %s: re-ticket %s: %w", q.Name, j.ID, err)
			}
			rep.Reticketed++
			if j.Status == job.Queued {
				due = append(due, j)
			}
		}
	}
	var send []*job.Job
	for _, j := range due {
		if j.Status == job.Parked {
			v := j.Version()
			j.Status, j.ParkReason, j.DueAt = job.Queued, "", time.Time{}
			if err := e.state.UpdateJob(ctx, *j, v); err != nil {
				if errors.Is(err, ErrConflict) {
					continue
				}
				return fmt.Errorf("resume %s: release %s: %w", q.Name, j.ID, err)
			}
		}
		send = append(send, j)
	}
	rep.Released += len(send)
	e.send(ctx, send, now)
	return nil
}

// resend re-tickets queued jobs whose slot passed more than LostAfter ago:
// their message was lost (a crash between writing the job and sending it,
// or a dropped delivery). The new ticket makes any late copy of the old
// message stale, so the job cannot start twice.
func (e *Engine) resend(ctx context.Context, q *Queue, rep *ResumeReport, now time.Time) error {
	queued, err := e.listAll(ctx, q.Name, job.Queued)
	if err != nil {
		return fmt.Errorf("resume %s: %w", q.Name, err)
	}
	for i := range queued {
		j := &queued[i]
		if now.Sub(j.SlotAt) < e.opts.LostAfter {
			continue
		}
		if err := e.reticket(ctx, q, j, now); err != nil {
			return err
		}
		rep.Resent++
	}
	return nil
}

// recover fails running attempts older than the lease: their worker died
// before recording an outcome. The job is retried (or fails) like any
// failed attempt, so a crashed attempt may run again: slotq is
// at-least-once.
func (e *Engine) recover(ctx context.Context, q Queue, rep *ResumeReport, now time.Time) error {
	running, err := e.listAll(ctx, q.Name, job.Running)
	if err != nil {
		return fmt.Errorf("resume %s: %w", q.Name, err)
	}
	for _, j := range running {
		if now.Sub(j.StartedAt) < e.opts.Lease {
			continue
		}
		e.log.WarnContext(ctx, "attempt lost", "queue", q.Name, "job_id", j.ID, "ticket", j.Ticket, "started_at", j.StartedAt)
		if err := e.finish(ctx, q, j, q.State, errors.New("attempt lost: its worker stopped before recording an outcome")); err != nil {
			return err
		}
		rep.Recovered++
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
