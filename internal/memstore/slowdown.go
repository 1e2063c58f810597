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
	return s.updateQueue("slow down", r.Queue, r.Gen, func(q *engine.Queue) error {
		q.State = slot.SlowDown(q.State, r.Ticket, r.Until, r.Hold, r.Answer)
		if r.Gate {
			q.State = slot.GateAll(q.State, nil, slot.Settling{}, time.Time{})
		}
		return nil
	})
}
