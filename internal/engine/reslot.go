package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// A limit changed while jobs wait. Configure writes the new configuration
// and the gate's state for the new limits in one atomic step on the
// queue's state (State.Reconfigure, slot.Reslot): the starts before it
// kept the old limits, those after it keep the new ones, and none across
// it breaks either. The same step books the waiting line jobs again under
// the new limits, in ticket order, and configure then writes each parked
// job whose slot moved (one write a job) and sends the ones whose new slot
// came within the transport's reach, so that their records show their new
// slot_at, and an enqueue after the change is answered by the new
// arithmetic. Queued jobs (their messages on their way, within the
// transport's reach) are not listed: they keep their slot_at and start at
// it or at the gate's opening, whichever is later (see rebook). The step
// records each parked job's new place (Rebooked), so the writes after it
// are bounded (Options.MoveBudget): configure answers with what it moved
// and what remains, and the resume function writes the rest from the
// record; until then a record is shown with its place.

// Reslot says what a configure did to the jobs already booked: the
// admin function's answer, api.Reslot. Remaining counts the moves left
// when the budget ran out (Options.MoveBudget): the resume function
// writes them, and until then each job is shown with its new slot
// (Queue.SlotOf).
type Reslot = api.Reslot

// ReconfigureRequest is a configure's atomic step: Config replaces the
// queue's, and Reslot gives the limit state to store with it from the
// state the store holds, and what the change did to the queued jobs
// (Rebooked, stored with Config, replacing the one before; nil: none).
// Reslot may be called again, on a newer state, if the state changed
// under the write; its error is returned as it is, and nothing is
// written.
type ReconfigureRequest struct {
	Queue  string
	Gen    int64
	Config slot.Config
	Reslot func(slot.State) (slot.State, *Rebooked, error)
}

// Rebooked is what a configure recorded about the queued jobs it booked
// again under the new limits without writing them: the line tickets in
// (After, Upto], whose messages are on their way for their old slots.
// Their places are the bookings from Base, the gate's state seeded for
// the new limits, at At (slot.Book), in ticket order. A queued job's
// record is shown with the later of its slot_at and its place
// (Queue.SlotOf), so it says when the job will really start, at no write
// per job.
//
// It also records the places of the parked line jobs, which configure
// writes after the step (moveAll): tickets First to Last, booked one at a
// time at From from LineBase (Rebooked.Places). Their moves are keyed by
// it, so a configure that stops within its budget, or dies, leaves its
// rest to the resume function (finishReslot) with nothing to decide
// again, and each job's shown slot is its place until its record is
// written (Queue.SlotOf). First 0: no parked job was booked. Keys says
// the change gave the queue's keys new limits: their parked jobs move to
// their keys' new clocks (moveKeyed).
type Rebooked struct {
	After    int64      `json:"after"`
	Upto     int64      `json:"upto"`
	At       time.Time  `json:"at"`
	Base     slot.State `json:"base"`
	First    int64      `json:"first,omitempty"`
	Last     int64      `json:"last,omitempty"`
	From     time.Time  `json:"from"`
	LineBase slot.State `json:"line_base"`
	Keys     bool       `json:"keys,omitempty"`
	// Skip holds the tickets of (After, Upto] that took no place, as
	// ranges [first, last] in order: their jobs wait out of the line (in
	// the waiting room, held by a pause) and take new tickets when they
	// come back to it. A queued job's place is its ticket's rank among
	// the others (placeIndex).
	Skip [][2]int64 `json:"skip,omitempty"`
}

// maxSkip bounds Rebooked.Skip's ranges: beyond it the tickets of jobs
// out of the line take places as any other (the queue is idle for them
// after a configure, as it was before Skip), so that the record stays
// small.
const maxSkip = 64

// skipRanges are the ranges of tickets, sorted, as Rebooked.Skip holds
// them, at most maxSkip: the first ranges of tickets.
func skipRanges(tickets []int64) [][2]int64 {
	var out [][2]int64
	for _, t := range tickets {
		if n := len(out); n > 0 && out[n-1][1]+1 == t {
			out[n-1][1] = t
			continue
		}
		if len(out) == maxSkip {
			break
		}
		out = append(out, [2]int64{t, t})
	}
	return out
}

