package memstore

import (
	"time"

	"context"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// SlowDown applies slot.SlowDown to the queue's state. ErrQueueNotFound,
// also for a queue of another generation than r.Gen.
func (s *Store) SlowDown(_ context.Context, r engine.SlowDownRequest) (slot.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[r.Queue]
	if !ok || r.Gen != 0 && q.Gen != 0 && q.Gen != r.Gen {
		return slot.State{}, notFound("slow down", r.Queue)
	}
	q.State = slot.SlowDown(q.State, r.Ticket, r.Until, r.Hold, r.Answer)
	if r.Gate {
		q.State = slot.GateAll(q.State, nil, slot.Settling{}, time.Time{})
	}
	s.queues[r.Queue] = q
	return copyState(q.State), nil
}
