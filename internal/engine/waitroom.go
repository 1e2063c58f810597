package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/slotq/slotq/internal/clock"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// The booking horizon and the waiting room. A queue with book_ahead or
// key_book_ahead (slot.Config.Bounded) keeps its bookings in its horizon
// (slot.Horizon, a record of its own): a job is booked — given its ticket
// in the line and its slot, a promise — only while the bounds leave room
// for it; one beyond them is accepted into the waiting room: parked
// (job.Room) with a ticket for its place and no slot. As a booked job
// starts, or ends without starting (cancelled, purged, failed), its
// booking is freed and the room books its next jobs by slot.BookNext
// (priority, then round-robin by weight across keys, then ticket), each
// exactly as an enqueue books a job (assign), and sends it on.
//
// The writes, in the order that keeps the bounds at every moment: a
// booking is entered in the horizon (a compare-and-set) before its job is
// written, and freed after its job left it; freeing is by the booking's
// number, so it is idempotent. A job is booked once: the job's write is
// conditional on its version, and a booking whose job was booked by
// another (or cancelled meanwhile) is freed. What a crash leaves — a
// booking whose job was never written, a job whose booking was never
// freed, a room nobody books from — the resume function finds through
// the horizon's due entry (checkRoom).

// roomCheck is how often the resume function looks at a queue's waiting
// room while jobs wait in it.
const roomCheck = time.Minute

// maxHorizonTries bounds the compare-and-sets one booking step tries on
// a horizon that others write meanwhile; what it leaves undone is the
// resume function's look's.
const maxHorizonTries = 30

// horizonBackoff waits before the next try of a refused compare-and-set
// of a horizon: a random while, longer each try, so that the workers of
// a busy queue that all free and book at once do not meet again.
func horizonBackoff(ctx context.Context, try int) error {
	return clock.Sleep(ctx, time.Duration(rand.Int64N(int64(min(try+1, 10))*int64(2*time.Millisecond))))
}

// checkBy makes h's look due roomCheck from now at the latest: a look
// already due sooner stays, so that a busy room does not put it off.
func checkBy(h *slot.Horizon, now time.Time) {
	if at := now.Add(roomCheck); h.CheckAt.IsZero() || h.CheckAt.After(at) {
		h.CheckAt = at
	}
}

// inRoom reports whether j waits in its queue's waiting room.
func inRoom(j *job.Job) bool { return JobInRoom(*j) }

// readHorizon reads q's horizon; one of another generation (a deleted
// queue's) reads as empty, at its version. Its maps are the caller's
// (State.GetHorizon).
func (e *waitingRoom) readHorizon(ctx context.Context, q Queue) (slot.Horizon, error) {
	h, err := e.state.GetHorizon(ctx, q.Name)
	if err != nil {
		return h, fmt.Errorf("horizon %s: %w", q.Name, err)
	}
	if h.Gen != q.Gen {
		h = slot.Horizon{Queue: q.Name, Gen: q.Gen, Version: h.Version}
	}
	return h, nil
}

// bookable is the latest earliest start (not_before, a retry's backoff)
// of a job the room books at now: one the transport can carry to its
// slot. A job that may not start before then waits without holding a
// place of the horizon.
func (e *waitingRoom) bookable(now time.Time) time.Time { return now.Add(e.transport.MaxDelay()) }

