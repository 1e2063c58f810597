package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// Lanes (docs/guarantees.md §12): jobs of one queue with the same key run one at
// a time, in ticket order, and a queue's MaxRunning caps its attempts at
// once. The rules are slot.Lane's; this file (waiting on a lane),
// handoff.go (handing a key or a place on) and reap.go (the resume
// function's look at a lane) apply them to jobs.
//
// A keyed job takes its key when its slot comes, before the gate (arrive):
// a job that finds the key held parks on the key's lane, spending no
// slot, and the holder hands the key on as its attempt ends (leave, wake;
// handoff.go). The queue's running places are counted by the gate
// itself (GateRequest.MaxRunning); a job the gate finds Full parks on the
// queue's own lane (awaitRunningPlace), and each attempt that ends hands its
// place to the first of them (endRun). A job that waited is Detached: it
// left the line, so the gate lets it pass by the spacing alone. Nothing
// polls: parked jobs are sent on by the hand-offs, and the resume
// function looks at a lane only when it is due (LaneDue), to hand on a
// key whose holder's lease ran out (reapLane, reap.go).

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
func (e *keyLanes) arrive(ctx context.Context, q *Queue, j *job.Job) (bool, error) {
	w := slot.Waiter{Ticket: j.Ticket, JobID: j.ID}
	for range laneTries {
		now := e.now()
		l, err := e.getLane(ctx, *q, j.Key)
		if err != nil {
			return false, fmt.Errorf("key %s of %s: %w", j.Key, j.Ref(), err)
		}
		next, v, handed := slot.Arrive(l, w, now, keyRunningPlaces(*q), e.opts.Lease)
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
			return false, e.worker.reticket(ctx, q, j, passedByLater)
		default: // slot.LaneFull
			return false, e.worker.handBack(ctx, j, now.Add(max(q.Config.Tick(), time.Second)))
		}
	}
	return false, fmt.Errorf("key %s of %s: the lane kept changing under the update", j.Key, j.Ref())
}

// waitKey parks j on its key, which the lane now lists it waiting for,
// and reads the lane again: a holder that ended between the two found j
// not parked yet and handed it the key without sending it, so j goes on
// to the gate itself (reported true).
func (e *keyLanes) waitKey(ctx context.Context, q Queue, j *job.Job, w slot.Waiter) (bool, error) {
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

// awaitRunningPlace parks j, which the gate found Full, on its queue's own lane,
// and reads the queue again: an attempt that ended between the two found
// no waiter to hand its place to, so j tries the gate again itself
// (reported true).
func (e *keyLanes) awaitRunningPlace(ctx context.Context, q Queue, j *job.Job) (bool, error) {
	if l, err := e.state.GetLane(ctx, q.Name, ""); err == nil && len(l.Fresh(q.Gen).Waiting) >= slot.MaxLaneWaiting {
		// The list is full: come again later, as a full key's lane does.
		return false, e.worker.handBack(ctx, j, e.now().Add(max(q.Config.Tick(), time.Second)))
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
func (e *keyLanes) parkOn(ctx context.Context, j *job.Job, why job.ParkReason) (bool, error) {
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
	if e.worker.deadGeneration(ctx, j) {
		return false, nil
	}
	e.observe(ctx, Event{Kind: EventParked, Queue: j.Queue})
	e.log.InfoContext(ctx, "parked", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "reason", string(why), "key", j.Key)
	return true, nil
}

// leaveLine moves the queue's current past j, a line job that just parked
// on a lane (and so left the line), when every lower ticket has started
// (q, read before, says current stands just below it): the tickets behind
// it then do not hold an interval for a job that is not coming (see
// lineOpening), and the next one is not passed by the one after it in the
// race that hold would start.
func (e *keyLanes) leaveLine(ctx context.Context, q Queue, j *job.Job) {
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
func (e *keyLanes) unpark(ctx context.Context, j *job.Job) (bool, error) {
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
func (e *keyLanes) getLane(ctx context.Context, q Queue, key string) (slot.Lane, error) {
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
func (e *keyLanes) updateLane(ctx context.Context, q Queue, key string, change func(slot.Lane) slot.Lane) error {
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

const (
	// jobGoesOn: the job goes on (passed, parked, retried): it still
	// counts as pending on its key.
	jobGoesOn keyExit = iota
	// jobEnded: the job ended for good (succeeded, failed, cancelled):
	// it no longer counts as pending.
	jobEnded
)

// LaneFigures is what a queue's lanes show at one moment: api.LaneFigures,
// the type the admin function answers with. Running counts a capped
// queue's running attempts (slot.State.RunningAt), -1 for a queue without
// MaxRunning; KeysAtLimit counts, of the MaxKeysListed busiest keys, those
// whose own limit holds their next start back, -1 on a queue without
// limits per key.
type LaneFigures = api.LaneFigures

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

// Lanes does Engine.Lanes's work.
func (e *keyLanes) Lanes(ctx context.Context, q Queue) (LaneFigures, error) {
	lanes, err := e.state.ListLanes(ctx, q.Name)
	if err != nil {
		return LaneFigures{}, err
	}
	return laneFigures(q, lanes, e.now()), nil
}
