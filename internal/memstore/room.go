package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/job"
	"github.com/slotq/slotq/internal/slot"
)

// roomID names one part of a waiting room: a queue's generation's jobs
// of one priority and key.
type roomID struct {
	queue    string
	gen      int64
	priority int
	key      string
}

// roomEntry is one waiting job of a part, by ticket.
type roomEntry struct {
	ticket int64
	id     string
}

func compareEntries(a, b roomEntry) int {
	return cmp.Or(cmp.Compare(a.ticket, b.ticket), cmp.Compare(a.id, b.id))
}

// roomIndex is the embedded waiting rooms' index (engine.State.ListRoom):
// each part's jobs in ticket order, kept in the same step as each job's
// write. The caller holds the store's lock.
type roomIndex map[roomID][]roomEntry

func roomOf(j job.Job) (roomID, roomEntry) {
	return roomID{j.Queue, j.Gen, slot.PriorityOf(j.Priority), j.Key}, roomEntry{j.Ticket, j.ID}
}

// set moves a job's entry from what old was (nil: no record before) to
// what j is.
func (x roomIndex) set(old *job.Job, j job.Job) {
	if old != nil && engine.JobInRoom(*old) {
		id, e := roomOf(*old)
		part := x[id]
		if i, ok := slices.BinarySearchFunc(part, e, compareEntries); ok {
			part = slices.Delete(part, i, i+1)
		}
		if len(part) == 0 {
			delete(x, id)
		} else {
			x[id] = part
		}
	}
	if engine.JobInRoom(j) {
		id, e := roomOf(j)
		part := x[id]
		if i, ok := slices.BinarySearchFunc(part, e, compareEntries); !ok {
			x[id] = slices.Insert(part, i, e)
		}
	}
}

// ListRoom returns up to r.Limit unexpired jobs of one part of a queue's
// waiting room, in ticket order.
func (s *Store) ListRoom(_ context.Context, r engine.RoomRequest) ([]job.Job, error) {
	if r.Limit <= 0 {
		return nil, fmt.Errorf("list room %s: limit %d", r.Queue, r.Limit)
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	part := s.room[roomID{r.Queue, r.Gen, slot.PriorityOf(r.Priority), r.Key}]
	i, _ := slices.BinarySearchFunc(part, roomEntry{ticket: r.After + 1}, compareEntries)
	out := make([]job.Job, 0, min(r.Limit, len(part)-i))
	for _, e := range part[i:] {
		if len(out) >= r.Limit {
			break
		}
		if j, ok := s.jobs[r.Queue][e.id]; ok && !j.Expired(now) {
			out = append(out, copyJob(j))
		}
	}
	return out, nil
}
