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

// A limit changed while jobs wait. Configure writes the new configuration
// and the gate's state for the new limits in one atomic step on the
// queue's state (State.Reconfigure, slot.Reslot): the starts before it
// kept the old limits, those after it keep the new ones, and none across
// it breaks either. The same step books the waiting line jobs again under
// the new limits, in ticket order, and configure then writes each job
// whose slot moved (one write a job) and sends the ones whose new slot
// came within the transport's reach, so that every waiting job's record
// shows its new slot_at and an enqueue after the change is answered by
// the new arithmetic.

// Reslot says what a configure did to the jobs already booked.
type Reslot struct {
	// Moved is how many waiting jobs got a new slot_at.
	Moved int `json:"moved"`
	// MaxShiftMs is the largest move of one of them, earlier or later, in
	// milliseconds.
	MaxShiftMs int64 `json:"max_shift_ms"`
}

// ReconfigureRequest is a configure's atomic step: Config replaces the
// queue's, and Reslot gives the limit state to store with it from the
// state the store holds (it may be called again, on a newer state, if
// the state changed under the write; its error is returned as it is,
// and nothing is written).
type ReconfigureRequest struct {
	Queue  string
	Gen    int64
	Config slot.Config
	Reslot func(slot.State) (slot.State, error)
}

// MaxReslot is the most waiting jobs one configure books again and
// writes. The rest of a longer backlog keep the slot_at of their records
// (the gate's state is the new limits' all the same, so no limit breaks)
// and run again by configure: each configure moves the next MaxReslot.
const MaxReslot = 10_000

// Reconfigure replaces a queue's configuration (as Configure does) and
// moves the jobs already booked to the slots the new limits give them. It
// runs under the queue's resume lease, so a resume pass and another
// configure of the queue never interleave with it: of two concurrent
// configures the later one wins whole. A crash after the atomic step
// leaves the records of some waiting jobs at their old slot_at (their
// starts keep the new limits, as the gate keeps them); configure run again
// moves them.
func (e *Engine) Reconfigure(ctx context.Context, name string, cfg slot.Config) (Queue, Reslot, error) {
	cfg, err := e.checkConfig(name, cfg)
	if err != nil {
		return Queue{}, Reslot{}, err
	}
	q, err := e.Queue(ctx, name)
	if err != nil {
		return Queue{}, Reslot{}, err
	}
	holder := newHolder()
	cur, err := e.awaitCursor(ctx, name, holder)
	if err != nil {
		return Queue{}, Reslot{}, failure("configure", job.Ref{Queue: name}, err)
	}
	defer func() {
		if err := e.state.ReleaseLease(context.WithoutCancel(ctx), name, holder, cur); err != nil {
			e.log.WarnContext(ctx, "configure: lease not released", "queue", name, "error", err)
		}
	}()
	moves, err := e.rebook(ctx, q, cfg)
	if err != nil {
		return Queue{}, Reslot{}, failure("configure", job.Ref{Queue: name}, err)
	}
	rep, err := e.moveAll(ctx, cfg, moves)
	if err != nil {
		return Queue{}, rep, fmt.Errorf("configure %s: %w", name, err)
	}
	q, err = e.Queue(ctx, name)
	if rep.Moved > 0 {
		e.log.InfoContext(ctx, "configure moved booked jobs", "queue", name, "moved", rep.Moved, "max_shift_ms", rep.MaxShiftMs)
	}
	return q, rep, err
}

// move is a waiting job and the slot the new limits give it.
type move struct {
	j  job.Job
	to time.Time
}

// rebook lists the queue's waiting line jobs, stores cfg with the gate's
// state for its limits and the line booked again (slot.Reslot), and
// returns each listed job with its new slot. Tickets handed out after the
// list get places too (the step counts every ticket up to the queue's
// last): their jobs are listed again after the step and take them in
// ticket order.
func (e *Engine) rebook(ctx context.Context, q Queue, cfg slot.Config) ([]move, error) {
	listed := q.State.Ticket
	waiting, err := e.waitingLine(ctx, q, 0, listed)
	if err != nil {
		return nil, err
	}
	var slots []time.Time
	var line []job.Job
	var boundary int64
	old := q.Config.LimitList()
	_, err = e.state.Reconfigure(ctx, ReconfigureRequest{Queue: q.Name, Gen: q.Gen, Config: cfg,
		Reslot: func(st slot.State) (slot.State, error) {
			line = slices.DeleteFunc(slices.Clone(waiting), func(j job.Job) bool { return j.Ticket <= st.Current })
			extra := int(max(0, st.Ticket-max(listed, st.Current)))
			n := min(len(line)+extra, MaxReslot)
			var next slot.State
			next, slots = slot.Reslot(st, old, cfg.LimitList(), cfg.Skew, n, e.now().Add(e.opts.Lead))
			boundary = st.Ticket
			return next, nil
		}})
	if err != nil {
		return nil, err
	}
	if boundary > listed {
		late, err := e.waitingLine(ctx, q, listed, boundary)
		if err != nil {
			return nil, err
		}
		line = append(line, late...)
	}
	moves := make([]move, 0, min(len(line), len(slots)))
	for i, j := range line {
		if i < len(slots) {
			moves = append(moves, move{j: j, to: slots[i]})
		}
	}
	return moves, nil
}

