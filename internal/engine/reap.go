package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// reapLane is the resume function's look at q's lane of key, whose due
// time came (LaneDue): a key whose holder's lease ran out (its worker died
// before handing it on, or the hand-off's own message went astray) goes
// to the job it was handed to, if that one still waits parked for it, or
// else to the first waiter (reapKey); running places free on a capped
// queue go to the jobs waiting for them on the queue's own lane
// (reapRunningPlaces). It returns how many jobs it sent. A lane that moved on
// since its entry was read is left alone.
func (e *keyLanes) reapLane(ctx context.Context, q Queue, key string, now time.Time) (sent int, _ error) {
	l, err := e.state.GetLane(ctx, q.Name, key)
	if err != nil {
		return 0, fmt.Errorf("resume %s: key %s: %w", q.Name, key, err)
	}
	if at := LaneDue(l); l.Version == 0 || at.IsZero() || at.After(now) {
		return 0, nil
	}
	if l.Gen != q.Gen {
		// A deleted queue's lane: started afresh, nothing of it is due.
		if _, err := e.state.AddPending(ctx, q.Name, q.Gen, key, 0); err != nil {
			return 0, fmt.Errorf("resume %s: key %s: %w", q.Name, key, err)
		}
		return 0, nil
	}
	if key == "" {
		return e.reapRunningPlaces(ctx, q, l, now)
	}
	return e.reapKey(ctx, q, l, now)
}

// reapRunningPlaces hands the running places free on capped q to the jobs
// waiting on its own lane l, and makes the lane due again when the first
// running place's lease ends (or a lease from now).
func (e *keyLanes) reapRunningPlaces(ctx context.Context, q Queue, l slot.Lane, now time.Time) (sent int, _ error) {
	free := len(l.Waiting)
	if q.Config.MaxRunning > 0 {
		free = min(free, q.Config.MaxRunning-q.State.RunningAt(now))
	}
	if free > 0 {
		sent = e.handRunningPlaces(ctx, q, free)
	}
	next := now.Add(e.opts.Lease)
	for _, until := range q.State.Running {
		if until.After(now) && until.Before(next) {
			next = until
		}
	}
	err := e.updateLane(ctx, q, "", func(l slot.Lane) slot.Lane {
		if len(l.Waiting) > 0 && !l.Until.After(now) {
			l.Until = next
		}
		return l
	})
	if err != nil {
		return sent, fmt.Errorf("resume %s: running places: %w", q.Name, err)
	}
	return sent, nil
}

// reapKey hands on the places on the key of lane l whose holders' leases
// ran out: the first holder's to itself if it still waits parked for it
// (keepHolder), else to the first waiters.
func (e *keyLanes) reapKey(ctx context.Context, q Queue, l slot.Lane, now time.Time) (sent int, _ error) {
	if !l.Expired(now) && (l.Holding(now) >= keyRunningPlaces(q) || len(l.Waiting) == 0) {
		return 0, nil
	}
	if l.Holder.Ticket != 0 && !now.Before(l.Until) {
		if kept, sent := e.keepHolder(ctx, q, l, now); kept {
			return sent, nil
		}
	}
	var handed []slot.Waiter
	err := e.updateLane(ctx, q, l.Key, func(l slot.Lane) slot.Lane {
		l, handed = slot.Leave(l, slot.Waiter{}, e.now(), keyRunningPlaces(q), e.opts.Lease)
		return l
	})
	if err != nil {
		return 0, fmt.Errorf("resume %s: key %s: %w", q.Name, l.Key, err)
	}
	if len(handed) == 0 {
		return 0, nil
	}
	if l.Holder.Ticket == slot.DeletedQueueTicket {
		// Expected: a deleted generation's holder frees the key only
		// by its lease.
		e.log.InfoContext(ctx, "key free of a deleted queue's holder; handed on", "queue", q.Name, "key", l.Key, "to_ticket", handed[0].Ticket)
	} else {
		e.log.WarnContext(ctx, "key's holder lease ran out; handed on", "queue", q.Name, "key", l.Key, "holder_ticket", l.Holder.Ticket, "to_ticket", handed[0].Ticket)
	}
	e.handKey(ctx, q, l.Key, handed...)
	return len(handed), nil
}

// keepHolder keeps the key of lane l, whose lease ran out, with its
// holder when the holder still waits parked: handed the key but never
// sent (the hand-off's writer died), it keeps the key with a fresh lease
// and is sent; parked for a running place, holding its key, it keeps the
// key too (a place's hand-off sends it). It reports whether it kept the
// key, and how many jobs it sent.
func (e *keyLanes) keepHolder(ctx context.Context, q Queue, l slot.Lane, now time.Time) (kept bool, sent int) {
	h, err := e.state.GetJob(ctx, job.Ref{Queue: q.Name, ID: l.Holder.JobID})
	if err != nil || h.Status != job.Parked || !h.ParkReason.Waits() || h.Ticket != l.Holder.Ticket {
		return false, 0
	}
	err = e.updateLane(ctx, q, l.Key, func(cur slot.Lane) slot.Lane {
		if kept = cur.Holder == l.Holder && !now.Before(cur.Until); kept {
			cur.Until = now.Add(e.opts.Lease)
		}
		return cur
	})
	if err != nil || !kept {
		return false, 0
	}
	if h.ParkReason == job.WaitKey {
		if err := e.wake(ctx, q, l.Holder, l.Key); err == nil {
			sent++
		}
	}
	return true, sent
}

// checkListed looks at j, parked on a lane (job.ParkReason.Waits) whose
// DueAt came: RecordGrace after it parked, then every Lease. If its lane
// lists it among its waiters, a hand-off will send it, and it is looked at
// again a lease later. If not, it is sent, to take its key or place
// again: its worker died between parking it and listing it, or a
// hand-off took it off the list (and, for a key, made it the holder) and
// died before sending it.
func (e *keyLanes) checkListed(ctx context.Context, q Queue, j job.Job, now time.Time) error {
	w := slot.Waiter{Ticket: j.Ticket, JobID: j.ID}
	key := j.Key
	if j.ParkReason == job.WaitPlace {
		key = ""
	}
	l, err := e.state.GetLane(ctx, q.Name, key)
	if err != nil {
		return fmt.Errorf("resume %s: key %s: %w", q.Name, key, err)
	}
	if l.Gen == q.Gen && slices.Contains(l.Waiting, w) {
		from := j.Version()
		j.DueAt = now.Add(e.opts.Lease)
		if err := e.state.UpdateJob(ctx, j, from); err != nil && !errors.Is(err, ErrConflict) {
			return fmt.Errorf("resume %s: %s: %w", q.Name, j.ID, err)
		}
		return nil
	}
	e.log.WarnContext(ctx, "parked on no lane; sent again", "queue", q.Name, "job_id", j.ID, "ticket", j.Ticket, "reason", string(j.ParkReason))
	if err := e.wake(ctx, q, w, j.Key); err != nil && !errors.Is(err, errStaleWaiter) {
		return fmt.Errorf("resume %s: %s: %w", q.Name, j.ID, err)
	}
	return nil
}
