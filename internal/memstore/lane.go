package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// laneID names a lane in the store: its queue and key.
type laneID struct{ queue, key string }

// EndRun frees ticket's running place on queue (slot.Ended) if it ends at
// until or after it, and the queue is of generation gen (0, on either
// side: any).
func (s *Store) EndRun(_ context.Context, queue string, gen, ticket int64, until time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[queue]
	if !ok {
		return notFound("end run", queue)
	}
	if u, ok := q.State.Running[ticket]; !ok || u.Before(until) || gen != 0 && q.Gen != 0 && q.Gen != gen {
		return nil
	}
	q.State = slot.Ended(q.State, ticket)
	s.queues[queue] = q
	return nil
}

// Skip moves queue's current to ticket if it is ticket − 1.
func (s *Store) Skip(_ context.Context, queue string, ticket int64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[queue]
	if !ok {
		return false, notFound("skip", queue)
	}
	if q.State.Current != ticket-1 {
		return false, nil
	}
	q.State.Current = ticket
	s.queues[queue] = q
	return true, nil
}

// GetLane returns queue's lane of key, or an unwritten one.
func (s *Store) GetLane(_ context.Context, queue, key string) (slot.Lane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.lanes[laneID{queue, key}]; ok {
		return cloneLane(l), nil
	}
	return slot.Lane{Queue: queue, Key: key}, nil
}

// PutLane stores l but its Pending, and adds pendingDelta to the stored
// count, if the stored lane is at version from, at from+1 or, from 0,
// above every version a lane has had; a lane l leaves idle whose count
// comes to 0 or less is deleted. ErrConflict.
func (s *Store) PutLane(_ context.Context, l slot.Lane, from, pendingDelta int64) (slot.Lane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := laneID{l.Queue, l.Key}
	cur := s.lanes[id]
	if cur.Version != from {
		return slot.Lane{}, fmt.Errorf("put lane %s/%s at version %d: %w", l.Queue, l.Key, from, engine.ErrConflict)
	}
	l = cloneLane(l)
	l.Pending = cur.Pending + pendingDelta
	if l.Idle() && l.Pending <= 0 {
		delete(s.lanes, id)
		s.due.set(laneDueID(id.queue, id.key), time.Time{})
		return slot.Lane{Queue: l.Queue, Key: l.Key}, nil
	}
	l.Version = from + 1
	if from == 0 {
		l.Version = s.laneTop + 1
	}
	s.storeLane(id, l)
	return cloneLane(l), nil
}

// AddPending adds n to the lane's Pending jobs, its version unmoved, and
// starts a lane of another generation afresh (at the next version) if gen
// is the queue's generation; a lane it creates starts above every version
// a lane has had.
func (s *Store) AddPending(_ context.Context, queue string, gen int64, key string, n int64) (slot.Lane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := laneID{queue, key}
	l, ok := s.lanes[id]
	switch {
	case !ok:
		l = slot.Lane{Queue: queue, Key: key, Gen: gen, Version: s.laneTop + 1}
	case l.Gen != gen:
		if q, ok := s.queues[queue]; !ok || q.Gen != gen {
			return slot.Lane{}, fmt.Errorf("add pending %s/%s of generation %d: %w", queue, key, gen, engine.ErrQueueNotFound)
		}
		l = l.Fresh(gen)
		l.Version++
	}
	l.Pending += n
	s.storeLane(id, l)
	return cloneLane(l), nil
}

// storeLane stores l, which the caller owns, as id's lane, and raises
// laneTop to its version.
func (s *Store) storeLane(id laneID, l slot.Lane) {
	s.lanes[id] = l
	s.laneTop = max(s.laneTop, l.Version)
	s.due.set(laneDueID(id.queue, id.key), engine.LaneDue(l))
}

// ListLanes returns every stored lane of queue, in key order.
func (s *Store) ListLanes(_ context.Context, queue string) ([]slot.Lane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []slot.Lane
	for id, l := range s.lanes {
		if id.queue == queue {
			out = append(out, cloneLane(l))
		}
	}
	slices.SortFunc(out, func(a, b slot.Lane) int { return cmp.Compare(a.Key, b.Key) })
	return out, nil
}

func cloneLane(l slot.Lane) slot.Lane {
	l.Waiting = slices.Clone(l.Waiting)
	l.More = slices.Clone(l.More)
	return l
}