// admit decides, for the new jobs of a bounded queue in request order,
// which are booked at once and which go into the waiting room
// (job.Room), and enters the bookings in q's horizon: a job is booked at
// once only while the room is empty (the waiting come first) and the
// bounds leave room for it. It returns, for each job, the jobs of its key
// booked before it and not started (a booked job's key's slot follows
// them), for each waiting one where it stands in the room (roomSpot),
// and spare: the bounds left room for one that waits (the room books by
// its rule then). One write, on the horizon.
func (e *waitingRoom) admit(ctx context.Context, q Queue, jobs []*job.Job) (keyAhead []int64, spots []roomSpot, spare bool, err error) {
	for try := 0; ; try++ {
		h, err := e.readHorizon(ctx, q)
		if err != nil {
			return nil, nil, false, err
		}
		from, now := h.Version, e.now()
		kb := h.KeyBooked()
		spare = false
		keyAhead, spots = make([]int64, len(jobs)), make([]roomSpot, len(jobs))
		waiting := h.Waiting > 0
		var in int64
		for i, j := range jobs {
			j.Booking, j.ParkReason = 0, ""
			r := slot.WaitRoom{Booked: h.Unstarted(), KeyBooked: kb}
			if !waiting && q.Config.Fits(r, j.Key) && !j.Earliest().After(e.bookable(now)) {
				keyAhead[i] = int64(kb[j.Key])
				j.Booking = h.Book(j.Key, j.ID, now)
				kb[j.Key]++
				continue
			}
			waiting = true
			j.ParkReason = job.Room
			h.Enter(j.Priority, j.Key)
			in++
			spots[i] = spotOf(h, j)
			keyAhead[i] = int64(kb[j.Key])
			spare = spare || q.Config.Fits(r, j.Key)
		}
		if in > 0 {
			h.LastIn = now
			checkBy(&h, now)
		}
		_, err = e.state.PutHorizon(ctx, h, from)
		if errors.Is(err, ErrConflict) && try < maxHorizonTries {
			if err := horizonBackoff(ctx, try); err != nil {
				return nil, nil, false, err
			}
			continue
		}
		if err != nil {
			return nil, nil, false, fmt.Errorf("admit: %w", err)
		}
		return keyAhead, spots, spare, nil
	}
}

// bookNext frees the bookings free (of jobs that started or ended) and
// books from q's waiting room what the bounds then leave room for, by
// slot.BookNext: one write on the horizon, then each booked job's own
// (book). Nothing is booked while the queue is paused: the room waits
// too. Errors are logged: a booking left undone is the resume function's
// (checkRoom).
func (e *waitingRoom) bookNext(ctx context.Context, q Queue, free ...int64) {
	if err := e.bookFrom(ctx, q, false, free...); err != nil {
		e.log.WarnContext(ctx, "waiting room: booking left to the resume function", "queue", q.Name, "error", err.Error())
	}
}