// skipped is how many tickets of r.Skip lie before t.
func (r *Rebooked) skipped(t int64) int64 {
	var n int64
	for _, s := range r.Skip {
		if s[0] >= t {
			break
		}
		n += min(s[1], t-1) - s[0] + 1
	}
	return n
}

// Places returns the places r booked for the parked line's tickets,
// First to Last, under ls (nil: none).
func (r *Rebooked) Places(ls slot.Limits) map[int64]time.Time {
	if r == nil || r.First == 0 {
		return nil
	}
	places := make(map[int64]time.Time, r.Last-r.First+1)
	s := r.LineBase
	for t := r.First; t <= r.Last; t++ {
		var at []time.Time
		s, at = slot.Book(s, ls, 0, 1, r.From)
		places[t] = at[0]
	}
	return places
}

// place is the place r booked for a parked line job's ticket t under ls
// (ok false: none).
func (r *Rebooked) place(ls slot.Limits, t int64) (time.Time, bool) {
	if r == nil || r.First == 0 || t < r.First || t > r.Last {
		return time.Time{}, false
	}
	_, at := slot.Book(r.LineBase, ls, 0, int(t-r.First+1), r.From)
	return at[len(at)-1], true
}

// SlotOf is when j, a job of q, is due to start: its record's slot_at;
// for a queued line job that a configure booked again without writing it
// (q.Rebooked), the later of that and the place the new limits give its
// ticket — the start the gate will let it have; for a parked line job the
// configure booked, the place it booked, which its record gets when its
// move is written (at once, or by the resume function when the
// configure's budget ran out).
func (q Queue) SlotOf(j job.Job) time.Time {
	if at, ok := q.rebookedPlace(j); ok {
		if j.Status == job.Parked {
			return at
		}
		return laterOf(j.SlotAt, at)
	}
	return j.SlotAt
}

// BookedSlot is the slot the line's clock holds for j under q's limits:
// its record's slot_at, or the place a configure booked it again at
// (SlotOf); zero when j starts later than that place (its record's slot
// lay after it), a start no booking stands for.
func (q Queue) BookedSlot(j job.Job) time.Time {
	at, ok := q.rebookedPlace(j)
	switch {
	case !ok:
		return j.SlotAt
	case j.Status == job.Parked || !j.SlotAt.After(at):
		return at
	}
	return time.Time{}
}

// rebookedPlace is the place the last configure of q booked line job j
// at, if it booked j again without writing its record (SlotOf).
func (q Queue) rebookedPlace(j job.Job) (time.Time, bool) {
	r := q.Rebooked
	if r == nil || !inLine(&j) {
		return time.Time{}, false
	}
	if j.Status == job.Parked {
		return r.place(q.Config.LimitList(), j.Ticket)
	}
	if j.Status != job.Queued || j.Ticket <= max(r.After, q.State.Current) || j.Ticket > r.Upto {
		return time.Time{}, false
	}
	n := j.Ticket - r.After - r.skipped(j.Ticket)
	if n < 1 {
		return time.Time{}, false
	}
	_, at := slot.Book(r.Base, q.Config.LimitList(), 0, int(n), r.At)
	return at[len(at)-1], true
}

// Settled is q's state as slotq shows it at now: on a queue whose booked
// starts pass the gate by a read (slot.Config.BooksStarts, while it is
// not gated, which settles current itself), Current counts the line
// tickets whose start has come (slot.Settled), so that positions and
// waiting counts do not grow with every start that wrote nothing.
func (q Queue) Settled(now time.Time) slot.State {
	st := q.State
	if q.Config.BooksStarts() && !st.Gated {
		if st.Paused && !st.PausedAt.IsZero() && st.PausedAt.Before(now) {
			now = st.PausedAt // nothing started since
		}
		st.Current = slot.Settled(st, q.Config.LimitList(), now)
	}
	return st
}

// inLine reports whether j holds a place in its queue's waiting line:
// not scheduled or detached, not held by a pause (it takes a new ticket
// when released), not waiting for a key or a running place (it left
// the line) and not in the waiting room (it holds no slot yet:
// waitroom.go).
func inLine(j *job.Job) bool {
	return !outOfLine(j) && j.ParkReason != job.PausedQueue && !j.ParkReason.Waits() && !inRoom(j)
}

