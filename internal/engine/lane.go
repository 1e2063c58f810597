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

// Lanes (docs/guarantees.md §12): jobs of one queue with the same key run one at
// a time, in ticket order, and a queue's MaxRunning caps its attempts at
// once. The rules are slot.Lane's; this file applies them to jobs.
//
// A keyed job takes its key when its slot comes, before the gate (arrive):
// a job that finds the key held parks on the key's lane, spending no
// slot, and the holder hands the key on as its attempt ends (leave, wake).
// The queue's running places are counted by the gate itself
// (GateRequest.MaxRunning); a job the gate finds Full parks on the
// queue's own lane (waitPlace), and each attempt that ends hands its
// place to the first of them (endRun). A job that waited is Detached: it
// left the line, so the gate lets it pass by the spacing alone. Nothing
// polls: parked jobs are sent on by the hand-offs, and the resume
// function looks at a lane only when it is due (LaneDue), to hand on a
// key whose holder's lease ran out (reapLane).

// laneTries bounds the compare-and-set loops on one lane: each lost race
// means another job of the key wrote it meanwhile.
const laneTries = 20

// errStaleWaiter: a lane named a job that is no longer waiting there (it
// was cancelled, or the key's hand-off reached it already).
var errStaleWaiter = errors.New("lane waiter no longer waits")

// arrive takes j's key for it at its slot. It reports whether j holds the
// key and goes on to the gate; otherwise j was parked on the key, took a
// new ticket (a later job of its key came first) or was handed back (the
// lane is full), and the message is done with.
func (e *Engine) arrive(ctx context.Context, q *Queue, j *job.Job) (bool, error) {
	w := slot.Waiter{Ticket: j.Ticket, JobID: j.ID}
	for range laneTries {
		now := e.now()
		l, err := e.getLane(ctx, *q, j.Key)
		if err != nil {
			return false, fmt.Errorf("key %s of %s: %w", j.Key, j.Ref(), err)
		}
		next, v, handed := slot.Arrive(l, w, now, keyPlaces(*q), e.opts.Lease)
		if !next.Equal(l) {
			if _, err := e.state.PutLane(ctx, next, l.Version, 0); errors.Is(err, ErrConflict) {
				continue
			} else if err != nil {
				return false, fmt.Errorf("key %s of %s: %w", j.Key, j.Ref(), err)
			}
		}
		// Holders' leases ran out: the first waiters have their places.
		e.handKey(ctx, *q, j.Key, handed...)
		switch v {
		case slot.Acquired:
			return true, nil
		case slot.Wait:
			return e.waitKey(ctx, *q, j, w)
		case slot.Overtaken:
			e.log.InfoContext(ctx, "overtaken on its key", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "key", j.Key, "key_last", next.Last)
			return false, e.reticket(ctx, q, j, passedByLater)
		default: // slot.LaneFull
			return false, e.handBack(ctx, j, now.Add(max(q.Config.Tick(), time.Second)))
		}
	}
	return false, fmt.Errorf("key %s of %s: the lane kept changing under the update", j.Key, j.Ref())
}

// waitKey parks j on its key, which the lane now lists it waiting for,
// and reads the lane again: a holder that ended between the two found j
// not parked yet and handed it the key without sending it, so j goes on
// to the gate itself (reported true).
func (e *Engine) waitKey(ctx context.Context, q Queue, j *job.Job, w slot.Waiter) (bool, error) {
	inLine := !outOfLine(j)
	if parked, err := e.parkOn(ctx, j, job.WaitKey); !parked || err != nil {
		return false, err
	}
	if inLine {
		e.leaveLine(ctx, q, j)
	}
	l, err := e.state.GetLane(ctx, q.Name, j.Key)
	if err != nil || l.Fresh(q.Gen).Holder != w {
		return false, nil // the hand-off will find it parked
	}
	return e.unpark(ctx, j)
}