// bookFrom is bookNext; settle also counts the room's waiting jobs
// afresh (the resume function's look).
func (e *waitingRoom) bookFrom(ctx context.Context, q Queue, settle bool, free ...int64) error {
	for try := 0; ; try++ {
		fresh, err := e.state.GetQueue(ctx, q.Name)
		if err != nil {
			return err
		}
		if fresh.Gen != q.Gen {
			return nil // deleted: its jobs end with their generation
		}
		q = fresh
		h, err := e.readHorizon(ctx, q)
		if err != nil {
			return err
		}
		from, now := h.Version, e.now()
		changed := false
		for _, s := range free {
			changed = h.Free(s) || changed
		}
		var chosen []*job.Job
		var keyAhead []int64
		if (h.Waiting > 0 || settle) && !q.State.Paused {
			if chosen, keyAhead, err = e.chooseFrom(ctx, q, &h, settle, now); err != nil {
				return err
			}
		}
		if !changed && len(chosen) == 0 && !settle {
			return nil
		}
		// The resume function looks again while jobs wait, and after
		// bookings whose jobs' writes a crash may cut off.
		// The look comes no later than roomCheck from now; the look
		// itself sets the next one.
		switch need := h.Waiting > 0 || len(chosen) > 0 || settle && e.bookedSince(h, now.Add(-e.opts.RecordGrace)); {
		case settle && need:
			h.CheckAt = now.Add(roomCheck)
		case settle:
			h.CheckAt = time.Time{}
		case need:
			checkBy(&h, now)
		}
		if _, err := e.state.PutHorizon(ctx, h, from); err != nil {
			if errors.Is(err, ErrConflict) && try < maxHorizonTries {
				if err := horizonBackoff(ctx, try); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("book from the waiting room: %w", err)
		}
		ahead := h.Unstarted() - len(chosen)
		for i, j := range chosen {
			if err := e.book(ctx, q, j, keyAhead[i], ahead+i); err != nil {
				return err
			}
		}
		return nil
	}
}

// bookedSince reports whether h holds a booking made after t.
func (e *waitingRoom) bookedSince(h slot.Horizon, t time.Time) bool {
	for _, b := range h.Booked {
		if b.At.After(t) {
			return true
		}
	}
	return false
}

// book books j, a job of the waiting room whose booking (j.Booking) is in
// the horizon, as an enqueue books a job: a new ticket in the line and
// its slot by the queue's and its key's limits (keyAhead: its key's jobs
// booked before it), then its message and its record. If its record moved
// meanwhile (cancelled, or booked by another), the booking is freed; if a
// purge covered its ticket meanwhile, it is cancelled.
//
// ahead counts the queue's jobs booked before it and not started: its
// slot comes no sooner than the queue's limits let them all start after
// the last start (slot.NextSlotAfter). The room books as the line moves,
// so a line that runs late would otherwise tell the job a slot its
// start cannot keep.
func (e *waitingRoom) book(ctx context.Context, q Queue, j *job.Job, keyAhead int64, ahead int) error {
	from, seq, orig := j.Version(), j.Booking, *j
	j.ParkReason, j.DueAt = "", time.Time{}
	after := e.bookFloor(q, ahead)
	if _, err := e.enqueuer.assignSlots(ctx, &q, []*job.Job{j}, false, []int64{keyAhead}, after); err != nil {
		return fmt.Errorf("book %s: %w", j.Ref(), err)
	}
	if orig.Ticket <= q.State.Purged {
		// A purge landed since the room was read: it covers the job's
		// ticket in the room, which must not leave it past the purge
		// with a new one (as a re-ticket must not). Its new ticket
		// stays unused, and its booking is freed.
		*j = orig
		if err := e.worker.cancelPurged(ctx, q, orig); err != nil {
			return fmt.Errorf("book %s: %w", j.Ref(), err)
		}
		e.bookNext(ctx, q, seq)
		return nil
	}
	j.Record(job.Event{At: e.now(), Kind: job.BookedEvent, Ticket: j.Ticket})
	e.enqueuer.sendOrPark(j, q.State)
	e.enqueuer.sendQueued(ctx, []*job.Job{j})
	err := e.state.UpdateJob(ctx, *j, from)
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrJobNotFound) {
		// Cancelled, purged or booked by another since it was listed:
		// this booking holds nothing.
		e.bookNext(ctx, q, seq)
		return nil
	}
	if err != nil {
		return fmt.Errorf("book %s: %w", j.Ref(), err)
	}
	e.observe(ctx, Event{Kind: EventBooked, Queue: j.Queue})
	return nil
}

// bookFloor is the soonest slot a job booked from q's room with ahead
// jobs booked before it and not started may be told (zero: the line's
// own). While the line runs late (its last start after its front, the
// slot of the last line ticket that started on time), no sooner than
// those jobs can start after the last start (slot.NextSlotAfter), and
// no later than the line's own next slot plus that lateness: bookings
// that will not start before it (a scheduled job's, a keyed job's whose
// key put it later) must not push it further.
func (e *waitingRoom) bookFloor(q Queue, ahead int) time.Time {
	st, ls, now := q.State, q.Config.LimitList(), e.now().Add(e.opts.Lead)
	lag := st.LastStart.Sub(st.Front)
	if st.Front.IsZero() || lag <= 0 {
		return time.Time{}
	}
	next := slot.NextSlot(st, ls, q.Config.Skew, now)
	return earlierOf(slot.NextSlotAfter(st, ls, q.Config.Skew, ahead, now), next.Add(lag))
}