// MaxReslot is the most waiting jobs one configure books again. The rest
// of a longer backlog keep the slot_at of their records (the gate's state
// is the new limits' all the same, so no limit breaks) and run again by
// configure: each configure books the next MaxReslot.
const MaxReslot = 10_000

// moveReserve is the time a configure (or a resume pass finishing one)
// keeps in hand before its context's deadline: it writes no more moves
// once less is left, and leaves them to the resume function, so that it
// releases the queue's lease and answers within its invocation.
const moveReserve = 10 * time.Second

// Reconfigure does Engine.Reconfigure's work.
func (e *admin) Reconfigure(ctx context.Context, name string, cfg slot.Config) (Queue, Reslot, error) {
	return e.reconfigure(ctx, name, func(Queue) (slot.Config, error) { return cfg, nil })
}

// reconfigure is Reconfigure to the configuration to gives from the queue
// as read: asked before the lease, so bad input writes nothing, and again
// under it, so a change of some settings (Change) builds on the
// configuration the configure before it wrote.
func (e *admin) reconfigure(ctx context.Context, name string, to func(Queue) (slot.Config, error)) (Queue, Reslot, error) {
	q, err := e.Queue(ctx, name)
	if err != nil {
		return Queue{}, Reslot{}, err
	}
	if _, err := e.configFor(q, to); err != nil {
		return Queue{}, Reslot{}, err
	}
	holder := newHolder()
	// The cursor to leave: cur once the moves are written; until then
	// one that has the next pass finish them (Cursor.Reslot), left also
	// by a configure that fails midway. It is stored first thing under
	// the lease (markReslot), which gives the lease up for a moment: a
	// configure that loses it then waits for its turn again.
	var cur, leave Cursor
	for {
		if cur, err = e.awaitCursor(ctx, name, holder); err != nil {
			return Queue{}, Reslot{}, failure("configure", job.Ref{Queue: name}, err)
		}
		if leave, err = e.markReslot(ctx, name, holder, cur); !errors.Is(err, ErrLeaseHeld) {
			break
		}
	}
	if err != nil {
		return Queue{}, Reslot{}, failure("configure", job.Ref{Queue: name}, err)
	}
	cur.Reslot = false // this configure books the whole line again
	defer func() {
		if err := e.state.ReleaseLease(context.WithoutCancel(ctx), name, holder, leave); err != nil {
			e.log.WarnContext(ctx, "configure: lease not released", "queue", name, "error", err)
		}
	}()
	if q, err = e.Queue(ctx, name); err != nil {
		return Queue{}, Reslot{}, err
	}
	cfg, err := e.configFor(q, to)
	if err != nil {
		leave = cur
		return Queue{}, Reslot{}, err
	}
	rec, line, err := e.reslotWaiting(ctx, q, cfg)
	if err != nil {
		return Queue{}, Reslot{}, failure("configure", job.Ref{Queue: name}, err)
	}
	rep, err := e.moveAll(ctx, cfg, rec, line)
	if err == nil && rec != nil && rec.Keys {
		// The keys' jobs wait out of line, on their keys' clocks.
		next := q
		next.Config = cfg
		err = e.moveKeyed(ctx, next, nil, &rep)
	}
	if err != nil {
		return Queue{}, rep, fmt.Errorf("configure %s: %w", name, err)
	}
	if rep.Remaining == 0 {
		leave = cur
	}
	q, err = e.Queue(ctx, name)
	if rep.Moved > 0 || rep.Remaining > 0 {
		e.log.InfoContext(ctx, "configure moved booked jobs", "queue", name, "moved", rep.Moved, "max_shift_ms", rep.MaxShiftMs, "remaining", rep.Remaining)
	}
	return q, rep, err
}

// markReslot stores, under holder's lease of queue, cur with Reslot set
// and due at once (the lease kept): should the configure die before its
// moves are written, the resume function's next pass over the queue
// finishes them (finishReslot) once the lease runs out. It returns the
// cursor stored.
func (e *admin) markReslot(ctx context.Context, queue, holder string, cur Cursor) (Cursor, error) {
	mark := cur
	mark.Reslot = true
	if mark.Round.IsZero() {
		mark.Round = e.now()
	}
	if err := e.resumer.restartRound(ctx, queue, holder, mark, e.now()); err != nil {
		return cur, err
	}
	return mark, nil
}

