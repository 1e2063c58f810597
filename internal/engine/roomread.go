package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// What a booking from the waiting room reads of it, and how it chooses:
// the heads of the keys the horizon counts (roomHeads), or the whole room
// (listRoom) for the resume function's look and a horizon that does not
// count its room; then slot.BookNext over them (choose). The rest of the
// room's steps are in waitroom.go.

// chooseFrom chooses the jobs to book now (choose) from the heads of the
// room's keys that h counts (roomHeads): a few small reads, whatever the
// room holds. A look of the resume function (settle), or a horizon that
// does not count its room by key yet (Counted), reads the whole room
// instead, and counts it afresh once every record written before LastIn
// shows in the list.
func (e *waitingRoom) chooseFrom(ctx context.Context, q Queue, h *slot.Horizon, settle bool, now time.Time) ([]*job.Job, []int64, error) {
	if !settle && h.Counted() {
		heads, err := e.roomHeads(ctx, q, h, now)
		if err != nil {
			return nil, nil, err
		}
		return e.choose(ctx, q, h, heads, now)
	}
	room, err := e.listRoom(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	chosen, keyAhead, err := e.choose(ctx, q, h, room, now)
	if err != nil {
		return nil, nil, err
	}
	if now.Sub(h.LastIn) > e.opts.RecordGrace {
		var counted [api.MaxPriority]map[string]int64
		held := h.Holders() // the chosen ones' bookings among them
		for _, j := range room {
			if held[j.ID] || j.Ticket <= q.State.Purged {
				continue
			}
			p := slot.PriorityOf(j.Priority) - 1
			if counted[p] == nil {
				counted[p] = map[string]int64{}
			}
			counted[p][j.Key]++
		}
		h.Recount(counted)
	}
	return chosen, keyAhead, nil
}

// roomHeads reads, by the room's order, the first jobs of each key h
// counts in the room that its bound leaves room for (State.ListRoom):
// by priority, and within one the keys from the round-robin's turn on,
// until they are more keys with a job to book than the queue's bound
// leaves room for; of each key as many as its bound and the queue's
// leave room for, and as many more as it holds bookings (a booked job
// shows in the room until its booker's write lands). A key that has
// fewer jobs in the room than counted (cancelled, purged) is counted
// afresh, once every record written before LastIn shows.
func (e *waitingRoom) roomHeads(ctx context.Context, q Queue, h *slot.Horizon, now time.Time) ([]job.Job, error) {
	c := q.Config
	free := -1 // the queue's room under BookAhead; -1: no bound
	if c.BookAhead > 0 {
		if free = c.BookAhead - h.Unstarted(); free <= 0 {
			return nil, nil
		}
	}
	kb := h.KeyBooked()
	held := h.Holders()
	settled := now.Sub(h.LastIn) > e.opts.RecordGrace
	var heads []job.Job
	keys := 0 // keys with a job to book, the turn's own left out
	for p := 1; p <= api.MaxPriority; p++ {
		turn := h.Turns[p-1].Key
		for _, k := range turnOrder(h.Keys[p-1], turn) {
			if free >= 0 && keys >= free {
				return heads, nil
			}
			limit := min(h.Keys[p-1][k], maxHeads)
			if free >= 0 {
				limit = min(limit, int64(free))
			}
			if b := c.KeyBound(k); b > 0 {
				if limit = min(limit, int64(b-kb[k])); limit <= 0 {
					continue
				}
			}
			limit += int64(kb[k])
			// A key whose first jobs may not be booked yet (not_before)
			// is read on, a page at a time, up to maxHeadPages.
			var waiting int64
			due, after, ended := false, q.State.Purged, false
			for page := 0; page < maxHeadPages && !due && !ended; page++ {
				got, err := e.state.ListRoom(ctx, RoomRequest{Queue: q.Name, Gen: q.Gen, Priority: p, Key: k, After: after, Limit: int(limit)})
				if err != nil {
					return nil, fmt.Errorf("read the waiting room of %s: %w", q.Name, err)
				}
				ended = int64(len(got)) < limit
				limit = maxHeads // the next page looks further on
				heads = slices.Grow(heads, len(got))
				for _, j := range got {
					after = max(after, j.Ticket)
					if held[j.ID] {
						continue
					}
					waiting++
					heads = append(heads, j)
					due = due || !j.Earliest().After(e.bookable(now))
				}
			}
			if ended && settled {
				h.Count(p, k, waiting)
			}
			if due && k != turn {
				keys++
			}
		}
	}
	return heads, nil
}

// maxHeads bounds the jobs of one key a booking reads (a queue whose
// bounds were configured off books its room in steps of it), and
// maxHeadPages how many such reads it makes of a key whose first jobs
// may not be booked yet (their not_before lies beyond the transport's
// reach): a key whose first maxHeadPages pages all wait for their time
// is booked from by the resume function's look.
const (
	maxHeads     = 500
	maxHeadPages = 4
)

// turnOrder is the keys of counts in the order the round-robin visits
// them from the key whose turn it was: that key first, then the keys
// after it by name, then those before it.
func turnOrder(counts map[string]int64, turn string) []string {
	keys := make([]string, 0, len(counts))
	for k, n := range counts {
		if n > 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	i, found := slices.BinarySearch(keys, turn)
	out := make([]string, 0, len(keys))
	if found {
		out = append(out, turn)
		i++
	}
	out = append(out, keys[i:]...)
	for _, k := range keys[:i] {
		if k != turn {
			out = append(out, k)
		}
	}
	return out
}

// listRoom lists q's waiting room: its parked jobs that wait in it.
func (e *waitingRoom) listRoom(ctx context.Context, q Queue) ([]job.Job, error) {
	parked, err := e.resumer.listAll(ctx, q, job.Parked)
	if err != nil {
		return nil, fmt.Errorf("list the waiting room of %s: %w", q.Name, err)
	}
	var room []job.Job
	for _, j := range parked {
		if inRoom(&j) {
			room = append(room, j)
		}
	}
	return room, nil
}

// choose picks from room, by slot.BookNext, the jobs to book now, enters
// their bookings in h (and the round-robin's turns), and returns them
// with, for each, the jobs of its key booked before it. A job h holds a
// booking for already (its booker's write may still be on its way) is
// not chosen again, nor one a purge covered.
func (e *waitingRoom) choose(ctx context.Context, q Queue, h *slot.Horizon, room []job.Job, now time.Time) ([]*job.Job, []int64, error) {
	byTicket := map[int64]*job.Job{}
	var waiting []slot.WaitingJob
	weights := map[string]int{}
	held := h.Holders()
	for i := range room {
		j := &room[i]
		if held[j.ID] || j.Ticket <= q.State.Purged {
			continue
		}
		if _, ok := weights[j.Key]; !ok {
			weights[j.Key] = 0
		}
		byTicket[j.Ticket] = j
		waiting = append(waiting, slot.WaitingJob{Ticket: j.Ticket, Key: j.Key, Priority: j.Priority, NotBefore: j.Earliest()})
	}
	if len(waiting) == 0 {
		return nil, nil, nil
	}
	if len(weights) > 1 {
		for k := range weights {
			if k == "" {
				continue
			}
			m, err := e.lanes.readMeter(ctx, q, k)
			if err != nil {
				return nil, nil, err
			}
			weights[k] = m.Weight
		}
	}
	picked, r := slot.BookNext(q.Config, e.bookable(now), h.Room(weights), waiting, len(waiting))
	kb := h.KeyBooked()
	chosen := make([]*job.Job, len(picked))
	keyAhead := make([]int64, len(picked))
	for i, w := range picked {
		j := byTicket[w.Ticket]
		keyAhead[i] = int64(kb[j.Key])
		kb[j.Key]++
		j.Booking = h.Book(j.Key, j.ID, now)
		chosen[i] = j
	}
	h.Turns = r.Turns
	for _, j := range chosen {
		h.Leave(j.Priority, j.Key)
	}
	return chosen, keyAhead, nil
}
