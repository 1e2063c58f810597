package memstore

import (
	"context"
	"fmt"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/slot"
)

// roomDueID names the due entry of queue's waiting room.
func roomDueID(queue string) dueID { return dueID{engine.DueRoom, queue, ""} }

// GetHorizon returns queue's booking horizon, or an unwritten one.
func (s *Store) GetHorizon(_ context.Context, queue string) (slot.Horizon, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.horizons[queue]
	if !ok {
		return slot.Horizon{Queue: queue}, nil
	}
	return h.Clone(), nil
}

// PutHorizon stores h if the stored horizon is at version from, at the
// next version (from 0, above every version a horizon has had), with its
// due entry. ErrConflict; ErrQueueNotFound when the stored horizon is of
// a later generation than h's.
func (s *Store) PutHorizon(_ context.Context, h slot.Horizon, from int64) (slot.Horizon, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.horizons[h.Queue]
	if ok && laterGen(cur.Gen, h.Gen) {
		return slot.Horizon{}, fmt.Errorf("put horizon %s of generation %d over generation %d: %w", h.Queue, h.Gen, cur.Gen, engine.ErrQueueNotFound)
	}
	if !ok && from != 0 || ok && cur.Version != from {
		return slot.Horizon{}, fmt.Errorf("put horizon %s at version %d: %w", h.Queue, from, engine.ErrConflict)
	}
	h.Version = from + 1
	if from == 0 {
		h.Version = s.horizonTop + 1
	}
	s.horizonTop = max(s.horizonTop, h.Version)
	if s.horizons == nil {
		s.horizons = map[string]slot.Horizon{}
	}
	s.horizons[h.Queue] = h.Clone() // the caller keeps h's maps
	s.due.set(roomDueID(h.Queue), engine.HorizonDue(h))
	return h, nil
}
