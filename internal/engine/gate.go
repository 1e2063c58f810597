package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// awaitGate goes to the gate until it passes the job for a start (d.st is
// the queue's state after it) or the message is done with (stop).
func (d *delivery) awaitGate(ctx context.Context) (next, error) {
	for {
		if n, err := d.tryGate(ctx); n != again {
			return n, err
		}
	}
}

// tryGate is one way to the gate: wait for the job's turn, read the queue,
// leave lower tickets the intervals they need, answer from the state read
// where it can, and write to the gate.
func (d *delivery) tryGate(ctx context.Context) (next, error) {
	d.admitted = false
	if n, err := d.waitForTurn(ctx); n != proceed {
		return n, err
	}
	d.prelist(ctx) // batch.go
	if n, err := d.checkQueue(ctx); n != proceed || d.admitted {
		return n, err
	}
	if n := d.aimStart(); n != proceed {
		return n, nil
	}
	if n, err := d.decide(ctx); n != proceed {
		return n, err
	}
	if n, err := d.passGate(ctx); n != proceed {
		return n, err
	}
	return d.passKey(ctx)
}

// waitForTurn sleeps to Lead before the start aimed at (wake), or to the
// job's turn by the clock, whichever is later. The whole budget must fit,
// not only the wait: a job that starts must be recorded before the
// invocation ends. One that does not fit waits elsewhere: parked until
// its gate opens when that is beyond the transport's reach, else handed
// back to the transport.
func (d *delivery) waitForTurn(ctx context.Context) (next, error) {
	e := d.e
	wait := laterOf(d.wake.Add(-e.opts.Lead-aheadOfLine(&d.j, d.q.Config)-d.gatherLead()), d.turn).Sub(e.now())
	if wait <= 0 {
		return proceed, nil
	}
	cfg, known := d.q.Config, d.queueRead
	if !known {
		// The budget before the wait is judged on the configuration
		// this worker last read of the queue, when it has one: the
		// queue is read once, after the wait, where it judges again
		// (checkQueue). A worker waiting for its moment does not read
		// the queue's item before it.
		cfg, known = e.worker.configOf(d.j.Queue, d.j.Gen)
	}
	if !known {
		if n, err := d.readQueue(ctx); n != proceed {
			return n, err
		}
		cfg = d.q.Config
	}
	if !e.fits(ctx, wait+e.opts.Lead+e.budget(cfg)) {
		if d.wake.Sub(e.now()) > e.transport.MaxDelay() {
			return stop, d.parkForGate(ctx)
		}
		return stop, d.handBack(ctx)
	}
	if err := clock.Sleep(ctx, wait); err != nil {
		return stop, fmt.Errorf("work %s: wait for slot: %w", d.env.Ref(), err)
	}
	return proceed, nil
}

// readQueue reads the job's queue into q. A queue deleted (or deleted and
// created again: another generation) ends the job (expireOfDeletedQueue).
func (d *delivery) readQueue(ctx context.Context) (next, error) {
	q, err := d.e.state.GetQueue(ctx, d.j.Queue)
	if errors.Is(err, ErrQueueNotFound) || err == nil && q.Gen != d.j.Gen {
		return stop, d.e.expireOfDeletedQueue(ctx, d.j)
	}
	if err != nil {
		return stop, fmt.Errorf("work %s: %w", d.env.Ref(), err)
	}
	d.read(q)
	return proceed, nil
}

// read keeps q as the queue the delivery read, and its configuration as
// the worker's last of it (worker.configOf).
func (d *delivery) read(q Queue) {
	d.q, d.queueRead = q, true
	d.e.configs.Store(q.Name, q)
}

// configOf is the configuration of queue (of generation gen) this worker
// read last, if it read one.
func (e *worker) configOf(queue string, gen int64) (slot.Config, bool) {
	v, ok := e.configs.Load(queue)
	if !ok {
		return slot.Config{}, false
	}
	q := v.(Queue)
	return q.Config, q.Gen == gen
}

