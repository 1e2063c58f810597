package memstore

import (
	"context"
	"fmt"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// Reconfigure replaces a queue's configuration and its limit state by
// r.Reslot of the state it holds, under the store's lock.
// ErrQueueNotFound.
func (s *Store) Reconfigure(_ context.Context, r engine.ReconfigureRequest) (slot.State, error) {
	return s.updateQueue("reconfigure", r.Queue, r.Gen, func(q *engine.Queue) error {
		next, rec, err := r.Reslot(copyState(q.State))
		if err != nil {
			return fmt.Errorf("reconfigure %s: %w", r.Queue, err)
		}
		q.Config, q.Rebooked = r.Config, rec
		q.State.LastStart, q.State.Clock, q.State.Marks = next.LastStart, next.Clock, next.Marks
		q.State.Gated, q.State.GatedUntil, q.State.GatedThrough, q.State.RunFrom = next.Gated, next.GatedUntil, next.GatedThrough, next.RunFrom
		q.State.Current = max(q.State.Current, next.Current)
		*q = copyQueue(*q)
		return nil
	})
}