// finishReslot moves the parked jobs that the last configure of q booked
// again (q.Rebooked) and did not move: what a configure left when its
// budget ran out, or when it died midway (Cursor.Reslot). The places are
// the ones the configure recorded, so nothing is decided again and the
// queue's state is not written; a job moved already is on its place and
// is not written again. The resume function runs it under the queue's
// lease, as configure runs its own, and within the same budget: it
// reports how many remain for its next pass.
func (e *admin) finishReslot(ctx context.Context, q Queue) (Reslot, error) {
	var rep Reslot
	var err error
	if r := q.Rebooked; r != nil && r.First != 0 { // else the configure died before its step, or booked no parked job
		var line []job.Job
		if line, err = e.waitingLine(ctx, q, r.First-1, r.Last); err != nil {
			return Reslot{}, fmt.Errorf("resume %s: finish configure: %w", q.Name, err)
		}
		rep, err = e.moveAll(ctx, q.Config, r, line)
	}
	if r := q.Rebooked; err == nil && r != nil && r.Keys {
		err = e.moveKeyed(ctx, q, nil, &rep)
	}
	if err != nil {
		return rep, fmt.Errorf("resume %s: finish configure: %w", q.Name, err)
	}
	e.log.InfoContext(ctx, "configure finished by the resume function", "queue", q.Name, "moved", rep.Moved, "max_shift_ms", rep.MaxShiftMs, "remaining", rep.Remaining)
	return rep, nil
}

// configFor is the configuration to gives for q, checked (checkConfig).
func (e *admin) configFor(q Queue, to func(Queue) (slot.Config, error)) (slot.Config, error) {
	cfg, err := to(q)
	if err != nil {
		return cfg, err
	}
	return e.checkConfig(q.Name, cfg)
}

// reslotWaiting lists the queue's waiting line jobs, stores cfg with the gate's
// state for its limits and the line booked again, and returns the record
// of the places booked (nil: none) and the parked line jobs listed, in
// ticket order. Only parked jobs are listed (queued ones are read
// by id: see job.Status.Listed), so the step books a place for every
// ticket of the line, in ticket order (reslotLine): the queued jobs, whose
// messages are on their way for their slots (within the transport's
// reach), keep their records' slot_at and start at it or at the gate's
// opening, whichever is later; the parked line jobs get the places of
// their tickets, from no earlier than the latest slot a queued one ahead
// of them can hold; tickets handed out after the list get places too, and
// their jobs are listed again after the step and take them.
func (e *admin) reslotWaiting(ctx context.Context, q Queue, cfg slot.Config) (*Rebooked, []job.Job, error) {
	listed := q.State.Ticket
	waiting, off, err := e.parkedLine(ctx, q, 0, listed)
	if err != nil {
		return nil, nil, err
	}
	var rec *Rebooked
	var boundary int64
	old := q.Config.LimitList()
	keys := cfg.Keyed() && slot.Limits(cfg.KeyLimits).Signature() != slot.Limits(q.Config.KeyLimits).Signature()
	_, err = e.state.Reconfigure(ctx, ReconfigureRequest{Queue: q.Name, Gen: q.Gen, Config: cfg,
		Reslot: func(st slot.State) (slot.State, *Rebooked, error) {
			if q.Config.BooksStarts() {
				// Its booked starts moved no mark: the gate counts
				// those that may have come (slot.GateAll), and the
				// line booked again starts through the gate's write
				// until the queue is idle (its jobs' records keep
				// their slots, which the new bookings do not hold).
				// Current counts the tickets whose slots have come
				// (those a lead ahead may have passed by a read, and
				// the settled last start counts them, but they take
				// places too, lest one that had not start at its slot
				// under the old limit after the change).
				st = slot.GateAll(st, old, e.settling(q.Config, e.now()), time.Time{})
				// None of them passes by a read under the old limit
				// once it changed.
				st.GatedThrough = 0
			}
			line := slices.DeleteFunc(slices.Clone(waiting), func(j job.Job) bool { return j.Ticket <= st.Current })
			next := slot.Seed(st, old, cfg.LimitList(), cfg.Skew)
			now := e.now().Add(e.opts.Lead)
			next, rec = e.reslotLine(next, cfg.LimitList(), line, off, now)
			if keys {
				if rec == nil {
					rec = &Rebooked{After: st.Current, Upto: st.Current, At: now, Base: next}
				}
				rec.Keys = true
			}
			boundary = st.Ticket
			if cfg.BooksStarts() || q.Config.BooksStarts() {
				next = slot.GateAll(next, cfg.LimitList(), slot.Settling{}, time.Time{})
			}
			return next, rec, nil
		}})
	if err != nil {
		return nil, nil, err
	}
	line := waiting
	if boundary > listed {
		late, err := e.waitingLine(ctx, q, listed, boundary)
		if err != nil {
			return nil, nil, err
		}
		line = append(line, late...)
	}
	return rec, line, nil
}

