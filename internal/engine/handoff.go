package engine

import (
	"context"
	"errors"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// keyExit says how a job leaves its key's lane (leave).
type keyExit int

// leave gives up j's place in its key's lane as the attempt of ticket
// ended, or as j left it otherwise (passed, paused, cancelled): a holder
// hands the key to the first waiter. exit says whether j still counts as
// pending on its key. Errors are logged, not returned: the job's own
// record is written already, and a key left held is handed on by the
// resume function once its lease runs out.
func (e *keyLanes) leave(ctx context.Context, q Queue, j job.Job, ticket int64, exit keyExit) {
	if j.Key == "" {
		return
	}
	w := slot.Waiter{Ticket: ticket, JobID: j.ID}
	for range laneTries {
		now := e.now()
		l, err := e.getLane(ctx, q, j.Key)
		if errors.Is(err, ErrQueueNotFound) {
			// j is of a deleted generation: the lane, if any, is a new
			// queue's, and j has nothing in it.
			e.log.InfoContext(ctx, "key of a deleted queue left alone", "queue", q.Name, "key", j.Key, "job_id", j.ID, "gen", j.Gen)
			return
		}
		if err != nil {
			e.log.WarnContext(ctx, "key not handed on", "queue", q.Name, "key", j.Key, "job_id", j.ID, "error", err.Error())
			return
		}
		next, handed := slot.Leave(l, w, now, keyRunningPlaces(q), e.opts.Lease)
		var delta int64
		if exit == jobEnded && l.Pending > 0 {
			// Never below 0: a count that missed j (its lane
			// expired, say) is left as it is.
			delta = -1
		}
		if delta != 0 || !next.Equal(l) {
			if _, err := e.state.PutLane(ctx, next, l.Version, delta); errors.Is(err, ErrConflict) {
				continue
			} else if err != nil {
				e.log.WarnContext(ctx, "key not handed on", "queue", q.Name, "key", j.Key, "job_id", j.ID, "error", err.Error())
				return
			}
		}
		e.handKey(ctx, q, j.Key, handed...)
		return
	}
	e.log.WarnContext(ctx, "key not handed on: the lane kept changing", "queue", q.Name, "key", j.Key, "job_id", j.ID)
}

// leaveUnlessRunning gives up the key j's ticket may hold, after j was
// parked or re-ticketed at the gate, unless j's record shows that ticket
// running: then this delivery was a duplicate of a message whose attempt
// runs, holding the key, and the key stays with it. (The job may hold the
// key from an earlier delivery that was handed back.)
func (e *keyLanes) leaveUnlessRunning(ctx context.Context, q Queue, j job.Job, ticket int64) {
	if j.Key == "" {
		return
	}
	fresh, err := e.state.GetJob(ctx, j.Ref())
	if err == nil && fresh.Status == job.Running && fresh.Ticket == ticket {
		return
	}
	e.leave(ctx, q, j, ticket, jobGoesOn)
}

// takeOffLanes takes a job that was cancelled while it waited off its lanes:
// its key's (and the key's pending count), and the running places' list
// if it waited there.
func (e *keyLanes) takeOffLanes(ctx context.Context, q Queue, j job.Job) {
	if j.Status == job.Parked && j.ParkReason == job.WaitPlace {
		w := slot.Waiter{Ticket: j.Ticket, JobID: j.ID}
		if err := e.updateLane(ctx, q, "", func(l slot.Lane) slot.Lane { return slot.Remove(l, w) }); err != nil {
			e.log.WarnContext(ctx, "cancelled job left on the running places' list", "queue", q.Name, "job_id", j.ID, "error", err.Error())
		}
	}
	e.leave(ctx, q, j, j.Ticket, jobEnded)
}

// handKey sends the jobs that were just given places on the key of lane
// key, and gives the places on past waiters that no longer wait
// (cancelled ones).
func (e *keyLanes) handKey(ctx context.Context, q Queue, key string, ws ...slot.Waiter) {
	for stale := 0; len(ws) > 0 && stale < laneTries; {
		w := ws[0]
		ws = ws[1:]
		err := e.wake(ctx, q, w, key)
		if !errors.Is(err, errStaleWaiter) {
			if err != nil {
				e.log.WarnContext(ctx, "key handed on but its job not sent", "queue", q.Name, "key", key, "job_id", w.JobID, "error", err.Error())
			}
			continue
		}
		// The place went to a job that no longer waits: hand it on.
		stale++
		var handed []slot.Waiter
		err = e.updateLane(ctx, q, key, func(l slot.Lane) slot.Lane {
			l, handed = slot.Leave(l, w, e.now(), keyRunningPlaces(q), e.opts.Lease)
			return l
		})
		if err != nil {
			return
		}
		ws = append(ws, handed...)
	}
}

// keyRunningPlaces is how many jobs of one key of q may hold its lane at once:
// its key_max_running (one unless the queue says otherwise).
func keyRunningPlaces(q Queue) int { return max(1, q.Config.KeyCap()) }

// wake sends a job parked on a lane that was handed the key or a running
// place: its message first, then its record as queued (as every release
// does). A job that is queued at that ticket already is left alone: it
// parks and reads its lane again, or its message is on its way.
// errStaleWaiter if the job no longer waits at w's ticket.
func (e *keyLanes) wake(ctx context.Context, q Queue, w slot.Waiter, key string) error {
	j, err := e.admin.getJob(ctx, q, job.Ref{Queue: q.Name, ID: w.JobID})
	switch {
	case errors.Is(err, ErrJobNotFound):
		return errStaleWaiter
	case err != nil:
		return err
	case j.Ticket != w.Ticket || !j.Status.Waiting():
		return errStaleWaiter
	case j.Status == job.Queued:
		return nil
	case !j.ParkReason.Waits():
		return nil // parked for another reason (a pause): its own release comes
	}
	from := j.Version()
	j.Status, j.ParkReason, j.DueAt = job.Queued, "", time.Time{}
	reason := "key"
	if key == "" {
		reason = "max_running"
	}
	j.Record(job.Event{At: e.now(), Kind: job.Released, Reason: reason})
	e.enqueuer.sendQueued(ctx, []*job.Job{&j}) // message first; a refused one leaves it parked as unsent
	if err := e.state.UpdateJob(ctx, j, from); err != nil && !errors.Is(err, ErrConflict) {
		return err
	}
	e.observe(ctx, Event{Kind: EventReleased, Queue: q.Name})
	e.log.DebugContext(ctx, "handed on", "queue", q.Name, "job_id", j.ID, "ticket", j.Ticket, "reason", reason, "key", key)
	return nil
}

// endRun frees the running place of ticket's attempt on a capped queue and
// hands it to the first job waiting for one. Errors are logged: a place
// not freed frees itself when the attempt's lease ends, and the resume
// function hands on places its waiters did not get.
//
// q.State is the state the attempt's gate answered: its place, if it took
// one, is the entry of its ticket there.
func (e *keyLanes) endRun(ctx context.Context, q Queue, ticket int64) {
	until, ok := q.State.Running[ticket]
	if !ok {
		return // it took no place (no cap when it started)
	}
	if err := e.state.EndRun(ctx, q.Name, q.Gen, ticket, until); err != nil {
		e.log.WarnContext(ctx, "running place not freed", "queue", q.Name, "ticket", ticket, "error", err.Error())
		return
	}
	e.handRunningPlaces(ctx, q, 1)
}

// handRunningPlaces sends up to n jobs waiting on q's own lane for a running
// place, lowest ticket first, past waiters that no longer wait, and
// returns how many it sent.
func (e *keyLanes) handRunningPlaces(ctx context.Context, q Queue, n int) (sent int) {
	// Each pass pops a waiter: stale ones (cancelled, or sent on already)
	// cost a pass each, bounded by the list's length.
	for tries := 0; n > 0 && tries < slot.MaxLaneWaiting+laneTries; tries++ {
		var head slot.Waiter
		var ok bool
		err := e.updateLane(ctx, q, "", func(l slot.Lane) slot.Lane {
			l, head, ok = slot.Pop(l)
			return l
		})
		if err != nil {
			e.log.WarnContext(ctx, "running place not handed on", "queue", q.Name, "error", err.Error())
			return sent
		}
		if !ok {
			return sent
		}
		if err := e.wake(ctx, q, head, ""); err == nil {
			n--
			sent++
		} else if !errors.Is(err, errStaleWaiter) {
			e.log.WarnContext(ctx, "running place handed on but its job not sent", "queue", q.Name, "job_id", head.JobID, "error", err.Error())
			n--
		}
	}
	return sent
}
