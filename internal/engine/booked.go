package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// The gate of a booked start: a line job on time for the slot its take
// booked passes by a read of the queue (docs/algorithm.md, A booked start
// passes by a read).

// bookable reports whether the job may pass the gate of a booked start
// (admitBooked): a line job, with no key, aiming at its own slot, that
// has not missed a slot in this attempt. Whether its queue books its
// starts, and whether it is still within its booked window, the read
// tells.
func (d *delivery) bookable() bool {
	j := &d.j
	return !outOfLine(j) && !missedBefore(j) && j.Key == "" && !j.SlotAt.IsZero() && !d.recheck && d.wake.Equal(j.SlotAt)
}

// admitBooked reads the queue through the gate of a booked start
// (State.Admit): one read and no write on the queue's state, for a job
// whose take booked its moment with room to be late in. A purge or a
// pause stops it as the gate's write would; a queue that does not book
// its starts (a window, a running cap: slot.Config.BooksStarts), a
// slow-down, a configure that booked the line again, or a worker too
// late for its booked window sends it on to the gate with the queue as
// read (admitted stays false).
func (d *delivery) admitBooked(ctx context.Context) (next, error) {
	e, j := d.e, &d.j
	q, err := e.state.Admit(ctx, AdmitRequest{Queue: j.Queue, Gen: j.Gen, Ticket: j.Ticket, At: j.SlotAt})
	var gate *GateError
	switch {
	case errors.Is(err, ErrQueueNotFound):
		return stop, e.expireOfDeletedQueue(ctx, *j)
	case errors.As(err, &gate) && gate.Verdict != slot.Early:
		d.read(q)
		return d.refused(ctx, gate)
	case err != nil && gate == nil:
		return stop, fmt.Errorf("work %s: %w", d.env.Ref(), err)
	}
	d.read(q)
	if err == nil && inBookedWindow(q, j, e.now()) {
		d.admit()
	}
	return proceed, nil
}

// admit records the admitted start: at the job's slot, callable until
// its booked room ends (slot.Limits.BookedRoom), with nothing written on
// the queue's state (st is the state read).
func (d *delivery) admit() {
	e, q, j := d.e, d.q, &d.j
	ls := q.Config.LimitList()
	d.admitted, d.now, d.st = true, e.now(), q.State
	d.alone = !slot.BookedAfter(q.State, ls, j.SlotAt)
	d.gr = GateRequest{
		Queue: j.Queue, Ticket: j.Ticket, Limits: ls, Skew: q.Config.Skew, Now: d.now, At: j.SlotAt, SlotAt: j.SlotAt,
		Deadline: j.SlotAt.Add(ls.BookedRoom(q.Config.Skew)), Seen: q.State, Until: j.SlotAt.Add(e.opts.Lease), Gen: j.Gen,
	}
}

// inBookedWindow reports whether a line job j of q, ready at ready,
// starts within the window its take booked: q books its starts
// (slot.Config.BooksStarts) and is not gated (slot.State.Gated), or
// counted j's ticket when it turned gated (GatedThrough), the
// line's clock holds its record's slot
// (Queue.BookedSlot: no configure booked it elsewhere since), and ready
// is no later than its slot plus its room.
func inBookedWindow(q Queue, j *job.Job, ready time.Time) bool {
	cfg := q.Config
	if !cfg.BooksStarts() || q.State.Gated && j.Ticket > q.State.GatedThrough || !q.BookedSlot(*j).Equal(j.SlotAt) {
		return false
	}
	return !ready.After(j.SlotAt.Add(cfg.LimitList().BookedRoom(cfg.Skew)))
}

// bookedStart reports whether a start of j at at, asked at the gate of
// q with slotAt its line slot (zero for none), is one the line booked: a
// line job that has not missed a slot in this attempt, at its booked
// slot (Queue.BookedSlot) or within its room. Any other start on a
// queue that books its starts cuts in off its bookings
// (GateRequest.CutIn).
func bookedStart(q Queue, j *job.Job, slotAt, at time.Time) bool {
	booked := q.BookedSlot(*j)
	if slotAt.IsZero() || booked.IsZero() {
		return false
	}
	return !at.After(booked.Add(q.Config.LimitList().BookedRoom(q.Config.Skew)))
}