// reslotLine books the line of a queue at state s (seeded for ls) again at
// now, a place per ticket from the one after current to the last, at most
// MaxReslot: the tickets ahead of the first parked line job (queued jobs,
// and tickets that left the line) from now; then, if parked jobs follow
// and a queued job can hold a slot later than that (up to the transport's
// reach from now), a place there standing for it (with no parked job
// behind them, the queued ones need none); then every ticket from the first parked
// one on (line: the parked line jobs, by ticket). It returns the state
// after and the record of the places booked (nil: none): those of the
// tickets ahead of the first parked one, which their queued jobs are
// shown with, and those of the tickets from it on, which the parked ones
// are moved to. It books with no skew (slot.Book), a window a skew looser
// than a take would: Queue.SlotOf and Rebooked.Places give the places by
// the same booking.
func (e *admin) reslotLine(s slot.State, ls slot.Limits, line []job.Job, off []int64, now time.Time) (slot.State, *Rebooked) {
	first := s.Ticket + 1
	if len(line) > 0 {
		first = line[0].Ticket
	}
	upto := s.Current + min(int64(MaxReslot), max(0, first-s.Current-1))
	var between []int64 // the tickets ahead that wait out of the line
	for _, t := range off {
		if t > s.Current && t <= upto {
			between = append(between, t)
		}
	}
	rec := &Rebooked{After: s.Current, Upto: upto, At: now, Base: s, Skip: skipRanges(between)}
	ahead := int(upto - s.Current - rec.skipped(upto+1))
	s, _ = slot.Book(s, ls, 0, ahead, now)
	// A queued job holds a slot no later than the transport's reach from
	// now, nor than the first parked job's slot.
	from, reach := now.Add(e.transport.MaxDelay()), true
	if len(line) > 0 && line[0].SlotAt.Before(from) {
		from, reach = line[0].SlotAt, false
	}
	if reach && len(line) > 0 && ahead > 0 && from.After(slot.NextSlot(s, ls, 0, now)) {
		s, _ = slot.Book(s, ls, 0, 1, from)
	}
	if last := min(s.Ticket, first+int64(MaxReslot-ahead)-1); last >= first {
		rec.First, rec.Last, rec.From, rec.LineBase = first, last, laterOf(now, from), s
		s, _ = slot.Book(s, ls, 0, int(last-first+1), rec.From)
	}
	if ahead == 0 && rec.First == 0 {
		return s, nil
	}
	return s, rec
}

// waitingLine lists the queue's parked jobs waiting in line with tickets
// in (after, upto], in ticket order: parked for a far slot, for their gate
// or as unsent, holding a place in the line (not scheduled or detached).
// Jobs held by a pause take new tickets when released, and jobs waiting
// for a key or a running place left the line.
func (e *admin) waitingLine(ctx context.Context, q Queue, after, upto int64) ([]job.Job, error) {
	line, _, err := e.parkedLine(ctx, q, after, upto)
	return line, err
}

// parkedLine is waitingLine, and the tickets in (after, upto] of the
// parked jobs out of the line (off), in order.
func (e *admin) parkedLine(ctx context.Context, q Queue, after, upto int64) (line []job.Job, off []int64, err error) {
	jobs, err := e.resumer.listAll(ctx, q, job.Parked)
	if err != nil {
		return nil, nil, fmt.Errorf("list parked jobs: %w", err)
	}
	for _, j := range jobs {
		switch {
		case j.Ticket <= after || j.Ticket > upto:
		case inLine(&j):
			line = append(line, j)
		default:
			off = append(off, j.Ticket)
		}
	}
	slices.Sort(off)
	return line, off, nil
}