// waitPlace parks j, which the gate found Full, on its queue's own lane,
// and reads the queue again: an attempt that ended between the two found
// no waiter to hand its place to, so j tries the gate again itself
// (reported true).
func (e *Engine) waitPlace(ctx context.Context, q Queue, j *job.Job) (bool, error) {
	if l, err := e.state.GetLane(ctx, q.Name, ""); err == nil && len(l.Fresh(q.Gen).Waiting) >= slot.MaxLaneWaiting {
		// The list is full: come again later, as a full key's lane does.
		return false, e.handBack(ctx, j, e.now().Add(max(q.Config.Tick(), time.Second)))
	}
	inLine := !outOfLine(j)
	if parked, err := e.parkOn(ctx, j, job.WaitPlace); !parked || err != nil {
		return false, err
	}
	if inLine {
		e.leaveLine(ctx, q, j)
	}
	w := slot.Waiter{Ticket: j.Ticket, JobID: j.ID}
	enter := func(l slot.Lane) slot.Lane {
		if len(l.Waiting) == 0 {
			// The first waiter: the resume function looks at the lane
			// a lease from now, should no attempt's end hand it a place.
			l.Until = e.now().Add(e.opts.Lease)
		}
		return slot.Enter(l, w)
	}
	if err := e.updateLane(ctx, q, "", enter); err != nil {
		// Parked but on no list: the resume function finds it so once
		// RecordGrace has passed (checkListed), and sends it again.
		return false, fmt.Errorf("wait for a running place %s: %w", j.Ref(), err)
	}
	fresh, err := e.state.GetQueue(ctx, q.Name)
	if err != nil || slot.Capped(fresh.State, fresh.Config.MaxRunning, e.now()) {
		return false, nil
	}
	// Out of the parked jobs first, then off the list: a crash between
	// leaves a waiter on the list that a hand-off finds queued (and
	// passes over), never a parked job on no list.
	again, err := e.unpark(ctx, j)
	if again && err == nil {
		if err := e.updateLane(ctx, q, "", func(l slot.Lane) slot.Lane { return slot.Remove(l, w) }); err != nil {
			e.log.WarnContext(ctx, "left on the running places' list", "queue", q.Name, "job_id", j.ID, "error", err.Error())
		}
	}
	return again, err
}

// parkOn stores a queued job as parked on a lane (why is job.WaitKey or
// job.WaitPlace): detached from the line, and released by a hand-off,
// not by time. It reports false when the record had moved on (another
// delivery of the message parked it, or runs it): this one is done.
func (e *Engine) parkOn(ctx context.Context, j *job.Job, why job.ParkReason) (bool, error) {
	from := j.Version()
	// Due for the resume function's check that its lane lists it, once
	// RecordGrace has passed (checkListed): it is listed on the queue's
	// own lane only after this write, and a crash of a hand-off may take
	// it off its list without sending it.
	j.Status, j.ParkReason, j.DueAt, j.Detached = job.Parked, why, e.now().Add(e.opts.RecordGrace), true
	j.Record(job.Event{At: e.now(), Kind: job.ParkedEvent, Reason: string(why)})
	err := e.state.UpdateJob(ctx, *j, from)
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrJobNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("park %s on %s: %w", j.Ref(), why, err)
	}
	if e.deadGeneration(ctx, j) {
		return false, nil
	}
	e.observe(ctx, Event{Kind: EventPark, Queue: j.Queue})
	e.log.InfoContext(ctx, "parked", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "reason", string(why), "key", j.Key)
	return true, nil
}

// leaveLine moves the queue's current past j, a line job that just parked
// on a lane (and so left the line), when every lower ticket has started
// (q, read before, says current stands just below it): the tickets behind
// it then do not hold an interval for a job that is not coming (see
// holdUntil), and the next one is not passed by the one after it in the
// race that hold would start.
func (e *Engine) leaveLine(ctx context.Context, q Queue, j *job.Job) {
	if q.State.Current != j.Ticket-1 {
		return
	}
	if _, err := e.state.Skip(ctx, q.Name, j.Ticket); err != nil {
		e.log.WarnContext(ctx, "current not moved past a parked job", "queue", q.Name, "ticket", j.Ticket, "error", err.Error())
	}
}

// unpark moves a job it parked on a lane back to queued, to go on in this
// invocation. It reports false when the record moved meanwhile (a hand
// off released it: its message carries it now).
func (e *Engine) unpark(ctx context.Context, j *job.Job) (bool, error) {
	from := j.Version()
	j.Status, j.ParkReason = job.Queued, ""
	j.Record(job.Event{At: e.now(), Kind: job.Released, Reason: "handed"})
	err := e.state.UpdateJob(ctx, *j, from)
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrJobNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("unpark %s: %w", j.Ref(), err)
	}
	return true, nil
}