// checkQueue reads the queue after the wait, so the hold sees the starts
// that happened meanwhile, and checks the budget again before the gate:
// the configuration may have changed, and a job whose slot passed has had
// no wait to check.
func (d *delivery) checkQueue(ctx context.Context) (next, error) {
	read := d.readQueue
	if d.bookable() {
		read = d.admitBooked
	}
	if n, err := read(ctx); n != proceed {
		return n, err
	}
	if !d.e.fits(ctx, d.e.budget(d.q.Config)) {
		d.admitted = false
		return stop, d.handBack(ctx)
	}
	if d.admitted {
		return proceed, nil
	}
	if d.q.State.Current == d.j.Ticket && !outOfLine(&d.j) || d.recheck {
		// The gate passed this ticket already (or, for a scheduled
		// job, some ticket since its slot): this may be a duplicate
		// of a message whose job was claimed, or the worker that
		// passed it died before its claim. Only in the second case
		// may it pass again.
		if done, err := d.e.claimedMeanwhile(ctx, d.want, &d.j); done || err != nil {
			if done && d.holding {
				// Cancelled (or run by another delivery) since this
				// one took the key: a cancelled job holds nothing.
				d.leaveKeyUnlessRunning(ctx)
			}
			return stop, err
		}
		d.recheck = false
	}
	return proceed, nil
}

// aimStart picks the start to ask the gate for (at): wake, or, for a worker
// that came too late for it, the soonest it can start. While lower
// tickets have not started, it leaves them the intervals they need, so a
// late neighbour is not passed by a hair (see lineOpening); a scheduled job
// does not wait for the line.
func (d *delivery) aimStart() next {
	e, q, j := d.e, d.q, &d.j
	d.now = e.now()
	d.at = slot.StartAt(d.wake, d.now, e.opts.Lead)
	if hold := lineOpening(q, j, d.at); d.at.Before(hold) {
		d.wake = hold
		return again
	}
	// The turn is a lead before that start, as any worker goes to the
	// gate: at the start itself, the store's latency would make every
	// held worker late for its own (on DynamoDB, at 5 ms a call and an
	// opening every 2 ms, a chain of reads, refusals and re-tickets).
	if d.turn = lineTurn(q, j, d.at).Add(-e.opts.Lead - d.gatherLead()); d.now.Before(d.turn) {
		return again
	}
	// The gate checks the limits at the reserved start and records its
	// deadline: the worker may call its target until then, late by as
	// much as the room of the queue's limits (slot.Deadline).
	ls := q.Config.LimitList()
	alone := !slot.BookedAfter(q.State, ls, j.SlotAt)
	d.alone = alone
	// A late worker reserves the latest start that keeps its line
	// ticket's place (slot.Reserve): late within the room, it moves
	// nobody.
	slotAt, lineSlot := j.SlotAt, j.SlotAt
	if missedBefore(j) {
		// It missed a slot in this attempt already: it takes the
		// openings it finds, not passed again for the line's front.
		slotAt, lineSlot = time.Time{}, time.Time{}
	}
	if outOfLine(j) {
		lineSlot = time.Time{}
	}
	var deadline time.Time
	d.at, deadline = slot.Reserve(q.State, ls, d.wake, d.now, d.at, lineSlot, q.Config.Skew, alone)
	// On a queue whose booked starts pass by a read, a start beyond its
	// booked window either is the line's last booking, late with nothing
	// booked behind it, or cuts in off the bookings.
	inWindow := bookedStart(q, j, lineSlot, d.at)
	last := q.Config.BooksStarts() && !q.State.Gated && !inWindow && !lineSlot.IsZero() && q.State.Line == j.Ticket
	cutIn := q.Config.BooksStarts() && !inWindow && !last
	settle := e.settling(q.Config, d.now)
	if cutIn && !q.State.Gated {
		// The first start to cut in turns the queue gated, its last
		// start settled (slot.GateAll): it reserves no sooner than the
		// gate opens then, so that it passes and the queue is gated
		// from this write on.
		open := slot.GateOpen(slot.GateAll(q.State, ls, settle, time.Time{}), ls, q.Config.Skew)
		if d.at.Before(open) {
			d.at, deadline = open, slot.Deadline(q.State, ls, open, q.Config.Skew, alone)
		}
	}
	d.gr = GateRequest{
		Queue: j.Queue, Ticket: j.Ticket, Limits: ls, Skew: q.Config.Skew, Now: d.now, At: d.at, SlotAt: slotAt,
		Deadline:  deadline,
		Scheduled: outOfLine(j), Seen: q.State,
		MaxRunning: q.Config.MaxRunning, Until: d.at.Add(e.opts.Lease), Gen: j.Gen,
		CutIn: cutIn, Settle: settle, Alone: last,
	}
	return proceed
}

