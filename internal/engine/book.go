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

// What an enqueue books for its jobs: tickets and slots from the queue's
// take (assign, assignSlots), their counts on the keys' lanes
// (countPending), and where each job goes by its slot (place).

// ticketsAndCounts gives jobs their tickets and slots (assign; on a
// bounded queue, keyAhead as assignSlots takes it) and counts
// them as pending on their keys' lanes (countPending), returning for each
// the jobs of its key ahead of it. On a queue with keyed limits the count
// comes right after the take (assignKeyed): a job's place among its key's
// jobs gives its key's slot.
func (e *enqueuer) ticketsAndCounts(ctx context.Context, q *Queue, jobs []*job.Job, keyAhead []int64) ([]int64, error) {
	if !q.Config.Keyed() {
		if err := e.assign(ctx, q, jobs); err != nil {
			return nil, err
		}
		return e.countPending(ctx, *q, jobs)
	}
	return e.assignSlots(ctx, q, jobs, true, keyAhead, time.Time{})
}

// countPending counts jobs (in ticket order) as pending on their keys'
// lanes, one write per key, and returns for each job the number of jobs
// of its key ahead of it.
func (e *enqueuer) countPending(ctx context.Context, q Queue, jobs []*job.Job) ([]int64, error) {
	ahead, _, err := e.countPendingLanes(ctx, q, jobs)
	return ahead, err
}

// countPendingLanes is countPending, which also returns the lanes as the
// counts left them, by key.
func (e *enqueuer) countPendingLanes(ctx context.Context, q Queue, jobs []*job.Job) ([]int64, map[string]slot.Lane, error) {
	per := map[string]int64{}
	var keys []string
	for _, j := range jobs {
		if j.Key == "" {
			continue
		}
		if per[j.Key] == 0 {
			keys = append(keys, j.Key)
		}
		per[j.Key]++
	}
	before := make(map[string]int64, len(keys))
	lanes := make(map[string]slot.Lane, len(keys))
	for _, key := range keys {
		l, err := e.state.AddPending(ctx, q.Name, q.Gen, key, per[key])
		if err != nil {
			return nil, nil, fmt.Errorf("key %s: %w", key, err)
		}
		before[key] = max(0, l.Pending-per[key])
		lanes[key] = l
	}
	ahead := make([]int64, len(jobs))
	for i, j := range jobs {
		if j.Key != "" {
			ahead[i] = before[j.Key]
			before[j.Key]++
		}
	}
	return ahead, lanes, nil
}

// assign gives jobs (in order) a contiguous range of tickets and their
// slots. A job whose not_before lies after its line slot is scheduled
// (job.Job.Scheduled): its slot is its not_before (spaced from the
// previous scheduled job of the call), it does not move the slot clock,
// and the gate lets it start at its slot whatever tickets started
// meanwhile. q.State is updated.
//
// The slots are booked by the clock as the take is sent, not as the call
// began: the round trips before it (reading the queue, looking up ids)
// would book a job due at once in the past. The soonest slot is Lead
// from now: the time a worker takes to pass the gate before its start.
func (e *enqueuer) assign(ctx context.Context, q *Queue, jobs []*job.Job) error {
	_, err := e.assignKeyed(ctx, q, jobs, false)
	return err
}

// assignKeyed is assign, and on a queue with keyed limits (count) it
// also counts the jobs as pending on their keys' lanes right after their
// tickets are taken (countPending), returning the jobs of its key ahead
// of each: a job's place among its key's jobs gives its key's slot, and
// counting just after the take keeps that place in ticket order but for
// calls of one key that race within the two writes. A keyed job of such
// a queue is scheduled, never in line: its slot is its key's (keySlots),
// or the queue's if that is later, and its key may hold it back at the
// gate without holding up the tickets behind it. Without count (a new
// ticket for a job counted already) a job's place is behind every job of
// its key.
func (e *enqueuer) assignKeyed(ctx context.Context, q *Queue, jobs []*job.Job, count bool) ([]int64, error) {
	return e.assignSlots(ctx, q, jobs, count, nil, time.Time{})
}