// waitingLine lists the queue's jobs waiting in line with tickets in
// (after, upto], in ticket order: queued jobs and jobs parked for a far
// slot, for their gate or as unsent, that hold a place in the line (not
// scheduled or detached). Jobs held by a pause take new tickets when
// released, and jobs waiting for a key or a running place left the line.
func (e *Engine) waitingLine(ctx context.Context, q Queue, after, upto int64) ([]job.Job, error) {
	var out []job.Job
	for _, s := range []job.Status{job.Queued, job.Parked} {
		jobs, err := e.listAll(ctx, q, s)
		if err != nil {
			return nil, fmt.Errorf("list %s jobs: %w", s, err)
		}
		for _, j := range jobs {
			if j.Ticket <= after || j.Ticket > upto || outOfLine(&j) {
				continue
			}
			if j.Status == job.Parked && (j.ParkReason == job.PausedQueue || j.ParkReason.Waits()) {
				continue
			}
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b job.Job) int { return int(a.Ticket - b.Ticket) })
	return out, nil
}

// moveAll writes each job of moves whose slot moved (moveJob) and says
// how many did and by how much at most.
func (e *Engine) moveAll(ctx context.Context, cfg slot.Config, moves []move) (Reslot, error) {
	var rep Reslot
	for _, m := range moves {
		shift := m.to.Sub(m.j.SlotAt).Abs()
		if shift == 0 {
			continue
		}
		moved, err := e.moveJob(ctx, cfg, m)
		if err != nil {
			return rep, err
		}
		if moved {
			rep.Moved++
			rep.MaxShiftMs = max(rep.MaxShiftMs, shift.Milliseconds())
		}
	}
	return rep, nil
}

// moveJob gives a waiting job its new slot, as a park or a release would
// place it: a job parked for a far slot or for its gate stays parked
// until its new slot comes within the transport's reach, or is sent now
// if it came; a queued job whose new slot lies earlier than its
// message's by more than the skew is sent again for it (the message
// already on its way arrives late, finds the job started, and is
// dropped; if it comes first, the worker judges its lateness by the slot
// it was sent for: see lateSlot). A queued job whose slot moved later
// keeps its message: its worker finds the gate early and waits. A job
// that moved meanwhile (it started, or was cancelled) is left alone.
func (e *Engine) moveJob(ctx context.Context, cfg slot.Config, m move) (bool, error) {
	j, now := m.j, e.now()
	from, was := j.Version(), j.SlotAt
	j.SlotAt = m.to
	var send bool
	switch {
	case j.Status == job.Parked && (j.ParkReason == job.Far || j.ParkReason == job.WaitGate):
		if m.to.Sub(now) > e.transport.MaxDelay() {
			j.DueAt = m.to.Add(-e.transport.MaxDelay())
			break
		}
		j.Status, j.ParkReason, j.DueAt, send = job.Queued, "", time.Time{}, true
	case j.Status == job.Queued:
		send = m.to.Before(was.Add(-cfg.Skew))
	}
	if send {
		env := j.Envelope()
		env.SentAt = now
		if err := e.transport.Send(ctx, []Message{{Envelope: env, Delay: e.delayTo(j.SlotAt, now)}}); err != nil {
			if from.Status == job.Parked {
				j.Status, j.ParkReason, j.DueAt = job.Parked, job.Unsent, now // the resume function sends it
			} // else its first message still comes: lateSlot keeps it from a re-ticket
		} else if from.Status == job.Parked {
			j.Record(job.Event{At: now, Kind: job.Released, Reason: "configure"})
		}
	}
	err := e.state.UpdateJob(ctx, j, from)
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrJobNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("move %s: %w", j.Ref(), err)
	}
	return true, nil
}

// lateSlot is the slot a worker judges its job's lateness by: the
// record's, or the slot its message was sent for if that is later. A
// configure that moved the job earlier while its message was on its way
// made it late; that lateness is not the worker's, and re-ticketing the
// job for it would send it to the end of the line.
func lateSlot(j *job.Job, env job.Envelope) time.Time {
	return laterOf(j.SlotAt, env.SlotAt)
}