// decide answers from the queue's state just read where it can: waiting
// for the gate's opening here saves a write that would fail (and still be
// billed). A keyed job takes its key first; one that finds every running
// place taken waits for one. A line job whose start would move the line
// beyond the room of the queue's limits (slot.Missed) gives its slot up
// rather than push every start booked behind it, whether or not its key
// let it through first (a key that runs many jobs at once keeps its jobs
// in line); a job out of line takes the opening it finds.
func (d *delivery) decide(ctx context.Context) (next, error) {
	q, j := d.q, &d.j
	switch v, open := d.gr.Decide(q.State); {
	case v == slot.Passed:
		return d.passed(ctx)
	case v == slot.Early && slowHeld(q.State, j, d.at):
		return d.awaitSlowDown(ctx, open) // slowdown.go
	case v == slot.Early:
		d.wake, d.recheck = open, outOfLine(j)
		return again, nil
	case (v == slot.Start || v == slot.Full) && j.Key != "" && !d.holding && q.Config.KeyCap() != 0:
		return d.takeKey(ctx)
	case v == slot.Full:
		return d.waitForRunningPlace(ctx)
	case keyed(q, j):
		if n, err := d.awaitKey(ctx); n != proceed {
			return n, err
		}
	}
	if !outOfLine(j) && !d.writerExcused() && !missedBefore(j) && d.missed() {
		late := d.at.Sub(slot.Due(q.State, j.SlotAt, q.Config.LimitList()))
		err := d.e.reticket(ctx, &d.q, &d.j, lateBy(late))
		d.leaveKeyUnlessRunning(ctx)
		return stop, err
	}
	return proceed, nil
}

// missed reports whether the line job gives its slot up for a start
// that would move the line (slot.Missed). On a queue whose booked starts
// pass by a read, while it is not gated, every start beyond its booked
// window does (bookedStart): the starts booked behind it do not wait
// for it.
func (d *delivery) missed() bool {
	q, j := d.q, &d.j
	if q.Config.BooksStarts() && !q.State.Gated {
		return !bookedStart(q, j, j.SlotAt, d.at) && !d.gr.Alone
	}
	return slot.Missed(q.State, q.SlotOf(*j), d.gr.CallBy(), q.Config.LimitList(), q.Config.Skew)
}

// writerExcused reports whether the job, late by its writer
// (writerLate), starts late rather than give its slot up: its record
// came at most one tick of its queue's limits (or the room, or the skew,
// if longer) after its slot, and the line has nothing booked behind it.
// A batch's first job on a queue that was idle is due a lead after the
// take, before its batch's records are written. Its late start moves
// nobody when it is alone in the line; with starts booked behind it (its
// own batch's or other producers'), it would move each of them by its
// writer's lag, every start told its slot coming that much later: the
// job is judged like any late one, and the line holds. A record later
// than a tick (a store answering in seconds) is never excused.
func (d *delivery) writerExcused() bool {
	cfg := d.q.Config
	ls := cfg.LimitList()
	return d.writerLate && d.writerLag <= max(cfg.Tick(), ls.Room(), cfg.Skew) && !slot.BookedAfter(d.q.State, ls, d.j.SlotAt)
}

// awaitKey waits, before the gate, for the job's key to let its start
// through (a limit of the key's own: keyed), without a write: the key's
// meter is read, and a job early for its key aims at the key's opening.
func (d *delivery) awaitKey(ctx context.Context) (next, error) {
	open, m, err := d.e.lanes.keyOpen(ctx, d.q, &d.j)
	if err != nil {
		return stop, fmt.Errorf("work %s: %w", d.env.Ref(), err)
	}
	if until, ok := heldBySlowDown(m.State, d.j.Ticket, d.at); ok {
		return d.awaitKeyed(ctx, m, until) // slowdown.go
	}
	if d.at.Before(open) {
		d.wake = open
		return again, nil
	}
	d.meter = m
	return proceed, nil
}