// getLane reads q's lane of key, to be changed and written back: as a
// lane of q's generation. A stored lane of another generation (a deleted
// queue's) is first started afresh in the store, by an AddPending of
// nothing, whose answer is the lane read again: a PutLane keeps the
// stored pending count, which is the old generation's. If q is the one
// deleted (the stored lane is the queue created again under its name),
// the store refuses to start it afresh: ErrQueueNotFound, and the caller
// touches nothing of the new queue.
func (e *Engine) getLane(ctx context.Context, q Queue, key string) (slot.Lane, error) {
	l, err := e.state.GetLane(ctx, q.Name, key)
	if err != nil {
		return slot.Lane{}, err
	}
	if l.Version == 0 || l.Gen == q.Gen {
		return l.Fresh(q.Gen), nil
	}
	return e.state.AddPending(ctx, q.Name, q.Gen, key, 0)
}

// updateLane applies change to a queue's lane of key by compare-and-set,
// reading it again after each lost race.
func (e *Engine) updateLane(ctx context.Context, q Queue, key string, change func(slot.Lane) slot.Lane) error {
	for range laneTries {
		l, err := e.getLane(ctx, q, key)
		if err != nil {
			return err
		}
		next := change(l)
		if next.Equal(l) {
			return nil
		}
		if _, err := e.state.PutLane(ctx, next, l.Version, 0); !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("lane %q of %s kept changing under the update", key, q.Name)
}

// keyExit says how a job leaves its key's lane (leave).
type keyExit int

const (
	// jobGoesOn: the job goes on (passed, parked, retried): it still
	// counts as pending on its key.
	jobGoesOn keyExit = iota
	// jobEnded: the job ended for good (succeeded, failed, cancelled):
	// it no longer counts as pending.
	jobEnded
)

// leave gives up j's place in its key's lane as the attempt of ticket
// ended, or as j left it otherwise (passed, paused, cancelled): a holder
// hands the key to the first waiter. exit says whether j still counts as
// pending on its key. Errors are logged, not returned: the job's own
// record is written already, and a key left held is handed on by the
// resume function once its lease runs out.
func (e *Engine) leave(ctx context.Context, q Queue, j job.Job, ticket int64, exit keyExit) {
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
		next, handed := slot.Leave(l, w, now, keyPlaces(q), e.opts.Lease)
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
func (e *Engine) leaveUnlessRunning(ctx context.Context, q Queue, j job.Job, ticket int64) {
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
func (e *Engine) takeOffLanes(ctx context.Context, q Queue, j job.Job) {
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
func (e *Engine) handKey(ctx context.Context, q Queue, key string, ws ...slot.Waiter) {
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
			l, handed = slot.Leave(l, w, e.now(), keyPlaces(q), e.opts.Lease)
			return l
		})
		if err != nil {
			return
		}
		ws = append(ws, handed...)
	}
}

// keyPlaces is how many jobs of one key of q may hold its lane at once:
// its key_max_running (one unless the queue says otherwise).
func keyPlaces(q Queue) int { return max(1, q.Config.KeyCap()) }

// wake sends a job parked on a lane that was handed the key or a running
// place: its message first, then its record as queued (as every release
// does). A job that is queued at that ticket already is left alone: it
// parks and reads its lane again, or its message is on its way.
// errStaleWaiter if the job no longer waits at w's ticket.
func (e *Engine) wake(ctx context.Context, q Queue, w slot.Waiter, key string) error {
	j, err := e.getJob(ctx, q, job.Ref{Queue: q.Name, ID: w.JobID})
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
	e.sendQueued(ctx, []*job.Job{&j}) // message first; a refused one leaves it parked as unsent
	if err := e.state.UpdateJob(ctx, j, from); err != nil && !errors.Is(err, ErrConflict) {
		return err
	}
	e.observe(ctx, Event{Kind: EventRelease, Queue: q.Name})
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
func (e *Engine) endRun(ctx context.Context, q Queue, ticket int64) {
	until, ok := q.State.Running[ticket]
	if !ok {
		return // it took no place (no cap when it started)
	}
	if err := e.state.EndRun(ctx, q.Name, q.Gen, ticket, until); err != nil {
		e.log.WarnContext(ctx, "running place not freed", "queue", q.Name, "ticket", ticket, "error", err.Error())
		return
	}
	e.handPlaces(ctx, q, 1)
}

// handPlaces sends up to n jobs waiting on q's own lane for a running
// place, lowest ticket first, past waiters that no longer wait, and
// returns how many it sent.
func (e *Engine) handPlaces(ctx context.Context, q Queue, n int) (sent int) {
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

// reapLane is the resume function's look at q's lane of key, whose due
// time came (LaneDue): a key whose holder's lease ran out (its worker died
// before handing it on, or the hand-off's own message went astray) goes
// to the job it was handed to, if that one still waits parked for it, or
// else to the first waiter (reapKey); running places free on a capped
// queue go to the jobs waiting for them on the queue's own lane
// (reapPlaces). It returns how many jobs it sent. A lane that moved on
// since its entry was read is left alone.
func (e *Engine) reapLane(ctx context.Context, q Queue, key string, now time.Time) (sent int, _ error) {
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
		return e.reapPlaces(ctx, q, l, now)
	}
	return e.reapKey(ctx, q, l, now)
}

// reapPlaces hands the running places free on capped q to the jobs
// waiting on its own lane l, and makes the lane due again when the first
// running place's lease ends (or a lease from now).
func (e *Engine) reapPlaces(ctx context.Context, q Queue, l slot.Lane, now time.Time) (sent int, _ error) {
	free := len(l.Waiting)
	if q.Config.MaxRunning > 0 {
		free = min(free, q.Config.MaxRunning-q.State.RunningAt(now))
	}
	if free > 0 {
		sent = e.handPlaces(ctx, q, free)
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
func (e *Engine) reapKey(ctx context.Context, q Queue, l slot.Lane, now time.Time) (sent int, _ error) {
	if !l.Expired(now) && (l.Holding(now) >= keyPlaces(q) || len(l.Waiting) == 0) {
		return 0, nil
	}
	if l.Holder.Ticket != 0 && !now.Before(l.Until) {
		if kept, sent := e.keepHolder(ctx, q, l, now); kept {
			return sent, nil
		}
	}
	var handed []slot.Waiter
	err := e.updateLane(ctx, q, l.Key, func(l slot.Lane) slot.Lane {
		l, handed = slot.Leave(l, slot.Waiter{}, e.now(), keyPlaces(q), e.opts.Lease)
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
func (e *Engine) keepHolder(ctx context.Context, q Queue, l slot.Lane, now time.Time) (kept bool, sent int) {
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
func (e *Engine) checkListed(ctx context.Context, q Queue, j job.Job, now time.Time) error {
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

// LaneFigures is what a queue's lanes show at one moment.
type LaneFigures struct {
	// Running is how many attempts of a capped queue run (slot.State
	// RunningAt); -1 for a queue without MaxRunning, which counts none.
	Running int `json:"running"`
	// KeysHeld counts the keys a job holds; KeysWaiting the keys with
	// jobs parked on them; WaitingOnKeys those jobs.
	KeysHeld      int `json:"keys_held"`
	KeysWaiting   int `json:"keys_waiting"`
	WaitingOnKeys int `json:"waiting_on_keys"`
	// WaitingForPlace counts the jobs parked for a running place.
	WaitingForPlace int `json:"waiting_for_place"`
	// KeysAtLimit counts, on a queue with limits per key, the keys with
	// jobs waiting whose own limit holds their next start back (of the
	// MaxKeysListed busiest); -1 on a queue without them.
	KeysAtLimit int `json:"keys_at_limit"`
}

// laneFigures counts q's lanes of its generation at now.
func laneFigures(q Queue, lanes []slot.Lane, now time.Time) LaneFigures {
	f := LaneFigures{Running: -1, KeysAtLimit: -1}
	if q.Config.MaxRunning > 0 {
		f.Running = q.State.RunningAt(now)
	}
	for _, l := range lanes {
		switch {
		case l.Gen != q.Gen:
		case l.Key == "":
			f.WaitingForPlace += len(l.Waiting)
		default:
			if l.Held(now) {
				f.KeysHeld++
			}
			if len(l.Waiting) > 0 {
				f.KeysWaiting++
				f.WaitingOnKeys += len(l.Waiting)
			}
		}
	}
	return f
}

// Lanes returns the figures of a queue's lanes (Stats).
func (e *Engine) Lanes(ctx context.Context, q Queue) (LaneFigures, error) {
	lanes, err := e.state.ListLanes(ctx, q.Name)
	if err != nil {
		return LaneFigures{}, err
	}
	return laneFigures(q, lanes, e.now()), nil
}