// leaveRoom counts jobs, jobs of q's waiting room that were cancelled
// (or purged), out of the room's counts, in one write: with nothing else waiting, the next
// job enqueued is booked at once, where the count left high sent it to
// the room until the resume function's look. A booker that chose one
// counted it out already, with its booking in the same write (its own
// write on the job then fails, and frees the booking): then nothing is
// counted twice. A count this leaves low (a booker that listed a job from
// an index that lagged the cancel) is counted afresh by the resume function's
// look, as one left high was. Errors are logged.
func (e *waitingRoom) leaveRoom(ctx context.Context, q Queue, jobs ...job.Job) {
	if len(jobs) == 0 {
		return
	}
	for try := 0; ; try++ {
		h, err := e.readHorizon(ctx, q)
		if err != nil {
			e.log.WarnContext(ctx, "waiting room: cancelled jobs' counts left to the resume function", "queue", q.Name, "jobs", len(jobs), "error", err.Error())
			return
		}
		from, held, left := h.Version, h.Holders(), 0
		for _, j := range jobs {
			if !held[j.ID] { // else its booker counted it out
				h.Leave(j.Priority, j.Key)
				left++
			}
		}
		if left == 0 {
			return
		}
		_, err = e.state.PutHorizon(ctx, h, from)
		if errors.Is(err, ErrConflict) && try < maxHorizonTries {
			if err := horizonBackoff(ctx, try); err != nil {
				return
			}
			continue
		}
		if err != nil {
			e.log.WarnContext(ctx, "waiting room: cancelled jobs' counts left to the resume function", "queue", q.Name, "jobs", len(jobs), "error", err.Error())
		}
		return
	}
}

// freeBooking frees j's booking, if it holds one, and books the room's
// next jobs: j started, or ended without starting.
func (e *waitingRoom) freeBooking(ctx context.Context, q Queue, j job.Job) {
	if j.Booking != 0 && !inRoom(&j) {
		e.bookNext(ctx, q, j.Booking)
	}
}

// freeAfterStart frees, beside the attempt, the booking of a job that
// started: its worker books the room's next job while it sleeps to the
// start and runs the target, on a context of its own. The returned func
// waits for it. A job whose key runs a bounded number of jobs at once
// (keyHeld) keeps its booking for its key until its attempt ends
// (endKeptBooking): under book_ahead it is marked started, which frees its
// place of the queue's bound, and the room books the next.
func (e *waitingRoom) freeAfterStart(ctx context.Context, q Queue, j job.Job) (wait func()) {
	held := keyHeld(q, j)
	if j.Booking == 0 || held && q.Config.BookAhead == 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rctx, cancel := e.worker.recordContext(ctx)
		defer cancel()
		if held {
			e.keepBooking(rctx, q, j.Booking)
			return
		}
		e.bookNext(rctx, q, j.Booking)
	}()
	return func() { <-done }
}

// keyHeld reports whether j's booking is held from its start to the end
// of its attempt: its key runs a bounded number of jobs at once, and its
// next job is booked only when a place of the key is free for it
// (slot.Config.KeyBound), so that its lane never holds a booked job past
// its slot.
func keyHeld(q Queue, j job.Job) bool { return j.Key != "" && q.Config.KeyCap() > 0 }

// keepBooking marks booking seq of q's horizon started (slot.Horizon.Hold)
// and books the room's next job into the place of the queue's bound it
// left. A booking freed meanwhile (its attempt ended) stays freed.
func (e *waitingRoom) keepBooking(ctx context.Context, q Queue, seq int64) {
	for try := 0; ; try++ {
		h, err := e.readHorizon(ctx, q)
		if err == nil && !h.Hold(seq) {
			return
		}
		if err == nil {
			_, err = e.state.PutHorizon(ctx, h, h.Version)
		}
		if errors.Is(err, ErrConflict) && try < maxHorizonTries {
			if err := horizonBackoff(ctx, try); err != nil {
				return
			}
			continue
		}
		if err != nil {
			e.log.WarnContext(ctx, "waiting room: a started booking left counted against book_ahead until its attempt ends", "queue", q.Name, "error", err.Error())
			return
		}
		e.bookNext(ctx, q)
		return
	}
}