// passKey records the start the queue's gate reserved on the job's key,
// when its key has a limit of its own (keyGate: one compare-and-set of
// the key's meter). A key that refuses it leaves the queue's opening
// spent (stricter, never looser) and its running place freed: early, the
// job aims at the key's opening; overtaken by a later ticket of its key,
// it takes a new ticket, so the key's starts keep ticket order.
func (d *delivery) passKey(ctx context.Context) (next, error) {
	e, j := d.e, &d.j
	if !keyed(d.q, j) {
		return proceed, nil
	}
	v, open, prev, put, err := e.lanes.keyGate(ctx, d.q, j, d.gr.Start(), d.gr.CallBy(), d.meter)
	if err == nil && v == slot.KeyStart {
		d.keyPrev, d.keyPut = prev, put
		return proceed, nil
	}
	q := d.q
	q.State = d.st
	e.lanes.endRun(ctx, q, j.Ticket)
	switch {
	case err != nil:
		// Still queued at its ticket: the message comes again.
		return stop, fmt.Errorf("work %s: key gate: %w", d.env.Ref(), err)
	case v == slot.KeyEarly:
		e.observe(ctx, Event{Kind: EventKeyHeld, Queue: j.Queue})
		d.wake = open
		return again, nil
	}
	err = e.reticket(ctx, &d.q, j, passedByLater)
	d.leaveKeyUnlessRunning(ctx)
	return stop, err
}

// takeKey takes the job's key before the gate: a job that waits for its
// key spends no slot, and waits for its key, not for a place it could not
// use. Holding it, the job goes to the gate with the queue read again.
func (d *delivery) takeKey(ctx context.Context) (next, error) {
	ok, err := d.e.lanes.arrive(ctx, &d.q, &d.j)
	if !ok || err != nil {
		return stop, err
	}
	d.holding = true
	d.wake = time.Time{}
	return again, nil
}

// waitForRunningPlace waits for a running place, every one being taken, without
// a write to the gate (awaitRunningPlace). The job keeps its key, if it took one:
// its place in the key's order is its ticket's.
func (d *delivery) waitForRunningPlace(ctx context.Context) (next, error) {
	if ok, err := d.e.lanes.awaitRunningPlace(ctx, d.q, &d.j); !ok || err != nil {
		if err == nil && d.holding {
			d.e.leaveIfGone(ctx, d.q, d.j, d.want.Ticket)
		}
		return stop, err
	}
	d.wake = time.Time{}
	return again, nil
}

// passGate asks the gate for the start (one conditional write on the
// queue's state). It proceeds when the gate reserved it.
func (d *delivery) passGate(ctx context.Context) (next, error) {
	st, err := d.e.state.Gate(ctx, d.gr)
	var gate *GateError
	switch {
	case err == nil:
		d.st = st
		return proceed, nil
	case errors.Is(err, ErrQueueNotFound):
		return stop, d.e.expireOfDeletedQueue(ctx, d.j)
	case errors.Is(err, ErrLimitChanged):
		return again, nil // read the queue again
	case errors.As(err, &gate):
		return d.refused(ctx, gate)
	}
	return stop, fmt.Errorf("work %s: gate: %w", d.env.Ref(), err)
}

// refused acts on the gate's refusal: an early job tries again at the
// opening; a full queue makes it wait for a running place; a paused queue
// parks it; a purge cancels it; a passed job takes a new ticket.
func (d *delivery) refused(ctx context.Context, gate *GateError) (next, error) {
	e, j := d.e, &d.j
	switch gate.Verdict {
	case slot.Early:
		d.q.State = gate.State
		if slowHeld(gate.State, j, d.at) {
			return d.awaitSlowDown(ctx, gate.OpenAt) // slowdown.go
		}
		d.wake, d.recheck = laterOf(gate.OpenAt, lineOpening(d.q, j, d.at)), outOfLine(j)
	case slot.Full:
		return d.waitForRunningPlace(ctx)
	case slot.Paused:
		err := e.park(ctx, j, job.PausedQueue)
		d.leaveKeyUnlessRunning(ctx)
		return stop, err
	case slot.Purged:
		return stop, e.cancelPurged(ctx, d.q, *j)
	case slot.Passed:
		d.q.State = gate.State
		return d.passed(ctx)
	}
	return again, nil
}