// assignSlots is assignKeyed for the jobs of a bounded queue
// (waitroom.go): a job that waits in the waiting room (job.Room) takes a
// ticket and no slot, no place in the line; and, with keyAhead, a keyed
// job's place among its key's jobs is the number of them booked before
// it (keyAhead[i]), not those accepted before it, since the waiting ones
// hold no slot. No slot comes before after (zero: none).
func (e *enqueuer) assignSlots(ctx context.Context, q *Queue, jobs []*job.Job, count bool, keyAhead []int64, after time.Time) ([]int64, error) {
	for try := 0; ; try++ {
		now := laterOf(e.now().Add(e.opts.Lead), after)
		ls, tick := q.Config.LimitList(), q.Config.Tick()
		keyed := func(i int) bool { return q.Config.Keyed() && jobs[i].Key != "" }
		// The slots the jobs would get were they all in line: a job
		// whose not_before comes after its would-be slot is scheduled.
		_, _, est := slot.Take(q.State, len(jobs), len(jobs), ls, q.Config.Skew, now)
		// A keyed job books a place of the line too, though it starts out
		// of line: its slot is that place or its key's, whichever is
		// later, so that enqueue's answer honours the queue's limit as
		// well as its key's when the queue is the busier of the two.
		inLine := make([]bool, len(jobs))
		books := make([]bool, len(jobs))
		line, lineEnd := 0, 0 // places booked; the place in the batch of the last line job
		for i, j := range jobs {
			if j.ParkReason == job.Room {
				continue
			}
			if keyed(i) || !j.Earliest().After(est[line]) {
				inLine[i], books[i] = !keyed(i), true
				line++
				if inLine[i] {
					lineEnd = i + 1
				}
			}
		}
		tr := TakeRequest{Queue: q.Name, N: len(jobs), Line: line, Limits: ls, Skew: q.Config.Skew, Now: now, Seen: q.State, Gen: q.Gen,
			OutOfLine: lineEnd == 0, LineEnd: lineEnd}
		if q.Config.Batched() {
			tr.Batch = e.batchBooking(q.Config)
		}
		e.cutIns(&tr, q.Config, jobs, inLine)
		taken, err := e.state.Take(ctx, tr)
		if errors.Is(err, ErrLimitChanged) && try < 3 {
			gen := q.Gen
			if *q, err = e.state.GetQueue(ctx, q.Name); err != nil {
				return nil, err
			}
			if q.Gen != gen {
				// Deleted and created again: the jobs are the old
				// queue's, and take nothing of the new one.
				return nil, fmt.Errorf("take tickets: generation %d: %w", gen, ErrQueueNotFound)
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("take tickets: %w", err)
		}
		var ahead []int64
		var lanes map[string]slot.Lane
		if count {
			if ahead, lanes, err = e.countPendingLanes(ctx, *q, jobs); err != nil {
				return nil, err
			}
		}
		keyAt, err := e.lanes.keySlots(ctx, *q, jobs, ahead, lanes, now)
		if keyAhead != nil {
			keyAt, err = e.lanes.keySlots(ctx, *q, jobs, keyAhead, nil, now)
		}
		if err != nil {
			if count {
				e.uncountLost(ctx, *q, jobs, make([]bool, len(jobs)))
			}
			return nil, err
		}
		setSlots(jobs, inLine, books, taken, slot.NextSlot(taken.State, ls, q.Config.Skew, now), keyAt, tick)
		q.State = taken.State
		return ahead, nil
	}
}

// cutIns marks r, a take of jobs (inLine: those that take a place in the
// line) on a queue configured with cfg, as one whose tickets may start off
// the line's bookings (TakeRequest.CutIns) when the queue books its
// starts: a scheduled job starts at its time, until which the queue
// stays gated; a keyed job may wait for its key, for as long as a
// holder's lease.
func (e *enqueuer) cutIns(r *TakeRequest, cfg slot.Config, jobs []*job.Job, inLine []bool) {
	if !cfg.BooksStarts() {
		return
	}
	now := e.now()
	for i, j := range jobs {
		switch {
		case j.ParkReason == job.Room:
			continue // booked by the room, in line, when its turn comes
		case j.Key != "":
			r.CutIns, r.Until = true, laterOf(r.Until, now.Add(e.opts.Lease))
		case !inLine[i]:
			r.CutIns, r.Until = true, laterOf(r.Until, laterOf(j.Earliest(), r.Now).Add(e.opts.Lease))
		}
	}
	if r.CutIns {
		r.Settle = e.settling(cfg, now)
		// Coarse, so that the takes of a busy keyed queue extend it
		// once in a while, not each (an extension is a compare-and-set
		// on DynamoDB, which concurrent takes refuse).
		r.Until = r.Until.Truncate(gatedRound).Add(gatedRound)
	}
}

// gatedRound is the step GatedUntil moves in (enqueuer.cutIns).
const gatedRound = 10 * time.Minute

// setSlots gives jobs their tickets (from taken.First) and slots: a line
// job its line slot; a scheduled one its not_before, its key's slot
// (keyAt, if any) or the line place it booked (books), whichever is
// latest, else where the line goes on (after). The call's scheduled
// jobs, in the order of their times, are an average start (tick) apart:
// each its time, or a tick after the one before it. (Jobs of several
// keys come in any order: a key's later job must not hold back another
// key's earlier one.)
func setSlots(jobs []*job.Job, inLine, books []bool, taken Taken, after time.Time, keyAt []time.Time, tick time.Duration) {
	k := 0
	var out []int // the scheduled jobs
	for i, j := range jobs {
		j.Ticket = taken.ticketOf(i, k, len(out), inLine[i])
		j.Batched = taken.Tickets != nil && inLine[i] && !taken.Opens[k]
		j.Scheduled = !inLine[i]
		j.Detached = false // a new ticket puts it back in line
		if j.ParkReason == job.Room {
			j.SlotAt, j.Scheduled = time.Time{}, false // no slot until it is booked
			continue
		}
		pos := after
		if books[i] && k < len(taken.Slots) {
			pos = taken.Slots[k]
			k++
		}
		if inLine[i] {
			j.SlotAt = pos
			continue
		}
		j.SlotAt = laterOf(j.Earliest(), pos)
		if keyAt != nil {
			j.SlotAt = laterOf(j.SlotAt, keyAt[i])
		}
		out = append(out, i)
	}
	slices.SortStableFunc(out, func(a, b int) int { return jobs[a].SlotAt.Compare(jobs[b].SlotAt) })
	var prev time.Time
	for _, i := range out {
		if !prev.IsZero() {
			jobs[i].SlotAt = laterOf(jobs[i].SlotAt, prev.Add(tick))
		}
		prev = jobs[i].SlotAt
	}
}

// sendOrPark sets a job's status for its slot, by its queue's state st:
// parked when the queue is paused or the slot lies beyond the
// transport's reach, queued otherwise.
func (e *enqueuer) sendOrPark(j *job.Job, st slot.State) {
	now := e.now()
	if j.ParkReason == job.Room {
		j.Status, j.DueAt = job.Parked, time.Time{}
		j.Record(job.Event{At: now, Kind: job.ParkedEvent, Reason: string(job.Room)})
		return
	}
	j.ParkReason, j.DueAt = "", time.Time{}
	switch {
	case st.Paused:
		j.Status, j.ParkReason = job.Parked, job.PausedQueue
	case j.SlotAt.Sub(now) > e.transport.MaxDelay():
		j.Status, j.ParkReason = job.Parked, job.Far
		j.DueAt = j.SlotAt.Add(-e.transport.MaxDelay())
	default:
		j.Status = job.Queued
		return
	}
	j.Record(job.Event{At: now, Kind: job.ParkedEvent, Reason: string(j.ParkReason)})
}