// endKeptBooking frees, as the attempt of j (its record as it ran) ended, the
// booking it held to the end (keyHeld), and books the room's next job:
// the key's place is free again. Its lane is left first (endAttempt), so
// the job booked finds the key free at its slot.
func (e *waitingRoom) endKeptBooking(ctx context.Context, q Queue, j job.Job) {
	if j.Booking != 0 && keyHeld(q, j) {
		e.bookNext(ctx, q, j.Booking)
	}
}

// checkRoom is the resume function's look at a queue's waiting room (a
// DueRoom entry): it frees the bookings a crash left (a job that never
// got its booking's write, or started or ended without freeing it),
// books whatever the bounds leave room for, and counts the room afresh.
func (e *waitingRoom) checkRoom(ctx context.Context, q Queue) error {
	h, err := e.readHorizon(ctx, q)
	if err != nil {
		return err
	}
	now := e.now()
	var stale []int64
	var redo []*job.Job
	for seq, b := range h.Booked {
		if now.Sub(b.At) <= e.opts.RecordGrace {
			continue // its booker may still be writing
		}
		j, err := e.state.GetJob(ctx, job.Ref{Queue: q.Name, ID: b.ID})
		switch {
		case errors.Is(err, ErrJobNotFound):
			stale = append(stale, seq)
		case err != nil:
			return err
		case j.Status == job.Running && j.Booking == seq && j.Gen == q.Gen && keyHeld(q, j):
			// Held for its key to its attempt's end (endKeptBooking); a lost
			// attempt frees it as it is recovered.
		case j.Gen != q.Gen || j.Booking != seq && !inRoom(&j) || j.Status != job.Queued && j.Status != job.Parked || b.Running && inRoom(&j):
			// (A started booking whose job is back in the room gave
			// its start up: rebookMissed frees it after.)
			stale = append(stale, seq)
		case inRoom(&j):
			// Its booking was entered, its record never written.
			j.Booking = seq
			redo = append(redo, &j)
		}
	}
	kb := h.KeyBooked()
	for _, j := range redo {
		if err := e.book(ctx, q, j, int64(max(0, kb[j.Key]-1)), h.Unstarted()-1); err != nil {
			return err
		}
	}
	// Settled even for a queue without a bound (configured off, or a
	// queue deleted and created again without one): the look books what
	// still waits, and leaves the horizon due no more.
	return e.bookFrom(ctx, q, true, stale...)
}

// roomSpot is where a job admitted into the waiting room stands there as
// it enters: its place among its key's waiting jobs and how many jobs
// the room books before it (slot.Horizon.Spot), by the room's rule, as
// roomPlace reads them from the room itself.
type roomSpot struct{ place, before int64 }

// spotOf is j's spot in h, which counts it last of its key and priority;
// where h counts its key in Waiting alone, its place among all waiting.
func spotOf(h slot.Horizon, j *job.Job) roomSpot {
	if place, before, ok := h.Spot(j.Priority, j.Key); ok {
		return roomSpot{place: place, before: before}
	}
	return roomSpot{place: h.Waiting, before: h.Waiting - 1}
}

// answerWaiting completes a's answer for j, accepted into the waiting
// room: status waiting, its place among its key's waiting jobs and an
// estimate of its start: the queue's next opening after everything
// booked, and a tick for each job the room books before it (sp). It is
// an estimate: later jobs of a higher priority, keys' limits and
// cancellations move it; the promise is the slot its booking gives.
func (e *waitingRoom) answerWaiting(a *Accepted, q Queue, j *job.Job, sp roomSpot) {
	a.Status = api.StatusWaiting
	a.Waiting = max(1, sp.place)
	next := slot.NextSlot(q.State, q.Config.LimitList(), q.Config.Skew, e.now().Add(e.opts.Lead))
	est := laterOf(next.Add(time.Duration(sp.before)*q.Config.Tick()), j.Earliest())
	a.EstimatedStartAt = &est
}