// passed re-tickets a line job the queue overtook beyond the room of its
// limits (slot.Behind): the queue started a later moment while this job's
// worker was away (it came late, or its gate write landed late). A missed
// slot: it takes a new ticket at the end of the line.
func (d *delivery) passed(ctx context.Context) (next, error) {
	late := max(0, d.e.now().Sub(d.j.SlotAt))
	err := d.e.reticket(ctx, &d.q, &d.j, lateBy(late))
	d.leaveKeyUnlessRunning(ctx)
	return stop, err
}

// leaveKeyUnlessRunning gives up the key the job's ticket may hold after
// the job was parked or re-ticketed at the gate (leaveUnlessRunning).
func (d *delivery) leaveKeyUnlessRunning(ctx context.Context) {
	d.e.lanes.leaveUnlessRunning(ctx, d.q, d.j, d.want.Ticket)
}

// giveUpGate gives up, after a refused claim, the running place the gate
// gave this ticket and the key this delivery took before the gate, unless
// another delivery runs the ticket: the job was cancelled (or purged)
// after this worker read it, and a cancelled job holds nothing.
func (d *delivery) giveUpGate(ctx context.Context) {
	e, q, j := d.e, d.q, d.j
	if q.Config.MaxRunning == 0 && j.Key == "" {
		return
	}
	fresh, err := e.state.GetJob(ctx, j.Ref())
	if err == nil && fresh.Status == job.Running && fresh.Ticket == j.Ticket {
		return
	}
	q.State = d.st
	e.lanes.endRun(ctx, q, j.Ticket)
	e.lanes.leave(ctx, q, j, j.Ticket, jobGoesOn)
}

// lineOpening is when j may try the gate if the lower tickets still ahead of
// it start on time: when the gate opens after they started, each at its
// opening (slot.OpenAfter: for the interval form one interval after the
// last start per ticket between). Only the lower line tickets that can be
// in flight now count (lineAhead). So a lower ticket that never comes
// (lost, or a job scheduled for later) costs a late job little, and an
// on-time job at most one interval, once.
func lineOpening(q Queue, j *job.Job, now time.Time) time.Time {
	k := lineAhead(q, j, now)
	if k <= 0 {
		return time.Time{}
	}
	return slot.OpenAfter(q.State, q.Config.LimitList(), int(k))
}

// lineAhead is how many lower line tickets j holds for at now (lineOpening):
// those after the last started (Current) that can be line tickets, no more
// than the line's places between its front and j's slot leave room for
// (slot.LineBetween: the tickets of a waiting room's places, of scheduled
// and keyed jobs, never come in line, and where the limits bound it they
// are not waited for), and of those only the ones that can be in flight
// now: one, plus one per tick that j itself is late (a queue that runs
// behind has that many neighbours waiting at once). A scheduled job does
// not hold.
func lineAhead(q Queue, j *job.Job, now time.Time) int64 {
	ahead := j.Ticket - q.State.Current - 1
	if ahead <= 0 || outOfLine(j) {
		return 0
	}
	// After a configure, a queued job's place under the new limits
	// (SlotOf) may lie after its slot_at: the later of the two bounds
	// the places between no less.
	if n, ok := slot.LineBetween(q.State, q.Config.LimitList(), q.SlotOf(*j)); ok {
		ahead = min(ahead, n)
	}
	inFlight := int64(max(0, now.Sub(j.SlotAt))/q.Config.Tick()) + 1
	return min(ahead, inFlight)
}

// lineTurn is, for a job that holds for lower tickets (lineOpening), when
// it may go to the gate by the clock: at the due start of the nearest of
// them, until which that one may still pass the gate for its own start.
// Workers go to the gate a lead ahead of their starts; two of them given
// their messages at once (a burst, a late delivery) would otherwise race
// for the gate, and the higher ticket could pass the lower one by a hair.
func lineTurn(q Queue, j *job.Job, at time.Time) time.Time {
	if lineOpening(q, j, at).IsZero() {
		return time.Time{}
	}
	return slot.OpenAfter(q.State, q.Config.LimitList(), int(lineAhead(q, j, at))-1)
}

// missedBefore reports whether j's attempt gave a slot up for a late
// worker (job.SlotMissed) maxMissed times already: it does not again
// before the gate, but starts late. So a transport that delivers every
// message late cannot keep a job from starting; each such start moves
// the line behind it by its lateness, as any late start did before the
// gate reserved starts. A job whose worker was late once (a stall, a
// garbage collection) is late again only by chance: it gives its new
// slot up as well rather than move every start booked behind it.
func missedBefore(j *job.Job) bool {
	n := 0
	for _, ev := range j.History {
		if ev.Kind == job.SlotMissed && ev.Attempt == j.Attempt {
			n++
		}
	}
	return n >= maxMissed
}

// maxMissed is how many slots one attempt gives up for a late worker
// before it starts late instead (missedBefore).
const maxMissed = 2

// gateDoneKey is the context key of OnGateDone's callback.
type gateDoneKey struct{}

// OnGateDone returns ctx carrying fn, which Work calls once it is done with
// the gate for its message: once the gate reserved its attempt's start and
// the attempt is claimed (before the worker sleeps to that start), or as
// Work returns without starting anything. A worker that works one queue's
// messages in order (sqstransport.WorkBatch) lets the next message go on
// from there, so neither a start a lead ahead nor a slow target holds up
// a later job.
func OnGateDone(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, gateDoneKey{}, fn)
}

// GateDone calls ctx's OnGateDone callback, if any: Work does, once its
// attempt is claimed; a stand-in for Work may too.
func GateDone(ctx context.Context) {
	if fn, ok := ctx.Value(gateDoneKey{}).(func()); ok {
		fn()
	}
}

// aheadOfLine is how much sooner than Lead before its start j goes to the
// gate: a quarter of the skew for a job out of line, none for a line job.
// On a queue that runs behind, line jobs wait for every opening, and a
// job out of line (scheduled, or sent on by a lane) would meet one of
// them there each time and win only by chance; this way it comes to the
// gate first, for the same start. (Making the line job come later
// instead would make its start later, and every start after it, since
// the gate lets none through early.)
func aheadOfLine(j *job.Job, cfg slot.Config) time.Duration {
	if outOfLine(j) {
		return cfg.Skew / 4
	}
	return 0
}

// outOfLine reports whether j passes the gate by the spacing alone, not by
// its ticket: a scheduled job, or one that waited on a lane.
func outOfLine(j *job.Job) bool { return j.Scheduled || j.Detached }

// parkForGate parks the job until its gate opens at wake, further away
// than the transport can delay a message: the resume function sends it
// once, with the exact delay (job.WaitGate), where hand-backs would
// re-send it every 15 minutes. A job that holds its key keeps it
// meanwhile, as a handed-back one does.
func (d *delivery) parkForGate(ctx context.Context) error {
	e, j, wake := d.e, &d.j, d.wake
	if d.holding {
		e.keepKeyWhileAway(ctx, j, wake)
	}
	from := j.Version()
	now := e.now()
	j.Status, j.ParkReason, j.DueAt = job.Parked, job.WaitGate, wake.Add(-e.transport.MaxDelay())
	j.Record(job.Event{At: now, Kind: job.ParkedEvent, Reason: string(job.WaitGate), DelayMs: wake.Sub(now).Milliseconds()})
	if err := e.state.UpdateJob(ctx, *j, from); err != nil {
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrJobNotFound) {
			return nil // moved on (cancelled, or run by another delivery)
		}
		return fmt.Errorf("park %s until its gate opens: %w", j.Ref(), err)
	}
	if e.deadGeneration(ctx, j) {
		return nil
	}
	e.observe(ctx, Event{Kind: EventParked, Queue: j.Queue})
	e.log.InfoContext(ctx, "parked until its gate opens", "queue", j.Queue, "job_id", j.ID, "ticket", j.Ticket, "opens_at", wake)
	return nil
}