// roomFigures counts a bounded queue's bookings and waiting room (nil for
// a queue without a bound and nothing waiting): one read of the horizon
// and one list of the queue's parked jobs.
func (e *waitingRoom) roomFigures(ctx context.Context, q Queue) (*api.RoomFigures, error) {
	h, err := e.readHorizon(ctx, q)
	if err != nil {
		return nil, err
	}
	if !q.Config.Bounded() && h.Waiting == 0 && len(h.Booked) == 0 {
		return nil, nil
	}
	room, err := e.listRoom(ctx, q)
	if err != nil {
		return nil, err
	}
	f := &api.RoomFigures{Booked: h.Unstarted(), Waiting: len(room)}
	byKey := map[string]int{}
	for _, j := range room {
		f.ByPriority[slot.PriorityOf(j.Priority)-1]++
		byKey[j.Key]++
	}
	f.Keys = busiestInRoom(byKey)
	return f, nil
}

// busiestInRoom lists the keys of byKey (jobs waiting by key) with the
// most jobs, most first, then by name: at most api.MaxRoomKeys.
func busiestInRoom(byKey map[string]int) []api.RoomKey {
	keys := make([]api.RoomKey, 0, len(byKey))
	for k, n := range byKey {
		keys = append(keys, api.RoomKey{Key: k, Waiting: n})
	}
	slices.SortFunc(keys, func(a, b api.RoomKey) int {
		return cmp.Or(cmp.Compare(b.Waiting, a.Waiting), cmp.Compare(a.Key, b.Key))
	})
	return keys[:min(len(keys), api.MaxRoomKeys)]
}

// roomPlace is where j, a job of q's waiting room, stands there: its
// place among its key's waiting jobs by the room's order (priority, then
// ticket), and an estimate of its start: the queue's next opening and a
// tick for each job booked before it — those of a higher priority, then
// its key's ahead of it and, of each other key of its priority, as many
// as the round-robin books before it.
func (e *waitingRoom) roomPlace(ctx context.Context, q Queue, j job.Job) (*api.RoomPlace, error) {
	room, err := e.listRoom(ctx, q)
	if err != nil {
		return nil, err
	}
	return e.placeIn(q, room, j), nil
}

// placeIn is roomPlace with the room's jobs listed already.
func (e *waitingRoom) placeIn(q Queue, room []job.Job, j job.Job) *api.RoomPlace {
	p := slot.PriorityOf(j.Priority)
	var place, before, mine int64 // mine: its key's of p ahead of it
	same := map[string]int64{}    // other keys' waiting jobs of p
	for _, o := range room {
		op := slot.PriorityOf(o.Priority)
		switch {
		case o.ID == j.ID:
		case op < p:
			before++
			if o.Key == j.Key {
				place++
			}
		case op == p && o.Key == j.Key && o.Ticket < j.Ticket:
			place++
			mine++
		case op == p && o.Key != j.Key:
			same[o.Key]++
		}
	}
	for _, n := range same {
		before += min(n, mine+1)
	}
	before += mine
	next := slot.NextSlot(q.State, q.Config.LimitList(), q.Config.Skew, e.now().Add(e.opts.Lead))
	est := laterOf(next.Add(time.Duration(before)*q.Config.Tick()), j.Earliest())
	return &api.RoomPlace{Place: place + 1, Key: j.Key, Priority: p, EstimatedStartAt: est}
}

// answerInRoom makes a, the answer for j, say where j waits in the
// waiting room (rp): waiting, its place and estimate, as an enqueue's
// answer does.
func answerInRoom(a *Accepted, rp *api.RoomPlace) {
	a.Status, a.Waiting, a.EstimatedStartAt = api.StatusWaiting, rp.Place, &rp.EstimatedStartAt
}
